# syntax=docker/dockerfile:1
# routeplan's Spark image, for the standalone master and workers: the official apache/spark
# Python image (the Spark version pyproject.toml pins, Java 17 like the driver's JRE), plus the
# Python routeplan needs (the executors' Python must be the driver's: 3.11), routeplan's
# dependencies for the executors' Python workers, and the jars on every node's class path.
#
#   docker build -f docker/spark.Dockerfile -t routeplan-spark .         # from the repository root
#
# SPARK_IMAGE: the official image's tag for Spark 4.2.0 (Scala 2.13, Java 17, Python 3, Ubuntu),
# named as apache/spark-docker names its 4.x images; override it with --build-arg SPARK_IMAGE=…
# The image's own python3 is Ubuntu's (3.10): routeplan needs 3.11, installed from Ubuntu's
# python3.11 package into a virtual environment first on PATH.
ARG SPARK_IMAGE=apache/spark:4.2.0-scala2.13-java17-python3-ubuntu
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
FROM ${SPARK_IMAGE}
ARG PYTHON_VERSION
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
       "python${PYTHON_VERSION}" "python${PYTHON_VERSION}-venv" curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=jars /jars /opt/routeplan/jars
COPY --from=dist /dist /opt/routeplan/dist
COPY constraints.txt /opt/routeplan/constraints.txt
COPY schemas /opt/routeplan/schemas
# routeplan and its dependencies (numpy, mmh3, pandas, pyarrow, …) for the executors' Python
# workers; pyspark itself comes from $SPARK_HOME/python.
RUN "python${PYTHON_VERSION}" -m venv /opt/routeplan/venv \
    && /opt/routeplan/venv/bin/pip install --no-cache-dir -c /opt/routeplan/constraints.txt \
       /opt/routeplan/dist/routeplan_client-*.whl /opt/routeplan/dist/routeplan-*.whl
ENV PATH=/opt/routeplan/venv/bin:$PATH \
    ROUTEPLAN_JARS=/opt/routeplan/jars \
    ROUTEPLAN_PY_FILES=/opt/routeplan/dist/routeplan.zip \
    ROUTEPLAN_SCHEMAS=/opt/routeplan/schemas
USER spark
