"""What every Spark job shares: the Spark + Delta settings and session, table paths, interval
arguments.

Jobs run unchanged under ``spark-submit`` (Airflow's SparkSubmitOperator, any cluster) and in
process (tests): the session helper only fills in what spark-submit did not set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from routeplan import settings
from routeplan.model.names import InvalidNameError, check_name

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# What every routeplan Spark session runs with: spark-submit gets it from ``submit_conf`` (the
# DAGs' tasks), an in-process session (tests, benchmarks) from ``spark_session``.
SESSION_CONF = {
    **DELTA_CONF,
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.showConsoleProgress": "false",
}
# Only in process (no spark-submit): a small local session.
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
JOBS_DIR = Path(__file__).resolve().parent


def jars_dir() -> Path:
    """Where ``make setup`` puts the Delta Lake jars: ``$ROUTEPLAN_JARS``, default ./.jars."""
    return Path(os.environ.get("ROUTEPLAN_JARS", JOBS_DIR.parent / ".jars"))


def jar_paths() -> list[str]:
    """The Delta Lake jars in ``jars_dir()`` (none before ``make setup``)."""
    return sorted(str(p) for p in jars_dir().glob("*.jar"))


def delta_jars() -> list[str]:
    """``jar_paths()``; an error saying to run ``make setup`` when there are none."""
    jars = jar_paths()
    if not jars:
        raise RuntimeError(
            f"no Delta Lake jars in {jars_dir()}: run `make setup` (it fetches them with Maven)"
        )
    return jars


def submit_conf(jobs_dir: Path = JOBS_DIR) -> dict[str, str]:
    """The ``--conf`` of a spark-submit of ``jobs/<stage>.py``: ``SESSION_CONF`` and the jobs'
    log4j settings."""
    log4j = f"-Dlog4j2.configurationFile={jobs_dir / 'log4j2.properties'}"
    return {**SESSION_CONF, "spark.driver.extraJavaOptions": log4j}


def spark_session(app: str):  # -> pyspark.sql.SparkSession
    """The active session, or a new one with Delta Lake: under spark-submit only ``DELTA_CONF``
    and UTC are added to what it was given; in process a local one (``$ROUTEPLAN_SPARK_MASTER``,
    default ``local[2]``) with ``SESSION_CONF`` and ``LOCAL_CONF``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(f"routeplan-{app}")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # set by spark-submit's PythonRunner
    if not submitted:
        builder = builder.master(os.environ.get("ROUTEPLAN_SPARK_MASTER", "local[2]"))
        builder = builder.config("spark.jars", ",".join(delta_jars()))
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need routeplan too
        for key, value in {**SESSION_CONF, **LOCAL_CONF}.items():
            builder = builder.config(key, value)
    for key, value in DELTA_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


@dataclass(frozen=True)
class Tables:
    """Path of each Delta table under ``<home>/warehouse`` (``bronze.stream_events`` → path)."""

    home: Path

    def path(self, name: str) -> str:
        layer, table = name.split(".")
        return str(self.home / "warehouse" / layer / table)

    @property
    def routing(self) -> Path:
        """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing``."""
        return settings.routing_root(self.home)

    @property
    def landing(self) -> Path:
        """``<home>/landing``: stream logs, one folder per day."""
        return settings.landing_root(self.home)

    @property
    def workers_file(self) -> Path:
        """``<home>/config/workers.json``."""
        return settings.workers_file(self.home)

    def report_path(self, interval_start: date, stage: str) -> Path:
        return self.home / "reports" / interval_start.isoformat() / f"{stage}.json"

    def write_report(self, interval_start: date, stage: str, report: dict[str, Any]) -> Path:
        path = self.report_path(interval_start, stage)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1, default=str) + "\n")
        return path


@dataclass(frozen=True)
class RunArgs:
    home: Path
    interval_start: date
    interval_end: date  # exclusive
    streams: tuple[str, ...]  # empty: every stream found
    run_id: str

    @property
    def tables(self) -> Tables:
        return Tables(self.home)

    def days(self) -> list[date]:
        n = (self.interval_end - self.interval_start).days
        return [self.interval_start + timedelta(days=i) for i in range(n)]

    def interval_predicate(self, column: str = "date") -> str:
        """SQL predicate selecting the interval (and the chosen streams) in a table."""
        where = f"{column} >= '{self.interval_start}' AND {column} < '{self.interval_end}'"
        if self.streams:
            where += " AND stream IN (" + ", ".join(f"'{s}'" for s in self.streams) + ")"
        return where


def run_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--home", default=str(settings.home()), help="default $ROUTEPLAN_HOME")
    parser.add_argument("--interval-start", type=date.fromisoformat, required=True)
    parser.add_argument(
        "--interval-end", type=date.fromisoformat, help="exclusive (default: start + 1 day)"
    )
    parser.add_argument("--streams", default="", help="comma-separated; empty = all found")
    parser.add_argument("--run-id", default="manual")
    return parser


def run_args(ns: argparse.Namespace) -> RunArgs:
    end = ns.interval_end or ns.interval_start + timedelta(days=1)
    if end <= ns.interval_start:
        raise SystemExit(f"interval end {end} must be after its start {ns.interval_start}")
    streams = tuple(s.strip() for s in ns.streams.split(",") if s.strip())
    for stream in streams:
        try:
            check_name(stream)
        except InvalidNameError as error:
            raise SystemExit(f"--streams: {error}") from None
    return RunArgs(Path(ns.home).resolve(), ns.interval_start, end, streams, ns.run_id)


def write_delta(df, tables: Tables, name: str, replace_where: str, partition_by=()) -> None:
    """Overwrite exactly the rows matching ``replace_where`` (idempotent rerun of an interval)."""
    writer = (
        df.write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", replace_where)
        .option("mergeSchema", "true")  # new optional columns extend tables written before
    )
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(tables.path(name))


def read_delta(spark, tables: Tables, name: str):
    path = tables.path(name)
    if not Path(path, "_delta_log").is_dir():
        raise SystemExit(f"Delta table {name} not found at {path}: run the earlier stages first")
    return spark.read.format("delta").load(path)


def log(stage: str, message: str) -> None:
    print(f"[routeplan {stage}] {message}", flush=True)
