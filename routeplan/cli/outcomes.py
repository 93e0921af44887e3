"""``routeplan outcomes [--stream S] [--days N] [--json]``: what the published versions did.

Reads the outcomes stage's reports (``<reports>/<day>/outcomes.json``, local or on object
storage) through ``routeplan.streams.outcome_reports`` and prints, per stream and day (newest day
last), the version in force, how that was attributed, the headline measure predicted and realized,
the predecessor's realized, the error and the verdict — and what the regression guard did. A
report that cannot be read is one warning line on stderr; no report at all is "no outcomes yet".
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from routeplan.files import json_text
from routeplan.parsing import positive_int, stream_name
from routeplan.streams.outcome_reports import read_outcomes, streams_of

DESCRIPTION = """\
Show what each published version did on the days that followed, from the nightly outcomes
reports (<home>/reports/<day>/outcomes.json): per stream and day, newest last, the version in
force, the headline measure (imbalance, or overload for partitions) predicted, realized and
realized by its predecessor, the error, the verdict (regressed, as_predicted, improved, ...)
and the regression guard's action (rollback, hold, alert)."""


def cmd_outcomes(args: argparse.Namespace) -> int:
    from routeplan import settings

    root = args.reports or settings.reports_root()
    found = read_outcomes(root, stream=args.stream, days=args.days)
    for warning in found.warnings:
        print(f"routeplan outcomes: warning: {warning}", file=sys.stderr)
    if args.json:
        print(json_text(found.records, indent=1))
        return 0
    if not found.records:
        about = f" for stream {args.stream!r}" if args.stream else ""
        print(f"no outcomes yet{about} in {root}")
        return 0
    for stream in streams_of(found.records):
        print(stream)
        for record in (r for r in found.records if r["stream"] == stream):
            print(format_record(record))
    return 0


def format_record(r: dict[str, Any]) -> str:
    """One outcome on one line (and the guard's action, the note on lines of their own)."""
    line = (
        f"  {r['interval_start']}  v{r['version']:<4} {r['verdict']:<14} {r['measure']}: "
        f"predicted {_num(r.get('predicted'))}  realized {_num(r.get('realized'))}  "
        f"previous {_num(r.get('previous_realized'))}  error {_num(r.get('error'), True)}  "
        f"({r.get('attribution') or '-'})"
    )
    lines = [line]
    if r.get("realized_peak_excess") is not None:
        band = ""
        if r.get("band"):
            band = (
                f"  predicted {_num(r.get('predicted_peak_excess'))} "
                f"[{_num(r.get('predicted_low'))}, {_num(r.get('predicted_high'))}]: {r['band']}"
            )
        lines.append(
            f"      peak excess {_num(r['realized_peak_excess'])}  "
            f"previous {_num(r.get('previous_peak_excess'))}{band}"
        )
    if r.get("note"):
        lines.append(f"      note: {r['note']}")
    guard = r.get("guard")
    if guard and guard.get("action"):
        action = guard["action"]
        if guard.get("restore_version") is not None:
            action += f" to v{guard['restore_version']}"
        if guard.get("published_version") is not None:
            action += f", published v{guard['published_version']}"
        lines.append(f"      guard: {action}: {guard.get('reason') or ''}")
    return "\n".join(lines)


def _num(value: Any, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``routeplan outcomes``."""
    p = sub.add_parser(
        "outcomes",
        help="what published versions did: predicted vs realized, verdicts, the guard",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan outcomes
  routeplan outcomes --stream clicks --days 30
  routeplan outcomes --reports s3://bucket/home/reports --json""",
    )
    p.add_argument(
        "--reports",
        help="reports folder or s3:// URI (default $ROUTEPLAN_HOME/reports)",
    )
    p.add_argument("--stream", type=stream_name, help="default: every stream")
    p.add_argument(
        "--days",
        type=positive_int,
        default=7,
        metavar="N",
        help="the newest N days with a report (default 7)",
    )
    p.add_argument("--json", action="store_true", help="the records (plan_outcomes schema)")
    p.set_defaults(func=cmd_outcomes)
