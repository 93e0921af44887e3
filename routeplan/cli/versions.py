"""``routeplan diff``, ``routeplan explain``, ``routeplan rollback``, ``routeplan versions`` and
``routeplan serve``: operating on published routing-table versions (``$ROUTEPLAN_HOME/routing``
by default).

``rollback`` only needs the JSON store, so it works during an incident without Spark; the Delta
history (``gold.routing_tables``) records the new version at the next publish or rollback job.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from routeplan import storage
from routeplan.errors import InputError, UsageError
from routeplan.files import json_text, reading
from routeplan.parsing import checked, nonnegative_int, port, stream_name, version_number
from routeplan.publishing.diff import diff_tables, format_diff, stored_parent
from routeplan.publishing.explain import format_explanation
from routeplan.publishing.store import RoutingStore
from routeplan.streams.publications import explain_published


def routing_root(args: argparse.Namespace) -> str:
    """``--routing``, else ``$ROUTEPLAN_ROUTING``, else ``$ROUTEPLAN_HOME/routing``: a directory
    or an object-store URI (``s3://bucket/routing``)."""
    from routeplan import settings

    return args.routing or settings.routing_root()


def open_store(args: argparse.Namespace) -> RoutingStore:
    """The store at ``routing_root(args)``; ``InputError`` when a local one is not a folder."""
    root = routing_root(args)
    if not storage.is_remote(root) and Path(root).exists() and not Path(root).is_dir():
        raise InputError(f"routing store {root}: not a directory")
    return RoutingStore(root)


def _version_or_latest(text: str) -> int | None:
    return None if text.strip().lower() == "latest" else version_number(text)


def diff_versions(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """``--from-version`` and ``--to-version`` (None: LATEST), or the positional versions of
    older releases, deprecated (warned on stderr)."""
    if not args.versions:
        if args.from_version is None:
            raise UsageError("the following arguments are required: --from-version")
        return args.from_version, args.to_version
    if args.from_version is not None or args.to_version is not None:
        raise UsageError("give --from-version/--to-version or positional versions, not both")
    if len(args.versions) > 2:
        raise UsageError(f"unrecognized arguments: {' '.join(args.versions[2:])}")
    old, new = [*(checked(_version_or_latest, v, "version") for v in args.versions), None][:2]
    flags = zip(("--from-version", "--to-version"), args.versions, strict=False)
    print(
        "routeplan diff: warning: positional versions are deprecated, use "
        + " ".join(f"{flag} {text}" for flag, text in flags),
        file=sys.stderr,
    )
    return old, new


def cmd_diff(args: argparse.Namespace) -> int:
    store = open_store(args)
    old_version, new_version = diff_versions(args)
    with reading(store.folder(args.stream)):  # a corrupt stored file: exit code 1
        old, new = (store.load(args.stream, v) for v in (old_version, new_version))
    if old is None or new is None:
        raise FileNotFoundError(f"no routing table published for stream {args.stream!r}")
    diff = diff_tables(old, new)
    print(json_text(diff, indent=1) if args.json else format_diff(diff, args.limit))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from routeplan import settings

    store = open_store(args)
    with reading(store.folder(args.stream)):  # a corrupt stored file: exit code 1
        table = store.load(args.stream, args.version)
        if table is None:
            raise FileNotFoundError(f"no routing table published for stream {args.stream!r}")
        parent = stored_parent(store, table)
    reports = args.reports or settings.reports_root()
    explained, warnings = explain_published(table, parent, reports)
    for warning in warnings:
        print(f"routeplan explain: warning: {warning}", file=sys.stderr)
    print(
        json_text(explained, indent=1) if args.json else format_explanation(explained, args.limit)
    )
    return 0


def cmd_rollback(args: argparse.Namespace) -> int:
    store = open_store(args)
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
    store = open_store(args)
    streams = [args.stream] if args.stream else store.streams()
    if args.stream and not store.versions(args.stream):
        raise FileNotFoundError(
            f"no routing table published for stream {args.stream!r} in {store.root} "
            f"(streams: {', '.join(store.streams()) or 'none'})"
        )
    if not streams:
        print("[]" if args.json else f"no routing table published in {store.root}")
        return 0
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
    from routeplan.api.app import serve

    serve(
        routing_root(args),
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        allow_anonymous_read=args.allow_anonymous_read,
    )
    return 0


HELP = {  # subcommand → (one line for the list of subcommands, description, examples)
    "diff": (
        "what moves between two versions of a stream's table",
        "List what moves from one published version of a stream's table to another (LATEST by\n"
        "default): key groups, hot keys or partitions, heaviest first, with the load they carry.",
        "routeplan diff --stream clicks --from-version 3\n"
        "routeplan diff --stream clicks --from-version 3 --to-version 5 --json",
    ),
    "explain": (
        "why a version routes as it does: its moves, the budget, the objective",
        "Explain one published version of a stream's table (LATEST by default): each worker's\n"
        "load against its fair share (or the bin capacity C) before and after, every move with\n"
        "its share of the load and the overloaded worker it relieved, the budget used against the\n"
        "limits of its night's plan (from the reports), the strategy's objective and its terms.",
        "routeplan explain --stream clicks\nrouteplan explain --stream orders --version 2 --json",
    ),
    "rollback": (
        "publish a new version that routes as an older one",
        "Publish a new version of a stream's table that routes exactly as an older version does\n"
        "(versions are never rewritten), with the reason kept in it. Needs the JSON store only,\n"
        "no Spark: the nightly publish job records it in gold.routing_tables.",
        'routeplan rollback --stream clicks --version 3 --reason "v4 overloads w2"',
    ),
    "versions": (
        "published versions, newest last (* = LATEST)",
        "List the published versions of one stream, or of every stream, newest last; * marks\n"
        "the one LATEST names. A stream with nothing published is an error.",
        "routeplan versions\nrouteplan versions --stream clicks --json",
    ),
    "serve": (
        "the HTTP API over the routing tables (it publishes nothing)",
        "Serve the routing store over HTTP (FastAPI; the same API the Airflow plugin mounts):\n"
        "streams, versions, LATEST with its ETag, pinned versions, diffs, explanations, a plot\n"
        "of LATEST's worker loads, the outcomes reports, dry runs of a stream's policy (nothing\n"
        "is published), the Routing pages (/ui/) and Prometheus metrics (/metrics). Closed by\n"
        "default: every request needs Authorization: Bearer $ROUTEPLAN_API_TOKEN, unless\n"
        "--allow-anonymous-read. The OpenAPI page is /docs (public, no internet needed).",
        "ROUTEPLAN_API_TOKEN=… routeplan serve --port 8000\n"
        'curl -s -H "Authorization: Bearer $ROUTEPLAN_API_TOKEN" localhost:8000/streams\n'
        "routeplan serve --allow-anonymous-read",
    ),
}


def add_parsers(sub: argparse._SubParsersAction) -> None:
    def parser(name: str, func) -> argparse.ArgumentParser:
        summary, description, examples = HELP[name]
        p = sub.add_parser(
            name,
            help=summary,
            description=description,
            epilog="Examples:\n" + "\n".join(f"  {line}" for line in examples.splitlines()),
        )
        p.add_argument(
            "--routing",
            help="routing directory or s3:// URI "
            "(default $ROUTEPLAN_ROUTING, else $ROUTEPLAN_HOME/routing)",
        )
        p.set_defaults(func=func)
        return p

    d = parser("diff", cmd_diff)
    d.add_argument("--stream", required=True, type=stream_name)
    d.add_argument(
        "--from-version", type=version_number, metavar="N", help="the older version (required)"
    )
    d.add_argument(
        "--to-version",
        type=_version_or_latest,
        metavar="N",
        help="the newer version (default: LATEST)",
    )
    d.add_argument("versions", nargs="*", help=argparse.SUPPRESS)  # deprecated: OLD [NEW]
    d.add_argument(
        "--limit", type=nonnegative_int, default=20, help="moves to print (heaviest first)"
    )
    d.add_argument("--json", action="store_true", help="the whole diff (routing_diff schema)")

    e = parser("explain", cmd_explain)
    e.add_argument("--stream", required=True, type=stream_name)
    e.add_argument("--version", type=version_number, metavar="N", help="default: LATEST")
    e.add_argument(
        "--reports",
        help="the nightly reports, for the run and budget of the version "
        "(default $ROUTEPLAN_HOME/reports)",
    )
    e.add_argument(
        "--limit", type=nonnegative_int, default=20, help="moves to print (heaviest first)"
    )
    e.add_argument("--json", action="store_true", help="schemas/routing_explain.schema.json")

    r = parser("rollback", cmd_rollback)
    r.add_argument("--stream", required=True, type=stream_name)
    r.add_argument(
        "--version", type=version_number, required=True, metavar="N", help="the version to restore"
    )
    r.add_argument("--reason", required=True, help="why (kept in the new version)")
    r.add_argument("--json", action="store_true")

    v = parser("versions", cmd_versions)
    v.add_argument("--stream", type=stream_name, help="default: every stream")
    v.add_argument("--json", action="store_true")

    s = parser("serve", cmd_serve)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=port, default=8000)
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.add_argument(
        "--allow-anonymous-read",
        action="store_true",
        help="serve without a token (anyone who can reach the port reads every table); "
        "without it, $ROUTEPLAN_API_TOKEN must be set and clients send it as a bearer token",
    )
