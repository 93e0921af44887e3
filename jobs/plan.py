"""plan: window loads → candidate plans in Delta ``gold.plans``.

Each stream is planned by its own policy (``routeplan.streams.policy``): the deployment's
``$ROUTEPLAN_HOME/config/streams.yaml`` (``--policies``) says its kind, strategy (or ``auto``)
with parameters, budget, load metric, planning window, workers and thresholds; a stream it does
not list gets its ``defaults``. Without the file every stream gets the command line's strategy
(``cg`` by default). ``--strategy``, ``--params-json`` and the budget flags, when given, override
the policies of this run's streams (the DAG's Trigger form); a strategy of another kind than a
stream's fails the job naming both.

For each stream: the loads of the planning window (the peak window by default, or the whole
interval), the current published table (LATEST) and the workers (the policy's inline list or the
workers file; ``auto`` capacities learnt from ``silver.worker_capacity``) go through the policy's
strategy — every candidate of an ``auto`` policy, the winner chosen by its goals in order
(``routeplan.streams.auto``) — and the baseline of its kind. Every candidate is written with its
predicted metrics (Delta column ``metrics``), its moves and ``choice``, why it was or was not
chosen; the chosen one is ``selected``.

The strategy's ``kind`` says what it plans from: a ``key_routing`` strategy a ``LoadSnapshot``
of key groups and hot keys (``silver.key_group_load``, ``silver.key_load``), beside the ``kg``
baseline; a ``partition_assignment`` strategy (paper 002: ``mwf``, ``bfd``, …) a
``PartitionLoad`` from ``silver.partition_load`` (bytes/s), beside the ``kafka_range`` baseline.
The load metrics not planned on go along as resources (``milp``'s ``resource_bounds``); ``albic``
also gets ``silver.key_group_flow`` (paper 004).

The budget binds the policy's strategies only; the baseline is planned without limits (it
honours none). A bad policy file, a limit a strategy does not honour and bad parameters fail the
job before Spark starts, with one line naming the file, the stream and the field. The deprecated
``max_migrations``, ``migration_cost`` and ``max_migration_cost`` strategy parameters become
budget limits (``registry.budget_from_parameters``), each logged as a deprecation warning.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from jobs.common import (
    RunArgs,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    write_delta,
)
from jobs.workers import learnt_capacities, resolve_workers
from routeplan import settings, storage
from routeplan.errors import InputError
from routeplan.model.capacity import resolve_capacities
from routeplan.model.hashing import DEFAULT_SEED
from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.plan import MIGRATION_COST_UNITS, Budget, Plan
from routeplan.model.table import RoutingTable, planning_load
from routeplan.model.workers import Workers
from routeplan.parsing import param_pair
from routeplan.planning.contract import check_budget, finish_plan, parameters
from routeplan.planning.metrics import observed_imbalance, table_imbalance
from routeplan.planning.registry import (
    budget_from_parameters,
    get_strategy,
    strategy_names,
    strategy_parameters,
)
from routeplan.publishing.store import RoutingStore
from routeplan.streams.auto import NoCandidateError, choose
from routeplan.streams.policy import (
    DEFAULT_GOALS,
    LOAD_METRICS,
    Policies,
    StreamPolicy,
    load_policies,
    policy_from_overrides,
)

# planned beside the chosen strategy, by its kind; without budget limits (they honour none)
BASELINES = {"key_routing": "kg", "partition_assignment": "kafka_range"}
PLAN_COLUMNS = (
    "interval_start date, stream string, run_id string, strategy string, selected boolean, "
    "window_start timestamp, window_end timestamp, load_metric string, current_version int, "
    "observed_imbalance double, current_imbalance double, predicted_imbalance double, "
    "moves int, migrated_load_share double, metrics string, params string, "
    "table_document string, created_at timestamp, choice string"
)


@dataclass(frozen=True)
class StreamOptions:
    """How one stream is planned in this run: its policy, and the run's key-group space."""

    policy: StreamPolicy
    num_key_groups: int
    hash_seed: int
    workers_path: str  # a location

    @property
    def planning_window(self) -> str:
        return self.policy.planning_window

    @property
    def load_metric(self) -> str:
        return self.policy.load_metric

    @property
    def hot_key_min_share(self) -> float:
        return self.policy.hot_key_min_share


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
        if "albic" in options.policy.strategies
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
    if not table_exists(spark, args.tables, name):
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


def plan_stream(spark, args: RunArgs, stream: str, options: StreamOptions) -> list[dict]:
    """Plan one stream by its policy (every candidate of ``auto``, the winner by its goals) and
    with the baseline of its kind; ``gold.plans`` rows, by column name (``PLAN_FIELDS``)."""
    policy = options.policy
    kind = policy.kind
    found = load_snapshot(spark, args, stream, options, kind)
    if found is None:
        log("plan", f"{stream}: no windows in the interval, nothing to plan")
        return []
    loads, window, logged = found
    if loads is None:
        log("plan", f"{stream}: no event names a partition, nothing for {policy.strategy}")
        return []
    workers = stream_workers(spark, args, stream, options, logged)
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
    plans, winner, reasons = policy_plans(stream, policy, loads, current, workers)
    baseline = BASELINES[kind]
    if baseline not in plans:
        # the baseline takes the policy's parameters it has (e.g. consumer_capacity)
        accepted = strategy_parameters(baseline)
        given = policy.params_of(winner)
        params = {k: v for k, v in given.items() if k in accepted}
        unlimited = Budget(time_limit_s=policy.budget.time_limit_s)
        plans[baseline] = get_strategy(baseline, **params).plan(loads, current, workers, unlimited)
        reasons[baseline] = f"the {kind} baseline, planned for comparison"
    rows = []
    now = datetime.now(UTC)
    for name, plan in plans.items():
        rows.append(
            {
                "interval_start": args.interval_start,
                "stream": stream,
                "run_id": args.run_id,
                "strategy": name,
                "selected": name == winner,
                "window_start": window[0],
                "window_end": window[1],
                "load_metric": policy.load_metric,
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
                "choice": reasons.get(name),
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


def policy_plans(
    stream: str, policy: StreamPolicy, loads: Loads, current, workers: Workers
) -> tuple[dict[str, Plan], str, dict[str, str]]:
    """The policy's plans (every candidate of ``auto``), the winner and why each was or was not
    chosen; LATEST alone, kept, when this run repeats the one that planned it (``rerun_of``)."""
    built = policy.build()
    kept = rerun_of(current, loads, workers, built)
    if kept is not None:
        log("plan", f"{stream}: {kept}")
        return (
            {current.strategy: finish_plan(current, loads, current)},
            current.strategy,
            {current.strategy: kept},
        )
    plans = {
        name: strategy.plan(loads, current, workers, policy.budget)
        for name, strategy in built.items()
    }
    if not policy.is_auto:
        return plans, policy.strategy, {policy.strategy: "the stream's policy names it"}
    try:
        choice = choose(
            plans,
            goals=policy.goals,
            imbalance_tolerance=policy.imbalance_tolerance,
            budget=policy.budget,
            workers=workers,
            current=current,
        )
    except NoCandidateError as err:
        raise SystemExit(f"plan refused: stream {stream!r}: {err}") from None
    log("plan", f"{stream}: auto chose {choice.winner} ({choice.decided_by}): {choice.reason}")
    return plans, choice.winner, choice_reasons(choice)


def rerun_of(current, loads: Loads, workers: Workers, built: dict) -> str | None:
    """Why LATEST is kept as it is when this run repeats the one that planned it — same loads
    (its ``planning_load``), same workers, a strategy of the policy with the same parameters —
    else None. A rerun of a day must not republish: a strategy applied to its own result may
    move more (paper 002's MWF, paper 004's one-pass Flux do; they are not fixed points)."""
    if current is None or current.strategy not in built:
        return None
    if not same_loads(current.planning_load, planning_load(loads)):
        return None
    if isinstance(current, RoutingTable) and current.workers != workers:
        return None
    given = parameters(built[current.strategy])  # None: derived when planning (e.g. C̄)
    if any(v is not None and current.params.get(k) != v for k, v in given.items()):
        return None
    return (
        f"LATEST v{current.version} was planned by {current.strategy} on these same loads, "
        "workers and parameters: kept"
    )


def same_loads(a, b) -> bool:
    """Two ``planning_load`` documents hold the same loads (to float rounding)."""
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            if set(x) != set(y) or not np.allclose([x[k] for k in x], [y[k] for k in x]):
                return False
        elif len(x) != len(y) or not np.allclose(x, y):
            return False
    return True


def choice_reasons(choice) -> dict[str, str]:
    """``gold.plans.choice`` of every ``auto`` candidate: the winner's reason, the others' (a
    hard goal broken, or beaten)."""
    reasons = {choice.winner: f"auto: {choice.reason}"}
    for verdict in choice.ranking:
        if verdict.strategy != choice.winner:
            why = f"broke a hard goal, {verdict.failed}" if verdict.failed else "beaten"
            reasons[verdict.strategy] = f"auto candidate, {why} ({choice.winner} won)"
    return reasons


def stream_workers(spark, args: RunArgs, stream: str, options: StreamOptions, logged) -> Workers:
    """The policy's inline workers (``auto`` capacities learnt from ``silver.worker_capacity``,
    in the units of the capacities it fixes), else the workers file's (``resolve_workers``)."""
    policy = options.policy
    if policy.workers is None:
        return resolve_workers(
            spark, args.tables, options.workers_path, stream, logged, args.interval_start
        )
    learn = [w.name for w in policy.workers if w.capacity is None]
    if not learn:
        return policy.to_workers()
    fixed = {w.name: w.capacity for w in policy.workers if w.capacity is not None}
    learnt = learnt_capacities(spark, args.tables, stream, args.interval_start)
    capacities, notes = resolve_capacities(fixed, learn, learnt)
    for note in notes:
        log("workers", f"{stream}: {note}")
    return policy.to_workers(capacities, fallback=1.0)


def stream_policies(ns, home: str | os.PathLike[str]) -> Policies | None:
    """The deployment's policies (``--policies``, default ``<home>/config/streams.yaml``); None
    when there is no file (every stream then gets the command line's strategy)."""
    path = ns.policies or settings.policies_file(home)
    if not storage.is_file(path):
        if ns.policies:
            raise SystemExit(f"plan refused: policy file {path} not found")
        log("plan", f"no policy file at {path}: every stream planned with --strategy")
        return None
    return load_policies(path)


def command_line_policy(ns, stream: str) -> StreamPolicy:
    """A stream's policy without a policy file: the command line's strategy (default ``cg``)."""
    name = ns.strategy or "cg"
    return StreamPolicy(
        stream=stream,
        kind=type(get_strategy(name)).kind,
        strategy=name,
        params=dict(ns.strategy_params),
        budget=ns.budget,
        load_metric=ns.load_metric or "messages",
        planning_window=ns.planning_window or "peak",
        imbalance_tolerance=0.10,
        hot_key_min_share=ns.hot_key_min_share,
        candidates=(),
        goals=DEFAULT_GOALS,
        workers=None,
    )


def policy_for(ns, policies: Policies | None, stream: str) -> StreamPolicy:
    """``stream``'s policy for this run: the file's (or the command line's), with the run's
    overrides (strategy and its parameters, budget limits, window, metric) applied."""
    if policies is None:
        policy = command_line_policy(ns, stream)
    else:
        policy = policies.for_stream(stream)
        limits = ns.budget.limits()
        if "max_migration_cost" in limits:
            limits["migration_cost_unit"] = ns.budget.migration_cost_unit
        if ns.strategy or ns.strategy_params or limits:
            policy = policy_from_overrides(
                policy,
                strategy=ns.strategy or None,
                params=ns.strategy_params or None,
                budget=limits or None,
                where=f"this run's overrides for stream {stream!r}",
            )
    changes = {
        "planning_window": ns.planning_window or policy.planning_window,
        "load_metric": ns.load_metric or policy.load_metric,
    }
    return replace(policy, **changes)


def checked_options(ns) -> None:
    """The run's overrides (strategy, its parameters, the budget), checked before Spark starts:
    a bad value ends the job with one line saying what to change. Sets ``ns.strategy_params``
    and ``ns.budget``."""
    import warnings

    if ns.strategy and ns.strategy not in strategy_names():
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
        if params and not ns.strategy:
            raise ValueError(
                "strategy parameters were given without a strategy: "
                + ", ".join(sorted(params))
                + " (set the strategy too, or put them in the stream's policy)"
            )
        if ns.strategy:
            check_budget(get_strategy(ns.strategy, **params), budget)
    except ValueError as err:  # UnhonouredLimitError is one
        raise SystemExit(f"plan refused: {err}") from None
    ns.strategy_params, ns.budget = params, budget


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--policies",
        default="",
        help="the streams' planning policies (YAML); empty: $ROUTEPLAN_HOME/config/streams.yaml",
    )
    parser.add_argument(
        "--strategy",
        default="",
        help=f"override the policies' strategy: one of {', '.join(strategy_names())}; "
        "empty: each stream's policy (without a policy file: cg)",
    )
    parser.add_argument(
        "--param",
        type=param_pair,
        action="append",
        default=[],
        metavar="K=V",
        help="strategy parameter, e.g. epsilon=0.01 (repeatable; needs --strategy)",
    )
    parser.add_argument("--planning-window", choices=("", "peak", "interval"), default="")
    parser.add_argument("--load-metric", choices=("", *LOAD_METRICS), default="")
    parser.add_argument("--num-key-groups", type=int, default=1024)
    parser.add_argument("--hash-seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--hot-key-min-share",
        type=float,
        default=0.001,
        help="without a policy file: heavy hitters above this share of the window are hot-key "
        "candidates (a policy's thresholds.hot_key_min_share otherwise)",
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
    try:  # every policy this run can use, with the run's overrides, before Spark starts
        policies = stream_policies(ns, args.tables.home)
        if policies is not None and args.streams:
            policies.check_streams(args.streams)
        named = args.streams or (tuple(policies.streams) if policies is not None else ())
        chosen = {s: policy_for(ns, policies, s) for s in named}
        if policies is not None and not args.streams:
            policy_for(ns, policies, "unlisted")  # what the streams the file does not list get
    except InputError as err:  # PolicyError is one: it names the file, the stream, the field
        raise SystemExit(f"plan refused: {err}") from None
    workers_path = ns.workers_path or args.tables.workers_file

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
    try:
        for stream in streams:
            if stream not in chosen:
                if policies is not None:
                    log("plan", f"{stream}: not in {policies.path}: planned with its defaults")
                chosen[stream] = policy_for(ns, policies, stream)
    except InputError as err:
        raise SystemExit(f"plan refused: {err}") from None
    rows = [
        row
        for stream in streams
        for row in plan_stream(
            spark,
            args,
            stream,
            StreamOptions(chosen[stream], ns.num_key_groups, ns.hash_seed, workers_path),
        )
    ]
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
        "policies": str(policies.path) if policies is not None else None,
        "streams": {
            r["stream"]: {
                "kind": chosen[r["stream"]].kind,
                "policy": chosen[r["stream"]].strategy,
                "strategy": r["strategy"],
                "choice": r["choice"],
                "params": json.loads(r["params"]),
                "budget": chosen[r["stream"]].budget.limits(),
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
