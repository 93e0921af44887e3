# syntax=docker/dockerfile:1
# routeplan's Airflow image: the official apache/airflow image (the version pyproject.toml pins,
# on the Python routeplan needs) plus a JRE 17 — every task runs spark-submit in client mode, so
# the Spark driver runs in this container — and routeplan with its pipeline extras.
#
#   docker build -f docker/airflow.Dockerfile -t routeplan-airflow .     # from the repository root
#
# Layout (the same in docker/spark.Dockerfile):
#   /opt/routeplan/{dags,plugins,jobs,schemas,config,gx} the repository's folders
#   /opt/routeplan/dist/routeplan.zip                    shipped to the executors (py_files)
#   /opt/routeplan/jars                                  Delta Lake + S3A, on every node's class path
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11

# ---- jars: Delta Lake and S3A (hadoop-aws + the AWS SDK bundle: the pom's profile s3a) from
# Maven Central; Spark provides the rest. The artifact list is the pom's, as in the Makefile
# (tests/test_docker_compose.py checks it).
FROM maven:3-eclipse-temurin-17 AS jars
COPY jars/pom.xml /build/pom.xml
RUN mvn --batch-mode --quiet -Ps3a -f /build/pom.xml dependency:copy-dependencies \
    -DoutputDirectory=/jars

# ---- dist: routeplan's wheel and the zip spark-submit ships to the executors (py_files).
FROM python:${PYTHON_VERSION}-slim AS dist
WORKDIR /src
COPY pyproject.toml README.md ./
COPY clients/python clients/python
COPY routeplan routeplan
COPY jobs jobs
COPY scripts/build_zip.py scripts/build_zip.py
RUN python scripts/build_zip.py /dist/routeplan.zip \
    && pip wheel --no-deps --no-cache-dir --wheel-dir /dist . ./clients/python

# ---- the image
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}
ARG AIRFLOW_VERSION
USER root
# The Debian package's postinst expects man1 (absent in slim images).
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && apt-get clean && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /usr/lib/jvm/java-17
ENV JAVA_HOME=/usr/lib/jvm/java-17 \
    ROUTEPLAN_JARS=/opt/routeplan/jars \
    ROUTEPLAN_PY_FILES=/opt/routeplan/dist/routeplan.zip \
    ROUTEPLAN_SCHEMAS=/opt/routeplan/schemas \
    ROUTEPLAN_JOBS_DIR=/opt/routeplan/jobs \
    ROUTEPLAN_GX=/opt/routeplan/gx \
    ROUTEPLAN_SPARK_DEFAULTS=/opt/routeplan/config/spark-defaults.conf
COPY --from=jars /jars /opt/routeplan/jars
COPY --from=dist /dist /opt/routeplan/dist
COPY constraints.txt /opt/routeplan/constraints.txt
COPY dags /opt/routeplan/dags
COPY plugins /opt/routeplan/plugins
COPY jobs /opt/routeplan/jobs
COPY schemas /opt/routeplan/schemas
COPY config /opt/routeplan/config
COPY gx /opt/routeplan/gx
USER airflow
# Airflow named with its version so pip never moves it; the rest at the tested pins.
RUN pip install --no-cache-dir -c /opt/routeplan/constraints.txt \
    "apache-airflow==${AIRFLOW_VERSION}" \
    "$(ls /opt/routeplan/dist/routeplan_client-*.whl)" \
    "$(ls /opt/routeplan/dist/routeplan-*.whl)[pipeline,client]"
