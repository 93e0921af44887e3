"""validate: the gate before publish — Great Expectations suites over the windows and the plan.

Runs ``jobs.expectations`` (routeplan.key_group_load, routeplan.plan_assignment,
routeplan.plan_metrics) on the interval's ``silver.key_group_load`` and each stream's selected
plan in ``gold.plans``: no nulls, loads ≥ 0, every key group assigned exactly once to an active
worker, predicted imbalance not worse than what the logs show (plus ``--imbalance-tolerance``).
A partition-assignment plan (paper 002) runs routeplan.partition_assignment (every partition
seen in ``silver.partition_load`` read by exactly one listed consumer) and
routeplan.partition_metrics (no consumer over the bin capacity, no fewer consumers than the
lower bound) instead.
Results go to Delta ``gold.validations``; any failure exits non-zero, naming each failed
expectation, so the DAG stops before publish.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd

from jobs.common import RunArgs, log, read_delta, run_args, run_parser, spark_session, write_delta
from jobs.expectations import (
    PARTITION_METRICS_COLUMNS,
    ValidationOutcome,
    validate_key_group_load,
    validate_partition_assignment,
    validate_partition_metrics,
    validate_plan_assignment,
    validate_plan_metrics,
)
from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
from routeplan.publishing.store import RoutingStore

VALIDATION_COLUMNS = (
    "interval_start date, stream string, run_id string, suite string, success boolean, "
    "failures string, statistics string, validated_at timestamp"
)


def validate(spark, args: RunArgs, tolerance: float) -> list[tuple[str, ValidationOutcome]]:
    tables = args.tables
    plans = (
        read_delta(spark, tables, "gold.plans")
        .where(args.interval_predicate("interval_start") + " AND selected")
        .toPandas()
    )
    if plans.empty:
        raise SystemExit(f"no selected plans for {args.interval_start}: run the plan job first")
    outcomes = []
    for plan in plans.itertuples():
        table = table_from_document(json.loads(plan.table_document))
        if isinstance(table, PartitionAssignment):
            outcomes += [(plan.stream, o) for o in validate_partitions(spark, args, plan, table)]
            continue
        if not isinstance(table, RoutingTable):
            raise SystemExit(f"{plan.stream}: cannot validate a {table.kind} plan")
        loads = (
            read_delta(spark, tables, "silver.key_group_load")
            .where(args.interval_predicate() + f" AND stream = '{plan.stream}'")
            .drop("date")
            .toPandas()
        )
        outcomes.append((plan.stream, validate_key_group_load(loads, table.num_key_groups)))
        assignment = pd.DataFrame(
            {"key_group": range(table.num_key_groups), "worker": list(table.key_group_worker)}
        )
        active = [w.name for w in table.workers.active]
        draining = [w.name for w in table.workers.items if w.state == "draining"]
        if draining:  # gradual scale-in: a group may stay on the draining worker that holds it
            previous = _previous_table(tables, plan, table)
            assignment["previous_worker"] = (
                list(previous.key_group_worker) if previous else [None] * table.num_key_groups
            )
        outcomes.append(
            (
                plan.stream,
                validate_plan_assignment(assignment, active, table.num_key_groups, draining),
            )
        )
        # equal imbalances differ in the last bits when summed in another order
        bound = plan.observed_imbalance * (1 + 1e-9) + tolerance
        metrics = pd.DataFrame(
            [
                {
                    "stream": plan.stream,
                    "strategy": plan.strategy,
                    "predicted_imbalance": plan.predicted_imbalance,
                    "imbalance_bound": bound,
                    "migrated_load_share": json.loads(plan.metrics)["migrated_load_share"],
                }
            ]
        )
        outcomes.append((plan.stream, validate_plan_metrics(metrics)))
    now = datetime.now(UTC)
    rows = [
        (
            args.interval_start,
            stream,
            args.run_id,
            o.suite,
            o.success,
            json.dumps(o.failures),
            json.dumps(o.statistics, default=str),
            now,
        )
        for stream, o in outcomes
    ]
    frame = spark.createDataFrame(rows, VALIDATION_COLUMNS)
    write_delta(frame, tables, "gold.validations", args.interval_predicate("interval_start"))
    return outcomes


def _previous_table(tables, plan, table: RoutingTable) -> RoutingTable | None:
    """The published table the plan was made against (None for a first plan)."""
    if plan.current_version is None or pd.isna(plan.current_version):
        return None
    previous = RoutingStore(tables.routing).load(plan.stream, int(plan.current_version))
    if not isinstance(previous, RoutingTable) or previous.num_key_groups != table.num_key_groups:
        return None
    return previous


def validate_partitions(spark, args: RunArgs, plan, table: PartitionAssignment) -> list:
    """The partition-plan suites for one selected plan."""
    seen = (
        read_delta(spark, args.tables, "silver.partition_load")
        .where(args.interval_predicate() + f" AND stream = '{plan.stream}'")
        .select("partition")
        .distinct()
        .collect()
    )
    assignment = pd.DataFrame(
        {
            "partition": list(table.partition_consumer),
            "consumer": list(table.partition_consumer.values()),
        }
    )
    consumers = [w.name for w in table.consumers.active]
    predicted = json.loads(plan.metrics)  # the Delta column of the predicted numbers
    metrics = pd.DataFrame(
        [
            {
                "stream": plan.stream,
                "strategy": plan.strategy,
                **{k: predicted[k] for k in PARTITION_METRICS_COLUMNS[2:]},
            }
        ]
    )
    return [
        validate_partition_assignment(assignment, consumers, [r["partition"] for r in seen]),
        validate_partition_metrics(metrics),
    ]


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--imbalance-tolerance",
        type=float,
        default=0.0,
        help="how much above the logged imbalance a plan may be predicted",
    )
    ns = parser.parse_args(argv)
    args = run_args(ns)
    spark = spark_session("validate")
    outcomes = validate(spark, args, ns.imbalance_tolerance)
    failed = [(stream, o) for stream, o in outcomes if not o.success]
    report = {
        "stage": "validate",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "suites": [
            {"stream": s, "suite": o.suite, "success": o.success, "failures": o.failures}
            for s, o in outcomes
        ],
    }
    args.tables.write_report(args.interval_start, "validate", report)
    for stream, outcome in outcomes:
        log("validate", f"{stream}: {outcome.suite}: {'passed' if outcome.success else 'FAILED'}")
    if failed:
        lines = [f"{stream}: {o.suite}: {f}" for stream, o in failed for f in o.failures]
        raise SystemExit("validation failed, nothing will be published:\n  " + "\n  ".join(lines))
    return report


if __name__ == "__main__":
    main()
