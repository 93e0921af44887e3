"""``routeplan doctor [--stream S] [--fix] [--json]``: a routing store's state after faults.

Prints ``RoutingStore.doctor``'s report for one stream, or for every stream folder: LATEST's
state, corrupt version files, temp files and orphan versions (LATEST's history never named them:
left by killed publishers), and the stream's hold when it is held (``routeplan hold``). With
``--fix`` it removes temp files, points a broken LATEST at the newest valid version and moves the
orphans to ``<stream>/unpublished/`` (the store does the work, under the publish lock, or by
conditional writes on object storage; this module only formats). Exit code 0 when every stream
is clean (orphans do no harm), 1 while problems remain — and when there is no store at
``--routing`` (a local folder that does not exist). ``--routing`` may be a directory or a URI
(``s3://bucket/routing``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from routeplan.cli.versions import open_store
from routeplan.errors import InputError
from routeplan.parsing import stream_name
from routeplan.publishing.store import version_runs
from routeplan.publishing.store_doctor import UNPUBLISHED, DoctorReport

DESCRIPTION = """\
Check a routing store after crashes or interrupted publishes: LATEST's state, corrupt version
files, temp files, orphan versions (written, never published: LATEST's history never named
them) and held streams (routeplan hold). Exit code 0 when every stream is clean (a hold or an
orphan is no problem), 1 while problems remain or when there is no store at --routing.
--fix removes temp files, points a broken LATEST at the newest valid version and moves orphans
to <stream>/unpublished/ (never deleted, never served)."""


def cmd_doctor(args: argparse.Namespace) -> int:
    store = open_store(args)
    if not store.is_remote and not Path(store.root).is_dir():
        raise InputError(f"no routing store at {store.root}: the folder does not exist")
    streams = [args.stream] if args.stream is not None else store.stream_folders()
    if args.stream is not None and args.stream not in store.stream_folders():
        raise FileNotFoundError(
            f"no folder for stream {args.stream!r} in {store.root} "
            f"(streams: {', '.join(store.stream_folders()) or 'none'})"
        )
    reports = [store.doctor(stream, fix=args.fix) for stream in streams]
    if args.json:
        print(json.dumps([report.to_dict() for report in reports], indent=1))
    elif not reports:
        print(f"{store.root}: no stream folders (nothing published yet)")
    else:
        for report in reports:
            print(format_report(report, hint=not args.fix))
    return 0 if all(report.clean for report in reports) else 1


def format_report(report: DoctorReport, hint: bool = True) -> str:
    """The report for a person: a line for the stream, then one per repair, problem, orphans."""
    stored = sorted({*report.valid_versions, *(v for v, _ in report.corrupt_versions)})
    count = len(report.problems)
    state = "ok" if report.clean else f"{count} problem{'s' if count > 1 else ''}"
    latest = (
        f"LATEST v{report.latest_version}"
        if report.latest == "ok"
        else f"LATEST {report.latest.replace('_', ' ')}"
    )
    lines = [f"{report.stream}: {state}, {latest} (versions {version_runs(stored)})"]
    lines += [f"  fixed: {what}" for what in report.fixed]
    lines += [f"  problem: {problem}" for problem in report.problems]
    if report.orphan_versions:
        lines.append(
            f"  orphan versions {version_runs(list(report.orphan_versions))}: LATEST never named "
            f"them, never published (--fix moves them to {report.stream}/{UNPUBLISHED}/; no "
            "number is given twice)"
        )
    if report.unknown_versions:
        lines.append(
            f"  versions {version_runs(list(report.unknown_versions))}: below v"
            f"{report.history_break}, which cannot be read: whether LATEST ever named them "
            "cannot be told (left alone)"
        )
    if report.hold is not None:
        hold = report.hold
        at = f" at v{hold['version']}" if hold.get("version") is not None else ""
        since = f" since {hold['created_at']}" if hold.get("created_at") else ""
        lines.append(
            f"  held{at}{since}: {hold['reason']} (nothing new is published; "
            f"routeplan hold --stream {report.stream} --clear, or a rollback, lifts it)"
        )
    if hint and report.problems:
        lines.append(f"  repair: routeplan doctor --stream {report.stream} --fix")
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``routeplan doctor``."""
    p = sub.add_parser(
        "doctor",
        help="check routing-table files after faults; --fix repairs what is safe",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan doctor
  routeplan doctor --stream clicks --fix
  routeplan doctor --routing s3://bucket/routing --json""",
    )
    p.add_argument(
        "--routing",
        help="routing directory or s3:// URI "
        "(default $ROUTEPLAN_ROUTING, else $ROUTEPLAN_HOME/routing)",
    )
    p.add_argument("--stream", type=stream_name, help="default: every stream folder")
    p.add_argument(
        "--fix",
        action="store_true",
        help="remove temp files; point a broken LATEST at the newest valid version; move "
        "orphan versions to <stream>/unpublished/",
    )
    p.add_argument("--json", action="store_true", help="one report per stream")
    p.set_defaults(func=cmd_doctor)
