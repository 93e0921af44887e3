# routeplan — every set-up step lives here. Targets are idempotent; stamps skip finished work.
# Each target installs only what it uses (LOCAL, OBJECT_STORE, … below):
#   make demo   the virtualenv (routeplan's runtime packages), Delta Lake's jars, Airflow's SQLite
#               database; then the nightly pipeline end-to-end through Airflow on sample data
#   make test   everything (`make setup`: also the dev tools, S3A's jars, MinIO, the executors'
#               zip, PostgreSQL and Chromium), then the test suite
#   make airflow  start the Airflow UI + scheduler with routeplan's DAGs (Ctrl-C stops all of it)
#   make cluster-demo  the same nightly run on a cluster on this machine: PostgreSQL, MinIO, a Spark
#                 standalone master + 2 workers, Airflow's components (scripts/cluster.py)
#   make docs   the reference pages from the code (scripts/reference_docs.py), then the
#               documentation site (MkDocs, docs/ and mkdocs.yml) into site/, strict

SHELL := /bin/bash
PYTHON ?= python3
VENV   ?= .venv
JARS   := .jars
TOOLS  := .tools/bin
DIST   := dist
SITE   := site
# MinIO (S3-compatible object store for the cluster and its tests), built from its Go module.
MINIO_VERSION ?= v0.0.0-20260212201848-7aac2a2c5b7c

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

.PHONY: setup demo test lint airflow bench lock clean docs jars jars-s3a minio chromium \
        postgresql cluster-demo clients

# What the targets need, by what uses it:
#   LOCAL         a run on this machine (Spark local[2], Airflow on SQLite, the home in var/)
#   SPARK_CLUSTER the jars and code a Spark standalone cluster with its home in MinIO needs
#   AIRFLOW_DB    Airflow's metadata database on the cluster: Debian's PostgreSQL
#   BROWSER       tests/test_browser.py: Debian's Chromium
#   CLIENTS       the Java, Go and Python clients and the Kafka broker tests/test_kafka.py starts
#   DEV           the dev extra: the tests' and docs' tools, the benchmarks' peers
LOCAL         := $(VENV)/.installed $(JARS)/.delta $(AIRFLOW_HOME)/.migrated
SPARK_CLUSTER := $(VENV)/.installed $(JARS)/.delta $(JARS)/.s3a $(TOOLS)/minio \
                 $(DIST)/routeplan.zip
AIRFLOW_DB    := postgresql
BROWSER       := chromium
CLIENTS       := clients
DEV           := $(VENV)/.dev
# Everything any target uses: what `make test` installs (the tests use all of it).
setup: $(LOCAL) $(SPARK_CLUSTER) $(AIRFLOW_DB) $(BROWSER) $(CLIENTS) $(DEV)

# The virtualenv, every package pinned by constraints.txt. pip installs uv (pinned there too),
# uv installs the rest: downloads in parallel, PySpark's 450 MB sdist built once into uv's cache
# (empty caches, 2 cores: ~25 s against pip's ~85 s for the same packages).
#   .installed  what routeplan runs with (RUNTIME: the jobs, Airflow, the CLI, the API)
#   .dev        the dev extra on top: pytest, Playwright, MkDocs, ruff, the benchmarks' peers
#               (MkDocs' Markdown extensions need Python >= 3.11.5; the runtime, 3.11.0 and up)
RUNTIME := pipeline,client,api
UV_PIP  := $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python -c constraints.txt
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml constraints.txt
	@command -v java >/dev/null || { echo "Java 17+ is required for Spark (install OpenJDK 17)"; exit 1; }
	@command -v $(PYTHON) >/dev/null || { echo "make: no $(PYTHON) on the PATH: install Python 3.11, or run make PYTHON=/path/to/python3.11 …"; exit 1; }
	@if test -x $(VENV)/bin/python; then $(VENV)/bin/python scripts/python_check.py; \
	 else $(PYTHON) scripts/python_check.py && $(PYTHON) -m venv $(VENV); fi
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -c constraints.txt uv
	$(UV_PIP) -e clients/python -e '.[$(RUNTIME)]'
	$(VENV)/bin/uv pip check --quiet --python $(VENV)/bin/python
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	@$(VENV)/bin/python scripts/python_check.py 3.11.5
	$(UV_PIP) -e '.[dev]'
	$(VENV)/bin/uv pip check --quiet --python $(VENV)/bin/python
	touch $@

# Delta Lake's jars from Maven Central into .jars/ (works with an empty ~/.m2; ~10 MB). A changed
# pom starts .jars/ afresh, so no old jar stays beside a new one (and S3A's are fetched again).
$(JARS)/.delta: jars/pom.xml
	@command -v mvn >/dev/null || { echo "Maven (mvn) is required to fetch the Spark jars"; exit 1; }
	rm -rf $(JARS)
	mvn --batch-mode --quiet -f jars/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(JARS)
	ls $(JARS)/*.jar
	touch $@

# S3A (hadoop-aws and the AWS SDK bundle it needs, ~690 MB) for s3a:// homes: the pom's profile
# s3a. Only the object store uses it: its tests, the cluster, the benchmark's cluster run.
$(JARS)/.s3a: $(JARS)/.delta
	mvn --batch-mode --quiet -Ps3a -f jars/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(JARS)
	ls $(JARS)/hadoop-aws-*.jar
	touch $@

jars: $(JARS)/.delta
jars-s3a: $(JARS)/.s3a
minio: $(TOOLS)/minio

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

# MinIO from its Go module (a real S3-compatible server for the cluster and the S3 tests).
$(TOOLS)/minio:
	@command -v go >/dev/null || { echo "Go is required to build MinIO (the object store)"; exit 1; }
	GOBIN=$(CURDIR)/$(TOOLS) go install github.com/minio/minio@$(MINIO_VERSION)
	$@ --version | head -1

# The Go client (clients/go): its module's dependencies from the Go module proxy, the route tool
# and the broker test's producer, built once here (tests/test_kafka.py runs them); and the
# modules examples/go (an application using the client through a replace) needs, which
# tests/test_examples.py builds.
GO_CLIENT := clients/go
GO_SOURCES := $(shell find $(GO_CLIENT) -name '*.go' 2>/dev/null) $(GO_CLIENT)/go.mod $(GO_CLIENT)/go.sum \
              examples/go/go.mod examples/go/go.sum
$(GO_CLIENT)/bin/route: $(GO_SOURCES)
	@command -v go >/dev/null || { echo "Go is required to build the Go client"; exit 1; }
	cd $(GO_CLIENT) && go mod download && go build -o bin/ ./cmd/...
	cd examples/go && go mod download

# The Java client (clients/java): its jar (the route tool's main) and target/lib (jackson-core,
# kafka-clients and their dependencies), built once here and installed in the local Maven
# repository (~/.m2) as dev.routeplan:routeplan-client:<clients/VERSION>, the coordinates
# examples/java depends on (mvn install: the install plugin is fetched too, so that
# tests/test_examples.py can install it again offline); one small test runs so that Surefire's
# JUnit provider is fetched too and `make test` can run Maven offline.
JAVA_CLIENT := clients/java
$(JAVA_CLIENT)/target/routeplan-client.jar: $(JAVA_CLIENT)/pom.xml $(shell find $(JAVA_CLIENT)/src -name '*.java' 2>/dev/null)
	@command -v mvn >/dev/null || { echo "Maven (mvn) is required to build the Java client"; exit 1; }
	mvn --batch-mode --quiet -f $(JAVA_CLIENT)/pom.xml install \
	    -Dtest='VectorsTest#canonicalFormsAreRfc8785' -Dsurefire.failIfNoSpecifiedTests=false

# A Kafka 4.x broker (KRaft) for tests/test_kafka.py, from its Maven artefacts into .kafka/libs.
KAFKA := .kafka
$(KAFKA)/.resolved: jars/kafka/pom.xml
	@command -v mvn >/dev/null || { echo "Maven (mvn) is required to fetch Kafka"; exit 1; }
	rm -rf $(KAFKA)
	mvn --batch-mode --quiet -f jars/kafka/pom.xml dependency:copy-dependencies \
	    -DoutputDirectory=$(CURDIR)/$(KAFKA)/libs
	ls $(KAFKA)/libs/kafka_2.13-*.jar
	touch $@

# The Python client's wheel (routeplan-client: mmh3 and httpx only) for services that install it
# alone; tests/test_client_package.py installs it into fresh virtualenvs.
PY_CLIENT := clients/python
$(PY_CLIENT)/dist/.built: $(VENV)/.installed $(PY_CLIENT)/pyproject.toml \
                          $(shell find $(PY_CLIENT)/routeplan_client -name '*.py' 2>/dev/null)
	rm -rf $(PY_CLIENT)/dist
	$(VENV)/bin/uv build --quiet --wheel --out-dir $(PY_CLIENT)/dist $(PY_CLIENT)
	touch $@

clients: $(GO_CLIENT)/bin/route $(JAVA_CLIENT)/target/routeplan-client.jar $(KAFKA)/.resolved \
         $(PY_CLIENT)/dist/.built

# routeplan as a zip for Spark executors (spark-submit --py-files): the key-group UDF runs there.
$(DIST)/routeplan.zip: scripts/build_zip.py $(shell find routeplan jobs clients/python/routeplan_client -name '*.py' 2>/dev/null)
	python3 scripts/build_zip.py $@

# PostgreSQL's server (Debian's package) for Airflow's metadata database on the cluster.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null || { echo "install PostgreSQL's server (initdb, postgres)"; exit 1; }; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $$SUDO apt-get install -y -qq postgresql >/dev/null 2>&1 || \
	    { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; }; }

$(AIRFLOW_HOME)/.migrated: $(VENV)/.installed
	mkdir -p $(AIRFLOW_HOME)
	airflow db migrate > $(AIRFLOW_HOME)/db-migrate.log 2>&1 || { tail -30 $(AIRFLOW_HOME)/db-migrate.log; exit 1; }
	touch $@

demo: $(LOCAL)
	python scripts/demo.py $(DEMO_ARGS)

test: setup
	ruff check .
	cd $(GO_CLIENT) && go vet ./... && go test ./... && go test -race -run Concurrent .
	mvn --batch-mode --quiet --offline -f $(JAVA_CLIENT)/pom.xml test
	python -m pytest $(PYTEST_ARGS)

lint: $(DEV)
	ruff check .
	ruff format --check .

airflow: $(LOCAL)
	scripts/airflow-standalone

cluster-demo: $(SPARK_CLUSTER) $(AIRFLOW_DB)
	python scripts/cluster.py demo $(CLUSTER_ARGS)

# BENCH_ARGS="--sizes 200000" for a quick run (both scripts take --sizes)
bench: $(SPARK_CLUSTER) $(DEV)
	python bench/peer_duckdb.py --cluster $(BENCH_ARGS)
	python bench/pipeline.py $(BENCH_ARGS)
	python bench/closed_loop.py
	python bench/closed_loop.py --strategy milp --time-limit 1 --volumes 100000 --seeds 3,4
	python bench/racks.py

# The documentation site from docs/ (mkdocs.yml's nav), its home the README; --strict: a broken
# link or anchor, a missing page or one left out of the nav fails the build. Offline: no fonts or
# scripts from a CDN. NO_MKDOCS_2_WARNING silences Material's notice of its end of life (May
# 2027; Zensical, by the same team, reads the same mkdocs.yml). The reference pages
# (docs/reference/) are generated from the code first (scripts/reference_docs.py).
docs: $(DEV)
	python scripts/reference_docs.py --write
	NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir $(CURDIR)/$(SITE)

lock: $(DEV)
	( echo '# Tested pins: `make setup` installs with `uv pip install -c constraints.txt`. Regenerate with `make lock`.'; \
	  $(VENV)/bin/pip freeze | grep -v -E '^-e|^routeplan|^# Editable' ) > constraints.txt

clean:
	rm -rf $(ROUTEPLAN_HOME) $(SITE)
