"""What every Spark job shares: the Spark + Delta settings and session, table paths, interval
arguments.

Jobs run unchanged under ``spark-submit`` (Airflow's SparkSubmitOperator, any cluster) and in
process (tests): the session helper only fills in what spark-submit did not set.

The home (``--home``, default ``$ROUTEPLAN_HOME``) is a *location* (``routeplan.storage``): a
local folder or an object-store URI (``s3://bucket/prefix``, which Spark reads as
``s3a://bucket/prefix``). Spark reads and writes the Delta tables and landing files through
Hadoop's file systems (S3A for a bucket); what the driver reads and writes itself (landing
listings, CSV headers, Parquet footers, the workers and policies files, the reports) goes
through ``routeplan.storage``. An S3-compatible server named by ``AWS_ENDPOINT_URL`` gets its
S3A settings from ``object_store_conf``; the credentials never go on a command line: S3A's
default provider chain reads ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` from the
environment (and Spark copies them into ``fs.s3a.*`` when the context starts).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs.columns import COLUMNS
from routeplan import settings, storage
from routeplan.model.names import InvalidNameError, check_name

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
# What every routeplan Spark session runs with is in ``spark_defaults_file()`` (spark-submit's
# properties file): the DAGs' tasks pass it as ``--properties-file``, an in-process session
# (tests, benchmarks) reads it with ``spark_defaults``.
# Only in process (no spark-submit): a small local session.
LOCAL_CONF = {"spark.ui.enabled": "false"}
JOBS_DIR = Path(__file__).resolve().parent


def jars_dir() -> Path:
    """Where ``make jars`` puts Delta Lake's jars (and ``make jars-s3a`` S3A's, for s3a://
    homes): ``$ROUTEPLAN_JARS``, default ./.jars. On a cluster every node holds them at this path
    (the images in docker/ do)."""
    return settings.current().jars


def delta_jars() -> list[str]:
    """The jars in ``jars_dir()``; an error saying to run ``make jars`` when there are none."""
    jars = sorted(str(p) for p in jars_dir().glob("*.jar"))
    if not jars:
        raise RuntimeError(
            f"no jars in {jars_dir()}: run `make jars` (it fetches Delta Lake's with Maven; "
            "`make jars-s3a` adds S3A's for s3a:// homes)"
        )
    return jars


def object_store_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """S3A's settings (``spark.hadoop.fs.s3a.*``) for the S3-compatible server the environment
    names (``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``; region ``AWS_REGION``, default
    us-east-1, path-style addressing as such servers expect); empty without one (AWS itself).

    No secret is among them: S3A's default credential chain reads ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` from the environment of the JVM (its
    ``EnvironmentVariableCredentialsProvider``), so they never appear on a spark-submit command
    line, and instance or web-identity credentials still work on a cluster without them."""
    env = os.environ if env is None else env
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if not endpoint:
        return {}
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    return {
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
    }


def use_object_store(spark) -> None:
    """Give the live session's Hadoop configuration ``object_store_conf()`` — for a session
    made before the environment named the server (a notebook, a test run that started Spark
    earlier). Its JVM then also lacks the credentials in its environment: those the driver's
    environment holds are set in the JVM's memory (never on a command line)."""
    conf = object_store_conf()
    if not conf or is_connect(spark):  # a Connect server has its own (scripts/spark_connect.py)
        return
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in conf.items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)
    getenv = spark.sparkContext._jvm.java.lang.System.getenv
    for variable, key in (
        ("AWS_ACCESS_KEY_ID", "fs.s3a.access.key"),
        ("AWS_SECRET_ACCESS_KEY", "fs.s3a.secret.key"),
        ("AWS_SESSION_TOKEN", "fs.s3a.session.token"),
    ):
        value = os.environ.get(variable)
        if value and getenv(variable) != value:
            hadoop.set(key, value)


def spark_defaults_file() -> Path:
    """The Spark settings of every routeplan session, in spark-submit's properties-file format:
    ``$ROUTEPLAN_SPARK_DEFAULTS``, default config/spark-defaults.conf."""
    return settings.current().spark_defaults


BLANKS = " \t\f"  # what Java properties count as blanks


def parse_spark_defaults(text: str, source: str = "spark-defaults.conf") -> dict[str, str]:
    """The settings of a Spark properties file's ``text`` as spark-submit reads them (Java
    properties): blank lines and comments (``#`` or ``!`` first) skipped; the key ends at the
    first ``=``, ``:`` or blank, blanks around that ``=`` or ``:`` are dropped, the value is
    trimmed; a repeated key's last value wins. A ``ValueError`` names ``source``, the line and
    what is allowed for a key not under ``spark.`` (spark-submit ignores those), a key without a
    value, or a backslash (Java's escapes and continued lines, which this reader refuses rather
    than read differently from Spark)."""
    found: dict[str, str] = {}
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        line = raw.strip(BLANKS)
        if not line or line[0] in "#!":
            continue
        where = f"{source}, line {number}: {line!r}"
        if "\\" in line:
            raise ValueError(f"{where}: backslashes (escapes, continued lines) are not supported")
        end = next((i for i, c in enumerate(line) if c in "=:" + BLANKS), len(line))
        key, rest = line[:end], line[end:].lstrip(BLANKS)
        value = (rest[1:] if rest[:1] in ("=", ":") else rest).strip(BLANKS)
        if not key.startswith("spark.") or not value:
            raise ValueError(f"{where}: expected 'spark.<name> <value>' ('=' or ':' may separate)")
        found[key] = value
    return found


def spark_defaults(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The settings of ``path`` (default ``spark_defaults_file()``); a ``ValueError`` naming the
    file when it is missing or a line is not a setting."""
    path = Path(path or spark_defaults_file())
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(
            f"Spark settings {path}: {err.strerror or err} (set ROUTEPLAN_SPARK_DEFAULTS to the "
            "file, default config/spark-defaults.conf)"
        ) from None
    return parse_spark_defaults(text, str(path))


def submit_conf(jobs_dir: Path = JOBS_DIR) -> dict[str, str]:
    """The ``--conf`` of a spark-submit of ``jobs/<stage>.py``, beside ``--properties-file
    spark_defaults_file()``: S3A's settings for the environment's object store
    (``object_store_conf``), the jobs' log4j settings, and ``jars_dir()`` on the driver's and
    the executors' class path — the jars are installed on every node, never copied per
    application (the AWS SDK bundle alone is ~690 MB)."""
    log4j = f"-Dlog4j2.configurationFile={jobs_dir / 'log4j2.properties'}"
    class_path = str(jars_dir() / "*")
    return {
        **object_store_conf(),
        "spark.driver.extraJavaOptions": log4j,
        "spark.driver.extraClassPath": class_path,
        "spark.executor.extraClassPath": class_path,
    }


def is_connect(spark) -> bool:
    """True for a Spark Connect session: a client of a server that holds the JVM, its jars and
    its settings (there is no ``sparkContext`` to configure). Told by the session's module, so
    a classic driver without Connect's client libraries never imports them."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def spark_session(app: str):  # -> pyspark.sql.SparkSession
    """The active session, or a new one with Delta Lake: under spark-submit only ``DELTA_CONF``
    and UTC are added to what it was given; with ``$SPARK_REMOTE`` (``sc://host:port``) a Spark
    Connect session on that server (``scripts/spark_connect.py`` starts one with these
    settings); in process otherwise a local one (``$ROUTEPLAN_SPARK_MASTER``, default
    ``local[2]``) with ``spark_defaults()`` and ``LOCAL_CONF``. A classic session reads the
    object store the environment names (``use_object_store``)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        use_object_store(active)
        return active
    remote = os.environ.get("SPARK_REMOTE")  # PySpark's own variable: a Spark Connect server
    if remote:
        return SparkSession.builder.remote(remote).appName(f"routeplan-{app}").getOrCreate()
    builder = SparkSession.builder.appName(f"routeplan-{app}")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # set by spark-submit's PythonRunner
    if not submitted:
        builder = builder.master(settings.current().spark_master)
        builder = builder.config("spark.jars", ",".join(delta_jars()))
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need routeplan too
        for key, value in {**spark_defaults(), **LOCAL_CONF}.items():
            builder = builder.config(key, value)
    for key, value in DELTA_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    use_object_store(spark)
    return spark


@contextmanager
def sql_conf(spark, values: Mapping[str, str]) -> Iterator[None]:
    """SQL settings ``values`` on ``spark``'s session for the block, then back as they were
    (unset if unset): for a plan that needs other settings than the rest of its job."""
    before = {key: spark.conf.get(key, None) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def location_arg(text: str | os.PathLike[str]) -> str:
    """A location given on the command line (``--home``, ``--landing``): a URI as given, a local
    path made absolute (Spark and the driver then name the same files whatever their cwd)."""
    text = os.fspath(text)
    return text if storage.is_remote(text) else str(Path(text).resolve())


@dataclass(frozen=True)
class Tables:
    """Where each Delta table lives under ``<home>/warehouse`` (``bronze.stream_events`` →
    its location as Spark names it), and the other places under the home a job uses."""

    home: str  # a location: a local path or a URI

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", os.fspath(self.home))  # a Path is welcome too

    def path(self, name: str) -> str:
        """The table's location as Spark names it (``s3a://…``, or an absolute local path)."""
        layer, table = name.split(".")
        return storage.spark_uri(storage.join(self.home, "warehouse", layer, table))

    @property
    def routing(self) -> str:
        """The routing store: ``$ROUTEPLAN_ROUTING``, else ``<home>/routing``."""
        return settings.routing_root(self.home)

    @property
    def landing(self) -> str:
        """``<home>/landing``: stream logs, one folder per day."""
        return settings.landing_root(self.home)

    @property
    def catalog_file(self) -> str:
        """``<home>/catalog/tables.sql``: the statements naming the tables (``register_tables``)."""
        return storage.join(self.home, "catalog", "tables.sql")

    @property
    def workers_file(self) -> str:
        """``<home>/config/workers.json``."""
        return settings.workers_file(self.home)

    def report_path(self, interval_start: date, stage: str) -> str:
        """``<home>/reports/<day>/<stage>.json``."""
        day = interval_start.isoformat()
        return storage.join(settings.reports_root(self.home), day, f"{stage}.json")

    def write_report(self, interval_start: date, stage: str, report: dict[str, Any]) -> str:
        """Write a stage's report (JSON) where the DAG's tasks read it; its location."""
        path = self.report_path(interval_start, stage)
        return storage.write_text(path, json.dumps(report, indent=1, default=str) + "\n")

    def read_report(self, interval_start: date, stage: str) -> dict[str, Any] | None:
        """A stage's report of the day, None when that stage has not written one."""
        path = self.report_path(interval_start, stage)
        if not storage.is_file(path):
            return None
        return json.loads(storage.read_bytes(path).decode("utf-8"))

    def loop_states(self, interval_start: date) -> dict[str, Any]:
        """Every stream's loop state after the day's night (``routeplan.streams.loop_state``,
        written by the guard job in the routing store), by stream; streams without one are
        left out."""
        from routeplan.publishing.store import RoutingStore
        from routeplan.streams.loop_state import LoopState

        store, night = RoutingStore(self.routing), interval_start.isoformat()
        return {
            stream: LoopState.from_document(store.read_loop_state(stream, night))
            for stream in store.streams()
            if night in store.loop_nights(stream)
        }

    def guard_actions(self, interval_start: date) -> list[dict[str, Any]]:
        """The regression guard's rollbacks and holds of the day's night (its loop states):
        the plan job plans nothing new for those streams, publish reports them."""
        from routeplan.streams.loop_state import acted_tonight

        night = interval_start.isoformat()
        return [
            state.decision.entry(stream)
            for stream, state in self.loop_states(interval_start).items()
            if acted_tonight(state, night)
        ]


@dataclass(frozen=True)
class RunArgs:
    home: str  # a location (``location_arg``)
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


def add_home_argument(parser: argparse.ArgumentParser) -> None:
    """Every job's ``--home``: a folder or a URI, default ``settings.home()``."""
    parser.add_argument(
        "--home", default=settings.home(), help="a folder or a URI (default $ROUTEPLAN_HOME)"
    )


def manual_run_id() -> str:
    """The run id of a job run by hand: ``manual__<UTC time>``, one per attempt (as Airflow names
    a manual run), so that two attempts at the same night never share one."""
    return f"manual__{datetime.now(UTC).isoformat()}"


def add_run_id_argument(parser: argparse.ArgumentParser) -> None:
    """Every job's ``--run-id``: the attempt whose rows these are. A DAG task passes its run's id
    (``__try<N>`` added from its second try on: ``routeplan_tasks.ATTEMPT_RUN_ID``); by hand,
    ``manual_run_id()``. ``gold.publish_log`` appends one row per stream and attempt with it."""
    parser.add_argument(
        "--run-id",
        default=manual_run_id(),
        help="the attempt's id (default: manual__<UTC time>, a new one per attempt)",
    )


def run_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    add_home_argument(parser)
    parser.add_argument("--interval-start", type=date.fromisoformat, required=True)
    parser.add_argument(
        "--interval-end", type=date.fromisoformat, help="exclusive (default: start + 1 day)"
    )
    parser.add_argument("--streams", default="", help="comma-separated; empty = all found")
    add_run_id_argument(parser)
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
    return RunArgs(location_arg(ns.home), ns.interval_start, end, streams, ns.run_id)


def add_policies_argument(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--policies``: the streams' planning policies file (``what`` says what a job reads of
    them)."""
    parser.add_argument(
        "--policies",
        default="",
        help=f"the streams' planning policies (YAML{what}); empty: "
        "$ROUTEPLAN_HOME/config/streams.yaml",
    )


def job_policies(ns, home: str | os.PathLike[str], stage: str):
    """``stream_policies`` for a job: a policy file that cannot be used ends the job with one
    line naming the file, the stream and the field (``<stage> refused: …``)."""
    try:
        return stream_policies(ns, home)
    except ValueError as err:  # PolicyError
        raise SystemExit(f"{stage} refused: {err}") from None


def gate_of(plan) -> dict[str, Any] | None:
    """The nightly gate's decision on a selected ``gold.plans`` row (``routeplan.streams.
    rebalance``); None for a plan on one window, or a row written before the column."""
    text = plan.asDict().get("gate")
    return json.loads(text) if text else None


def stream_policies(ns, home: str | os.PathLike[str]):
    """The deployment's policies (``--policies``, default ``<home>/config/streams.yaml``) as
    ``routeplan.streams.policy.Policies``; None when there is no file (every stream then gets
    the defaults, or the plan job's ``--strategy``). ``PolicyError`` on a wrong file."""
    from routeplan.streams.policy import load_policies

    path = ns.policies or settings.policies_file(home)
    if not storage.is_file(path):
        if ns.policies:
            raise SystemExit(f"policy file {path} not found")
        log("policies", f"no policy file at {path}: every stream planned with its defaults")
        return None
    return load_policies(path)


def write_delta(df, tables: Tables, name: str, replace_where: str, partition_by=None) -> None:
    """Overwrite exactly the rows matching ``replace_where`` (idempotent rerun of an interval).

    The table is partitioned by its ``PARTITION_COLUMNS``; a ``partition_by`` other than those
    is a bug (``ValueError``).

    The table's schema grows only by its migrations (``upgrade_table``): a column of ``df`` the
    table lacks and no migration names stops the write with ``SchemaError``."""
    declared = PARTITION_COLUMNS.get(name, ())
    if partition_by is None:
        partition_by = declared
    elif tuple(partition_by) != declared:
        raise ValueError(f"{name} is partitioned by {declared}, not {tuple(partition_by)}")
    upgrade_table(df.sparkSession, tables, name, df.columns)
    writer = df.write.format("delta").mode("overwrite").option("replaceWhere", replace_where)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(tables.path(name))


def write_deltas(tables: Tables, writes: Mapping[str, tuple[Any, str, tuple[str, ...]]]) -> None:
    """``write_delta`` of several tables at once: ``{name: (frame, replace_where,
    partition_by)}``, each from its own thread. Their Spark jobs share the cores, and each
    table's Delta commit (driver-side log work) overlaps the others' jobs instead of waiting
    its turn. Every write finishes before the first error, if any, is raised."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(writes) or 1, thread_name_prefix="delta") as pool:
        futures = [
            pool.submit(write_delta, frame, tables, name, where, partition_by)
            for name, (frame, where, partition_by) in writes.items()
        ]
    for future in futures:
        future.result()


def table_exists(tables: Tables, name: str) -> bool:
    """True when the table ``name`` is a Delta table (local or in an object store): its
    ``_delta_log`` folder exists, as Delta's own check asks. Read through ``routeplan.storage``,
    so it costs no Spark query (nor a failed one in a Spark Connect server's log)."""
    return storage.exists(storage.join(tables.path(name), "_delta_log"))


def read_delta(spark, tables: Tables, name: str):
    """The Delta table ``name``; a SystemExit naming it when an earlier stage has not made it."""
    path = tables.path(name)
    if not table_exists(tables, name):
        raise SystemExit(f"Delta table {name} not found at {path}: run the earlier stages first")
    return spark.read.format("delta").load(path)


def upgrade_table(spark, tables: Tables, name: str, columns: Iterable[str] = ()) -> list[str]:
    """Before a write of ``columns`` to the table ``name``: its migrations applied
    (``jobs.migrations.upgrade``), the columns added; nothing when the table does not exist yet
    (the write creates it)."""
    from jobs.migrations import upgrade

    if not table_exists(tables, name):
        return []
    return upgrade(spark, name, tables.path(name), columns)


# Every Delta table of routeplan, by the name the catalog gives it (docs/architecture.md): the
# tables whose columns jobs/columns.py declares.
TABLE_NAMES = tuple(COLUMNS)
# The partition columns of each partitioned table (write_delta refuses any other; the reference
# page docs/reference/delta-tables.md lists them).
PARTITION_COLUMNS: dict[str, tuple[str, ...]] = {
    "bronze.stream_events": ("stream", "date"),
    "bronze.quarantine": ("interval_start",),
    **dict.fromkeys(
        (
            "silver.key_group_load",
            "silver.key_load",
            "silver.worker_load",
            "silver.version_load",
            "silver.partition_load",
            "silver.key_group_flow",
        ),
        ("date",),
    ),
    "silver.worker_capacity": ("interval_start",),
    "gold.plans": ("interval_start",),
    "gold.plan_outcomes": ("interval_start",),
}


def register_tables(spark, tables: Tables, names: Iterable[str] = TABLE_NAMES) -> dict[str, str]:
    """Name the home's Delta tables in the session's catalog, so ``SELECT … FROM
    bronze.stream_events`` works, and write ``tables.catalog_file`` for ``spark-sql -i``.

    Each one that exists becomes an external table at its location (dropping it never deletes
    data); a name registered at another location (another home) is dropped and registered
    again; a table not made yet is skipped, and its stale name dropped. Returns each name's
    action: ``registered``, ``kept``, ``moved``, ``dropped`` or ``absent``. Called by the
    publish and maintain jobs, not by every job: the names live only as long as the session's
    catalog (in memory unless the session has a metastore), the file outlives it."""
    actions: dict[str, str] = {}
    lines = [
        "-- routeplan's Delta tables by name: spark-sql -i <this file> (see docs/operating.md)"
    ]
    for layer in dict.fromkeys(name.split(".")[0] for name in names):
        where = storage.spark_uri(storage.join(tables.home, "warehouse", layer))
        statement = f"CREATE SCHEMA IF NOT EXISTS {layer} LOCATION '{where}'"
        spark.sql(statement)
        lines.append(statement + ";")
    for name in names:
        location = tables.path(name)
        registered = _registered_location(spark, name)
        exists = table_exists(tables, name)
        stale = registered is not None and (registered != _plain(location) or not exists)
        if stale:
            spark.sql(f"DROP TABLE {name}")  # an external table (checked): its files stay
        if not exists:
            actions[name] = "dropped" if stale else "absent"
            continue
        statement = f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{location}'"
        lines.append(statement + ";")
        if registered is not None and not stale:
            actions[name] = "kept"
            continue
        spark.sql(statement)
        actions[name] = "moved" if stale else "registered"
    storage.write_text(tables.catalog_file, "\n".join(lines) + "\n")
    return actions


def _registered_location(spark, name: str) -> str | None:
    """Where the session's catalog says the table ``name`` lives (``_plain``), None when it
    names no such table; a ``RuntimeError`` for a managed table (dropping it would delete its
    data: routeplan registers only external ones)."""
    if not spark.catalog.tableExists(name):
        return None
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    detail = {r["col_name"]: r["data_type"] for r in rows}
    if detail.get("Type", "").upper() != "EXTERNAL":
        raise RuntimeError(
            f"{name} is a {detail.get('Type', 'unknown').lower()} table in the catalog, not an "
            "external one: routeplan will not drop it; rename or drop it yourself"
        )
    return _plain(detail["Location"])


def _plain(location: str) -> str:
    """A location as Spark's catalog and ``Tables.path`` both spell it: ``file:`` dropped."""
    if location.startswith("file:"):
        location = "/" + location.removeprefix("file:").lstrip("/")
    return location.rstrip("/")


def log(stage: str, message: str) -> None:
    print(f"[routeplan {stage}] {message}", flush=True)


def finish_stage(args: RunArgs, stage: str, report: dict[str, Any], show: bool = True) -> dict:
    """How a stage's job ends: ``report`` written where the DAG's tasks read it (``Tables.
    write_report``) and, with ``show``, logged as JSON; the report."""
    args.tables.write_report(args.interval_start, stage, report)
    if show:
        log(stage, json.dumps(report, default=str))
    return report
