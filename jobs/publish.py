"""publish: each stream's validated plan → a new routing-table version.

Writes ``routing/<stream>/v<N>.json`` (never rewritten), moves ``routing/<stream>/LATEST``
atomically (``routeplan.publishing.store``), and appends the version to Delta
``gold.routing_tables`` (with any version published outside a job, e.g. by ``routeplan rollback``).
A plan the nightly gate kept out (``gold.plans.gate``: the version in force within the policy's
``rebalance.threshold``, not over it long enough, or no plan that pays — see
``routeplan.streams.rebalance``) is ``kept`` with the gate's reason. A plan that routes every key
as LATEST already does (capacities within the policy's
``capacity_tolerance``) publishes nothing, and one that routes as a routing rolled back within
its ``cooldown`` nights (the stream's loop state, ``routeplan.streams.loop_state``) is kept out;
the reason is recorded in ``gold.publish_log`` like every other outcome. A plan made against
another LATEST than the one now published (a concurrent publish or rollback) is refused. A held
stream (``routeplan hold``, or the regression guard's ``hold``) keeps its LATEST: its outcome is
``held`` with the hold's reason, and the night goes on. With ``--keep-versions N`` only the
newest N JSON files stay; Delta keeps every version (and its time travel every state of the
table).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

from jobs.common import (
    RunArgs,
    Tables,
    add_policies_argument,
    finish_stage,
    gate_of,
    job_policies,
    log,
    read_delta,
    register_tables,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    upgrade_table,
)
from routeplan import settings, storage
from routeplan.model.table import table_from_document
from routeplan.publishing.store import HeldError, RoutingStore, StaleLatestError
from routeplan.streams.loop_state import publish_refusal
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import Policies

TABLE_COLUMNS = (
    "stream string, version int, parent_version int, created_at string, kind string, "
    "strategy string, checksum string, run_id string, interval_start date, document string, "
    "reason string, restored_version int"
)
MERGE_ATTEMPTS = 3  # gold.routing_tables' MERGE, retried when a concurrent writer won
LOG_COLUMNS = (
    "interval_start date, stream string, run_id string, action string, version int, "
    "reason string, observed_imbalance double, predicted_imbalance double, logged_at timestamp"
)


def publish(
    spark, args: RunArgs, keep_versions: int | None = None, policies: Policies | None = None
) -> list[dict]:
    tables = args.tables
    plans = (
        read_delta(spark, tables, "gold.plans")
        .where(args.interval_predicate("interval_start") + " AND selected")
        .orderBy("stream")
        .collect()
    )
    guarded = tables.guard_actions(args.interval_start)
    if not plans and not guarded:
        raise SystemExit(f"no selected plans for {args.interval_start}: run plan and validate")
    store = RoutingStore(tables.routing)
    refused = (tables.read_report(args.interval_start, "validate") or {}).get("refused") or {}
    states = tables.loop_states(args.interval_start)
    night = args.interval_start.isoformat()
    outcomes = []
    for plan in plans:
        stream = plan["stream"]
        policy = policy_for(RunOverrides(), policies, stream)
        table = table_from_document(json.loads(plan["table_document"]))
        cooling = publish_refusal(states.get(stream), table, night, policy.cooldown)
        gate = gate_of(plan)
        if (
            gate is not None
            and not gate["publish"]
            and not table.same_routing(store.load(stream), policy.capacity_tolerance)
        ):  # a plan that routes as LATEST is `unchanged` below, as on a rerun
            outcomes.append(kept(store, plan, gate["reason"]))
        elif stream in refused:
            outcomes.append(kept(store, plan, f"the candidate's backtest was refused: "
                                 f"{refused[stream]}"))  # fmt: skip
        elif cooling is not None:
            outcomes.append(kept(store, plan, cooling))
        else:
            why = gate["reason"] if gate is not None and gate["rule"] != "first" else None
            outcomes.append(publish_plan(store, plan, policy.capacity_tolerance, why))
    streams = [o["stream"] for o in outcomes]
    ours = {(o["stream"], o["version"]) for o in outcomes if o["action"] == "published"}
    record_versions(spark, tables, store, ours, args.run_id, args.interval_start)
    append_log(spark, tables, outcomes, args.run_id, args.interval_start)
    for g in guarded:  # the outcomes job published (or held) and logged these: reported here too
        latest = store.latest_version(g["stream"])
        outcomes.append(
            {
                "stream": g["stream"],
                "action": "rolled_back" if g["action"] == "rollback" else "held",
                "version": g.get("published_version") or latest,
                "reason": g["reason"],
                "observed_imbalance": None,
                "predicted_imbalance": None,
                "strategy": None,
                "kind": None,
            }
        )
    register_tables(spark, tables)  # the nightly names for spark-sql (tables.catalog_file)
    if keep_versions:
        for stream in streams:
            pruned = store.prune(stream, keep_versions)
            if pruned:
                log("publish", f"{stream}: pruned JSON of v{pruned[0]}–v{pruned[-1]} (Delta keeps)")
    return outcomes


def kept(store: RoutingStore, plan, why: str) -> dict:
    """The outcome of a stream whose candidate is not published — the gate kept the version in
    force, validate refused its backtest, or it routes as a routing rolled back within its
    cooldown: LATEST stays (action ``kept``, ``why`` as the reason); the night goes on."""
    outcome = {
        "stream": plan["stream"],
        "observed_imbalance": plan["observed_imbalance"],
        "predicted_imbalance": plan["predicted_imbalance"],
        "strategy": plan["strategy"],
        "kind": None,
        "choice": plan.asDict().get("choice"),
        "action": "kept",
        "version": store.latest_version(plan["stream"]),
        "reason": why,
    }
    log("publish", f"{plan['stream']}: kept v{outcome['version']} ({outcome['reason'][:300]})")
    return outcome


def publish_plan(
    store: RoutingStore, plan, capacity_tolerance: float = 0.0, why: str | None = None
) -> dict:
    """Publish one stream's selected plan, or say why not: its outcome row. A plan that routes
    as LATEST — capacities within ``capacity_tolerance`` (``Table.same_routing``: capacities
    learnt from the logs move a little every night) — publishes nothing. ``why`` (the gate's
    reason) follows the moves in the published reason."""
    table = table_from_document(json.loads(plan["table_document"]))
    stream, planned_on = plan["stream"], plan["current_version"]
    latest = store.latest_version(stream)
    outcome = {
        "stream": stream,
        "observed_imbalance": plan["observed_imbalance"],
        "predicted_imbalance": plan["predicted_imbalance"],
        "strategy": plan["strategy"],
        "kind": table.kind,
        "choice": plan.asDict().get("choice"),  # why the policy's plan was chosen
        "action": "refused",
        "version": latest,
        "reason": f"planned against v{planned_on} but LATEST is now v{latest}; rerun the plan",
    }
    if table.same_routing(store.load(stream) if latest else None, capacity_tolerance):
        outcome.update(
            action="unchanged",
            reason=(
                f"the plan routes every key as v{latest} already does"
                if latest == planned_on
                else f"already published as v{latest}"
            ),
        )
    elif latest == planned_on:
        reason = f"{int(plan['moves'])} moves against v{latest}" if latest else "first version"
        reason += f": {why}" if why else ""
        try:
            chosen = outcome["choice"] or ""
            auto = f" ({chosen})" if chosen.startswith("auto") else ""  # routeplan show says it
            published = store.publish(
                table, reason=f"{plan['strategy']} plan{auto}: {reason}", expected_latest=planned_on
            )
            outcome.update(action="published", version=published.version, reason=reason)
        except StaleLatestError as err:
            outcome.update(reason=f"{err}; rerun the plan")
        except HeldError as err:  # a held stream keeps LATEST: the night goes on
            outcome.update(action="held", reason=f"held: {err.reason}", hold=err.hold)
    log("publish", f"{stream}: {outcome['action']} v{outcome['version']} ({outcome['reason']})")
    return outcome


def record_versions(
    spark,
    tables: Tables,
    store: RoutingStore,
    ours: set[tuple[str, int]],
    run_id: str,
    interval_start: date | None,
) -> int:
    """Add to ``gold.routing_tables`` every JSON version it lacks; how many were added.

    One atomic ``MERGE`` on (stream, version) inserts them, so a version recorded meanwhile by
    another publish or rollback is never recorded twice (a MERGE that lost to that writer's
    commit is run again, ``MERGE_ATTEMPTS`` in all). The versions this run published
    (``ours``) get its ``run_id`` and interval; others (from ``routeplan rollback`` in a
    terminal) are recorded with a null run.
    """
    # Delta's exceptions module also teaches a classic session to raise its Python classes
    from delta.exceptions import ConcurrentAppendException
    from pyspark.errors import PySparkException

    name = "gold.routing_tables"
    exists = table_exists(tables, name)
    known: set[tuple[str, int]] = set()  # only to read fewer documents: the MERGE decides
    if exists:
        known = {
            (r["stream"], r["version"])
            for r in read_delta(spark, tables, name).select("stream", "version").collect()
        }
    rows = []
    for stream in store.streams():
        for version in store.versions(stream):
            if (stream, version) in known:
                continue
            doc = store.read_document(stream, version)
            mine = (stream, version) in ours
            rows.append(
                (
                    stream,
                    version,
                    doc["parent_version"],
                    doc["created_at"],
                    doc["kind"],
                    doc["strategy"],
                    doc["checksum"],
                    run_id if mine else None,
                    interval_start if mine else None,
                    json.dumps(doc),
                    doc.get("reason"),
                    doc.get("restored_version"),
                )
            )
    if not rows:
        return 0
    versions = spark.createDataFrame(rows, TABLE_COLUMNS)
    path = tables.path(name)
    if exists:
        upgrade_table(spark, tables, name, versions.columns)
    else:
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in versions.schema)
        spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{path}` ({columns}) USING delta")
    merge = (
        f"MERGE INTO delta.`{path}` AS t USING {{versions}} AS v "
        "ON t.stream = v.stream AND t.version = v.version WHEN NOT MATCHED THEN INSERT *"
    )
    attempts = MERGE_ATTEMPTS
    while True:
        try:
            merged = spark.sql(merge, versions=versions).first()
            return int(merged["num_inserted_rows"])
        except PySparkException as err:  # Delta's exceptions are PySpark's too
            # Delta's class in a classic session, its error condition through Spark Connect
            lost = isinstance(err, ConcurrentAppendException) or (
                err.getCondition() or ""
            ).startswith("DELTA_CONCURRENT_APPEND")
            if not lost:
                raise
            attempts -= 1  # another writer committed first: merge again
            if not attempts:
                raise


def append_log(
    spark, tables: Tables, outcomes: list[dict], run_id: str, interval_start: date | None
) -> None:
    """One ``gold.publish_log`` row per stream outcome (published, unchanged, refused, …),
    appended with ``run_id``, the attempt's (``jobs.common.add_run_id_argument``): a rerun adds
    its own rows beside the earlier attempts', and each row says which attempt wrote it."""
    now = datetime.now(UTC)
    frame = spark.createDataFrame(
        [
            (
                interval_start,
                o["stream"],
                run_id,
                o["action"],
                o["version"],
                o["reason"],
                o.get("observed_imbalance"),
                o.get("predicted_imbalance"),
                now,
            )
            for o in outcomes
        ],
        LOG_COLUMNS,
    )
    upgrade_table(spark, tables, "gold.publish_log", frame.columns)
    frame.write.format("delta").mode("append").save(tables.path("gold.publish_log"))


def write_plots(tables: Tables, interval_start: date, outcomes: list[dict]) -> None:
    """Each published version's worker-load plot, ``<home>/reports/<day>/<stream>-v<N>.png``,
    its location in the outcome's ``plot`` (the report links it)."""
    from routeplan.plots import version_png
    from routeplan.publishing.diff import stored_parent

    store = RoutingStore(tables.routing)
    folder = storage.join(settings.reports_root(tables.home), interval_start.isoformat())
    for outcome in outcomes:
        if outcome["action"] != "published":
            continue
        stream, version = outcome["stream"], outcome["version"]
        table = store.load(stream, version)
        png, note = version_png(table, stored_parent(store, table))
        outcome["plot"] = storage.write_bytes(storage.join(folder, f"{stream}-v{version}.png"), png)
        log("publish", f"{stream}: plot {outcome['plot']}" + (f" ({note})" if note else ""))


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--keep-versions",
        type=lambda v: int(v) if v not in ("", "None") else None,
        default=None,
        help="JSON versions kept per stream (default: all; Delta keeps every version)",
    )
    add_policies_argument(parser, ": their cooldown and capacity_tolerance")
    ns = parser.parse_args(argv)
    args = run_args(ns)
    policies = job_policies(ns, args.tables.home, "publish")
    spark = spark_session("publish")
    outcomes = publish(spark, args, ns.keep_versions, policies)
    write_plots(args.tables, args.interval_start, outcomes)
    report = {
        "stage": "publish",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "streams": outcomes,
    }
    finish_stage(args, "publish", report, show=False)
    refused = [o for o in outcomes if o["action"] == "refused"]
    if refused:
        raise SystemExit(
            "publish refused: " + "; ".join(f"{o['stream']}: {o['reason']}" for o in refused)
        )
    return report


if __name__ == "__main__":
    main()
