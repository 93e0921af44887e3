"""publish: each stream's validated plan → a new routing-table version.

Writes ``routing/<stream>/v<N>.json`` (never rewritten), moves ``routing/<stream>/LATEST``
atomically (``routeplan.store``), and appends the version to Delta ``gold.routing_tables``.
A plan that routes every key as LATEST already does publishes nothing; the reason is recorded
in ``gold.publish_log`` like every other outcome. A plan made against another LATEST than the
one now published (a concurrent publish) is refused.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from jobs.common import RunArgs, log, read_delta, run_args, run_parser, spark_session
from routeplan.routing_table import RoutingTable
from routeplan.store import RoutingStore

TABLE_COLUMNS = (
    "stream string, version int, parent_version int, created_at string, kind string, "
    "strategy string, checksum string, run_id string, interval_start date, document string"
)
LOG_COLUMNS = (
    "interval_start date, stream string, run_id string, action string, version int, "
    "reason string, observed_imbalance double, predicted_imbalance double, logged_at timestamp"
)


def publish(spark, args: RunArgs) -> list[dict]:
    tables = args.tables
    plans = (
        read_delta(spark, tables, "gold.plans")
        .where(args.interval_predicate("interval_start") + " AND selected")
        .orderBy("stream")
        .collect()
    )
    if not plans:
        raise SystemExit(f"no selected plans for {args.interval_start}: run plan and validate")
    store = RoutingStore(tables.routing)
    outcomes, versions = [], []
    for plan in plans:
        table = RoutingTable.from_document(json.loads(plan["table_document"]))
        latest = store.latest_version(plan["stream"])
        current = store.load(plan["stream"]) if latest else None
        outcome = {
            "stream": plan["stream"],
            "observed_imbalance": plan["observed_imbalance"],
            "predicted_imbalance": plan["predicted_imbalance"],
            "strategy": plan["strategy"],
        }
        if table.same_routing(current):
            already = latest != plan["current_version"]
            outcome.update(
                action="unchanged",
                version=latest,
                reason=(
                    f"already published as v{latest}"
                    if already
                    else f"the plan routes every key as v{latest} already does"
                ),
            )
        elif latest != plan["current_version"]:
            outcome.update(
                action="refused",
                version=latest,
                reason=(
                    f"planned against v{plan['current_version']} but LATEST is now v{latest}; "
                    "rerun the plan"
                ),
            )
        else:
            published = store.publish(table)
            doc = published.to_document()
            versions.append(
                (
                    published.stream,
                    published.version,
                    published.parent_version,
                    published.created_at,
                    published.kind,
                    published.strategy,
                    doc["checksum"],
                    args.run_id,
                    args.interval_start,
                    json.dumps(doc),
                )
            )
            outcome.update(
                action="published",
                version=published.version,
                reason=(
                    f"{int(plan['moves'])} moves against v{latest}" if latest else "first version"
                ),
            )
        log(
            "publish",
            f"{outcome['stream']}: {outcome['action']} v{outcome['version']} ({outcome['reason']})",
        )
        outcomes.append(outcome)

    if versions:
        spark.createDataFrame(versions, TABLE_COLUMNS).write.format("delta").mode("append").save(
            tables.path("gold.routing_tables")
        )
    now = datetime.now(UTC)
    spark.createDataFrame(
        [
            (
                args.interval_start,
                o["stream"],
                args.run_id,
                o["action"],
                o["version"],
                o["reason"],
                o["observed_imbalance"],
                o["predicted_imbalance"],
                now,
            )
            for o in outcomes
        ],
        LOG_COLUMNS,
    ).write.format("delta").mode("append").save(tables.path("gold.publish_log"))
    return outcomes


def main(argv: list[str] | None = None) -> dict:
    ns = run_parser(__doc__.splitlines()[0]).parse_args(argv)
    args = run_args(ns)
    spark = spark_session("publish")
    outcomes = publish(spark, args)
    report = {
        "stage": "publish",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "streams": outcomes,
    }
    args.tables.write_report(args.interval_start, "publish", report)
    refused = [o for o in outcomes if o["action"] == "refused"]
    if refused:
        raise SystemExit(
            "publish refused: " + "; ".join(f"{o['stream']}: {o['reason']}" for o in refused)
        )
    return report


if __name__ == "__main__":
    main()
