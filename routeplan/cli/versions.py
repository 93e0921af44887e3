"""``routeplan diff``, ``routeplan rollback``, ``routeplan versions`` and ``routeplan serve``:
operating on published routing-table versions (``$ROUTEPLAN_HOME/routing`` by default).

``rollback`` only needs the JSON store, so it works during an incident without Spark; the Delta
history (``gold.routing_tables``) records the new version at the next publish or rollback job.
"""

from __future__ import annotations

import argparse

from routeplan import settings
from routeplan.files import json_text, reading
from routeplan.parsing import nonnegative_int, port, stream_name, version_number
from routeplan.publishing.diff import diff_tables, format_diff
from routeplan.publishing.store import RoutingStore


def routing_root(args: argparse.Namespace) -> str:
    """``--routing``, else ``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing``: a directory
    or an object-store URI (``s3://bucket/routing``)."""
    return args.routing or settings.routing_root()


def _version_or_latest(text: str) -> int | None:
    return None if text.strip().lower() == "latest" else version_number(text)


def cmd_diff(args: argparse.Namespace) -> int:
    store = RoutingStore(routing_root(args))
    with reading(store.folder(args.stream)):  # a corrupt stored file: exit code 1
        old, new = (store.load(args.stream, v) for v in (args.old, args.new))
    if old is None or new is None:
        raise FileNotFoundError(f"no routing table published for stream {args.stream!r}")
    diff = diff_tables(old, new)
    print(json_text(diff, indent=1) if args.json else format_diff(diff, args.limit))
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    store = RoutingStore(routing_root(args))
    table, published = store.rollback(args.stream, args.version, args.reason)
    if args.json:
        print(json_text({"published": published, **table.to_document()}))
    elif published:
        print(
            f"{table.stream}: published v{table.version} (routes as v{table.restored_version}, "
            f"replaces v{table.parent_version}): {table.reason}"
        )
    else:
        print(f"{table.stream}: LATEST v{table.version} already routes as v{args.version}")
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    store = RoutingStore(routing_root(args))
    streams = [args.stream] if args.stream else store.streams()
    if args.stream and not store.versions(args.stream):
        raise FileNotFoundError(
            f"no routing table published for stream {args.stream!r} in {store.root} "
            f"(streams: {', '.join(store.streams()) or 'none'})"
        )
    rows = []
    for stream in streams:
        with reading(store.folder(stream)):  # a corrupt stored file: exit code 1
            latest = store.latest_version(stream)
            docs = {v: store.read_document(stream, v) for v in store.versions(stream)}
        for version, doc in docs.items():
            rows.append(
                {
                    "stream": stream,
                    "version": version,
                    "latest": version == latest,
                    "parent_version": doc["parent_version"],
                    "created_at": doc["created_at"],
                    "strategy": doc["strategy"],
                    "restored_version": doc.get("restored_version"),
                    "reason": doc.get("reason"),
                }
            )
    if args.json:
        print(json_text(rows, indent=1))
        return 0
    for r in rows:
        mark = "*" if r["latest"] else " "
        print(
            f"{mark} {r['stream']:<12} v{r['version']:<5} {r['created_at']}  {r['strategy']:<8}"
            f" {r['reason'] or ''}"
        )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from routeplan.publishing.api import serve

    serve(routing_root(args), host=args.host, port=args.port, log_level=args.log_level)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    def parser(name: str, help: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.add_argument(
            "--routing",
            help="routing directory or s3:// URI "
            "(default $ROUTEPLAN_ROUTING, else $ROUTEPLAN_HOME/routing)",
        )
        p.set_defaults(func=func)
        return p

    d = parser("diff", "what moves between two versions of a stream's table", cmd_diff)
    d.add_argument("--stream", required=True, type=stream_name)
    d.add_argument("old", type=_version_or_latest, help="version number (or 'latest')")
    d.add_argument("new", type=_version_or_latest, nargs="?", default=None, help="default: latest")
    d.add_argument(
        "--limit", type=nonnegative_int, default=20, help="moves to print (heaviest first)"
    )
    d.add_argument("--json", action="store_true", help="the whole diff (routing_diff schema)")

    r = parser("rollback", "publish a new version that routes as an older one", cmd_rollback)
    r.add_argument("--stream", required=True, type=stream_name)
    r.add_argument("--version", type=version_number, required=True, help="the version to restore")
    r.add_argument("--reason", required=True, help="why (kept in the new version)")
    r.add_argument("--json", action="store_true")

    v = parser("versions", "published versions, newest last (* = LATEST)", cmd_versions)
    v.add_argument("--stream", type=stream_name, help="default: every stream")
    v.add_argument("--json", action="store_true")

    s = parser("serve", "the read-only HTTP API over the routing tables", cmd_serve)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=port, default=8000)
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
