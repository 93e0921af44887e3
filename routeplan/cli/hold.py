"""``routeplan hold``: hold a stream (publish nothing new for it), lift a hold, list the holds.

A hold is the routing store's ``<stream>/HOLD`` document (``RoutingStore.hold``: its reason, when,
and the LATEST it holds). While it is there the publish job keeps the stream's LATEST and logs
``held``; the regression guard puts one when a stream's policy says ``on_regression: hold``. A
person lifts it with ``--clear`` (the next night publishes again) or by a rollback (``routeplan
rollback``, the rollback DAG), which publishes the version chosen and clears the hold.
"""

from __future__ import annotations

import argparse

from routeplan.cli.versions import open_store
from routeplan.errors import UsageError
from routeplan.files import json_text
from routeplan.parsing import stream_name
from routeplan.publishing.store import MAX_HOLD_REASON, RoutingStore

DESCRIPTION = """\
Hold a stream: the nightly publish keeps its LATEST and logs "held" with the reason, until the
hold is cleared (--clear) or a rollback publishes a version (routeplan rollback, the rollback
DAG), which clears it. Without --stream (or with --list) list the held streams. The regression
guard holds a stream whose policy says on_regression: hold."""

DEFAULT_REASON = "held by hand (routeplan hold)"


def cmd_hold(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.clear and args.stream is None:
        raise UsageError("--clear needs --stream")
    if args.list or args.stream is None:
        if args.clear or args.reason is not None:
            raise UsageError("--list takes no --clear nor --reason")
        return _list(store, args)
    if args.clear:
        if args.reason is not None:
            raise UsageError("--clear takes no --reason")
        cleared = store.clear_hold(args.stream)
        if args.json:
            print(json_text({"stream": args.stream, "cleared": cleared}))
        else:
            print(f"{args.stream}: hold cleared" if cleared else f"{args.stream}: was not held")
        return 0
    if args.stream not in store.stream_folders():
        raise FileNotFoundError(
            f"no routing table published for stream {args.stream!r} in {store.root} "
            f"(streams: {', '.join(store.streams()) or 'none'})"
        )
    reason = DEFAULT_REASON if args.reason is None else args.reason
    if not reason.strip():
        raise UsageError("--reason: a hold needs a reason")
    if len(reason.strip()) > MAX_HOLD_REASON:
        raise UsageError(f"--reason: at most {MAX_HOLD_REASON} characters")
    doc = store.hold(args.stream, reason)
    if args.json:
        print(json_text({"stream": args.stream, **doc}))
    else:
        print(f"{args.stream}: held at {_version(doc)} ({doc['reason']})")
    return 0


def _list(store: RoutingStore, args: argparse.Namespace) -> int:
    if args.stream is not None:
        found = store.held(args.stream)
        holds = {args.stream: found} if found is not None else {}
    else:
        holds = store.holds()
    if args.json:
        print(json_text([{"stream": s, **doc} for s, doc in holds.items()], indent=1))
    elif not holds:
        print("no stream is held")
    else:
        for stream, doc in holds.items():
            since = f" since {doc['created_at']}" if doc.get("created_at") else ""
            by = " by the regression guard" if doc.get("by") == "guard" else ""
            print(f"{stream}: held at {_version(doc)}{since}{by}: {doc['reason']}")
    return 0


def _version(doc: dict) -> str:
    return "no version" if doc.get("version") is None else f"v{doc['version']}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``routeplan hold``."""
    p = sub.add_parser(
        "hold",
        help="hold a stream (publish nothing new), --clear it, or list the holds",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan hold --stream clicks --reason "v7 overloads w2, investigating"
  routeplan hold --stream clicks --clear
  routeplan hold --list --json""",
    )
    p.add_argument(
        "--routing",
        help="routing directory or s3:// URI "
        "(default $ROUTEPLAN_ROUTING, else $ROUTEPLAN_HOME/routing)",
    )
    p.add_argument("--stream", type=stream_name, help="the stream to hold or clear")
    p.add_argument("--reason", help=f"why (kept in the hold; default: {DEFAULT_REASON!r})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--clear", action="store_true", help="lift the stream's hold")
    mode.add_argument(
        "--list", action="store_true", help="list the held streams (with --stream: that one)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_hold)
