# routeplan — every set-up step lives here. Targets are idempotent; stamps skip finished work.
#   make demo   set everything up and run the nightly pipeline end-to-end through Airflow
#   make test   set everything up and run the test suite
#   make airflow  start the Airflow UI + scheduler with routeplan's DAGs (Ctrl-C stops all of it)

SHELL := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
JARS   := .jars

# One environment for the CLI, the Spark jobs, Airflow and the tests.
export ROUTEPLAN_HOME ?= $(CURDIR)/var
export ROUTEPLAN_JARS := $(CURDIR)/$(JARS)
export AIRFLOW_HOME ?= $(ROUTEPLAN_HOME)/airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(CURDIR)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(CURDIR)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW__CORE__PARALLELISM ?= 4
export AIRFLOW_CONN_SPARK_LOCAL ?= {"conn_type": "spark", "host": "local[2]"}
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(CURDIR)/$(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup demo test lint airflow bench lock clean chromium
setup: $(VENV)/.installed $(JARS)/.resolved $(AIRFLOW_HOME)/.migrated chromium

$(VENV)/.installed: pyproject.toml constraints.txt
	@command -v java >/dev/null || { echo "Java 17+ is required for Spark (install OpenJDK 17)"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[dev]'
	$(VENV)/bin/pip check
	touch $@

# Delta Lake jars from Maven Central into .jars/ (works with an empty ~/.m2).
$(JARS)/.resolved: jars/pom.xml
	@command -v mvn >/dev/null || { echo "Maven (mvn) is required to fetch the Delta Lake jars"; exit 1; }
	rm -rf $(JARS)
	mvn --batch-mode --quiet -f jars/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(JARS) -DincludeArtifactIds=delta-spark_4.2_2.13,delta-storage
	ls $(JARS)/*.jar
	touch $@

# Debian's Chromium for tests/test_browser.py (driven by the playwright package; never
# `playwright install`). apt-get update only when the package lists are too old to install it.
CHROMIUM := /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
	  command -v apt-get >/dev/null || { echo "install Chromium as $(CHROMIUM) (the browser test needs it)"; exit 1; }; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }; \
	  test -x $(CHROMIUM) && $(CHROMIUM) --version; }

$(AIRFLOW_HOME)/.migrated: $(VENV)/.installed
	mkdir -p $(AIRFLOW_HOME)
	airflow db migrate > $(AIRFLOW_HOME)/db-migrate.log 2>&1 || { tail -30 $(AIRFLOW_HOME)/db-migrate.log; exit 1; }
	touch $@

demo: setup
	python scripts/demo.py $(DEMO_ARGS)

test: setup
	ruff check .
	python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed
	ruff check .
	ruff format --check .

airflow: setup
	scripts/airflow-standalone

bench: setup
	python bench/pipeline.py $(BENCH_ARGS)

lock: $(VENV)/.installed
	( echo '# Tested pins: `make setup` installs with `pip install -c constraints.txt`. Regenerate with `make lock`.'; \
	  $(VENV)/bin/pip freeze | grep -v -E '^-e|^routeplan' ) > constraints.txt

clean:
	rm -rf $(ROUTEPLAN_HOME)
