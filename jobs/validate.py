"""validate: the gate before publish — Great Expectations suites over the windows and the plan.

Runs ``jobs.expectations`` (routeplan.key_group_load, routeplan.plan_assignment,
routeplan.plan_metrics) on the interval's ``silver.key_group_load`` and each stream's selected
plan in ``gold.plans``: no nulls, loads ≥ 0, every key group assigned exactly once to an active
worker, predicted imbalance not worse than what the logs show (plus ``--imbalance-allowance``) —
for a plan on the forecast, than what runs without it on the same loads (LATEST, else the
baseline: ``gold.plans.gate``'s ``reference_imbalance``).
A partition-assignment plan (paper 002) runs routeplan.partition_assignment (every partition
seen in ``silver.partition_load`` read by exactly one listed consumer) and
routeplan.partition_metrics (no consumer over the bin capacity, no fewer consumers than the
lower bound) instead.
Every selected plan also runs routeplan.plan_backtest: its ``backtest_regression`` (the mean
imbalance over the day's windows routed through the plan, minus LATEST's; ``jobs/backtest.py``)
no more than the policy's ``regression_tolerance``; the failure lists every window's start,
candidate and LATEST figures. A plan without a backtest (no LATEST of its kind) passes.
The suites run on pandas frames (GX's pandas engine; ``jobs/expectations.py`` says why): one
stream's day of loads collected to the driver, the plan's rows built there.
Results go to Delta ``gold.validations``; any failure exits non-zero, naming each failed
expectation, so the DAG stops before publish.

The suites, validation definitions and checkpoints are the GX project in ``gx/``; each checkpoint
stores its validation result in ``<home>/gx/validations``, and the run adds its results to the
Data Docs site ``<home>/data_docs`` at the end (``routeplan docs`` serves it). The task log and
the report name each result's page and the site's index. For an object-store home both are
built in a local temporary folder and uploaded at the end; that index lists this run's results
only (earlier pages stay).
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from great_expectations.data_context import FileDataContext

from jobs.backtest import backtest_of
from jobs.common import (
    RunArgs,
    finish_stage,
    gate_of,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    write_delta,
)
from jobs.expectations import (
    PARTITION_METRICS_COLUMNS,
    PLAN_BACKTEST_COLUMNS,
    PLAN_BACKTEST_SUITE,
    PLAN_METRICS_COLUMNS,
    ValidationOutcome,
    build_data_docs,
    open_context,
    validate_key_group_load,
    validate_partition_assignment,
    validate_partition_metrics,
    validate_plan_assignment,
    validate_plan_backtest,
    validate_plan_metrics,
)
from routeplan import settings, storage
from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
from routeplan.publishing.store import RoutingStore

VALIDATION_COLUMNS = (
    "interval_start date, stream string, run_id string, suite string, success boolean, "
    "failures string, statistics string, validated_at timestamp"
)


def validate(
    spark, args: RunArgs, tolerance: float, context: FileDataContext
) -> list[tuple[str, ValidationOutcome]]:
    """Run the suites on the interval's loads and selected plans; write ``gold.validations``."""
    tables = args.tables
    plans = (
        read_delta(spark, tables, "gold.plans")
        .where(args.interval_predicate("interval_start") + " AND selected")
        .collect()
    )
    if not plans:
        if tables.guard_actions(args.interval_start):  # every stream was rolled back or held
            log("validate", "no plan tonight: the regression guard acted on every stream")
            return []
        raise SystemExit(f"no selected plans for {args.interval_start}: run the plan job first")
    outcomes = []
    for plan in plans:
        outcomes.append((plan.stream, validate_backtest(plan, context)))
        table = table_from_document(json.loads(plan.table_document))
        if isinstance(table, PartitionAssignment):
            checked = validate_partitions(spark, args, plan, table, context)
            outcomes += [(plan.stream, o) for o in checked]
            continue
        if not isinstance(table, RoutingTable):
            raise SystemExit(f"{plan.stream}: cannot validate a {table.kind} plan")
        loads = (  # one stream's day: key groups × windows rows, to the driver
            read_delta(spark, tables, "silver.key_group_load")
            .where(args.interval_predicate() + f" AND stream = '{plan.stream}'")
            .drop("date")
            .toPandas()
        )
        outcomes.append(
            (plan.stream, validate_key_group_load(context, loads, table.num_key_groups))
        )
        assignment = pd.DataFrame(
            {"key_group": range(table.num_key_groups), "worker": table.key_group_worker}
        )
        active = [w.name for w in table.workers.active]
        draining = [w.name for w in table.workers.items if w.state == "draining"]
        if draining:  # gradual scale-in: a group may stay on the draining worker that holds it
            previous = _previous_table(tables, plan, table)
            held = previous.key_group_worker if previous else [None] * table.num_key_groups
            assignment["previous_worker"] = list(held)
        outcomes.append(
            (
                plan.stream,
                validate_plan_assignment(
                    context, assignment, active, table.num_key_groups, draining
                ),
            )
        )
        # planned on the forecast: bounded by what runs without the plan on the same loads
        # (LATEST's, else the baseline's imbalance there), not by the logs' of one day
        gate = gate_of(plan) or {}
        reference = gate.get("reference_imbalance")
        if reference is None:
            reference = plan.observed_imbalance
        # equal imbalances differ in the last bits when summed in another order
        bound = reference * (1 + 1e-9) + tolerance
        numbers = [plan.predicted_imbalance, bound, json.loads(plan.metrics)["migrated_load_share"]]
        metrics = _metrics_frame(PLAN_METRICS_COLUMNS, plan.stream, plan.strategy, numbers)
        outcomes.append((plan.stream, validate_plan_metrics(context, metrics)))
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


def _metrics_frame(
    columns: tuple[str, ...], stream: str, strategy: str, numbers: list
) -> pd.DataFrame:
    """A one-row frame of ``columns``: the stream, the strategy and a plan's numbers (doubles;
    a missing one stays null — NaN — for the suite to name)."""
    values = [math.nan if n is None else float(n) for n in numbers]
    return pd.DataFrame([(stream, strategy, *values)], columns=list(columns))


def validate_backtest(plan, context: FileDataContext) -> ValidationOutcome:
    """Suite routeplan.plan_backtest on a selected plan's ``backtest_regression`` against its
    policy's tolerance (both null without a backtest: it passes). A failure adds one line with
    the means and every window's figures (``jobs.backtest``): hourly windows are noisy, so the
    mean decides, and the windows say where."""
    row = plan.asDict()
    found = backtest_of(row.get("backtest"))
    numbers = [row.get("backtest_regression"), found.tolerance if found else None]
    frame = _metrics_frame(PLAN_BACKTEST_COLUMNS, plan.stream, plan.strategy, numbers)
    outcome = validate_plan_backtest(context, frame)
    if outcome.success or found is None:
        return outcome
    return replace(outcome, failures=[*outcome.failures, found.describe()])


def _previous_table(tables, plan, table: RoutingTable) -> RoutingTable | None:
    """The published table the plan was made against (None for a first plan)."""
    if plan.current_version is None:
        return None
    previous = RoutingStore(tables.routing).load(plan.stream, int(plan.current_version))
    if not isinstance(previous, RoutingTable) or previous.num_key_groups != table.num_key_groups:
        return None
    return previous


def validate_partitions(
    spark, args: RunArgs, plan, table: PartitionAssignment, context: FileDataContext
) -> list[ValidationOutcome]:
    """The partition-plan suites for one selected plan."""
    seen = (
        read_delta(spark, args.tables, "silver.partition_load")
        .where(args.interval_predicate() + f" AND stream = '{plan.stream}'")
        .select("partition")
        .distinct()
        .collect()
    )
    assignment = pd.DataFrame(
        list(table.partition_consumer.items()), columns=["partition", "consumer"]
    )
    consumers = [w.name for w in table.consumers.active]
    predicted = json.loads(plan.metrics)  # the Delta column of the predicted numbers
    numbers = [predicted[column] for column in PARTITION_METRICS_COLUMNS[2:]]
    metrics = _metrics_frame(PARTITION_METRICS_COLUMNS, plan.stream, plan.strategy, numbers)
    return [
        validate_partition_assignment(
            context, assignment, consumers, [r["partition"] for r in seen]
        ),
        validate_partition_metrics(context, metrics),
    ]


@contextmanager
def gx_output(home: str) -> Iterator[Path]:
    """The local folder a run's validation results and Data Docs go to (``open_context``): the
    home itself, or for an object-store home a temporary folder, uploaded to the home when the
    run's validations are done."""
    if not storage.is_remote(home):
        yield Path(home)
        return
    with tempfile.TemporaryDirectory(prefix="routeplan-gx-") as local:
        yield Path(local)
        for path in sorted(p for p in Path(local).rglob("*") if p.is_file()):
            target = storage.join(home, path.relative_to(local).as_posix())
            storage.write_bytes(target, path.read_bytes())


def data_docs_url(home: str, page: str = "index.html") -> str:
    """A page of the home's Data Docs site: a ``file://`` URL, or the object's URI."""
    location = storage.join(settings.data_docs_root(home), page)
    return location if storage.is_remote(location) else Path(location).as_uri()


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--imbalance-allowance",
        "--imbalance-tolerance",  # its old name, read for one more release
        dest="imbalance_allowance",
        type=float,
        default=0.10,
        help="how much above the logged imbalance a plan may be predicted (default 0.10: once "
        "producers follow a published table the logs are near balance, and a plan within this "
        "of them is not refused; the backtest and the next day's outcome judge it)",
    )
    ns = parser.parse_args(argv)
    args = run_args(ns)
    spark = spark_session("validate")
    with gx_output(args.home) as output:
        context = open_context(output)
        outcomes = validate(spark, args, ns.imbalance_allowance, context)
        build_data_docs(context, [o for _, o in outcomes])
    failed = [(stream, o) for stream, o in outcomes if not o.success]
    # a backtest failure refuses that stream's candidate (LATEST stays, publish says why); any
    # other failure is a broken plan or bad loads: the night stops before publish
    refused = {s: "; ".join(o.failures) for s, o in failed if o.suite == PLAN_BACKTEST_SUITE}
    failed = [(s, o) for s, o in failed if o.suite != PLAN_BACKTEST_SUITE]
    index = data_docs_url(args.home)
    report = {
        "stage": "validate",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "data_docs": index,
        "suites": [
            {
                "stream": s,
                "suite": o.suite,
                "success": o.success,
                "failures": o.failures,
                "data_docs_page": data_docs_url(args.home, o.data_docs_page),
            }
            for s, o in outcomes
        ],
        "refused": refused,
    }
    finish_stage(args, "validate", report, show=False)
    for entry in report["suites"]:
        verdict = "passed" if entry["success"] else "FAILED"
        log(
            "validate", f"{entry['stream']}: {entry['suite']}: {verdict}: {entry['data_docs_page']}"
        )
    log("validate", f"Data Docs: {index}")
    for stream, why in refused.items():
        log("validate", f"{stream}: candidate refused, LATEST stays: {why}")
    if failed:
        lines = [f"{stream}: {o.suite}: {f}" for stream, o in failed for f in o.failures]
        raise SystemExit(
            f"validation failed, nothing will be published (Data Docs: {index}):\n  "
            + "\n  ".join(lines)
        )
    return report


if __name__ == "__main__":
    main()
