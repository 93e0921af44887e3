"""plan: window loads → candidate plans in Delta ``gold.plans``.

For each stream: the loads of the planning window (the peak window by default, or the whole
interval), the current published table (LATEST) and the workers file go through the chosen
strategy and the baseline of its kind (``routeplan.planning``). Every candidate is written with
its predicted metrics (Delta column ``metrics``) and moves; the chosen one is ``selected``.

The strategy's ``kind`` says what it plans from: a ``key_routing`` strategy a ``LoadSnapshot``
of key groups and hot keys (``silver.key_group_load``, ``silver.key_load``), beside the ``kg``
baseline; a ``partition_assignment`` strategy (paper 002: ``mwf``, ``bfd``, …) a
``PartitionLoad`` from ``silver.partition_load`` (bytes/s), beside the ``kafka_range`` baseline.
The load metrics not planned on go along as resources (``milp``'s ``resource_bounds``); ``albic``
also gets ``silver.key_group_flow`` (paper 004).

The budget (``--max-moves``, ``--max-migrated-load-share``, ``--max-migration-cost``,
``--migration-cost-unit``) binds the chosen strategy only; the baseline is planned without limits
(it honours none). A limit the strategy does not honour fails the job before Spark starts, as do
bad parameters. The deprecated ``max_migrations``, ``migration_cost`` and ``max_migration_cost``
strategy parameters become budget limits (``registry.budget_from_parameters``), each logged as a
deprecation warning.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from jobs.common import RunArgs, log, read_delta, run_args, run_parser, spark_session, write_delta
from jobs.workers import read_workers
from routeplan.model.hashing import DEFAULT_SEED
from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.plan import MIGRATION_COST_UNITS, Budget
from routeplan.model.table import RoutingTable
from routeplan.parsing import param_pair
from routeplan.planning.contract import check_budget
from routeplan.planning.metrics import observed_imbalance, table_imbalance
from routeplan.planning.registry import (
    budget_from_parameters,
    get_strategy,
    strategy_names,
    strategy_parameters,
)
from routeplan.publishing.store import RoutingStore

LOAD_METRICS = ("messages", "bytes", "cost_ms")
# planned beside the chosen strategy, by its kind; without budget limits (they honour none)
BASELINES = {"key_routing": "kg", "partition_assignment": "kafka_range"}
PLAN_COLUMNS = (
    "interval_start date, stream string, run_id string, strategy string, selected boolean, "
    "window_start timestamp, window_end timestamp, load_metric string, current_version int, "
    "observed_imbalance double, current_imbalance double, predicted_imbalance double, "
    "moves int, migrated_load_share double, metrics string, params string, "
    "table_document string, created_at timestamp"
)


def load_snapshot(spark, args: RunArgs, stream: str, options, kind: str):
    """The stream's loads of ``kind`` (a ``LoadSnapshot`` for key_routing, a ``PartitionLoad``
    for partition_assignment; None when no event named a partition), the window they cover, and
    the load per logged worker there (None when the interval has no data for the stream)."""
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
        span = summary.agg(
            F.min("window_start").alias("start"), F.max("window_end").alias("end")
        ).first()
        if span["start"] is None:
            return None
        window = (span["start"], span["end"])
    metric = options.load_metric
    logged = {
        r["worker"]: float(r["load"])
        for r in frames["worker_load"].groupBy("worker").agg(F.sum(metric).alias("load")).collect()
    }
    loads: Loads | None
    if kind == "partition_assignment":
        rates = partition_rates(spark, args, stream, options, window)
        loads = None if rates is None else PartitionLoad(stream, rates)
    else:
        loads = key_group_snapshot(spark, args, stream, options, window, frames)
    return loads, window, logged


def key_group_snapshot(spark, args: RunArgs, stream: str, options, window, frames) -> LoadSnapshot:
    """The ``LoadSnapshot`` of the window's key groups, hot keys (and flow, for ``albic``)."""
    from pyspark.sql import functions as F

    metric = options.load_metric
    load = np.zeros(options.num_key_groups)
    distinct_keys = np.zeros(options.num_key_groups)
    resources = {m: np.zeros(options.num_key_groups) for m in LOAD_METRICS if m != metric}
    for r in (
        frames["key_group_load"]
        .groupBy("key_group")
        .agg(
            F.sum(metric).alias("load"),
            F.sum("distinct_keys").alias("distinct_keys"),
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
        distinct_keys[r["key_group"]] = r["distinct_keys"]
        for m, values in resources.items():
            values[r["key_group"]] = r[m]
    hot = (
        frames["key_load"]
        .where(F.col("share") >= options.hot_key_min_share)
        .groupBy("key")
        .agg(F.sum(metric).alias("load"))
        .collect()
    )
    flow, anchors = (
        key_group_flow(spark, args, stream, options, window)
        if options.strategy == "albic"
        else (None, ())
    )
    return LoadSnapshot(
        stream=stream,
        key_group_load=load,
        hot_key_load={r["key"]: float(r["load"]) for r in hot},
        distinct_keys=distinct_keys,
        key_group_resources=resources,
        key_group_flow=flow,
        flow_anchors=anchors,
        hash_seed=options.hash_seed,
    )


def key_group_flow(spark, args: RunArgs, stream: str, options, window):
    """Messages into and out of the stream's key groups in the planning window(s), as
    ``(key_group_flow, flow_anchors)``: a key group of another stream is an anchor on the worker
    its LATEST table gives it (edges to streams not published yet are left out)."""
    from pyspark.sql import functions as F

    from routeplan.model.flow import flow_arrays

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
    top = frame.agg(F.max("partition").alias("top")).first()["top"]
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


PLAN_FIELDS = tuple(column.split()[0] for column in PLAN_COLUMNS.split(", "))


def plan_stream(spark, args: RunArgs, stream: str, options) -> list[dict]:
    """Plan one stream with the chosen strategy and the baseline of its kind; ``gold.plans``
    rows, by column name (``PLAN_FIELDS``)."""
    kind = options.chosen.kind
    found = load_snapshot(spark, args, stream, options, kind)
    if found is None:
        log("plan", f"{stream}: no windows in the interval, nothing to plan")
        return []
    loads, window, logged = found
    if loads is None:
        log("plan", f"{stream}: no event names a partition, nothing for {options.strategy}")
        return []
    workers = read_workers(options.workers_path, stream, logged)
    observed = observed_imbalance(logged, workers)
    latest = RoutingStore(args.tables.routing).load(stream)
    current = latest if latest is not None and latest.kind == kind else None
    if latest is not None and current is None:
        log("plan", f"{stream}: LATEST v{latest.version} is a {latest.kind} table: planning anew")
    current_imbalance = (
        table_imbalance(current, loads)
        if isinstance(current, RoutingTable)
        and isinstance(loads, LoadSnapshot)
        and current.num_key_groups == loads.num_key_groups
        else None
    )
    unlimited = Budget(time_limit_s=options.budget.time_limit_s)
    candidates = {options.strategy: options.budget}
    candidates.setdefault(BASELINES[kind], unlimited)
    rows = []
    now = datetime.now(UTC)
    for name, budget in candidates.items():
        # the baseline takes the chosen strategy's parameters it has (e.g. consumer_capacity)
        accepted = strategy_parameters(name)
        params = {k: v for k, v in options.strategy_params.items() if k in accepted}
        plan = get_strategy(name, **params).plan(loads, current, workers, budget)
        rows.append(
            {
                "interval_start": args.interval_start,
                "stream": stream,
                "run_id": args.run_id,
                "strategy": name,
                "selected": name == options.strategy,
                "window_start": window[0],
                "window_end": window[1],
                "load_metric": options.load_metric,
                "current_version": latest.version if latest else None,
                "observed_imbalance": observed,
                "current_imbalance": current_imbalance,
                "predicted_imbalance": float(plan.predicted["imbalance"]),
                "moves": int(plan.predicted["moves"]),
                "migrated_load_share": float(plan.predicted["migrated_load_share"]),
                # the predicted numbers; the column keeps its name so that gold.plans of earlier
                # runs (kept for other intervals) stay one table
                "metrics": json.dumps(plan.predicted),
                "params": json.dumps(dict(plan.table.params)),
                "table_document": json.dumps(plan.table.to_document()),
                "created_at": now,
            }
        )
        consumers = (
            f", {plan.predicted['consumers']:.0f} consumers "
            f"(bound {plan.predicted['lower_bound']:.0f})"
            if kind == "partition_assignment"
            else ""
        )
        log(
            "plan",
            f"{stream}: {name} predicted imbalance {plan.predicted['imbalance']:.4f} "
            f"(logged {observed:.4f}), {len(plan.moves)} moves{consumers}",
        )
    return rows


def checked_options(ns) -> None:
    """The strategy, its parameters and the budget, checked before Spark starts: bad parameters
    or a limit the strategy does not honour end the job with one line saying what to change.
    Sets ``ns.strategy_params``, ``ns.budget`` and ``ns.chosen`` (the strategy)."""
    import warnings

    if ns.strategy not in strategy_names():
        raise SystemExit(f"unknown strategy {ns.strategy!r}; known: {', '.join(strategy_names())}")
    given = {**parse_json_object(ns.params_json), **dict(ns.param)}
    try:
        budget = Budget(
            max_moves=ns.max_moves,
            max_migrated_load_share=ns.max_migrated_load_share,
            max_migration_cost=ns.max_migration_cost,
            migration_cost_unit=ns.migration_cost_unit or "moves",
        )
        params, budget, notes = budget_from_parameters(given, budget)
        for note in notes:
            log("plan", f"DeprecationWarning: {note}")
            warnings.warn(note, DeprecationWarning, stacklevel=2)
        chosen = get_strategy(ns.strategy, **params)
        check_budget(chosen, budget)
    except ValueError as err:  # UnhonouredLimitError is one
        raise SystemExit(f"plan refused: {err}") from None
    ns.strategy_params, ns.budget, ns.chosen = params, budget, chosen


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="cg", help=f"one of {', '.join(strategy_names())}")
    parser.add_argument(
        "--param",
        type=param_pair,
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
    parser.add_argument(
        "--max-moves", type=optional_int, help="budget: most moves; empty or None: no limit"
    )
    parser.add_argument(
        "--max-migrated-load-share",
        type=optional_float,
        help="budget: most share of the load moved, 0..1; empty or None: no limit",
    )
    parser.add_argument(
        "--max-migration-cost",
        type=optional_float,
        help="budget: most summed migration cost (in --migration-cost-unit); empty: no limit",
    )
    parser.add_argument(
        "--migration-cost-unit",
        type=migration_cost_unit,
        default="moves",
        help=f"what one move costs: {', '.join(MIGRATION_COST_UNITS)} (keys: distinct_keys)",
    )
    parser.add_argument("--workers-path")
    ns = parser.parse_args(argv)
    args = run_args(ns)
    checked_options(ns)  # before Spark starts
    ns.workers_path = Path(ns.workers_path) if ns.workers_path else args.tables.workers_file

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
    frame = spark.createDataFrame([tuple(r[f] for f in PLAN_FIELDS) for r in rows], PLAN_COLUMNS)
    write_delta(
        frame,
        args.tables,
        "gold.plans",
        args.interval_predicate("interval_start"),
        partition_by=("interval_start",),
    )
    report = {
        "stage": "plan",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "strategy": ns.strategy,
        "params": ns.strategy_params,
        "budget": ns.budget.limits(),
        "streams": {
            r["stream"]: {
                "observed_imbalance": r["observed_imbalance"],
                "predicted_imbalance": r["predicted_imbalance"],
                "moves": r["moves"],
                "current_version": r["current_version"],
            }
            for r in rows
            if r["selected"]
        },
    }
    args.tables.write_report(args.interval_start, "plan", report)
    log("plan", json.dumps(report, default=str))
    return report


def optional_int(text: str) -> int | None:
    return None if text in ("", "None", "null") else int(text)


def optional_float(text: str) -> float | None:
    return None if text in ("", "None", "null") else float(text)


def migration_cost_unit(text: str) -> str:
    """``--migration-cost-unit``: one of ``MIGRATION_COST_UNITS`` (``keys``, its old spelling, is
    ``distinct_keys``; empty: ``moves``)."""
    import argparse

    unit = {"": "moves", "None": "moves", "keys": "distinct_keys"}.get(text, text)
    if unit not in MIGRATION_COST_UNITS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(MIGRATION_COST_UNITS)}"
        )
    return unit


def parse_json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SystemExit(f"--params-json is not JSON: {err}") from None
    if not isinstance(value, dict):
        raise SystemExit("--params-json must be a JSON object")
    return value


if __name__ == "__main__":
    main()
