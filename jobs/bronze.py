"""ingest's output: the interval's rows written to ``bronze.stream_events`` and
``bronze.quarantine`` (rows and unreadable files; a rerun replaces the interval in both), the
report's counts and quarantine breakdowns, and the thresholds that fail a day with too much bad
input (after the write, so the quarantine can be inspected)."""

from __future__ import annotations

from datetime import UTC, datetime

from jobs.accounting import reason_code
from jobs.common import RunArgs, read_delta, table_exists, write_deltas
from routeplan.model.names import spark_name_regex

# a bronze.stream_events row: the event's fields, its date, file and ingestion time
EVENT_COLUMNS = (
    "event_id",
    "ts",
    "date",
    "stream",
    "key",
    "partition",
    "worker",
    "size_bytes",
    "cost_ms",
    "upstream_stream",
    "upstream_key",
    "routing_version",
    "source_file",
)


class TooMuchBadInput(SystemExit):
    """The day has more bad input than the thresholds allow (the tables are written)."""


def write_bronze(spark, args: RunArgs, rows, bad: dict[str, str]) -> None:
    """Write the interval's ``rows`` (with ``reason`` and ``selected``; None: no readable file)
    and the unreadable files ``bad`` (uri → reason) to the bronze tables."""
    from pyspark.sql import functions as F

    tables = args.tables
    now = F.lit(datetime.now(UTC))
    if rows is not None:
        events = rows.where(F.col("selected") & F.col("reason").isNull()).select(
            *EVENT_COLUMNS, now.alias("ingested_at")
        )
        quarantined = rows.where(F.col("reason").isNotNull()).select(
            F.when(F.col("stream").rlike(spark_name_regex()), F.col("stream")).alias("stream"),
            "source_file",
            "raw",
            "raw_bytes",
            "reason",
        )
    else:
        events = quarantined = None
    files_out = spark.createDataFrame(
        [(None, uri, None, None, reason) for uri, reason in sorted(bad.items())],
        "stream string, source_file string, raw string, raw_bytes binary, reason string",
    )
    quarantine = files_out if quarantined is None else quarantined.unionByName(files_out)
    if events is None and table_exists(tables, "bronze.stream_events"):
        events = read_delta(spark, tables, "bronze.stream_events").limit(0)
    writes = {
        "bronze.quarantine": (
            quarantine.select(
                F.lit(args.interval_start).alias("interval_start"),
                "*",
                F.lit(args.run_id).alias("run_id"),
                now.alias("ingested_at"),
            ),
            f"interval_start = '{args.interval_start}'",
            ("interval_start",),
        )
    }
    if events is not None:
        writes["bronze.stream_events"] = (events, args.interval_predicate(), ("stream", "date"))
    write_deltas(tables, writes)


def outcome_report(spark, args: RunArgs, counts: dict[str, int], bad: dict[str, str]) -> dict:
    """The report's rows by outcome (``counts``, plus one quarantined row per unreadable file),
    the unreadable files, and the interval's quarantine by reason code (``reason_code``: the
    detail of a reason is in the table, never in a key) and by file (as written)."""
    from pyspark.sql import functions as F

    by_reason: dict[str, int] = {}
    by_file: dict[str, int] = {}
    for r in (  # one pass over the interval's quarantine for both breakdowns
        read_delta(spark, args.tables, "bronze.quarantine")
        .where(F.col("interval_start") == F.lit(args.interval_start))
        .groupBy("source_file", reason_code(F.col("reason")).alias("reason"))
        .agg(F.count("*").alias("n"))
        .collect()
    ):
        by_reason[r["reason"]] = by_reason.get(r["reason"], 0) + r["n"]
        by_file[r["source_file"]] = by_file.get(r["source_file"], 0) + r["n"]
    return {
        "rows_read": sum(counts.values()) + len(bad),
        "rows_written": counts.get("written", 0),
        "rows_quarantined": counts.get("quarantined", 0) + len(bad),
        "rows_not_selected": counts.get("not_selected", 0),
        "files_quarantined": [{"file": uri, "reason": r} for uri, r in sorted(bad.items())],
        "quarantined_by_reason": by_reason,
        "quarantined_by_file": by_file,
    }


def check_thresholds(report: dict, max_bad_files: int, max_share: float) -> None:
    """Fail the day, naming every offending file, when bad input passes the thresholds."""
    bad_files = report["files_quarantined"]
    if len(bad_files) > max_bad_files:
        listed = "\n  ".join(f"{f['file']}: {f['reason']}" for f in bad_files)
        raise TooMuchBadInput(
            f"ingest: {len(bad_files)} landing files cannot be read (max_bad_files = "
            f"{max_bad_files}); they are in bronze.quarantine:\n  {listed}"
        )
    read = report["rows_read"]
    share = report["rows_quarantined"] / read if read else 0.0
    if share > max_share:
        by_file = sorted(report["quarantined_by_file"].items(), key=lambda p: (-p[1], p[0]))
        listed = "\n  ".join(f"{file}: {n} rows" for file, n in by_file)
        raise TooMuchBadInput(
            f"ingest: {report['rows_quarantined']} of {read} rows quarantined ({share:.1%} > "
            f"max_quarantined_share = {max_share:.1%}); see bronze.quarantine, by file:\n"
            f"  {listed}"
        )
