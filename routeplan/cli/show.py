"""``routeplan show``: the summary of one published routing table (LATEST by default)."""

from __future__ import annotations

import argparse
import sys

from routeplan import storage
from routeplan.cli.versions import open_store
from routeplan.errors import InputError
from routeplan.files import json_text, reading
from routeplan.model.table import Table, table_from_document
from routeplan.parsing import stream_name, version_number
from routeplan.publishing.store import RoutingStore

DESCRIPTION = """\
Print one published routing table of a stream (LATEST, or --version N): its strategy, why it was
published, the predicted imbalance and moves, and its workers. --plot draws each worker's load
against its fair share, under the version it replaced and under this one, on the loads it was
planned on."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "show",
        help="summary of a published routing table (LATEST by default)",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan show --stream clicks
  routeplan show --stream clicks --version 3 --json
  routeplan show --stream clicks --plot clicks.png""",
    )
    s.add_argument("--stream", required=True, type=stream_name)
    s.add_argument("--version", type=version_number, metavar="N", help="default: LATEST")
    s.add_argument(
        "--routing",
        help="routing directory or s3:// URI "
        "(default $ROUTEPLAN_ROUTING, else $ROUTEPLAN_HOME/routing)",
    )
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--plot",
        metavar="FILE",
        help="write a PNG of each worker's load before (the parent version) and after",
    )
    s.set_defaults(func=run)


def table_summary(doc: dict) -> dict:
    """The fields of a routing-table document a person looks at first (either kind;
    ``workers`` lists a partition assignment's consumers)."""
    return {
        "stream": doc["stream"],
        "version": doc["version"],
        "parent_version": doc["parent_version"],
        "created_at": doc["created_at"],
        "strategy": doc["strategy"],
        "kind": doc["kind"],
        "num_key_groups": doc.get("num_key_groups", 0),
        "hot_keys": len(doc.get("hot_keys", [])),
        "partitions": len(doc.get("partition_consumer", {})),
        "consumers": len(set(doc.get("partition_consumer", {}).values())),
        # partition documents list their consumers (as "workers" before they had their shape)
        "workers": doc["consumers"] if "consumers" in doc else doc["workers"],
        "predicted": doc["predicted"],
        "params": doc["params"],
        "reason": doc.get("reason"),
        "restored_version": doc.get("restored_version"),
    }


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    try:
        with reading(store.folder(args.stream)):  # a corrupt stored file: exit code 1
            doc = store.read_document(args.stream, args.version)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{err} (looked in {store.root})") from None
    summary = table_summary(doc)
    if args.plot:
        summary["plot"] = write_plot(store, table_from_document(doc), args.plot)
    if args.json:
        print(json_text(summary, indent=1))
        return 0
    predicted = summary["predicted"]
    parent = summary["parent_version"]
    print(
        f"{summary['stream']} v{summary['version']} ({summary['kind']}, strategy "
        f"{summary['strategy']}, {f'parent v{parent}' if parent else 'first version'}) "
        f"published {summary['created_at']}"
    )
    if summary["reason"]:
        print(f"  reason: {summary['reason']}")
    routed = (
        f"{summary['partitions']} partitions on {summary['consumers']} consumers"
        if summary["kind"] == "partition_assignment"
        else f"{summary['hot_keys']} hot keys routed on their own"
    )
    print(
        f"  predicted imbalance {predicted.get('imbalance', float('nan')):.4f}, "
        f"moves {predicted.get('moves', 0):.0f}, "
        f"migrated load share {predicted.get('migrated_load_share', 0):.4f}, {routed}"
    )
    for w in summary["workers"]:
        print(f"  {w['worker']:<12} capacity {w['capacity']:<8g} {w['state']}")
    if args.plot:
        print(f"  plot: {summary['plot']}")
    return 0


def write_plot(store: RoutingStore, table: Table, location: str) -> str:
    """Write ``table``'s worker-load plot (against the version it replaced, when still stored)
    to ``location``; the location."""
    from routeplan.plots import version_png
    from routeplan.publishing.diff import stored_parent

    try:
        png, note = version_png(table, stored_parent(store, table))
    except ValueError as err:  # e.g. a table that records no planning load
        raise InputError(f"--plot: {err}") from None
    if note:
        print(
            f"routeplan show: note: the plot shows v{table.version} alone: {note}", file=sys.stderr
        )
    return storage.write_bytes(location, png)
