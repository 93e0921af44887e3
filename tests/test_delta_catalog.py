"""The Delta tables by name (register_tables, spark-sql -i), schema changes only by migration,
and gold.routing_tables recorded by MERGE."""

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from conftest import zipf_snapshot

from jobs.common import Tables, jars_dir, register_tables, write_delta
from jobs.migrations import MIGRATIONS, SchemaError
from jobs.publish import TABLE_COLUMNS, record_versions
from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
from routeplan.publishing.store import RoutingStore

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[1]
PLANS = "interval_start date, stream string, strategy string, selected boolean"


def write_plans(spark, tables: Tables, day: str, columns: str = PLANS, *extra) -> None:
    frame = spark.createDataFrame(
        [(date.fromisoformat(day), "clicks", "cg", True, *extra)], columns
    )
    write_delta(frame, tables, "gold.plans", f"interval_start = '{day}'")


def test_names_follow_the_home_and_never_delete_data(spark, tmp_path):
    first, second = Tables(tmp_path / "a"), Tables(tmp_path / "b")
    register_tables(spark, Tables(tmp_path / "empty"))  # names an earlier test gave: dropped
    write_plans(spark, first, "2026-11-20")
    actions = register_tables(spark, first)
    assert actions["gold.plans"] == "registered"
    assert actions["bronze.stream_events"] == "absent"  # not made yet: skipped
    assert spark.sql("SELECT stream FROM gold.plans").first()["stream"] == "clicks"
    assert register_tables(spark, first)["gold.plans"] == "kept"
    # another home: the name moves there (the first home's table is an external one: kept)
    write_plans(spark, second, "2026-11-21")
    write_plans(spark, second, "2026-11-22")
    assert register_tables(spark, second)["gold.plans"] == "moved"
    assert spark.sql("SELECT count(*) AS n FROM gold.plans").first()["n"] == 2
    assert spark.read.format("delta").load(first.path("gold.plans")).count() == 1
    # a home without the table: its stale name goes
    assert register_tables(spark, Tables(tmp_path / "c"))["gold.plans"] == "dropped"
    assert not spark.catalog.tableExists("gold.plans")
    assert spark.read.format("delta").load(second.path("gold.plans")).count() == 2
    sql = Path(first.catalog_file).read_text()
    assert (
        f"CREATE TABLE IF NOT EXISTS gold.plans USING delta LOCATION '{first.path('gold.plans')}';"
        in sql
    )
    assert "stream_events" not in sql


def test_spark_sql_reads_the_tables_by_name_from_the_catalog_file(spark, tmp_path):
    """The command line docs/operating.md gives: spark-sql with its own in-memory metastore (no
    Derby files, no lock shared with the jobs) and the home's catalog file as its init file."""
    tables = Tables(tmp_path)
    write_plans(spark, tables, "2026-11-20")
    register_tables(spark, tables)
    spark_sql = Path(sys.executable).parent / "spark-sql"
    command = [
        str(spark_sql),
        "--driver-class-path",
        f"{jars_dir()}/*",
        "--conf",
        "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "--conf",
        "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "--conf",
        "spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:memory:routeplan;create=true",
        "--conf",
        f"spark.sql.warehouse.dir={tmp_path}/warehouse",
        "--driver-java-options",
        "-Dderby.stream.error.file=/dev/null",
        "-i",
        tables.catalog_file,
        "-e",
        "SELECT stream, strategy FROM gold.plans",
    ]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["clicks", "cg"]
    assert not (tmp_path / "metastore_db").exists()


def test_a_migrated_column_is_added_to_an_old_table_before_the_write(spark, tmp_path):
    assert ("choice", "string") in MIGRATIONS["gold.plans"]
    tables = Tables(tmp_path)
    write_plans(spark, tables, "2026-11-20")  # as a release before `choice` wrote it
    write_plans(spark, tables, "2026-11-21", PLANS + ", choice string", "auto: lowest imbalance")
    rows = spark.read.format("delta").load(tables.path("gold.plans")).orderBy("interval_start")
    assert [r["choice"] for r in rows.collect()] == [None, "auto: lowest imbalance"]
    write_plans(spark, tables, "2026-11-21", PLANS + ", choice string", "again")  # idempotent
    assert rows.count() == 2


def test_a_column_no_migration_names_stops_the_write(spark, tmp_path):
    tables = Tables(tmp_path)
    write_plans(spark, tables, "2026-11-20")
    with pytest.raises(SchemaError, match=r"gold\.plans: column 'stray' is not in the table"):
        write_plans(spark, tables, "2026-11-21", PLANS + ", stray int", 1)
    table = spark.read.format("delta").load(tables.path("gold.plans"))
    assert "stray" not in table.columns and table.count() == 1


def test_versions_are_recorded_once(spark, tmp_path):
    tables = Tables(tmp_path)
    store = RoutingStore(tables.routing)
    snapshot = zipf_snapshot(keys=500, messages=5_000, num_key_groups=64)
    table = get_strategy("kg").plan(snapshot, None, Workers.homogeneous(4), Budget()).table
    store.publish(table, reason="first")
    assert record_versions(spark, tables, store, {("s", 1)}, "run-1", date(2026, 11, 20)) == 1
    store.publish(table, reason="second")
    assert record_versions(spark, tables, store, set(), "run-2", None) == 1
    assert record_versions(spark, tables, store, set(), "run-3", None) == 0
    rows = spark.read.format("delta").load(tables.path("gold.routing_tables"))
    assert sorted((r["version"], r["run_id"]) for r in rows.collect()) == [(1, "run-1"), (2, None)]
    assert rows.columns == [c.split()[0] for c in TABLE_COLUMNS.split(", ")]


def record_concurrently(spark, tables: Tables) -> list[int]:
    """Versions 2 and 3 recorded by two recorders that both read the table (holding v1) before
    either writes (a publish and a rollback at once); what each inserted."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    store = RoutingStore(tables.routing)
    snapshot = zipf_snapshot(keys=500, messages=5_000, num_key_groups=64)
    table = get_strategy("kg").plan(snapshot, None, Workers.homogeneous(4), Budget()).table
    store.publish(table, reason="first")
    record_versions(spark, tables, store, set(), "run-1", None)
    for reason in ("second", "third"):
        store.publish(table, reason=reason)
    barrier = Barrier(2)

    def record(run_id: str) -> int:
        barrier.wait()
        return record_versions(spark, tables, store, set(), run_id, None)

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(record, ["run-2", "run-3"]))


def test_concurrent_recorders_record_each_version_once(spark, tmp_path):
    """The MERGE inserts each version once, whichever recorder commits first."""
    tables = Tables(tmp_path)
    assert sum(record_concurrently(spark, tables)) == 2
    rows = spark.read.format("delta").load(tables.path("gold.routing_tables"))
    assert sorted(r["version"] for r in rows.collect()) == [1, 2, 3]


CONNECTED = """
import sys
from test_delta_catalog import Tables, record_concurrently
from jobs.common import is_connect, spark_session
spark = spark_session("tests")
assert is_connect(spark), type(spark)
tables = Tables(sys.argv[1])
inserted = record_concurrently(spark, tables)
rows = spark.read.format("delta").load(tables.path("gold.routing_tables")).collect()
print(sum(inserted), sorted(r["version"] for r in rows))
"""


def test_concurrent_recorders_through_spark_connect(spark_connect, tmp_path):
    """The same through a Spark Connect session, where the lost commit arrives as an error
    condition, not as Delta's Python class (a child Python: a Connect session would turn this
    process's PySpark functions remote)."""
    done = subprocess.run(
        [sys.executable, "-c", CONNECTED, str(tmp_path)],
        env={**os.environ, "SPARK_REMOTE": spark_connect["SPARK_REMOTE"],
             "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "2 [1, 2, 3]"
