"""windows: ``bronze.stream_events`` → per-window loads in Delta ``silver.*``.

Tumbling windows of ``--window-minutes``. For each stream and window:

* ``silver.key_group_load`` — messages, bytes, cost_ms, distinct_keys per key group
  (``routeplan.model.hashing.key_group``: the planner's unit);
* ``silver.key_load`` — the top keys: the ``--top-keys`` most loaded keys with their share;
* ``silver.worker_load`` — what each worker recorded in the logs processed, with distinct keys;
* ``silver.version_load`` — the same per routing version, for events that name the version of the
  routing table their producer routed them by (``routing_version``): what each published version
  did, measured by the outcomes job (``gold.plan_outcomes``);
* ``silver.partition_load`` — per partition, with the write rate in bytes/s (paper 002's input);
* ``silver.key_group_flow`` — messages from each upstream key group to each key group, from events
  that name the event they derive from (``upstream_key``, ``upstream_stream`` — default: the
  event's own stream): paper 004's communication between key groups;
* ``silver.worker_capacity`` — each logged worker's capacity in messages/s learnt from the
  interval's logs (``routeplan.model.capacity``: from ``cost_ms``, else its busiest windows),
  smoothed with the previous night's, with the evidence; one row per stream and worker, partitioned
  by ``interval_start``. Workers with too little evidence get no row and a line in the job log;
* ``silver.window_summary`` — totals and the observed imbalance on the logged workers
  (``routeplan.planning.metrics``; capacities from the workers file, ``auto`` ones learnt).

The report (``reports/<day>/windows.json``) has per stream its windows, messages, the busiest
window's imbalance (``peak_imbalance``) and the day's observed **peak excess**
(``peak_excess``: the largest load any logged worker carried in any window over its capacity,
relative to the busiest window's fair share, minus 1 — ``observed_peak_excess``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from jobs.common import (
    RunArgs,
    finish_stage,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    write_deltas,
)
from jobs.workers import CAPACITY_TABLE, workers_with_capacities
from routeplan.model.capacity import (
    DEFAULT_ALPHA,
    DEFAULT_BUSIEST_WINDOWS,
    DEFAULT_MIN_MESSAGES,
    CapacityEstimates,
    estimate_capacities,
)
from routeplan.model.hashing import DEFAULT_NUM_KEY_GROUPS, DEFAULT_SEED, key_groups
from routeplan.planning.metrics import observed_imbalance, observed_peak_excess
from routeplan.streams.attribution import UNRECORDED

LOADS = ("messages", "bytes", "cost_ms")
CAPACITY_COLUMNS = (
    "interval_start date, stream string, worker string, capacity double, "
    "observed_capacity double, method string, windows int, messages long, busy_seconds double, "
    "previous_capacity double, smoothing double, created_at timestamp"
)


@dataclass(frozen=True)
class CapacityOptions:
    """How ``silver.worker_capacity`` is estimated (``routeplan.model.capacity``)."""

    alpha: float = DEFAULT_ALPHA
    min_messages: int = DEFAULT_MIN_MESSAGES
    busiest_windows: int = DEFAULT_BUSIEST_WINDOWS


def key_group_column(column, num_key_groups: int, seed: int):
    """Spark column: the routeplan key group of ``column`` (Arrow-vectorised UDF)."""
    from pyspark.sql import functions as F

    def _key_group(keys: pd.Series) -> pd.Series:
        return pd.Series(key_groups(keys.tolist(), num_key_groups, seed), dtype="int32")

    return F.pandas_udf(_key_group, "int")(column)


def windows(
    spark,
    args: RunArgs,
    window_minutes: int,
    top_keys: int,
    num_key_groups: int,
    hash_seed: int,
    workers_path: str | None,
    capacity: CapacityOptions | None = None,
) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    tables = args.tables
    events = read_delta(spark, tables, "bronze.stream_events").where(args.interval_predicate())
    window = F.window("ts", f"{window_minutes} minutes")
    base = events.select(
        "stream",
        window.start.alias("window_start"),  # its end is added to the aggregates (`ended`)
        "key",
        "worker",
        "partition",
        F.col("size_bytes").alias("bytes"),
        F.coalesce("cost_ms", F.lit(0.0)).alias("cost_ms"),
        F.col("cost_ms").isNotNull().alias("costed"),
        *[  # bronze tables written before the upstream fields existed have none
            (F.col(c) if c in events.columns else F.lit(None).cast("string")).alias(c)
            for c in ("upstream_stream", "upstream_key")
        ],
        (
            F.col("routing_version")
            if "routing_version" in events.columns
            else F.lit(None).cast("int")
        ).alias("routing_version"),
    )
    sums = [
        F.count("*").alias("messages"),
        F.sum("bytes").alias("bytes"),
        F.sum("cost_ms").alias("cost_ms"),
    ]
    dims = ["stream", "window_start"]
    window_end = F.col("window_start") + F.expr(f"INTERVAL {window_minutes} MINUTES")

    def ended(df):  # the window's end after its start: the tables' column order
        rest = [c for c in df.columns if c not in (*dims, "window_end")]
        return df.select(*dims, window_end.alias("window_end"), *rest)

    with_date = lambda df: ended(df).withColumn("date", F.to_date("window_start"))  # noqa: E731

    def summed(*columns):  # an aggregate's columns added up again at a coarser grain
        return [F.sum(c).alias(c) for c in columns]

    costed = F.count(F.when(F.col("costed"), 1)).alias("costed_messages")
    # the one pass over the events: a row per key, worker and window (a key is on one worker,
    # or on a few when it is split, so this is hardly more rows than keys × windows)
    # (and routing version: the table the producer routed by, when the events name it)
    per_key_worker = (
        base.groupBy(*dims, "key", "worker", "routing_version").agg(*sums, costed).persist()
    )
    # one row per key and window, with its key group (the hash runs once per such row)
    per_key = (
        per_key_worker.groupBy(*dims, "key")
        .agg(*summed(*LOADS))
        .withColumn("key_group", key_group_column(F.col("key"), num_key_groups, hash_seed))
        .persist()
    )
    key_group_load = per_key.groupBy(*dims, "key_group").agg(
        *summed(*LOADS), F.count("*").alias("distinct_keys")
    )
    totals = per_key.groupBy(*dims).agg(*summed(*LOADS), F.count("*").alias("distinct_keys"))
    ranked = Window.partitionBy(*dims).orderBy(F.desc("messages"), "key")
    key_load = (
        per_key.withColumn("rank", F.row_number().over(ranked))
        .where(F.col("rank") <= top_keys)
        .join(totals.select(*dims, F.col("messages").alias("window_messages")), dims)
        .withColumn("share", F.col("messages") / F.col("window_messages"))
        .select(*dims, "key", *LOADS, "rank", "share", "key_group")
        .persist()
    )
    # what the workers did (silver.worker_load, capacities, the imbalance), from the same
    # aggregate: a worker's rows in a window are its distinct keys
    by_worker = ended(
        per_key_worker.groupBy(*dims, "worker").agg(
            *summed(*LOADS, "costed_messages"),
            F.count_distinct("key").alias("distinct_keys"),  # a key may come in two versions
        )
    ).persist()
    # what each routing version's traffic put on each worker (gold.plan_outcomes' realized)
    version_load = (
        per_key_worker.where(F.col("routing_version").isNotNull())
        .groupBy(*dims, "routing_version", F.coalesce("worker", F.lit(UNRECORDED)).alias("worker"))
        .agg(*summed(*LOADS))
    )
    worker_load = by_worker.select(
        *dims,
        F.coalesce("worker", F.lit(UNRECORDED)).alias("worker"),
        *LOADS,
        "distinct_keys",
    )
    partition_load = (
        base.where(F.col("partition").isNotNull())
        .groupBy(*dims, "partition")
        .agg(*sums)
        .withColumn("bytes_per_s", F.col("bytes") / F.lit(window_minutes * 60.0))
    )
    key_group_flow = (
        base.where(F.col("upstream_key").isNotNull())
        .groupBy(
            *dims,
            F.coalesce("upstream_stream", "stream").alias("upstream_stream"),
            "upstream_key",
            "key",
        )
        .agg(F.count("*").alias("messages"))
        .withColumn(
            "upstream_key_group",
            key_group_column(F.col("upstream_key"), num_key_groups, hash_seed),
        )
        .withColumn("key_group", key_group_column(F.col("key"), num_key_groups, hash_seed))
        .groupBy(*dims, "upstream_stream", "upstream_key_group", "key_group")
        .agg(F.sum("messages").alias("messages"))
    )
    worker_rows = by_worker.collect()  # small: a row per stream, window and worker
    logged = [r for r in worker_rows if r["worker"] is not None]
    learnt, learnt_rows = _worker_capacity(spark, args, logged, capacity or CapacityOptions())
    summary, peaks = _window_summary(spark, worker_rows, totals, key_load, workers_path, learnt)
    summary = summary.persist()
    where = args.interval_predicate()
    outputs = {
        "silver.key_group_load": key_group_load,
        "silver.key_load": key_load,
        "silver.worker_load": worker_load,
        "silver.partition_load": partition_load,
        "silver.key_group_flow": key_group_flow,
        "silver.version_load": version_load,
    }
    # all eight tables in one round: each table's Delta work overlaps the others'
    writes = {name: (with_date(frame), where, ("date",)) for name, frame in outputs.items()}
    writes["silver.window_summary"] = (with_date(summary), where, ())
    writes[CAPACITY_TABLE] = (
        learnt_rows,
        args.interval_predicate("interval_start"),
        ("interval_start",),
    )
    write_deltas(tables, writes)
    rows = summary.orderBy("stream", "window_start").collect()
    for frame in (summary, by_worker, key_load, per_key, per_key_worker):
        frame.unpersist()
    report = {
        "stage": "windows",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "window_minutes": window_minutes,
        "num_key_groups": num_key_groups,
        "hash_seed": hash_seed,
        "streams": {},
    }
    for row in rows:
        entry = report["streams"].setdefault(
            row["stream"], {"windows": 0, "messages": 0, "peak_imbalance": 0.0}
        )
        entry["windows"] += 1
        entry["messages"] += row["messages"]
        entry["peak_imbalance"] = max(entry["peak_imbalance"], row["imbalance"])
        entry["peak_excess"] = peaks.get(row["stream"])
    for stream, found in learnt.items():
        entry = report["streams"].setdefault(stream, {})
        entry["capacities"] = {w: round(c, 3) for w, c in found.capacities().items()}
        entry["capacities_not_estimated"] = sorted(found.skipped)
    return report


def _worker_capacity(
    spark, args: RunArgs, rows: list, options: CapacityOptions
) -> tuple[dict[str, CapacityEstimates], Any]:
    """Estimate each logged worker's capacity per stream from its per-window loads (``rows``:
    stream, window_start, window_end, worker, messages, costed_messages, cost_ms), smoothed with
    the latest estimate of an earlier interval. Returns ``(stream → CapacityEstimates, the
    interval's rows of silver.worker_capacity as a DataFrame)``. Workers without an estimate
    are logged, never silently left out."""
    by_stream: dict[str, list] = {}
    for r in rows:
        by_stream.setdefault(r["stream"], []).append(r)
    previous = _previous_capacities(spark, args)
    found: dict[str, CapacityEstimates] = {}
    out = []
    now = datetime.now(UTC)
    for stream, loads in sorted(by_stream.items()):
        estimates = estimate_capacities(
            [r["worker"] for r in loads],
            [r["messages"] for r in loads],
            [r["cost_ms"] or 0.0 for r in loads],
            [(r["window_end"] - r["window_start"]).total_seconds() for r in loads],
            [r["costed_messages"] for r in loads],
            previous=previous.get(stream, {}),
            alpha=options.alpha,
            min_messages=options.min_messages,
            busiest_windows=options.busiest_windows,
        )
        found[stream] = estimates
        for worker, reason in sorted(estimates.skipped.items()):
            log("windows", f"{stream}: {worker}: no capacity estimate ({reason})")
        for e in estimates.estimates.values():
            out.append(
                (
                    args.interval_start,
                    stream,
                    e.worker,
                    e.capacity,
                    e.observed_capacity,
                    e.method,
                    e.windows,
                    e.messages,
                    e.busy_seconds,
                    e.previous_capacity,
                    e.smoothing,
                    now,
                )
            )
    return found, spark.createDataFrame(out, CAPACITY_COLUMNS)


def _previous_capacities(spark, args: RunArgs) -> dict[str, dict[str, float]]:
    """Stream → worker → its latest capacity from an interval starting before this one (the
    smoothing's previous night); empty before the table exists."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not table_exists(args.tables, CAPACITY_TABLE):
        return {}
    latest = Window.partitionBy("stream", "worker").orderBy(F.desc("interval_start"))
    rows = (
        read_delta(spark, args.tables, CAPACITY_TABLE)
        .where(F.col("interval_start") < F.lit(args.interval_start))
        .withColumn("newest", F.row_number().over(latest))
        .where("newest = 1")
        .select("stream", "worker", "capacity")
        .collect()
    )
    previous: dict[str, dict[str, float]] = {}
    for r in rows:
        previous.setdefault(r["stream"], {})[r["worker"]] = float(r["capacity"])
    return previous


def _window_summary(
    spark,
    worker_rows: list,
    totals,
    key_load,
    workers_path: str | None,
    learnt: Mapping[str, CapacityEstimates],
):
    """Totals per window (``totals``), its top key (rank 1 of ``key_load``) and the observed
    imbalance over ``silver.worker_load``'s workers (``worker_rows``: stream, window_start,
    worker — None for unrecorded —, messages…); capacities ``auto`` are the ones just
    ``learnt``. With it, each stream's peak excess over the interval's windows (the report's
    ``peak_excess``)."""
    from pyspark.sql import functions as F

    loads: dict[tuple, dict[str, float]] = {}
    for r in worker_rows:
        worker = r["worker"] or UNRECORDED
        loads.setdefault((r["stream"], r["window_start"]), {})[worker] = float(r["messages"])
    imbalance_rows = []
    workers_of: dict[str, object] = {}
    for (stream, window_start), by_worker in loads.items():
        if stream not in workers_of:
            seen = {w for (s, _), ws in loads.items() if s == stream for w in ws}
            found = learnt.get(stream)
            workers_of[stream] = workers_with_capacities(
                workers_path, stream, seen, found.capacities() if found else {}
            )
        workers = workers_of[stream]
        imbalance_rows.append(
            (stream, window_start, observed_imbalance(by_worker, workers), len(by_worker))
        )
    imbalance = spark.createDataFrame(
        imbalance_rows, "stream string, window_start timestamp, imbalance double, workers int"
    )
    peaks = {
        stream: observed_peak_excess(
            [by_worker for (s, _), by_worker in loads.items() if s == stream], workers
        )
        for stream, workers in workers_of.items()
    }
    summary = totals.join(
        key_load.where("rank = 1").select(
            "stream",
            "window_start",
            F.col("key").alias("top_key"),
            F.col("share").alias("top_key_share"),
        ),
        ["stream", "window_start"],
        "left",
    ).join(imbalance, ["stream", "window_start"], "left")
    return summary, peaks


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--window-minutes", type=int, default=60)
    parser.add_argument(
        "--top-keys",
        "--heavy-hitters",  # its old name, read for one more release
        dest="top_keys",
        type=int,
        default=100,
        help="the most loaded keys kept per window (silver.key_load)",
    )
    parser.add_argument("--num-key-groups", type=int, default=DEFAULT_NUM_KEY_GROUPS)
    parser.add_argument("--hash-seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--workers-path", help="workers file (default <home>/config/workers.json)")
    parser.add_argument(
        "--capacity-alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help="weight of tonight's capacity estimate against the previous night's, in (0, 1]",
    )
    parser.add_argument(
        "--capacity-min-messages",
        type=int,
        default=DEFAULT_MIN_MESSAGES,
        help="fewer messages behind a worker's estimate: no capacity learnt for it",
    )
    parser.add_argument(
        "--capacity-busiest-windows",
        type=int,
        default=DEFAULT_BUSIEST_WINDOWS,
        help="windows the fallback without cost_ms measures throughput in",
    )
    ns = parser.parse_args(argv)
    args = run_args(ns)
    if not 1 <= ns.window_minutes <= 24 * 60 or (24 * 60) % ns.window_minutes:
        raise SystemExit("--window-minutes must divide a day (1..1440), e.g. 15, 30, 60")
    if not 0 < ns.capacity_alpha <= 1:
        raise SystemExit(f"--capacity-alpha must be in (0, 1], got {ns.capacity_alpha}")
    if ns.capacity_min_messages < 1 or ns.capacity_busiest_windows < 1:
        raise SystemExit("--capacity-min-messages and --capacity-busiest-windows must be >= 1")
    workers_path = ns.workers_path or args.tables.workers_file
    spark = spark_session("windows")
    report = windows(
        spark,
        args,
        ns.window_minutes,
        ns.top_keys,
        ns.num_key_groups,
        ns.hash_seed,
        workers_path,
        CapacityOptions(ns.capacity_alpha, ns.capacity_min_messages, ns.capacity_busiest_windows),
    )
    finish_stage(args, "windows", report)
    return report


if __name__ == "__main__":
    main()
