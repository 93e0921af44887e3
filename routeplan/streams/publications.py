"""Which run published each version of a stream, and what its plan weighed: read back from the
nightly reports, for ``routeplan explain``, the API and the Routing page.

A version gets published by one of three runs, each leaving a report under ``<reports>``:

* a night's **publish** (``<day>/publish.json``, ``action: published``), whose **plan**
  (``<day>/plan.json``) holds the stream's policy, the strategy chosen and why (``choice``), the
  budget it ran under and, since this release, every candidate ``auto`` weighed
  (``candidates``: strategy, selected, choice, moves, predicted);
* the **regression guard** of a night's guard stage (``<day>/guard.json``, a ``guard``
  entry with ``published_version``);
* the **rollback** DAG (``rollbacks/<run>.json``, ``action: rolled_back``).

``publications(reports_root, stream)`` lists what the newest ``days`` day folders and the
rollback reports say, newest first; ``find_publication`` looks for one version. A report that
is missing, not JSON, too large or not shaped as expected is skipped (its warning kept in
``Publications.warnings``), never an error: a version older than the reports kept simply has no
publication.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routeplan import storage
from routeplan.contracts.documents import parse_document
from routeplan.errors import one_line
from routeplan.model.table import Table
from routeplan.publishing.explain import explain_version
from routeplan.streams.outcome_reports import report_days

__all__ = [
    "Publication",
    "Publications",
    "explain_published",
    "find_publication",
    "plan_entry",
    "publications",
    "reports_of_run",
]

REPORT_MAX_BYTES = 64 * 2**20
ROLLBACKS = "rollbacks"
DEFAULT_DAYS = 400
MAX_ROLLBACK_REPORTS = 500  # the newest (their names start with the run's type and time)


@dataclass(frozen=True)
class Publication:
    """One version of a stream and the run that published it: ``by`` is ``plan`` (a night),
    ``regression_guard`` or ``rollback``; ``plan`` the plan report's entry for the stream
    (``plan`` only; None when that report is gone)."""

    stream: str
    version: int
    by: str
    day: str | None
    run_id: str | None
    reason: str | None
    plan: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "version": self.version,
            "by": self.by,
            "day": self.day,
            "run_id": self.run_id,
            "reason": self.reason,
            "plan": self.plan,
        }


@dataclass
class Publications:
    """Publications newest first (by day; rollbacks by their run id) and what was skipped."""

    found: list[Publication] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of(self, version: int) -> Publication | None:
        return next((p for p in self.found if p.version == version), None)


def _read(where: str, found: Publications) -> dict[str, Any] | None:
    try:
        raw = storage.read_bytes(where, limit=REPORT_MAX_BYTES)
    except FileNotFoundError:
        return None
    except OSError as err:
        found.warnings.append(f"{where}: unreadable ({one_line(err)})")
        return None
    try:
        report = parse_document(raw, where, REPORT_MAX_BYTES)
    except ValueError as err:
        found.warnings.append(f"skipped {one_line(err)}")
        return None
    if not isinstance(report, dict):
        found.warnings.append(f"skipped {where}: not a report (no JSON object)")
        return None
    return report


def _entries(report: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    entries = (report or {}).get(key)
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _run_id(report: dict[str, Any] | None) -> str | None:
    run_id = (report or {}).get("run_id")
    return run_id if isinstance(run_id, str) else None


def _version(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def plan_entry(report: dict[str, Any] | None, stream: str) -> dict[str, Any] | None:
    """The plan report's entry for ``stream`` (a JSON object), or None."""
    streams = (report or {}).get("streams")
    entry = streams.get(stream) if isinstance(streams, dict) else None
    return entry if isinstance(entry, dict) else None


def publications(reports_root: str, stream: str, days: int | None = DEFAULT_DAYS) -> Publications:
    """What the reports say published ``stream``'s versions (see the module docstring)."""
    found = Publications()
    day_names = list(reversed(report_days(reports_root)))
    for day in day_names if days is None else day_names[:days]:
        publish = _read(storage.join(reports_root, day, "publish.json"), found)
        plan_report: dict[str, Any] | None = None
        for entry in _entries(publish, "streams"):
            version = _version(entry.get("version"))
            if entry.get("stream") != stream or entry.get("action") != "published" or not version:
                continue
            if plan_report is None:
                plan_report = _read(storage.join(reports_root, day, "plan.json"), found) or {}
            reason = entry.get("reason") if isinstance(entry.get("reason"), str) else None
            found.found.append(
                Publication(
                    stream,
                    version,
                    "plan",
                    day,
                    _run_id(publish),
                    reason,
                    plan_entry(plan_report, stream),
                )
            )
        guard = _read(storage.join(reports_root, day, "guard.json"), found)
        if not _entries(guard, "guard"):  # earlier releases: the outcomes report held them
            guard = _read(storage.join(reports_root, day, "outcomes.json"), found)
        for entry in _entries(guard, "guard"):
            version = _version(entry.get("published_version"))
            if entry.get("stream") == stream and version:
                reason = entry.get("reason") if isinstance(entry.get("reason"), str) else None
                found.found.append(
                    Publication(stream, version, "regression_guard", day, _run_id(guard), reason)
                )
    folder = storage.join(reports_root, ROLLBACKS)
    try:
        names = sorted(storage.list_files(folder), reverse=True)
    except OSError as err:
        found.warnings.append(f"{folder}: unreadable ({one_line(err)})")
        names = []
    for name in [n for n in names if n.endswith(".json")][:MAX_ROLLBACK_REPORTS]:
        report = _read(name, found)
        for entry in _entries(report, "streams"):
            version = _version(entry.get("version"))
            if entry.get("stream") == stream and entry.get("action") == "rolled_back" and version:
                reason = entry.get("reason") if isinstance(entry.get("reason"), str) else None
                found.found.append(
                    Publication(stream, version, "rollback", None, _run_id(report), reason)
                )
    found.found.sort(key=lambda p: -p.version)
    return found


def find_publication(
    reports_root: str, stream: str, version: int, days: int | None = DEFAULT_DAYS
) -> Publication | None:
    """The run that published ``stream`` v``version``, when the reports still say so."""
    return publications(reports_root, stream, days).of(version)


def explain_published(
    table: Table, parent: Table | None, reports_root: str, days: int | None = DEFAULT_DAYS
) -> tuple[dict[str, Any], list[str]]:
    """``routeplan.publishing.explain.explain_version`` of a stored ``table`` with what the
    reports say of its publication — the run, and for a night's plan the budget it ran under —
    and the warnings of the reports skipped."""
    found = publications(reports_root, table.stream, days)
    publication = found.of(table.version)
    budget = None
    plan = publication.plan if publication is not None else None
    if plan is not None and isinstance(plan.get("budget"), dict):
        budget = {**plan["budget"], "migration_cost_unit": plan.get("migration_cost_unit")}
    as_json = publication.to_json() if publication is not None else None
    return explain_version(table, parent, budget, as_json), found.warnings


def reports_of_run(
    reports_root: str, run_id: str, days: int | None = DEFAULT_DAYS
) -> dict[str, Any] | None:
    """The reports a DAG run wrote: for a nightly run ``{"day", "publish", "plan", "outcomes",
    "guard"}`` (the day whose publish — else plan, else outcomes or guard — report names
    ``run_id``; a report not written is None), for a rollback run ``{"rollback": report}``;
    None when no report names it. The run id is only compared, never made a path."""
    found = Publications()
    for name in sorted(storage.list_files(storage.join(reports_root, ROLLBACKS)), reverse=True):
        if name.endswith(".json"):
            report = _read(name, found)
            if _run_id(report) == run_id:
                return {"rollback": report}
    day_names = list(reversed(report_days(reports_root)))
    for day in day_names if days is None else day_names[:days]:
        stages = {
            stage: _read(storage.join(reports_root, day, f"{stage}.json"), found)
            for stage in ("publish", "plan", "outcomes", "guard")
        }
        if any(_run_id(report) == run_id for report in stages.values()):
            return {
                "day": day,
                **{k: v if _run_id(v) == run_id else None for k, v in stages.items()},
            }
    return None
