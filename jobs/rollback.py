"""rollback: publish a new version of a stream's routing table that routes as an older one.

Reads the older version from the JSON store, or from Delta ``gold.routing_tables`` when its JSON
file was pruned, publishes it as a new version (``parent_version`` = the LATEST it replaces,
``restored_version`` = the older one, ``reason`` = why), records it in ``gold.routing_tables``
and ``gold.publish_log``, and writes a report for the DAG's asset-event task. A held stream
(``routeplan hold``, the regression guard) is released: the report's ``hold_cleared`` says the
hold's reason. A rollback by hand is recorded with the day before the one it is made on, so the
next night attributes the day's traffic to it (the guard's own rollbacks keep their night).
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, date, datetime

from jobs.common import (
    Tables,
    add_home_argument,
    add_run_id_argument,
    location_arg,
    log,
    spark_session,
    table_exists,
)
from jobs.publish import append_log, record_versions
from routeplan import storage
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.store import RoutingStore
from routeplan.streams.attribution import hand_interval


def rollback(
    spark,
    tables: Tables,
    stream: str,
    version: int,
    reason: str,
    run_id: str,
    interval_start: date | None = None,
    lift_hold: bool = True,
) -> dict:
    """Publish ``version``'s routing again as a new version (from the JSON store, or from
    ``gold.routing_tables`` when pruned there) and record it; ``interval_start``: the night
    whose run did it (the regression guard's); a rollback by hand (None) is recorded with the
    day before the one it is made on (``routeplan.streams.attribution.hand_interval``), as the
    night's run that would have published it. A person's rollback lifts the stream's hold;
    the guard's (``lift_hold=False``) never does."""
    store = RoutingStore(tables.routing)
    if interval_start is None:
        interval_start = hand_interval(datetime.now(UTC))
    target = find_version(spark, tables, store, stream, version)
    if target is None:
        raise SystemExit(f"no routing table v{version} for stream {stream!r} in JSON or Delta")
    held = store.held(stream) if lift_hold else None
    table, published = store.restore(target, reason, lift_hold=lift_hold)
    outcome = {
        "stream": stream,
        "action": "rolled_back" if published else "unchanged",
        "version": table.version,
        "restored_version": version,
        "reason": table.reason
        if published
        else f"LATEST v{table.version} already routes as v{version}",
    }
    if held is not None:
        outcome["hold_cleared"] = held["reason"]
        log("rollback", f"{stream}: hold lifted (was: {held['reason']})")
    log("rollback", f"{stream}: {outcome['action']} v{table.version} ({outcome['reason']})")
    ours = {(stream, table.version)} if published else set()
    record_versions(spark, tables, store, ours, run_id, interval_start)
    append_log(spark, tables, [outcome], run_id, interval_start)
    return outcome


def find_version(
    spark, tables: Tables, store: RoutingStore, stream: str, version: int
) -> Table | None:
    """Version ``version`` of ``stream``: its JSON in ``store``, else ``gold.routing_tables``
    (Delta keeps what the store pruned); None when neither holds it."""
    if version in store.versions(stream):
        return store.load(stream, version)
    return from_history(spark, tables, stream, version)


def from_history(spark, tables: Tables, stream: str, version: int) -> Table | None:
    """A version from Delta ``gold.routing_tables`` (checksum verified), or None when it holds
    none."""
    path = tables.path("gold.routing_tables")
    rows = []
    if table_exists(tables, "gold.routing_tables"):
        rows = (
            spark.read.format("delta")
            .load(path)
            .where(f"stream = '{stream}' AND version = {int(version)}")
            .select("document")
            .collect()
        )
    return table_from_document(json.loads(rows[0]["document"])) if rows else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_home_argument(parser)
    parser.add_argument("--stream", required=True)
    parser.add_argument("--version", type=int, required=True, help="the version to restore")
    parser.add_argument("--reason", required=True)
    add_run_id_argument(parser)
    parser.add_argument("--report", help="JSON report to write, a path or URI (default: none)")
    ns = parser.parse_args(argv)
    if not ns.reason.strip():
        raise SystemExit("a rollback needs a reason")
    tables = Tables(location_arg(ns.home))
    outcome = rollback(
        spark_session("rollback"), tables, ns.stream, ns.version, ns.reason, ns.run_id
    )
    report = {"stage": "rollback", "run_id": ns.run_id, "streams": [outcome]}
    if ns.report:
        storage.write_text(ns.report, json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
