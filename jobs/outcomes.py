"""outcomes: what the versions in force did on the day → Delta ``gold.plan_outcomes``.

Runs after windows and before guard and plan; it measures and never acts (the regression guard,
``jobs/guard.py``, decides from these rows and the stream's loop state), so any rerun replaces
exactly its day's rows. For every stream, the versions in force on the day by the rules of
``routeplan.streams.attribution`` (column ``attribution``): the versions the day's events name
(``silver.version_load``; events naming no worker are never attributed, ``attributed_share``
says what share of the day each version routed), else the last version a run for an earlier day
published or rolled back to (``gold.publish_log``), else the store's LATEST.

Each version is judged the way it was planned (its table's ``planned``: planning window, load
metric — partitions in bytes — with its own workers and capacities; the stream's policy for a
table published before tables said so): ``routeplan.streams.outcomes`` measures the realized
numbers in that window and over the day, and the predecessor's realized — the same measures on
the logs of the day before the version came into force. Only small per-window × per-worker
aggregates reach the driver. A version gone from the store is read from ``gold.routing_tables``;
gone from both, or logs naming workers it never had: verdict ``unknown`` with a note, never a
failed night. The report (``reports/<day>/outcomes.json``) lists the outcomes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from jobs.common import (
    RunArgs,
    Tables,
    add_policies_argument,
    finish_stage,
    job_policies,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    write_delta,
)
from jobs.rollback import find_version
from routeplan.model.table import Table
from routeplan.publishing.store import RoutingStore
from routeplan.streams.attribution import (
    UNRECORDED,
    WindowLoads,
    split_by_version,
    version_by_history,
)
from routeplan.streams.outcomes import (
    Measures,
    Outcome,
    day_peak_excess,
    measures,
    outcome,
    unknown_workers,
)
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import StreamPolicy, planned_metric

OUTCOME_COLUMNS = (
    "interval_start date, stream string, version int, kind string, attribution string, "
    "measure string, predicted double, realized double, previous_realized double, error double, "
    "verdict string, realized_day double, previous_realized_day double, "
    "predicted_imbalance double, realized_imbalance double, "
    "previous_realized_imbalance double, realized_imbalance_day double, messages double, "
    "consumers int, lower_bound int, overloaded int, note string, run_id string, "
    "created_at timestamp, attributed_share double, realized_peak_excess double, "
    "previous_peak_excess double, predicted_peak_excess double, predicted_low double, "
    "predicted_high double, band string, predicted_cross_rack_fraction double, "
    "realized_cross_rack_fraction double"
)
OUTCOME_FIELDS = tuple(column.split()[0] for column in OUTCOME_COLUMNS.split(", "))


class Attribution:
    """Which versions were in force for a stream on the day (``routeplan.streams.attribution``)."""

    def __init__(self, spark, args: RunArgs, store: RoutingStore) -> None:
        self.spark, self.args, self.store = spark, args, store
        self.log = (
            read_delta(spark, args.tables, "gold.publish_log")
            .where("version IS NOT NULL AND action IN ('published', 'rolled_back')")
            .select("interval_start", "stream", "version", "logged_at")
            .collect()
            if table_exists(args.tables, "gold.publish_log")
            else []
        )

    def by_history(self, stream: str) -> int | None:
        """The last version a run for an earlier day published or rolled back to."""
        return version_by_history((r.asDict() for r in self.log), stream, self.args.interval_start)


def planned_as(table: Table | None, policy: StreamPolicy) -> tuple[str, str]:
    """The planning window and load metric ``table`` was planned with (its ``planned``), else the
    policy's (a table published before tables said so; partitions are planned in bytes)."""
    planned = dict(table.planned) if table is not None else {}
    metric = policy.load_metric if table is None else planned_metric(table.kind, policy.load_metric)
    return planned.get("window", policy.planning_window), planned.get("load_metric", metric)


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
    versions: dict[int, list[Any]] = {}
    notes: list[str] = []
    shares: dict[int, float] = {}
    if table_exists(args.tables, "silver.version_load"):
        rows = [r.asDict() for r in read_delta(spark, args.tables, "silver.version_load")
                .where(where).collect()]  # fmt: skip
        versions, unrecorded = split_by_version(rows)
        if unrecorded:
            notes.append(f"{unrecorded:.0f} stamped messages name no worker: not attributed")
    if versions:
        rule = "event_version"
        total = day_messages(spark, args, where)
        for version, rows in versions.items():
            routed = sum(float(r["messages"] or 0) for r in rows)
            shares[version] = min(routed / total, 1.0) if total > 0 else 1.0
    else:
        found = attribution.by_history(stream)
        rule = "published_before"
        if found is None:
            latest = attribution.store.load(stream)
            found, rule = (latest.version if latest else None), "latest_at_run_start"
        if found is None:
            return []
        rows = read_delta(spark, args.tables, "silver.worker_load").where(where).collect()
        logged = [r.asDict() for r in rows if r["worker"] != UNRECORDED]
        if len(logged) < len(rows):
            notes.append("some of the day's events name no worker: left out")
        versions = {found: logged}
    results = []
    for version, rows in sorted(versions.items()):
        table = version_table(spark, args.tables, attribution.store, stream, version, tables_of)
        window_rule, metric = planned_as(table, policy)
        loads = WindowLoads(rows, metric)
        realized = realized_day = previous = previous_day = None
        peak: tuple[float | None, float | None] = (None, None)
        these = list(notes)
        if table is not None and loads.messages > 0:
            window, seconds = loads.planning_window(window_rule)
            strangers = unknown_workers(table, window) or unknown_workers(table, loads.day()[0])
            if strangers:
                these.append(f"the logs name workers v{version} never had: {', '.join(strangers)}")
            else:
                realized = measures(table, window, seconds)
                realized_day = measures(table, *loads.day())
            previous, previous_day, before = previous_measures(
                spark, args, stream, table, (window_rule, metric), these
            )
            peak = (day_peak_excess(table, loads.windows), before)
        day_partitions = (
            day_partition_load(spark, args, where)
            if table is not None and table.kind == "partition_assignment"
            else None
        )
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
                shares.get(version),
                peak,
                day_partitions,
            )
        )
    return results


def day_partition_load(spark, args: RunArgs, where: str) -> np.ndarray | None:
    """Each partition's bytes on the day (``silver.partition_load``; None without the table or
    a partition): what the realized cross-rack share weighs."""
    from pyspark.sql import functions as F

    if not table_exists(args.tables, "silver.partition_load"):
        return None
    rows = (
        read_delta(spark, args.tables, "silver.partition_load")
        .where(where)
        .groupBy("partition")
        .agg(F.sum("bytes").alias("bytes"))
        .collect()
    )
    if not rows:
        return None
    load = np.zeros(max(int(r["partition"]) for r in rows) + 1)
    for r in rows:
        load[int(r["partition"])] = float(r["bytes"] or 0.0)
    return load


def day_messages(spark, args: RunArgs, where: str) -> float:
    """The stream's messages on the day, stamped or not (``silver.window_summary``)."""
    from pyspark.sql import functions as F

    found = (
        read_delta(spark, args.tables, "silver.window_summary")
        .where(where)
        .agg(F.sum("messages").alias("messages"))
        .first()
    )
    return float(found["messages"] or 0.0)


def previous_measures(
    spark, args: RunArgs, stream: str, table: Table, planned: tuple[str, str], notes: list[str]
) -> tuple[Measures | None, Measures | None, float | None]:
    """The predecessor's realized, in the planning window and over the day, and the day's peak
    excess: ``table``'s measures — its workers and capacities, the window and load metric it
    was ``planned`` with — on the logs of the day before it came into force (the first day it
    has an outcome, else this one), which were produced under its predecessor (or by hash)."""
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
    window_rule, metric = planned
    loads = WindowLoads((r.asDict() for r in rows), metric)
    if loads.messages <= 0:
        notes.append(f"no logged worker loads on {before}, the day before v{table.version}")
        return None, None, None
    window, seconds = loads.planning_window(window_rule)
    if unknown_workers(table, loads.day()[0]):
        notes.append(f"the workers logged on {before} are not v{table.version}'s: no predecessor")
        return None, None, None
    peak = day_peak_excess(table, loads.windows)
    return measures(table, window, seconds), measures(table, *loads.day()), peak


def version_table(spark, tables: Tables, store, stream: str, version: int, cache) -> Table | None:
    """Version ``version`` from the store, else from ``gold.routing_tables``; None when gone."""
    if (stream, version) not in cache:
        cache[(stream, version)] = find_version(spark, tables, store, stream, version)
    return cache[(stream, version)]


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    add_policies_argument(parser)
    ns = parser.parse_args(argv)
    args = run_args(ns)
    policies = job_policies(ns, args.tables.home, "outcomes")
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
    rows = []
    for stream in streams:
        policy = policy_for(RunOverrides(), policies, stream)
        today = stream_outcomes(spark, args, stream, policy, attribution, tables_of)
        for o in today:
            figures = f"realized {o.realized} predicted {o.predicted} before {o.previous_realized}"
            log("outcomes", f"{stream}: v{o.version} {o.verdict}: {o.measure} {figures} {o.note}")
        rows += today
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
    }
    finish_stage(args, "outcomes", report)
    return report


if __name__ == "__main__":
    main()
