"""maintain: keep every routeplan Delta table small and its history bounded (weekly).

For each table of the home that exists: its migrations (``jobs/migrations.py``), the retention
properties set when missing (``delta.logRetentionDuration``: how long the log keeps the
history time travel reads, default 30 days; ``delta.deletedFileRetentionDuration``: how long a
replaced data file stays for readers and time travel, default 7 days), OPTIMIZE (small files
compacted) and VACUUM with the table's own retention, ``PARALLEL_TABLES`` tables at a time
(15 tables of the demo's home: 90 s one after another, 74 s four at a time, in process on 2
cores). Then the tables are named in the catalog
(``register_tables``). The report, ``<home>/reports/<day>/maintain.json``, has each table's
files in its current version, and all its data files and bytes on storage, before and after.

A deleted-file retention below Delta's safety threshold (7 days) is refused unless the session
disables Delta's own check (``spark.databricks.delta.retentionDurationCheck.enabled=false``): a
VACUUM with less can delete files a running job or a reader still needs.
"""

from __future__ import annotations

import argparse
import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from jobs.common import (
    TABLE_NAMES,
    Tables,
    add_home_argument,
    add_run_id_argument,
    location_arg,
    log,
    register_tables,
    spark_session,
    table_exists,
    upgrade_table,
)
from routeplan import storage

LOG_RETENTION = "30 days"
DELETED_FILE_RETENTION = "7 days"
SAFE_RETENTION_HOURS = 168  # Delta's retentionDurationCheck: 7 days
HOURS = {"hours": 1, "days": 24}
RETENTION_PROPERTIES = ("delta.logRetentionDuration", "delta.deletedFileRetentionDuration")
PARALLEL_TABLES = 4  # tables maintained at once
RETENTION_PATTERN = r"[0-9]{1,6} (days|hours)"  # the job's arguments, the DAG's Params


def retention(text: str) -> str:
    """A retention argument, ``"<N> days"`` or ``"<N> hours"`` (N ≥ 0), as given."""
    if not re.fullmatch(RETENTION_PATTERN, text):
        raise argparse.ArgumentTypeError(f"{text!r} is not '<N> days' or '<N> hours'")
    return text


def retention_hours(text: str) -> int:
    """``"7 days"`` → 168 (also Delta's ``"interval 7 days"``)."""
    number, unit = text.removeprefix("interval ").split()
    return int(number) * HOURS[unit]


def maintain(
    spark,
    tables: Tables,
    log_retention: str = LOG_RETENTION,
    deleted_file_retention: str = DELETED_FILE_RETENTION,
) -> dict[str, dict]:
    """Maintain every table of ``tables`` that exists; its report entry per table name."""
    check_enabled = spark.conf.get(
        "spark.databricks.delta.retentionDurationCheck.enabled", "true"
    ).lower()
    if retention_hours(deleted_file_retention) < SAFE_RETENTION_HOURS and check_enabled != "false":
        raise SystemExit(
            f"deleted-file retention {deleted_file_retention!r} is below Delta's safe "
            f"{SAFE_RETENTION_HOURS} hours: VACUUM could delete files a reader still needs"
        )
    wanted = dict(zip(RETENTION_PROPERTIES, (log_retention, deleted_file_retention), strict=True))
    present = [name for name in TABLE_NAMES if table_exists(tables, name)]
    # A few tables at a time: one table's driver-side work (listing its files, its log, its
    # commits) overlaps another's Spark jobs; each table's commands stay in order.
    with ThreadPoolExecutor(max_workers=PARALLEL_TABLES, thread_name_prefix="maintain") as pool:
        entries = list(pool.map(lambda name: maintain_table(spark, tables, name, wanted), present))
    return dict(zip(present, entries, strict=True))


def maintain_table(spark, tables: Tables, name: str, wanted: dict[str, str]) -> dict:
    """Migrations, missing retention properties, OPTIMIZE and VACUUM of one table (Delta's SQL
    commands: a Spark Connect session runs them as a classic one does)."""
    path = tables.path(name)
    table = f"delta.`{path}`"
    added = upgrade_table(spark, tables, name)
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    properties = detail["properties"]
    missing = {k: f"interval {v}" for k, v in wanted.items() if k not in properties}
    if missing:
        settings_sql = ", ".join(f"'{k}' = '{v}'" for k, v in missing.items())
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({settings_sql})")
    before = data_files(path)
    compacted = spark.sql(f"OPTIMIZE {table}").first()["metrics"]
    spark.sql(f"VACUUM {table}")  # with the table's delta.deletedFileRetentionDuration
    after = data_files(path)
    detail_after = spark.sql(f"DESCRIBE DETAIL {table}").first()
    properties = detail_after["properties"]
    entry = {
        "columns_added": added,
        "properties_set": sorted(missing),
        "retention": {k: properties.get(k) for k in RETENTION_PROPERTIES},
        "files_compacted": compacted["numFilesRemoved"],
        "files_written": compacted["numFilesAdded"],
        # the files the table's current version reads: what a query opens
        "current_files_before": detail["numFiles"],
        "current_files_after": detail_after["numFiles"],
        # every data file on storage, old versions' included: what VACUUM deletes from
        "files_before": before[0],
        "bytes_before": before[1],
        "files_after": after[0],
        "bytes_after": after[1],
    }
    log("maintain", f"{name}: {entry}")
    return entry


def data_files(location: str) -> tuple[int, int]:
    """``(files, bytes)`` of the table's data files on storage, old versions' included: what
    VACUUM leaves. Hidden ones are not counted, as Delta does not: a name starting with ``_``
    (the log) or ``.`` (a local file system's checksums) anywhere in the path."""
    fs, path = storage.filesystem(location)
    base = path.rstrip("/")
    sizes = [
        info["size"]
        for name, info in fs.find(path, detail=True).items()
        if not any(part.startswith(("_", ".")) for part in name[len(base) + 1 :].split("/"))
    ]
    return len(sizes), sum(sizes)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_home_argument(parser)
    parser.add_argument(
        "--log-retention",
        type=retention,
        default=LOG_RETENTION,
        help=f"delta.logRetentionDuration where missing (default {LOG_RETENTION!r})",
    )
    parser.add_argument(
        "--deleted-file-retention",
        type=retention,
        default=DELETED_FILE_RETENTION,
        help="delta.deletedFileRetentionDuration where missing, what VACUUM keeps (default "
        f"{DELETED_FILE_RETENTION!r}; at least 7 days)",
    )
    add_run_id_argument(parser)
    ns = parser.parse_args(argv)
    tables = Tables(location_arg(ns.home))
    spark = spark_session("maintain")
    started = datetime.now(UTC)
    maintained = maintain(spark, tables, ns.log_retention, ns.deleted_file_retention)
    report = {
        "stage": "maintain",
        "run_id": ns.run_id,
        "started_at": started,
        "tables": maintained,
        "catalog": register_tables(spark, tables),
        "catalog_file": tables.catalog_file,
    }
    tables.write_report(started.date(), "maintain", report)
    return report


if __name__ == "__main__":
    main()
