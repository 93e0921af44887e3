"""guard: each stream's loop state after the night, and the regression guard's action.

Runs after outcomes and before plan. For every stream it folds the night into the stream's loop
state (``routeplan.streams.loop_state``: the routing in force and since when, the last good one,
the routings rolled back from, holds, the regressions acted on), decides by the rules there, and
acts by the stream's ``on_regression``: ``rollback`` publishes the target's routing again through
the rollback path (``jobs/rollback.py``; ``gold.publish_log`` action ``rolled_back``), ``hold``
puts the guard's hold in the routing store (``held``), ``alert`` only alerts (``alerted``); the
DAG's ``guard_alerts`` task posts an alert per action from the report
(``reports/<day>/guard.json``).

Idempotent: the state is written before acting (``decided``) and after (``done``), as
``<routing>/<stream>/loop-<day>.json``. A rerun or a retry of the night starts from that night's
state: a done decision is reported again and never repeated; a decision not yet done is finished
(a restore of a routing LATEST already has publishes nothing; a hold is written whole). The plan
and publish jobs read the same state: nothing new for a stream rolled back or held tonight.
"""

from __future__ import annotations

from typing import Any

from jobs.backtest import run_backtest, unroutable
from jobs.common import (
    RunArgs,
    add_policies_argument,
    finish_stage,
    job_policies,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
)
from jobs.outcomes import planned_as, version_table
from jobs.publish import append_log
from jobs.rollback import rollback
from routeplan.model.table import Table
from routeplan.publishing.store import RoutingStore
from routeplan.streams import loop_state as loop
from routeplan.streams.attribution import main_version
from routeplan.streams.outcomes import Outcome
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import StreamPolicy

ACTIONS = {"rollback": "rolled_back", "hold": "held", "alert": "alerted"}  # publish_log's action


def night_outcomes(spark, args: RunArgs) -> dict[str, list[Outcome]]:
    """The day's ``gold.plan_outcomes`` rows by stream, as outcomes."""
    if not table_exists(args.tables, "gold.plan_outcomes"):
        return {}
    fields = Outcome.__dataclass_fields__
    found: dict[str, list[Outcome]] = {}
    rows = (
        read_delta(spark, args.tables, "gold.plan_outcomes")
        .where(args.interval_predicate("interval_start"))
        .collect()
    )
    for r in rows:
        values = {k: v for k, v in r.asDict().items() if k in fields}
        values["interval_start"] = str(values["interval_start"])
        found.setdefault(r["stream"], []).append(Outcome(**values))
    return found


def read_state(store: RoutingStore, stream: str, night: str) -> loop.LoopState:
    """The stream's loop state written after ``night``."""
    return loop.LoopState.from_document(store.read_loop_state(stream, night))


def observed_night(spark, args: RunArgs, store, stream, base, today, tables_of) -> tuple:
    """The night's inputs for ``stream`` (``loop.Night``) and the main version's table."""
    night = args.interval_start.isoformat()
    messages = {o.version: o.messages for o in today}
    main = main_version(messages)
    outcome = next((o for o in today if o.version == main), None)
    current = None
    if outcome is not None:
        current = version_table(spark, args.tables, store, stream, outcome.version, tables_of)
    newer = [v for v in store.versions(stream) if v > base.seen_version]
    published = [store.load(stream, v) for v in newer]
    parents = {
        t.parent_version: version_table(
            spark, args.tables, store, stream, t.parent_version, tables_of
        )
        for t in published
        if t.restored_version is not None and t.parent_version is not None
    }
    by_hand = loop.rollbacks_by_hand(
        published, {v: t.fingerprint() if t else None for v, t in parents.items()}
    )
    observed = loop.Night(
        night=night,
        outcome=outcome,
        fingerprint=current.fingerprint() if current is not None else None,
        hold=loop.Hold.from_store(store.held(stream)),
        rollbacks=by_hand,
        latest_version=max(newer, default=None),
    )
    return observed, current


def decide_stream(
    spark, args: RunArgs, store, stream: str, policy: StreamPolicy, today, tables_of, nights
) -> loop.LoopState:
    """The night folded into ``stream``'s state (``nights``: those with a state written), with
    the guard's decision (not acted yet)."""
    night = args.interval_start.isoformat()
    earlier = [n for n in nights if n < night]
    base = read_state(store, stream, earlier[-1]) if earlier else loop.LoopState(stream)
    observed, current = observed_night(spark, args, store, stream, base, today, tables_of)
    state = loop.observe(base, observed)
    parent = None
    if current is not None and current.parent_version is not None:
        parent = version_table(spark, args.tables, store, stream, current.parent_version, tables_of)
    before = (
        loop.InForce(parent.version, parent.fingerprint(), (parent.created_at or "")[:10])
        if parent is not None
        else None
    )
    target = loop.rollback_target(state, before)
    target_table = not_restorable = None
    if target is not None and current is not None:
        target_table = version_table(spark, args.tables, store, stream, target.version, tables_of)
        if target_table is None:
            not_restorable = f"v{target.version} is gone from the store and gold.routing_tables"
        else:
            not_restorable = loop.unrestorable(target_table, current)
    replayed = unreplayable = None
    outcome = observed.outcome
    if loop.needs_replay(state, outcome, policy, target, not_restorable):
        replayed, unreplayable = replay(spark, args, stream, current, target_table, policy)
    decision = loop.decide(state, outcome, policy, target, replayed, unreplayable, not_restorable)
    return loop.decided(state, decision)


def act(spark, args: RunArgs, store: RoutingStore, state: loop.LoopState) -> loop.LoopState:
    """Take the state's decided action (idempotent: a restore of a routing LATEST already has
    publishes nothing, a hold is written whole); the state once done."""
    decision = state.decision
    assert decision is not None and decision.action is not None
    stream = state.stream
    log("guard", f"{stream}: {decision.action}: {decision.reason}")
    published = None
    if decision.action == "rollback":
        done = rollback(
            spark,
            args.tables,
            stream,
            decision.restore_version,
            decision.reason,
            args.run_id,
            args.interval_start,
            lift_hold=False,
        )
        published = done["version"] if done["action"] == "rolled_back" else None
        if published is None:  # a retry: LATEST already routes as the target; is it ours?
            latest = store.load(stream)
            if latest is not None and latest.restored_version == decision.restore_version:
                published = latest.version
    if decision.hold:
        store.hold(stream, decision.reason, by="guard")
    # the rollback path wrote its own row; a rollback that also holds logs the hold
    logged = [ACTIONS[decision.action]] if decision.action != "rollback" else []
    if decision.hold and decision.action == "rollback":
        logged.append(ACTIONS["hold"])
    append_log(
        spark,
        args.tables,
        [
            {"stream": stream, "version": decision.version, "reason": decision.reason, "action": a}
            for a in logged
        ],
        args.run_id,
        args.interval_start,
    )
    return loop.done(state, published)


def replay(
    spark, args: RunArgs, stream: str, current: Table, target: Table, policy: StreamPolicy
) -> tuple[tuple[float, float] | None, str | None]:
    """``current``'s and ``target``'s mean headline measure over the day's windows, the day's
    traffic routed through each (``jobs/backtest.py``, the plan job's backtest), or why the
    windows cannot be routed through both."""
    windows = args.tables.read_report(args.interval_start, "windows") or {}
    if "num_key_groups" not in windows or "hash_seed" not in windows:
        why = "the day's windows report does not name its key groups and hash seed"
    else:
        why = unroutable(current, target, windows["num_key_groups"], windows["hash_seed"])
    if why is not None:
        log("guard", f"{stream}: no replay of v{current.version} and v{target.version}: {why}")
        return None, why
    found = run_backtest(
        spark,
        args,
        stream,
        current,
        target,
        planned_as(current, policy)[1],
        policy.regression_tolerance,
        windows.get("window_minutes"),
    )
    log(
        "guard",
        f"{stream}: the day replayed: v{current.version} {found.candidate_mean:.4f}, "
        f"v{target.version} {found.latest_mean:.4f} (mean {found.measure} over "
        f"{len(found.windows)} windows, {found.seconds:.1f} s)",
    )
    return (found.candidate_mean, found.latest_mean), None


def guard_stream(
    spark, args: RunArgs, store: RoutingStore, stream: str, policy, today, tables_of
) -> dict[str, Any]:
    """One stream's night: its decision, taken once however often the night runs; the report
    entry (``again`` says a run of this night had already decided)."""
    night = args.interval_start.isoformat()
    nights = store.loop_nights(stream)  # listed once: the night's own state and the one before
    state, again = loop.run_night(
        read_state(store, stream, night) if night in nights else None,
        lambda: decide_stream(spark, args, store, stream, policy, today, tables_of, nights),
        lambda done: store.write_loop_state(stream, night, done.to_document()),
        lambda decided: act(spark, args, store, decided),
    )
    assert state.decision is not None
    if again:
        log("guard", f"{stream}: decided by an earlier run of {night}: {state.decision.reason}")
    return {**state.decision.entry(stream), "again": again}


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    add_policies_argument(parser)
    ns = parser.parse_args(argv)
    args = run_args(ns)
    policies = job_policies(ns, args.tables.home, "guard")
    spark = spark_session("guard")
    store = RoutingStore(args.tables.routing)
    outcomes = night_outcomes(spark, args)
    streams = args.streams or tuple(sorted(set(outcomes) | set(store.streams())))
    tables_of: dict[tuple[str, int], Table | None] = {}
    entries = []
    for stream in streams:
        policy = policy_for(RunOverrides(), policies, stream)
        today = outcomes.get(stream, [])
        entries.append(guard_stream(spark, args, store, stream, policy, today, tables_of))
    report = {
        "stage": "guard",
        "run_id": args.run_id,
        "interval_start": args.interval_start.isoformat(),
        "guard": entries,
    }
    finish_stage(args, "guard", report)
    return report


if __name__ == "__main__":
    main()
