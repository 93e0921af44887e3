"""plan: window loads → candidate plans in Delta ``gold.plans``.

For each stream: the loads of the planning window (the peak window by default, or the whole
interval), the current published table (LATEST) and the workers file go through the chosen
strategy and the ``kg`` baseline (``routeplan.planning``). Every candidate is written with its
predicted metrics and moves; the chosen one is ``selected``. A partition strategy (paper 002:
``mwf``, ``bfd``, …) plans partitions onto consumers from ``silver.partition_load`` (bytes/s),
beside the ``kafka_range`` baseline. The load metrics not planned on go along as resources
(``milp``'s ``resource_bounds``); ``albic`` also gets ``silver.key_group_flow`` (paper 004).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from jobs.common import RunArgs, log, read_delta, run_args, run_parser, spark_session, write_delta
from jobs.workers import read_workers
from routeplan.model.hashing import DEFAULT_SEED
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.planning.metrics import observed_imbalance, table_imbalance
from routeplan.planning.partitions.strategies import PARTITION_BASELINE, PARTITION_STRATEGIES
from routeplan.planning.registry import get_strategy, strategy_names, strategy_parameters
from routeplan.publishing.store import RoutingStore

LOAD_METRICS = ("messages", "bytes", "cost_ms")
BASELINE = "kg"
PLAN_COLUMNS = (
    "interval_start date, stream string, run_id string, strategy string, selected boolean, "
    "window_start timestamp, window_end timestamp, load_metric string, current_version int, "
    "observed_imbalance double, current_imbalance double, predicted_imbalance double, "
    "moves int, migrated_load_share double, metrics string, params string, "
    "table_document string, created_at timestamp"
)


def load_snapshot(spark, args: RunArgs, stream: str, options):
    """The stream's LoadSnapshot, the window it covers, and the load per logged worker there
    (None when the interval has no data for the stream)."""
    from pyspark.sql import functions as F

    tables = args.tables
    where = args.interval_predicate() + f" AND stream = '{stream}'"
    summary = read_delta(spark, tables, "silver.window_summary").where(where)
    frames = {
        name: read_delta(spark, tables, f"silver.{name}").where(where)
        for name in ("key_group_load", "key_load", "worker_load")
    }
    if options.planning_window == "peak":
        chosen = summary.orderBy(F.desc("messages"), "window_start").first()
        if chosen is None:
            return None
        window = (chosen["window_start"], chosen["window_end"])
        frames = {
            name: frame.where(F.col("window_start") == F.lit(window[0]))
            for name, frame in frames.items()
        }
    else:
        span = summary.agg(F.min("window_start"), F.max("window_end")).first()
        if span[0] is None:
            return None
        window = (span[0], span[1])
    metric = options.load_metric
    load = np.zeros(options.num_key_groups)
    keys = np.zeros(options.num_key_groups)
    resources = {m: np.zeros(options.num_key_groups) for m in LOAD_METRICS if m != metric}
    for r in (
        frames["key_group_load"]
        .groupBy("key_group")
        .agg(
            F.sum(metric).alias("load"),
            F.sum("distinct_keys").alias("keys"),
            *[F.sum(m).alias(m) for m in resources],
        )
        .collect()
    ):
        if not 0 <= r["key_group"] < options.num_key_groups:
            raise SystemExit(
                f"{stream}: key group {r['key_group']} outside 0..{options.num_key_groups - 1}: "
                "the windows job ran with another --num-key-groups"
            )
        load[r["key_group"]] = r["load"]
        keys[r["key_group"]] = r["keys"]
        for m, values in resources.items():
            values[r["key_group"]] = r[m]
    hot = (
        frames["key_load"]
        .where(F.col("share") >= options.hot_key_min_share)
        .groupBy("key")
        .agg(F.sum(metric).alias("load"))
        .collect()
    )
    logged = {
        r["worker"]: float(r["load"])
        for r in frames["worker_load"].groupBy("worker").agg(F.sum(metric).alias("load")).collect()
    }
    flow, anchors = (
        key_group_flow(spark, args, stream, options, window)
        if options.strategy == "albic"
        else (None, ())
    )
    snapshot = LoadSnapshot(
        stream=stream,
        key_group_load=load,
        hot_key_load={r["key"]: float(r["load"]) for r in hot},
        distinct_keys=keys,
        key_group_resources=resources,
        key_group_flow=flow,
        flow_anchors=anchors,
        partition_load=(
            partition_rates(spark, args, stream, options, window)
            if options.strategy in PARTITION_STRATEGIES
            else None
        ),
        hash_seed=options.hash_seed,
    )
    return snapshot, window, logged


def key_group_flow(spark, args: RunArgs, stream: str, options, window):
    """Messages into and out of the stream's key groups in the planning window(s), as
    ``(key_group_flow, flow_anchors)``: a key group of another stream is an anchor on the worker
    its LATEST table gives it (edges to streams not published yet are left out)."""
    from pyspark.sql import functions as F

    from routeplan.planning.reassign.albic import flow_arrays

    name = "silver.key_group_flow"
    if not Path(args.tables.path(name), "_delta_log").is_dir():
        return None, ()
    frame = read_delta(spark, args.tables, name).where(
        args.interval_predicate() + f" AND (stream = '{stream}' OR upstream_stream = '{stream}')"
    )
    if options.planning_window == "peak":
        frame = frame.where(F.col("window_start") == F.lit(window[0]))
    rows = (
        frame.groupBy("stream", "upstream_stream", "upstream_key_group", "key_group")
        .agg(F.sum("messages").alias("messages"))
        .collect()
    )
    store, tables = RoutingStore(args.tables.routing), {}

    def end(other: str, group: int):
        if other == stream:
            return int(group)
        if other not in tables:
            tables[other] = store.load(other)
        table = tables[other]
        if table is None or table.num_key_groups != options.num_key_groups:
            return None
        return (f"{other}:{group}", table.key_group_worker[group])

    edges = []
    for r in rows:
        up = end(r["upstream_stream"], r["upstream_key_group"])
        down = end(r["stream"], r["key_group"])
        known = up is not None and down is not None
        if known and (isinstance(up, int) or isinstance(down, int)):  # one end is ours
            edges.append((up, down, float(r["messages"])))
    if not edges:
        return None, ()
    return flow_arrays(options.num_key_groups, edges)


def partition_rates(spark, args: RunArgs, stream: str, options, window) -> np.ndarray | None:
    """Write rate (bytes/s) of every partition seen in the interval: its rate in the planning
    window (peak), or its bytes over the whole interval's span; None when no event had one."""
    from pyspark.sql import functions as F

    frame = read_delta(spark, args.tables, "silver.partition_load").where(
        args.interval_predicate() + f" AND stream = '{stream}'"
    )
    top = frame.agg(F.max("partition")).first()[0]
    if top is None:
        return None
    if options.planning_window == "peak":
        rows = frame.where(F.col("window_start") == F.lit(window[0])).select(
            "partition", F.col("bytes_per_s").alias("rate")
        )
    else:
        seconds = (window[1] - window[0]).total_seconds()
        rows = frame.groupBy("partition").agg((F.sum("bytes") / F.lit(seconds)).alias("rate"))
    rates = np.zeros(top + 1)
    for r in rows.collect():
        rates[r["partition"]] = r["rate"]
    return rates


def plan_stream(spark, args: RunArgs, stream: str, options) -> list[tuple]:
    """Plan one stream with the chosen strategy and the baseline; rows for ``gold.plans``."""
    found = load_snapshot(spark, args, stream, options)
    if found is None:
        log("plan", f"{stream}: no windows in the interval, nothing to plan")
        return []
    snapshot, window, logged = found
    workers = read_workers(options.workers_path, stream, logged)
    observed = observed_imbalance(logged, workers)
    current = RoutingStore(args.tables.routing).load(stream)
    current_imbalance = (
        table_imbalance(current, snapshot)
        if current is not None and current.num_key_groups == snapshot.num_key_groups
        else None
    )
    budget = Budget(
        max_moves=options.max_moves, max_migrated_load_share=options.max_migrated_load_share
    )
    partitioned = options.strategy in PARTITION_STRATEGIES
    if partitioned and snapshot.partition_load is None:
        log("plan", f"{stream}: no event names a partition, nothing for {options.strategy}")
        return []
    rows = []
    now = datetime.now(UTC)
    for name in dict.fromkeys([options.strategy, PARTITION_BASELINE if partitioned else BASELINE]):
        # the baseline takes the chosen strategy's parameters it has (e.g. consumer_capacity)
        accepted = strategy_parameters(name)
        params = {k: v for k, v in options.strategy_params.items() if k in accepted}
        plan = get_strategy(name, **params).plan(snapshot, current, workers, budget)
        rows.append(
            (
                args.interval_start,
                stream,
                args.run_id,
                name,
                name == options.strategy,
                window[0],
                window[1],
                options.load_metric,
                current.version if current else None,
                observed,
                current_imbalance,
                float(plan.predicted["imbalance"]),
                int(plan.predicted["moves"]),
                float(plan.predicted["migrated_load_share"]),
                json.dumps(plan.predicted),
                json.dumps(dict(plan.table.params)),
                json.dumps(plan.table.to_document()),
                now,
            )
        )
        consumers = (
            f", {plan.predicted['consumers']:.0f} consumers "
            f"(bound {plan.predicted['lower_bound']:.0f})"
            if partitioned
            else ""
        )
        log(
            "plan",
            f"{stream}: {name} predicted imbalance {plan.predicted['imbalance']:.4f} "
            f"(logged {observed:.4f}), {len(plan.moves)} moves{consumers}",
        )
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="cg", help=f"one of {', '.join(strategy_names())}")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="strategy parameter, e.g. epsilon=0.01 (repeatable)",
    )
    parser.add_argument("--planning-window", choices=("peak", "interval"), default="peak")
    parser.add_argument("--load-metric", choices=LOAD_METRICS, default="messages")
    parser.add_argument("--num-key-groups", type=int, default=1024)
    parser.add_argument("--hash-seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--hot-key-min-share",
        type=float,
        default=0.001,
        help="heavy hitters above this share of the window are hot-key candidates",
    )
    parser.add_argument("--params-json", default="{}", help="strategy parameters as a JSON object")
    parser.add_argument("--max-moves", type=optional_int, help="empty or None: no limit")
    parser.add_argument("--max-migrated-load-share", type=float)
    parser.add_argument("--workers-path")
    ns = parser.parse_args(argv)
    args = run_args(ns)
    if ns.strategy not in strategy_names():
        raise SystemExit(f"unknown strategy {ns.strategy!r}; known: {', '.join(strategy_names())}")
    ns.strategy_params = {**parse_json_object(ns.params_json), **parse_params(ns.param)}
    ns.workers_path = (
        Path(ns.workers_path) if ns.workers_path else args.home / "config/workers.json"
    )
    get_strategy(ns.strategy, **ns.strategy_params)  # bad parameters fail before Spark starts

    spark = spark_session("plan")
    streams = args.streams or tuple(
        sorted(
            r["stream"]
            for r in read_delta(spark, args.tables, "silver.window_summary")
            .where(args.interval_predicate())
            .select("stream")
            .distinct()
            .collect()
        )
    )
    rows = [row for stream in streams for row in plan_stream(spark, args, stream, ns)]
    frame = spark.createDataFrame(rows, PLAN_COLUMNS)
    write_delta(
        frame,
        args.tables,
        "gold.plans",
        args.interval_predicate("interval_start").replace(
            f"interval_start < '{args.interval_end}'", f"interval_start < '{args.interval_end}'"
        ),
        partition_by=("interval_start",),
    )
    report = {
        "stage": "plan",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "strategy": ns.strategy,
        "params": ns.strategy_params,
        "streams": {
            r[1]: {
                "observed_imbalance": r[9],
                "predicted_imbalance": r[11],
                "moves": r[12],
                "current_version": r[8],
            }
            for r in rows
            if r[4]
        },
    }
    args.tables.write_report(args.interval_start, "plan", report)
    log("plan", json.dumps(report, default=str))
    return report


def optional_int(text: str) -> int | None:
    return None if text in ("", "None", "null") else int(text)


def parse_json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SystemExit(f"--params-json is not JSON: {err}") from None
    if not isinstance(value, dict):
        raise SystemExit("--params-json must be a JSON object")
    return value


def parse_params(pairs: list[str]) -> dict:
    """``["epsilon=0.01", "max_salt=32"]`` → ``{"epsilon": 0.01, "max_salt": 32}`` (JSON values)."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--param wants K=V, got {pair!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


if __name__ == "__main__":
    main()
