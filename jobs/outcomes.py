"""outcomes: what the version in force did on the day → Delta ``gold.plan_outcomes``, and the guard.

Runs after windows and before plan. For every stream, the versions in force on the day, by
data interval — never by wall clock, so a backfill and a version published by hand between two
nights are attributed right (column ``attribution``):

1. ``event_version`` — the versions the day's events name (``routing_version``, stamped by
   producers that follow a published table; ``silver.version_load``), each with its own traffic;
2. ``published_before`` — else the last version a run for an earlier day published or rolled
   back to (``gold.publish_log``);
3. ``latest_at_run_start`` — else the store's LATEST now, before this night publishes.

For each, ``routeplan.streams.outcomes`` measures the realized numbers in the stream's planning
window (its policy: the busiest window of the version's traffic, or the whole day) and over the
day, in the policy's load metric, with the version's own workers and capacities — the same
definitions its prediction used — and the predecessor's realized: the same measures on the logs
of the day before the version came into force (produced under its predecessor, or by hash).
Computed from the silver tables; only small per-window × per-worker aggregates reach the driver.
A version gone from the store is read from
``gold.routing_tables``; gone from both, or logs naming workers it never had: verdict
``unknown`` with a note, never a failed night.

Then the guard (``routeplan.streams.outcomes.guard``): when the version in force regressed on
the policy's ``regression_days`` days in a row — and, replayed on the last day's traffic
(``replay``: the plan job's backtest, both tables routed through the day's windows), its
predecessor would have done better by more than the tolerance (a regression that any table
shows on that traffic is the traffic's change, not the plan's) — by ``on_regression``:
``rollback`` publishes its predecessor's routing again through the rollback path
(``jobs/rollback.py``; action ``rolled_back``), ``hold`` puts a hold in the routing store
(``held``: publish refuses new routings until the rollback DAG runs or ``routeplan hold
--clear``), ``alert`` only alerts (``alerted``). Each action is a ``gold.publish_log`` row with
the reason and numbers, once per regression. The report (``reports/<day>/outcomes.json``) lists
the outcomes and the guard's decisions: the plan job plans nothing new for a stream rolled back
or held tonight, and the DAG's ``guard_alerts`` task alerts on each action. A rerun of the night
replaces its outcome rows and acts no second time.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from jobs.backtest import run_backtest, unroutable
from jobs.common import (
    RunArgs,
    Tables,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    write_delta,
)
from jobs.plan import stream_policies
from jobs.publish import append_log
from jobs.rollback import from_history, rollback
from jobs.windows import UNRECORDED
from routeplan.model.table import Table
from routeplan.publishing.store import RoutingStore
from routeplan.streams.outcomes import (
    Measures,
    Outcome,
    guard,
    measures,
    outcome,
    unknown_workers,
)
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import StreamPolicy

OUTCOME_COLUMNS = (
    "interval_start date, stream string, version int, kind string, attribution string, "
    "measure string, predicted double, realized double, previous_realized double, error double, "
    "verdict string, realized_day double, previous_realized_day double, "
    "predicted_imbalance double, realized_imbalance double, "
    "previous_realized_imbalance double, realized_imbalance_day double, messages double, "
    "consumers int, lower_bound int, overloaded int, note string, run_id string, "
    "created_at timestamp"
)
OUTCOME_FIELDS = tuple(column.split()[0] for column in OUTCOME_COLUMNS.split(", "))
ACTIONS = {"rollback": "rolled_back", "hold": "held", "alert": "alerted"}  # publish_log's action


class Loads:
    """A stream's per-window × per-worker loads on one day, in one metric."""

    def __init__(self, rows: list[Any], metric: str) -> None:
        self.windows: dict[Any, dict[str, float]] = defaultdict(dict)
        self.counts: dict[Any, float] = defaultdict(float)  # messages per window
        self.ends: dict[Any, Any] = {}
        for r in rows:
            self.windows[r["window_start"]][r["worker"]] = float(r[metric] or 0.0)
            self.counts[r["window_start"]] += float(r["messages"] or 0)
            self.ends[r["window_start"]] = r["window_end"]

    @property
    def messages(self) -> float:
        return sum(self.counts.values())

    def planning_window(self, rule: str) -> tuple[dict[str, float], float]:
        """The loads of the planning window (``peak``: the busiest window; ``interval``: all
        of them) and its length in seconds."""
        if not self.windows:
            return {}, 0.0
        if rule == "peak":  # by messages, as the plan job chooses it
            start = max(self.windows, key=lambda w: (self.counts[w], -_ts(w)))
            return dict(self.windows[start]), _seconds(start, self.ends[start])
        return self.day()

    def day(self) -> tuple[dict[str, float], float]:
        total: dict[str, float] = defaultdict(float)
        for loads in self.windows.values():
            for worker, load in loads.items():
                total[worker] += load
        span = _seconds(min(self.windows), max(self.ends.values())) if self.windows else 0.0
        return dict(total), span


def _ts(value: Any) -> float:
    return value.timestamp() if hasattr(value, "timestamp") else 0.0


def _seconds(start: Any, end: Any) -> float:
    return max((end - start).total_seconds(), 1.0)


class Attribution:
    """Which versions were in force for a stream on the day (see the module docstring)."""

    def __init__(self, spark, args: RunArgs, store: RoutingStore) -> None:
        self.spark, self.args, self.store = spark, args, store
        self.log = (
            read_delta(spark, args.tables, "gold.publish_log")
            .where("version IS NOT NULL AND action IN ('published', 'rolled_back')")
            .select("interval_start", "stream", "version")
            .collect()
            if table_exists(args.tables, "gold.publish_log")
            else []
        )

    def by_history(self, stream: str) -> int | None:
        """The last version a run for an earlier day published or rolled back to."""
        day = self.args.interval_start
        earlier = [
            (r["interval_start"], r["version"])
            for r in self.log
            if r["stream"] == stream
            and r["interval_start"] is not None
            and r["interval_start"] < day
        ]
        return max(earlier)[1] if earlier else None


def stream_outcomes(
    spark,
    args: RunArgs,
    stream: str,
    policy: StreamPolicy,
    attribution: Attribution,
    tables_of: dict[tuple[str, int], Table | None],
) -> list[Outcome]:
    """The outcomes of the versions in force for ``stream`` on the day (none before the
    stream's first version)."""
    day = args.interval_start.isoformat()
    where = args.interval_predicate() + f" AND stream = '{stream}'"
    metric = policy.load_metric
    by_version: dict[int, list[Any]] = defaultdict(list)
    if table_exists(args.tables, "silver.version_load"):
        for r in read_delta(spark, args.tables, "silver.version_load").where(where).collect():
            by_version[r["routing_version"]].append(r)
    notes: list[str] = []
    if by_version:
        rule, versions = "event_version", dict(by_version)
    else:
        found = attribution.by_history(stream)
        rule = "published_before"
        if found is None:
            latest = attribution.store.load(stream)
            found, rule = (latest.version if latest else None), "latest_at_run_start"
        if found is None:
            return []
        rows = read_delta(spark, args.tables, "silver.worker_load").where(where).collect()
        logged = [r for r in rows if r["worker"] != UNRECORDED]
        if len(logged) < len(rows):
            notes.append("some of the day's events name no worker: left out")
        versions = {found: logged}
    results = []
    for version, rows in sorted(versions.items()):
        table = version_table(spark, args.tables, attribution.store, stream, version, tables_of)
        loads = Loads(rows, metric)
        realized = realized_day = previous = previous_day = None
        these = list(notes)
        if table is not None and loads.messages > 0:
            window, seconds = loads.planning_window(policy.planning_window)
            strangers = unknown_workers(table, window) or unknown_workers(table, loads.day()[0])
            if strangers:
                these.append(f"the logs name workers v{version} never had: {', '.join(strangers)}")
            else:
                realized = measures(table, window, seconds)
                realized_day = measures(table, *loads.day())
            previous, previous_day = previous_measures(spark, args, stream, table, policy, these)
        results.append(
            outcome(
                stream,
                day,
                version,
                table,
                rule,
                loads.messages,
                realized,
                realized_day,
                previous,
                policy.regression_tolerance,
                these,
                previous_day,
            )
        )
    return results


def previous_measures(
    spark, args: RunArgs, stream: str, table: Table, policy: StreamPolicy, notes: list[str]
) -> tuple[Measures | None, Measures | None]:
    """The predecessor's realized, in the planning window and over the day: ``table``'s
    measures — its workers and capacities, the same window and metric — on the logs of the day
    before it came into force (the first day it has
    an outcome, else this one), which were produced under its predecessor (or by hash)."""
    first = args.interval_start
    if table_exists(args.tables, "gold.plan_outcomes"):
        found = (
            read_delta(spark, args.tables, "gold.plan_outcomes")
            .where(
                f"stream = '{stream}' AND version = {int(table.version)} "
                f"AND interval_start < '{args.interval_start}'"
            )
            .agg({"interval_start": "min"})
            .first()[0]
        )
        first = found or first
    before = first - timedelta(days=1)
    rows = (
        read_delta(spark, args.tables, "silver.worker_load")
        .where(f"date = '{before}' AND stream = '{stream}' AND worker <> '{UNRECORDED}'")
        .collect()
    )
    loads = Loads(rows, policy.load_metric)
    if loads.messages <= 0:
        notes.append(f"no logged worker loads on {before}, the day before v{table.version}")
        return None, None
    window, seconds = loads.planning_window(policy.planning_window)
    if unknown_workers(table, loads.day()[0]):
        notes.append(f"the workers logged on {before} are not v{table.version}'s: no predecessor")
        return None, None
    return measures(table, window, seconds), measures(table, *loads.day())


def version_table(spark, tables: Tables, store, stream: str, version: int, cache) -> Table | None:
    """Version ``version`` from the store, else from ``gold.routing_tables``; None when gone."""
    if (stream, version) not in cache:
        table = None
        if version in store.versions(stream):
            table = store.load(stream, version)
        else:
            try:
                table = from_history(spark, tables, stream, version)
            except SystemExit:
                table = None
        cache[(stream, version)] = table
    return cache[(stream, version)]


def act(spark, args: RunArgs, store, policy, today: list[Outcome], tables_of) -> dict | None:
    """The guard for the stream's main version in force (the most traffic); its decision as
    a report entry, with what it published."""
    main = max((o for o in today), key=lambda o: o.messages, default=None)
    if main is None or main.verdict in ("unknown", "no_traffic"):
        return None
    current = tables_of.get((main.stream, main.version))
    if current is None:
        return None
    history = earlier_outcomes(spark, args, main.stream, main.version) + [main]
    predecessor = (
        version_table(spark, args.tables, store, main.stream, current.parent_version, tables_of)
        if current.parent_version is not None
        else None
    )
    decide = partial(
        guard,
        policy.on_regression,
        policy.regression_days,
        policy.regression_tolerance,
        history,
        current,
        predecessor,
        acted_before=acted_on(spark, args.tables, main.stream, main.version),
    )
    decision = decide()
    if decision.action is not None:  # the day's replay only where it can still stop an action
        replayed = replay(spark, args, main.stream, current, predecessor, policy)
        if replayed is not None:
            decision = decide(replayed=replayed)
    entry = {
        "stream": decision.stream,
        "version": decision.version,
        "action": decision.action,
        "restore_version": decision.restore_version,
        "reason": decision.reason,
        "published_version": None,
    }
    if decision.action is None:
        return entry
    log("outcomes", f"{main.stream}: guard {decision.action}: {decision.reason}")
    record = {"stream": main.stream, "version": main.version, "reason": decision.reason}
    if decision.action == "rollback":
        done = rollback(
            spark,
            args.tables,
            main.stream,
            decision.restore_version,
            decision.reason,
            args.run_id,
            args.interval_start,
        )
        entry["published_version"] = done["version"] if done["action"] == "rolled_back" else None
        return entry  # the rollback path wrote its publish_log row
    if decision.action == "hold":
        store.hold(main.stream, decision.reason)
    append_log(
        spark,
        args.tables,
        [{**record, "action": ACTIONS[decision.action]}],
        args.run_id,
        args.interval_start,
    )
    return entry


def replay(
    spark, args: RunArgs, stream: str, current: Table, predecessor: Table, policy: StreamPolicy
) -> tuple[float, float] | None:
    """``current``'s and ``predecessor``'s mean headline over the day's windows, the day's
    traffic routed through each (``jobs/backtest.py``, the plan job's backtest); None, with a
    log line, when the windows cannot be routed through both."""
    windows = args.tables.read_report(args.interval_start, "windows") or {}
    if "num_key_groups" not in windows or "hash_seed" not in windows:
        why = "the day's windows report does not name its key groups and hash seed"
    else:
        why = unroutable(current, predecessor, windows["num_key_groups"], windows["hash_seed"])
    if why is not None:
        versions = f"v{current.version} and v{predecessor.version}"
        log("outcomes", f"{stream}: no replay of {versions} on the day: {why}")
        return None
    found = run_backtest(
        spark,
        args,
        stream,
        current,
        predecessor,
        policy.load_metric,
        policy.regression_tolerance,
        windows.get("window_minutes"),
    )
    log(
        "outcomes",
        f"{stream}: the day replayed: v{current.version} {found.candidate_mean:.4f}, "
        f"v{predecessor.version} {found.latest_mean:.4f} (mean {found.measure} over "
        f"{len(found.windows)} windows, {found.seconds:.1f} s)",
    )
    return found.candidate_mean, found.latest_mean


def earlier_outcomes(spark, args: RunArgs, stream: str, version: int) -> list[Outcome]:
    """The version's outcomes of earlier days, oldest first."""
    if not table_exists(args.tables, "gold.plan_outcomes"):
        return []
    rows = (
        read_delta(spark, args.tables, "gold.plan_outcomes")
        .where(
            f"stream = '{stream}' AND version = {int(version)} "
            f"AND interval_start < '{args.interval_start}'"
        )
        .orderBy("interval_start")
        .collect()
    )
    fields = Outcome.__dataclass_fields__
    return [
        Outcome(
            **{
                k: (str(v) if k == "interval_start" else v)
                for k, v in r.asDict().items()
                if k in fields
            }
        )
        for r in rows
    ]


def acted_on(spark, tables: Tables, stream: str, version: int) -> bool:
    """Whether the guard already acted on a regression of ``version`` (its publish_log row)."""
    if not table_exists(tables, "gold.publish_log"):
        return False
    from pyspark.sql import functions as F

    prefix = f"regression: v{int(version)}'s"
    return (
        read_delta(spark, tables, "gold.publish_log")
        .where(f"stream = '{stream}' AND action IN ('rolled_back', 'held', 'alerted')")
        .where(F.col("reason").contains(prefix))  # a rollback's reason has it after "rollback to"
        .limit(1)
        .count()
        > 0
    )


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--policies",
        default="",
        help="the streams' planning policies (YAML); empty: $ROUTEPLAN_HOME/config/streams.yaml",
    )
    ns = parser.parse_args(argv)
    args = run_args(ns)
    try:
        policies = stream_policies(ns, args.tables.home)
    except ValueError as err:  # PolicyError: one line naming the file, stream and field
        raise SystemExit(f"outcomes refused: {err}") from None
    spark = spark_session("outcomes")
    store = RoutingStore(args.tables.routing)
    seen = set()
    if table_exists(args.tables, "silver.window_summary"):
        seen = {
            r["stream"]
            for r in read_delta(spark, args.tables, "silver.window_summary")
            .where(args.interval_predicate())
            .select("stream")
            .distinct()
            .collect()
        }
    streams = args.streams or tuple(sorted(seen | set(store.streams())))
    attribution = Attribution(spark, args, store)
    tables_of: dict[tuple[str, int], Table | None] = {}
    rows, guard_entries = [], []
    for stream in streams:
        policy = policy_for(RunOverrides(), policies, stream)
        today = stream_outcomes(spark, args, stream, policy, attribution, tables_of)
        if not today and stream not in seen:
            continue
        for o in today:
            figures = f"realized {o.realized} predicted {o.predicted} before {o.previous_realized}"
            log("outcomes", f"{stream}: v{o.version} {o.verdict}: {o.measure} {figures} {o.note}")
        rows += today
        entry = act(spark, args, store, policy, today, tables_of)
        if entry is not None:
            guard_entries.append(entry)
    now = datetime.now(UTC)
    frame = spark.createDataFrame(
        [
            tuple(
                {
                    **o.to_row(),
                    "interval_start": args.interval_start,
                    "run_id": args.run_id,
                    "created_at": now,
                }[f]
                for f in OUTCOME_FIELDS
            )
            for o in rows
        ],
        OUTCOME_COLUMNS,
    )
    write_delta(
        frame,
        args.tables,
        "gold.plan_outcomes",
        args.interval_predicate("interval_start"),
        partition_by=("interval_start",),
    )
    report = {
        "stage": "outcomes",
        "run_id": args.run_id,
        "interval_start": args.interval_start.isoformat(),
        "outcomes": [o.to_row() for o in rows],
        "guard": guard_entries,
    }
    args.tables.write_report(args.interval_start, "outcomes", report)
    log("outcomes", json.dumps(report, default=str))
    return report


if __name__ == "__main__":
    main()
