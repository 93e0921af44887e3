"""ingest: landing files of a data interval → Delta ``bronze.stream_events`` (+ quarantine).

Reads ``<landing>/<YYYY-MM-DD>/**`` for each day of the interval: JSON Lines, CSV (with a header
row, RFC 4180 quoting, fields may span lines) or Parquet, optionally gzip; each file once, by its
exact name (``source_file``: ``file:`` + its absolute path or its ``s3a://`` URI, literally).
Lines end at LF or CRLF; a JSON Lines record is at most 16 MiB (``jobs.landing_read``). Every row
ends up in exactly one place:

* ``bronze.stream_events`` (partitioned by stream and date) — a row exactly as
  ``schemas/stream_event.schema.json`` allows it, first of its event_id; strings stored as given
  (never trimmed, never re-encoded);
* ``bronze.quarantine`` — the raw row and the reason: not a record, invalid UTF-8, a field of the
  wrong type or out of range, an invalid stream/worker name, duplicate event_id, event time outside
  the interval. A row that is not UTF-8 is kept as bytes in ``raw_bytes`` — a JSON line's or CSV
  record's, or for Parquet (no bytes per row) the value's, its column named in the reason —
  and ``raw`` holds it with U+FFFD in place of the bad bytes, so every reader can load the table.
  A reason is a fixed code, ``": "`` and a one-line detail (the report counts by code);
* not selected — a valid row of a stream the run was not asked for (counted, left for its run).

A landing file that cannot be read at all (unknown type, corrupt gzip or Parquet, Parquet columns
whose names differ only in case, a CSV header that is not UTF-8 or names a column twice; a
symlink that is broken, loops or leads out of the landing folder, a FIFO: see ``jobs.landing``)
goes to quarantine whole — one row naming the file and the reason — and the rest of the day
proceeds, unless more than ``--max-bad-files`` files are bad
or more than ``--max-quarantined-share`` of the rows are quarantined: then the tables are still
written (so the quarantine can be inspected) and the job fails naming every offending file.

Types follow JSON Schema: a JSON value must have the schema's type (``"12"`` is not an integer,
``3.0`` and ``3e0`` are, ``3.00000000001`` is not: decided on the number as written, never after
a rounding conversion; a number beyond its field's range, ``1e400`` or NaN, is quarantined like
any invalid value); CSV fields and Parquet string columns are text, read as the field's type (JSON
number syntax for numbers; empty = absent); Parquet numeric and timestamp columns are typed
values. ``null`` means absent. Rerunning an interval replaces its rows in both tables.

The job's parts: ``jobs.landing`` (the landing files and the whole-file checks),
``jobs.landing_read`` (each format read as one raw frame), ``jobs.event_rules`` (the
stream-event fields and each row's typed values and reason), ``jobs.accounting`` (duplicates and
the rows by outcome), ``jobs.bronze`` (the writes, the report and the thresholds).
"""

from __future__ import annotations

from jobs.accounting import read_and_count
from jobs.bronze import check_thresholds, outcome_report, write_bronze
from jobs.common import (
    RunArgs,
    finish_stage,
    location_arg,
    log,
    run_args,
    run_parser,
    spark_session,
)
from jobs.landing import landing_files, probe, unreadable_file


def ingest(spark, args: RunArgs, landing: str) -> dict:
    """Ingest the interval's landing files under ``landing``; the report."""
    files = {f.uri: f for f in landing_files(landing, args)}
    report = {
        "stage": "ingest",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "interval_end": args.interval_end,
        "landing": str(landing),
        "files": len(files),
    }
    if not files:
        raise SystemExit(
            f"no landing files for {args.interval_start}..{args.interval_end} under {landing} "
            f"(expected <landing>/<YYYY-MM-DD>/*.jsonl|csv|parquet[.gz])"
        )
    bad: dict[str, str] = {}  # uri → why the file cannot be read
    needs: dict[str, object] = {}
    for uri, file in files.items():
        reason, needs[uri] = probe(file)
        if reason:
            bad[uri] = reason
    while True:  # Spark finds damage deep inside a file: set the file aside and read again
        readable = [f for uri, f in files.items() if uri not in bad]
        try:
            rows, cached, counts = read_and_count(spark, args, readable, needs)
            break
        except Exception as error:  # noqa: BLE001 - re-raised unless a landing file caused it
            found = unreadable_file(error, files)
            if found is None or found[0] in bad:
                raise
            bad[found[0]] = found[1]
            log("ingest", f"set aside {found[0]}: {found[1]}")
    write_bronze(spark, args, rows, bad)
    for frame in cached:
        frame.unpersist()
    report.update(outcome_report(spark, args, counts, bad))
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--landing", help="landing folder or URI (default <home>/landing)")
    parser.add_argument(
        "--max-bad-files",
        type=int,
        default=5,
        help="fail the day when more landing files than this cannot be read (default 5)",
    )
    parser.add_argument(
        "--max-quarantined-share",
        type=float,
        default=0.1,
        help="fail the day when a larger share of the rows is quarantined (default 0.1)",
    )
    ns = parser.parse_args(argv)
    if ns.max_bad_files < 0 or not 0 <= ns.max_quarantined_share <= 1:
        parser.error("--max-bad-files must be >= 0 and --max-quarantined-share in [0, 1]")
    args = run_args(ns)
    landing = location_arg(ns.landing) if ns.landing else args.tables.landing
    spark = spark_session("ingest")
    report = ingest(spark, args, landing)
    finish_stage(args, "ingest", report)
    check_thresholds(report, ns.max_bad_files, ns.max_quarantined_share)
    return report


if __name__ == "__main__":
    main()
