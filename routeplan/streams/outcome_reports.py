"""The outcomes stage's reports, read back: what each published version did, day by day.

Each night the outcomes stage writes ``<reports>/<YYYY-MM-DD>/outcomes.json``: ``{"stage",
"run_id", "interval_start", "outcomes": [Outcome.to_row() …]}`` (``routeplan.streams.outcomes``),
and the guard stage ``<day>/guard.json``: ``{…, "guard": [{"stream", "version", "action",
"restore_version", "hold", "reason", "published_version", "status", "again"} …]}``
(``routeplan.streams.loop_state``; reports of earlier releases kept the list in outcomes.json).
``read_outcomes`` gathers them — a local folder or an object-store URI (``routeplan.storage``) —
as one record per outcome (``schemas/plan_outcomes.schema.json``): the outcome's row, the run,
and the guard's decision for that stream and version (``None`` when none was recorded). ``routeplan
outcomes`` and ``GET /streams/{stream}/outcomes`` print and serve the same records.

A day folder whose name is not a date is skipped; a report that is not JSON, too large, or not
shaped as above, and a record that breaks the schema, are skipped with a warning (one line
each), never an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from routeplan import storage
from routeplan.contracts.documents import parse_document
from routeplan.contracts.schemas import schema_errors
from routeplan.errors import one_line

REPORT = "outcomes.json"
GUARD_REPORT = "guard.json"  # the guard stage's decisions, by stream
REPORT_MAX_BYTES = 64 * 2**20
GUARD_FIELDS = ("action", "restore_version", "hold", "reason", "published_version")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class OutcomeRecords:
    """Outcome records (oldest day first) and what was skipped, one line each."""

    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def report_days(reports_root: str) -> list[str]:
    """The day folders under ``reports_root`` whose names are dates (YYYY-MM-DD), oldest first."""
    return [name for name in storage.list_folders(reports_root) if _is_day(name)]


def read_outcomes(
    reports_root: str, stream: str | None = None, days: int | None = None
) -> OutcomeRecords:
    """The outcome records of the newest ``days`` days with a report (None: every day), of
    ``stream`` only when given; oldest day first (see the module docstring)."""
    found = OutcomeRecords()
    picked: list[tuple[str, Any]] = []
    for day in reversed(report_days(reports_root)):
        if days is not None and len(picked) >= days:
            break
        where = storage.join(reports_root, day, REPORT)
        try:
            raw = storage.read_bytes(where, limit=REPORT_MAX_BYTES)
        except FileNotFoundError:
            continue
        except OSError as err:
            found.warnings.append(f"{where}: unreadable ({one_line(err)})")
            continue
        try:
            report = parse_document(raw, where, REPORT_MAX_BYTES)
            if not isinstance(report, dict) or not isinstance(report.get("outcomes"), list):
                raise ValueError(f"{where}: not an outcomes report (no outcomes list)")
        except ValueError as err:
            found.warnings.append(f"skipped {one_line(err)}")
            continue
        guard = _guard_report(reports_root, day)
        if guard:  # the guard's own report (older nights kept it in the outcomes report)
            report = {**report, "guard": [*(report.get("guard") or []), *guard]}
        picked.append((where, report))
    for where, report in reversed(picked):
        records, skipped = report_records(report, stream)
        found.records.extend(records)
        if skipped:
            found.warnings.append(
                f"{where}: skipped {skipped} outcome record{'s' if skipped > 1 else ''} "
                "that break schemas/plan_outcomes.schema.json"
            )
    return found


def report_records(report: dict[str, Any], stream: str | None = None) -> tuple[list[dict], int]:
    """One report's records (of ``stream`` only when given) and how many broke the schema."""
    guard = _guard_entries(report.get("guard"))
    records, skipped = [], 0
    for row in report["outcomes"]:
        if not isinstance(row, dict) or (stream is not None and row.get("stream") != stream):
            skipped += not isinstance(row, dict)
            continue
        record = {
            **row,
            "run_id": report.get("run_id") if isinstance(report.get("run_id"), str) else None,
            "guard": guard.get((row.get("stream"), row.get("version"))),
        }
        if schema_errors("plan_outcomes", [record]):
            skipped += 1
            continue
        records.append(record)
    return records, skipped


def _guard_entries(entries: Any) -> dict[tuple[Any, Any], dict[str, Any]]:
    """(stream, version) → the guard's decision, for the well-formed entries of ``entries``."""
    if not isinstance(entries, list):
        return {}
    found = {}
    for entry in entries:
        if isinstance(entry, dict):
            key = (entry.get("stream"), entry.get("version"))
            found[key] = {name: entry.get(name) for name in GUARD_FIELDS}
    return found


def _guard_report(reports_root: str, day: str) -> list[Any]:
    """The guard report's decisions of ``day`` (``<day>/guard.json``); [] when none is readable."""
    try:
        raw = storage.read_bytes(storage.join(reports_root, day, GUARD_REPORT), REPORT_MAX_BYTES)
        report = parse_document(raw, GUARD_REPORT, REPORT_MAX_BYTES)
    except (OSError, ValueError):
        return []
    entries = report.get("guard") if isinstance(report, dict) else None
    return entries if isinstance(entries, list) else []


def _is_day(name: str) -> bool:
    if not _DAY.fullmatch(name):
        return False
    try:
        date.fromisoformat(name)
    except ValueError:
        return False
    return True


def streams_of(records: Iterable[dict[str, Any]]) -> list[str]:
    """The streams ``records`` name, sorted."""
    return sorted({r["stream"] for r in records})
