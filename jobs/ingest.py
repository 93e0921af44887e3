"""ingest: landing files of a data interval → Delta ``bronze.stream_events`` (+ quarantine).

Reads ``<landing>/<YYYY-MM-DD>/**`` for each day of the interval: JSON Lines, CSV (with a header
row) or Parquet, optionally gzip. Every row ends up in exactly one place:

* ``bronze.stream_events`` (partitioned by stream and date) — valid, first of its event_id;
* ``bronze.quarantine`` — the raw row and the reason: malformed, missing/invalid field, duplicate
  event_id, event time outside the interval;
* not selected — a valid row of a stream the run was not asked for (counted, left for its run).

Rerunning an interval replaces its rows in both tables. Columns and types come from
``schemas/stream_event.schema.json``.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

from jobs.common import RunArgs, log, read_delta, run_args, run_parser, spark_session, write_delta
from routeplan.schemas import load_schema

SUFFIXES = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}


def event_fields() -> list[str]:
    """The stream-event fields, in schema order."""
    return list(load_schema("stream_event")["properties"])


def landing_files(landing: Path, args: RunArgs) -> dict[str, list[str]]:
    """Files per format under the interval's day folders (hidden files are skipped)."""
    found: dict[str, list[str]] = {}
    for day in args.days():
        folder = landing / day.isoformat()
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.name.startswith((".", "_")):
                continue
            suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
            fmt = SUFFIXES.get(suffixes[0] if suffixes else "")
            if fmt is None:
                raise SystemExit(f"unknown landing file type: {path} (expected {sorted(SUFFIXES)})")
            found.setdefault(fmt, []).append(str(path))
    return found


def _csv_header(path: str) -> list[str]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return [h.strip() for h in handle.readline().rstrip("\n").split(",")]


def read_raw(spark, files: dict[str, list[str]]):
    """One DataFrame of string columns (the event fields) + ``raw``, ``source_file``,
    ``_corrupt`` (the raw text of rows the reader could not parse) — whatever the format."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    fields = event_fields()
    strings = StructType([StructField(f, StringType()) for f in fields])
    parts = []
    if "jsonl" in files:
        text = spark.read.text(files["jsonl"]).select(
            "value", F.col("_metadata.file_path").alias("source_file")
        )
        text = text.where(F.trim("value") != "")
        schema = StructType(strings.fields + [StructField("_corrupt", StringType())])
        parsed = F.from_json("value", schema, {"columnNameOfCorruptRecord": "_corrupt"})
        parts.append(
            text.select(parsed.alias("e"), "value", "source_file").select(
                *[F.col(f"e.{f}").alias(f) for f in fields],
                F.col("value").alias("raw"),
                "source_file",
                F.when(F.col("e._corrupt").isNotNull() | F.col("e").isNull(), F.col("value")).alias(
                    "_corrupt"
                ),
            )
        )
    by_header: dict[tuple[str, ...], list[str]] = {}
    for path in files.get("csv", []):
        by_header.setdefault(tuple(_csv_header(path)), []).append(path)
    for header, paths in by_header.items():
        schema = StructType(
            [StructField(h, StringType()) for h in header] + [StructField("_corrupt", StringType())]
        )
        frame = (
            spark.read.option("header", True)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", "_corrupt")
            .schema(schema)
            .csv(paths)
        )
        parts.append(
            frame.select(
                *[
                    (F.col(f) if f in header else F.lit(None).cast("string")).alias(f)
                    for f in fields
                ],
                F.coalesce("_corrupt", F.concat_ws(",", *[F.col(h) for h in header])).alias("raw"),
                F.col("_metadata.file_path").alias("source_file"),
                "_corrupt",
            )
        )
    if "parquet" in files:
        frame = spark.read.option("mergeSchema", True).parquet(*files["parquet"])
        present = set(frame.columns)
        parts.append(
            frame.select(
                *[
                    (F.col(f).cast("string") if f in present else F.lit(None).cast("string")).alias(
                        f
                    )
                    for f in fields
                ],
                F.to_json(F.struct(*frame.columns)).alias("raw"),
                F.col("_metadata.file_path").alias("source_file"),
                F.lit(None).cast("string").alias("_corrupt"),
            )
        )
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def classify(raw, args: RunArgs):
    """Typed events with ``reason`` (null for valid rows, else why the row is quarantined)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    blank = lambda c: F.col(c).isNull() | (F.trim(F.col(c)) == "")  # noqa: E731
    ts = F.when(
        F.col("ts").rlike(r"^-?\d+$"), F.timestamp_millis(F.col("ts").try_cast("long"))
    ).otherwise(F.try_to_timestamp(F.trim(F.col("ts"))))
    typed = raw.select(
        F.coalesce(F.nullif(F.trim("stream"), F.lit("")), F.lit("default")).alias("stream"),
        F.trim("key").alias("key"),
        ts.alias("ts"),
        F.col("partition").try_cast("int").alias("partition"),
        F.nullif(F.trim("worker"), F.lit("")).alias("worker"),
        F.coalesce(F.col("size_bytes").try_cast("long"), F.lit(1)).alias("size_bytes"),
        F.col("cost_ms").try_cast("double").alias("cost_ms"),
        F.nullif(F.trim("upstream_stream"), F.lit("")).alias("upstream_stream"),
        F.nullif(F.trim("upstream_key"), F.lit("")).alias("upstream_key"),
        F.coalesce(
            F.nullif(F.trim("event_id"), F.lit("")),
            F.sha2(
                F.concat_ws(  # nulls are skipped: rows without upstream fields hash as before
                    "\u0001",
                    "stream",
                    "key",
                    "ts",
                    "partition",
                    "worker",
                    "size_bytes",
                    "cost_ms",
                    "upstream_stream",
                    "upstream_key",
                ),
                256,
            ),
        ).alias("event_id"),
        F.col("ts").alias("ts_raw"),
        F.col("partition").alias("partition_raw"),
        F.col("size_bytes").alias("size_raw"),
        F.col("cost_ms").alias("cost_raw"),
        "raw",
        "source_file",
        "_corrupt",
    )
    start = datetime.combine(args.interval_start, datetime.min.time(), UTC)
    end = datetime.combine(args.interval_end, datetime.min.time(), UTC)
    reason = (
        F.when(F.col("_corrupt").isNotNull(), F.lit("malformed line: not parseable as a record"))
        .when(F.col("key").isNull() | (F.col("key") == ""), F.lit("missing key"))
        .when(blank("ts_raw"), F.lit("missing ts"))
        .when(F.col("ts").isNull(), F.concat(F.lit("unparseable ts: "), F.col("ts_raw")))
        .when(
            ~blank("partition_raw") & (F.col("partition").isNull() | (F.col("partition") < 0)),
            F.concat(F.lit("invalid partition: "), F.col("partition_raw")),
        )
        .when(
            ~blank("size_raw")
            & (F.col("size_raw").try_cast("long").isNull() | (F.col("size_bytes") < 0)),
            F.concat(F.lit("invalid size_bytes: "), F.col("size_raw")),
        )
        .when(
            ~blank("cost_raw")
            & (F.col("cost_ms").isNull() | (F.col("cost_ms") < 0) | F.isnan("cost_ms")),
            F.concat(F.lit("invalid cost_ms: "), F.col("cost_raw")),
        )
        .when(
            (F.col("ts") < F.lit(start)) | (F.col("ts") >= F.lit(end)),
            F.concat(
                F.lit(f"ts outside the data interval [{start:%Y-%m-%d}, {end:%Y-%m-%d}): "),
                F.col("ts_raw"),
            ),
        )
    )
    typed = typed.withColumn("reason", reason)
    # valid copies first: a broken copy of an event must not push its valid twin out
    first = Window.partitionBy("stream", "event_id").orderBy(
        F.col("reason").isNotNull(), "source_file", "raw"
    )
    rank = F.when(F.col("reason").isNull(), F.row_number().over(first))
    return typed.withColumn(
        "reason",
        F.coalesce(
            "reason",
            F.when(rank > 1, F.lit("duplicate event_id (the first copy was kept)")),
        ),
    )


def ingest(spark, args: RunArgs, landing: Path) -> dict:
    from pyspark.sql import functions as F

    tables = args.tables
    files = landing_files(landing, args)
    report = {
        "stage": "ingest",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "interval_end": args.interval_end,
        "landing": str(landing),
        "files": sum(len(v) for v in files.values()),
    }
    raw = read_raw(spark, files)
    if raw is None:
        raise SystemExit(
            f"no landing files for {args.interval_start}..{args.interval_end} under {landing} "
            f"(expected <landing>/<YYYY-MM-DD>/*.jsonl|csv|parquet[.gz])"
        )
    rows = classify(raw, args).withColumn("date", F.to_date("ts"))
    if args.streams:
        rows = rows.withColumn(
            "selected", F.col("stream").isin(list(args.streams)) | F.col("reason").isNotNull()
        )
    else:
        rows = rows.withColumn("selected", F.lit(True))
    rows = rows.persist()
    counts = {
        r["k"]: r["n"]
        for r in rows.groupBy(
            F.when(~F.col("selected"), "not_selected")
            .when(F.col("reason").isNull(), "written")
            .otherwise("quarantined")
            .alias("k")
        )
        .agg(F.count("*").alias("n"))
        .collect()
    }
    now = F.lit(datetime.now(UTC))
    events = rows.where(F.col("selected") & F.col("reason").isNull()).select(
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
        "source_file",
        now.alias("ingested_at"),
    )
    write_delta(
        events,
        tables,
        "bronze.stream_events",
        args.interval_predicate(),
        partition_by=("stream", "date"),
    )
    quarantine = rows.where(F.col("reason").isNotNull()).select(
        F.lit(args.interval_start).alias("interval_start"),
        "stream",
        "source_file",
        "raw",
        "reason",
        F.lit(args.run_id).alias("run_id"),
        now.alias("ingested_at"),
    )
    write_delta(
        quarantine,
        tables,
        "bronze.quarantine",
        f"interval_start = '{args.interval_start}'",
        partition_by=("interval_start",),
    )
    by_reason = {
        r["reason"]: r["n"]
        for r in read_delta(spark, tables, "bronze.quarantine")
        .where(F.col("interval_start") == F.lit(args.interval_start))
        .groupBy(F.regexp_replace("reason", ":.*", "").alias("reason"))
        .agg(F.count("*").alias("n"))
        .collect()
    }
    rows.unpersist()
    report.update(
        rows_read=sum(counts.values()),
        rows_written=counts.get("written", 0),
        rows_quarantined=counts.get("quarantined", 0),
        rows_not_selected=counts.get("not_selected", 0),
        quarantined_by_reason=by_reason,
    )
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--landing", help="landing directory (default <home>/landing)")
    ns = parser.parse_args(argv)
    args = run_args(ns)
    landing = Path(ns.landing).resolve() if ns.landing else args.home / "landing"
    spark = spark_session("ingest")
    report = ingest(spark, args, landing)
    args.tables.write_report(args.interval_start, "ingest", report)
    log("ingest", json.dumps(report, default=str))
    return report


if __name__ == "__main__":
    main()
