"""plan: window loads → candidate plans in Delta ``gold.plans``.

Each stream is planned by its own policy (``routeplan.streams.policy``): the deployment's
``$ROUTEPLAN_HOME/config/streams.yaml`` (``--policies``) says its kind, strategy (or ``auto``)
with parameters, budget, load metric, planning window, workers and thresholds; a stream it does
not list gets its ``defaults``. Without the file every stream gets the command line's strategy
(``cg`` by default). ``--strategy``, ``--params-json`` and the budget flags, when given, override
the policies of this run's streams (the DAG's Trigger form); a strategy of another kind than a
stream's fails the job naming both.

The job is an adapter: for each stream it turns Delta rows into plain values — the loads of the
planning window (the peak window by default, or the whole interval), the current published
table (LATEST), the workers (the policy's inline list or the workers file; ``auto`` capacities
learnt from ``silver.worker_capacity``) and the load each logged worker carried — and calls
``routeplan.streams.service.plan_stream``, which decides: the policy's strategy or every
candidate of ``auto`` ranked by its goals, the baseline of its kind, and the rerun rule (a rerun
on the same loads selects LATEST as it is). Every candidate is written to ``gold.plans`` with its
predicted metrics (column ``metrics``), its moves and ``choice``, why it was or was not chosen;
the chosen one is ``selected``. A rerun of an interval replaces its rows with the rerun's
complete set: the same candidates as the run it repeats, the baseline and their reasons. When
the stream has a LATEST of the same kind, the selected plan is backtested
(``jobs/backtest.py``): every window of the interval routed in Spark through it and through
LATEST, each window's imbalance by ``routeplan.planning.metrics``; the figures go with it
(``backtest`` JSON, ``backtest_regression`` = the candidate's mean minus LATEST's, checked by
the validate job against the policy's ``regression_tolerance``). The day's report
(``<home>/reports/<day>/plan.json``) has, per stream, the selected plan, the budget it ran under
(``budget``, ``migration_cost_unit``) and every candidate with its numbers (``candidates``: what
the Routing page shows of auto's choice). What the stream was planned from goes to
``<home>/reports/<day>/plan-inputs/<stream>.json``: ``routeplan plan --policies … --stream S
--loads`` that file decides exactly what this job decided, without Spark — on the forecast, the
night's plan; the gate's decision, the moves it gave back and ``auto``'s out-of-sample choice
read the days' windows too and are in ``gold.plans.gate``.

The planning window ``forecast`` (the default) plans on every window of the stream's last
``planning.history_days`` days (``jobs/plan_loads.load_history``) with
``routeplan.streams.rebalance.plan_night``: the forecast, the plan fitted on the days before
scored on the newest day beside the version in force, the gate (policy ``rebalance``), the moves
that do not pay given back, and the prediction with its band — in the selected row's ``gate``
(JSON) and the table's ``predicted`` (``peak_excess``, ``peak_excess_low``,
``peak_excess_high``). Publish keeps what the gate kept.

The strategy's ``kind`` says what it plans from: a ``key_routing`` strategy a ``LoadSnapshot``
of key groups and hot keys (``silver.key_group_load``, ``silver.key_load``), beside the ``kg``
baseline; a ``partition_assignment`` strategy (paper 002: ``mwf``, ``bfd``, …) a
``PartitionLoad`` from ``silver.partition_load`` (bytes/s), beside the ``kafka_range`` baseline.
The load metrics not planned on go along as resources (``milp``'s ``resource_bounds``); ``albic``
also gets ``silver.key_group_flow`` (paper 004).

The budget binds the policy's strategies only; the baseline is planned without limits (it
honours none). A bad policy file, a limit a strategy does not honour and bad parameters fail the
job before Spark starts, with one line naming the file, the stream and the field. The run's
overrides and the budget are read by ``routeplan.streams.overrides`` (old budget spellings — the
``max_migrations``, ``migration_cost`` and ``max_migration_cost`` parameters, the unit ``keys`` —
become budget limits, each logged as a deprecation warning).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from jobs.backtest import BACKTEST_COLUMNS, selected_backtest
from jobs.common import (
    RunArgs,
    add_policies_argument,
    finish_stage,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    stream_policies,
    write_delta,
)
from jobs.plan_loads import StreamOptions, load_history, load_snapshot
from jobs.workers import learnt_capacities, resolve_workers
from routeplan import settings, storage
from routeplan.errors import InputError
from routeplan.files import json_text
from routeplan.model.capacity import capacities_source, resolve_capacities
from routeplan.model.hashing import DEFAULT_SEED
from routeplan.model.plan import MIGRATION_COST_UNITS
from routeplan.model.table import Table
from routeplan.model.workers import Workers
from routeplan.parsing import param_pair
from routeplan.planning.registry import strategy_names
from routeplan.publishing.store import RoutingStore
from routeplan.streams.inputs import StreamInputs, inputs_document
from routeplan.streams.overrides import RunOverrides, policy_for, read_overrides
from routeplan.streams.policy import LOAD_METRICS, PLANNING_WINDOWS, planned_metric
from routeplan.streams.rebalance import NightPlan, forecast_loads, plan_night
from routeplan.streams.service import PlanRefusedError, plan_stream

PLAN_COLUMNS = (
    "interval_start date, stream string, run_id string, strategy string, selected boolean, "
    "window_start timestamp, window_end timestamp, load_metric string, current_version int, "
    "observed_imbalance double, current_imbalance double, predicted_imbalance double, "
    "moves int, migrated_load_share double, metrics string, params string, "
    "table_document string, created_at timestamp, choice string, "
    + BACKTEST_COLUMNS
    + ", gate string"
)


PLAN_FIELDS = tuple(column.split()[0] for column in PLAN_COLUMNS.split(", "))


def plan_rows(spark, args: RunArgs, stream: str, options: StreamOptions) -> list[dict]:
    """Plan one stream (``routeplan.streams.service.plan_stream``) from its Delta rows; the
    ``gold.plans`` rows of every candidate, by column name (``PLAN_FIELDS``). The inputs it
    planned from are written for ``routeplan plan --policies`` (``plan-inputs/<stream>.json``)."""
    policy = options.policy
    found = load_snapshot(spark, args, stream, options, policy.kind)
    if found is None:
        log("plan", f"{stream}: no windows in the interval, nothing to plan")
        return []
    loads, window, logged = found
    if loads is None:
        log("plan", f"{stream}: no event names a partition, nothing for {policy.strategy}")
        return []
    workers, capacities = stream_workers(spark, args, stream, options, logged)
    # how every table of the stream is planned tonight: its outcomes are judged the same way
    planned = {
        "window": options.planning_window,
        "load_metric": planned_metric(policy.kind, options.load_metric),
        "capacities": capacities,
    }
    history = None
    if options.planning_window == "forecast":
        history = load_history(spark, args, stream, options, policy.kind)
        assert history is not None  # the interval has windows (load_snapshot found some)
        planned["history_days"] = len(history.days)
        rules = policy.forecast
        base, loads = loads, forecast_loads(history, loads, rules.quantile, rules.decay)
    inputs = StreamInputs(
        stream,
        loads,  # what the plan is fitted on: `routeplan plan --loads` plans the same
        workers,
        logged,
        args.interval_start.isoformat(),
        (window[0].isoformat(), window[1].isoformat()),
    )
    storage.write_text(
        inputs_path(args, stream), json_text(inputs_document(inputs), indent=None) + "\n"
    )
    latest = RoutingStore(args.tables.routing).load(stream)
    night: NightPlan | None = None
    try:
        if history is not None:  # the forecast, out-of-sample scores and the gate
            night = plan_night(policy, history, base, latest, workers, logged)
            decided = night.plan
            log("plan", f"{stream}: {'publish' if night.decision.publish else 'keep'}: "
                f"{night.decision.reason}")  # fmt: skip
        else:
            decided = plan_stream(policy, loads, latest, workers, logged)
    except PlanRefusedError as err:
        raise SystemExit(f"plan refused: {err}") from None
    for note in decided.notes:
        log("plan", f"{stream}: {note}")
    if decided.auto is not None:
        choice = decided.auto
        log("plan", f"{stream}: auto chose {choice.winner} ({choice.decided_by}): {choice.reason}")
    # the day's windows routed through the selected plan and LATEST (jobs/backtest.py)
    chosen = decided.selected.plan.table
    backtest = selected_backtest(spark, args, stream, options, chosen, latest, window)
    rows = []
    now = datetime.now(UTC)
    for candidate in decided.candidates:
        plan = candidate.plan
        tested = backtest if candidate.selected else None
        rows.append(
            {
                "interval_start": args.interval_start,
                "stream": stream,
                "run_id": args.run_id,
                "strategy": candidate.strategy,
                "selected": candidate.selected,
                "window_start": window[0],
                "window_end": window[1],
                "load_metric": policy.load_metric,
                "current_version": decided.current_version,
                "observed_imbalance": decided.observed_imbalance,
                "current_imbalance": decided.current_imbalance,
                "predicted_imbalance": float(plan.predicted["imbalance"]),
                "moves": int(plan.predicted["moves"]),
                "migrated_load_share": float(plan.predicted["migrated_load_share"]),
                # the numbers fitted on the planning loads (predicted_imbalance too: what
                # validate bounds), and the candidate's score on a day it was not fitted on;
                # the column keeps its name so that gold.plans of earlier runs stay one table
                "metrics": json.dumps({**plan.predicted, **held_out(night, candidate.strategy)}),
                "params": json.dumps(dict(plan.table.params)),
                "table_document": json.dumps(
                    with_planned(
                        plan.table, planned, night if candidate.selected else None
                    ).to_document()
                ),
                "created_at": now,
                "choice": candidate.choice,
                "backtest": tested.to_json() if tested else None,
                "backtest_regression": tested.regression if tested else None,
                "backtest_seconds": tested.seconds if tested else None,  # the report's, no column
                # the gate's decision and the prediction (forecast window), on the selected row
                "gate": json.dumps(night.document()) if night and candidate.selected else None,
            }
        )
        consumers = (
            f", {plan.predicted['consumers']:.0f} consumers "
            f"(bound {plan.predicted['lower_bound']:.0f})"
            if policy.kind == "partition_assignment"
            else ""
        )
        log(
            "plan",
            f"{stream}: {candidate.strategy} predicted imbalance "
            f"{plan.predicted['imbalance']:.4f} (logged {decided.observed_imbalance:.4f}), "
            f"{len(plan.moves)} moves{consumers}",
        )
    return rows


def held_out(night: NightPlan | None, strategy: str) -> dict[str, float]:
    """``strategy``'s out-of-sample score of the night (fitted on the days before the newest,
    scored on the newest): ``held_out_peak_excess`` and ``held_out_imbalance``; none without
    one (one day of history, or not planned on the forecast)."""
    score = (night.held_out_scores or {}).get(strategy) if night is not None else None
    if score is None:
        return {}
    return {"held_out_peak_excess": score.peak_excess, "held_out_imbalance": score.day_imbalance}


def with_planned(table: Table, planned: dict, night: NightPlan | None = None) -> Table:
    """``table`` saying how it was planned and, planned on the forecast, the peak excess it is
    predicted to realize with its band (``Prediction.predicted``: ``peak_excess`` and
    ``imbalance`` with their bands, ``out_of_sample``); LATEST kept by the rerun rule keeps its
    own."""
    if table.version is not None:
        return table
    predicted = dict(table.predicted)
    if night is not None:  # the in-sample imbalance on the forecast kept as fitted_imbalance
        if "imbalance" in predicted:
            predicted["fitted_imbalance"] = predicted["imbalance"]
        predicted.update(night.prediction.predicted())
    return replace(table, planned=planned, predicted=predicted)


def inputs_path(args: RunArgs, stream: str) -> str:
    """``<home>/reports/<day>/plan-inputs/<stream>.json`` (a stream name is a safe segment)."""
    day = args.interval_start.isoformat()
    return storage.join(
        settings.reports_root(args.tables.home), day, "plan-inputs", f"{stream}.json"
    )


def stream_workers(
    spark, args: RunArgs, stream: str, options: StreamOptions, logged
) -> tuple[Workers, str]:
    """The policy's inline workers (``auto`` capacities learnt from ``silver.worker_capacity``,
    in the units of the capacities it fixes), else the workers file's (``resolve_workers``);
    with where their capacities came from (given, learnt or mixed)."""
    policy = options.policy
    if policy.workers is None:
        return resolve_workers(
            spark, args.tables, options.workers_path, stream, logged, args.interval_start
        )
    learn = [w.name for w in policy.workers if w.capacity is None]
    source = capacities_source([w.name for w in policy.workers], learn)
    if not learn:
        return policy.to_workers(), source
    fixed = {w.name: w.capacity for w in policy.workers if w.capacity is not None}
    learnt = learnt_capacities(spark, args.tables, stream, args.interval_start)
    capacities, notes = resolve_capacities(fixed, learn, learnt)
    for note in notes:
        log("workers", f"{stream}: {note}")
    return policy.to_workers(capacities, fallback=1.0), source


def run_overrides(ns) -> RunOverrides:
    """The run's overrides (strategy, its parameters, the budget, window, metric), checked before
    Spark starts: a bad value ends the job with one line saying what to change."""
    import warnings

    try:
        overrides = read_overrides(
            strategy=ns.strategy,
            params={**parse_json_object(ns.params_json), **dict(ns.param)},
            budget={
                "max_moves": ns.max_moves,
                "max_migrated_load_share": ns.max_migrated_load_share,
                "max_migration_cost": ns.max_migration_cost,
                "migration_cost_unit": ns.migration_cost_unit,
            },
            planning_window=ns.planning_window,
            load_metric=ns.load_metric,
            hot_key_min_share=ns.hot_key_min_share,
        )
    except ValueError as err:  # UnhonouredLimitError is one
        raise SystemExit(f"plan refused: {err}") from None
    for note in overrides.notes:
        log("plan", f"DeprecationWarning: {note}")
        warnings.warn(note, DeprecationWarning, stacklevel=2)
    return overrides


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    add_policies_argument(parser)
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
    parser.add_argument("--planning-window", choices=("", *PLANNING_WINDOWS), default="")
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
        "--max-moves", default="", help="budget: most moves; empty or None: no limit"
    )
    parser.add_argument(
        "--max-migrated-load-share",
        default="",
        help="budget: most share of the load moved, 0..1; empty or None: no limit",
    )
    parser.add_argument(
        "--max-migration-cost",
        default="",
        help="budget: most summed migration cost (in --migration-cost-unit); empty: no limit",
    )
    parser.add_argument(
        "--migration-cost-unit",
        default="",
        help=f"what one move costs: {', '.join(MIGRATION_COST_UNITS)} (empty: moves; keys, "
        "deprecated: distinct_keys)",
    )
    parser.add_argument("--workers-path")
    ns = parser.parse_args(argv)
    args = run_args(ns)
    overrides = run_overrides(ns)  # before Spark starts
    try:  # every policy this run can use, with the run's overrides, before Spark starts
        policies = stream_policies(ns, args.tables.home)
        if policies is not None and args.streams:
            policies.check_streams(args.streams)
        named = args.streams or (tuple(policies.streams) if policies is not None else ())
        chosen = {s: policy_for(overrides, policies, s) for s in named}
        if policies is not None and not args.streams:
            policy_for(overrides, policies, "unlisted")  # what streams the file does not list get
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
                chosen[stream] = policy_for(overrides, policies, stream)
    except InputError as err:
        raise SystemExit(f"plan refused: {err}") from None
    guarded = {g["stream"]: g["action"] for g in args.tables.guard_actions(args.interval_start)}
    for stream, action in guarded.items():
        log("plan", f"{stream}: the regression guard did a {action} tonight: nothing new planned")
    rows = [
        row
        for stream in streams
        if stream not in guarded
        for row in plan_rows(
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
                "migration_cost_unit": chosen[r["stream"]].budget.migration_cost_unit,
                "candidates": candidates(rows, r["stream"]),
                "observed_imbalance": r["observed_imbalance"],
                "predicted_imbalance": r["predicted_imbalance"],
                "moves": r["moves"],
                "current_version": r["current_version"],
                "backtest_regression": r["backtest_regression"],
                "backtest_seconds": r["backtest_seconds"],
                "gate": json.loads(r["gate"]) if r["gate"] else None,
                "solver": solver_quality(json.loads(r["metrics"])),
            }
            for r in rows
            if r["selected"]
        },
    }
    finish_stage(args, "plan", report)
    return report


QUALITY = ("load_distance", "load_distance_bound", "mip_gap")


def solver_quality(metrics: dict) -> dict | None:
    """How close a solver's plan (``milp``, ``albic``) came: its load distance, the lower bound
    it proved on that of every plan its model admits, and the MIP gap; None for other
    strategies."""
    if "load_distance_bound" not in metrics:
        return None
    return {k: metrics.get(k) for k in QUALITY}


def candidates(rows: list[dict], stream: str) -> list[dict]:
    """The plan report's ``candidates`` of ``stream``: every strategy its policy weighed (one
    for a fixed strategy, several for ``auto``) with its numbers and whether it was chosen (the
    Routing page and ``routeplan.streams.publications`` read them)."""
    return [
        {
            "strategy": r["strategy"],
            "selected": r["selected"],
            "choice": r["choice"],
            "moves": r["moves"],
            "predicted": json.loads(r["metrics"]),
        }
        for r in rows
        if r["stream"] == stream
    ]


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
