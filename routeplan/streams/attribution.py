"""Which version was in force on a day, and the loads it carried: the rules the outcomes and
plan jobs share, on plain rows (the jobs read them from Delta).

Attribution is by data interval, never by wall clock, in this order:

1. ``event_version`` — the versions the day's events name (``routing_version``, stamped by
   producers that follow a published table), each with the traffic it routed; events that name
   no worker (``UNRECORDED``) are never attributed, and the share of the day's messages a
   version routed is reported (``attributed_share``);
2. ``published_before`` — else the last version a run for an earlier day published or rolled
   back to (``version_by_history``; a rollback by hand counts from the day it was made);
3. ``latest_at_run_start`` — else the store's LATEST as the night starts.

The planning window of a day is its busiest window by messages, the earliest on a tie
(``peak_window``), or the whole day (``interval``) — the same rule for the plan a version is
fitted on and for the outcome it is judged by.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta
from typing import Any

UNRECORDED = "(unrecorded)"  # silver.worker_load's worker for events that name none
ATTRIBUTIONS = ("event_version", "published_before", "latest_at_run_start")
# below this share of the day's messages, a version's day is not compared with the day before
# (one part of the traffic against the whole): no regressed or improved verdict
MIN_ATTRIBUTED_SHARE = 0.5


def peak_window(messages: Mapping[Any, float]) -> Any:
    """The busiest window: the most messages, the earliest start on a tie (``messages``: window
    start → messages; not empty)."""
    return min(messages, key=lambda start: (-messages[start], start))


class WindowLoads:
    """One stream's per-window × per-worker loads on one day, in one load metric, from rows
    with ``window_start``, ``window_end``, ``worker``, ``messages`` and the metric."""

    def __init__(self, rows: Iterable[Mapping[str, Any]], metric: str) -> None:
        self.windows: dict[Any, dict[str, float]] = defaultdict(dict)
        self.counts: dict[Any, float] = defaultdict(float)  # messages per window
        self.ends: dict[Any, Any] = {}
        for r in rows:
            loads = self.windows[r["window_start"]]
            loads[r["worker"]] = loads.get(r["worker"], 0.0) + float(r[metric] or 0.0)
            self.counts[r["window_start"]] += float(r["messages"] or 0)
            self.ends[r["window_start"]] = r["window_end"]

    @property
    def messages(self) -> float:
        return sum(self.counts.values())

    def planning_window(self, rule: str) -> tuple[dict[str, float], float]:
        """The loads of the planning window (``peak``: ``peak_window``; ``interval``: the day)
        and its length in seconds."""
        if not self.windows:
            return {}, 0.0
        if rule == "peak":
            start = peak_window(self.counts)
            return dict(self.windows[start]), _seconds(start, self.ends[start])
        return self.day()

    def day(self) -> tuple[dict[str, float], float]:
        """Every worker's load summed over the day's windows, and the day's span in seconds."""
        total: dict[str, float] = defaultdict(float)
        for loads in self.windows.values():
            for worker, load in loads.items():
                total[worker] += load
        span = _seconds(min(self.windows), max(self.ends.values())) if self.windows else 0.0
        return dict(total), span


def _seconds(start: Any, end: Any) -> float:
    return max((end - start).total_seconds(), 1.0)


def split_by_version(
    rows: Iterable[Mapping[str, Any]],
) -> tuple[dict[int, list[Mapping[str, Any]]], float]:
    """``silver.version_load`` rows by ``routing_version``, the rows of events that name no
    worker left out (never attributed), and those events' messages."""
    by_version: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    unrecorded = 0.0
    for r in rows:
        if r["worker"] == UNRECORDED:
            unrecorded += float(r["messages"] or 0)
        else:
            by_version[int(r["routing_version"])].append(r)
    return dict(by_version), unrecorded


def version_by_history(
    log: Iterable[Mapping[str, Any]], stream: str, day: date, now: datetime | None = None
) -> int | None:
    """The last version published or rolled back to for ``stream`` by a run for a day before
    ``day`` (``gold.publish_log`` rows: ``interval_start``, ``stream``, ``version``, and
    ``logged_at``). A row without an interval (a rollback by hand recorded before they carried
    one) counts from the day before it was logged: it was in force from that day on."""
    earlier = []
    for r in log:
        if r["stream"] != stream or r["version"] is None:
            continue
        interval = r["interval_start"]
        if interval is None and r.get("logged_at") is not None:
            interval = _day_before(r["logged_at"])
        if interval is not None and interval < day:
            earlier.append((interval, r["version"]))
    return max(earlier)[1] if earlier else None


def _day_before(moment: datetime) -> date:
    return moment.date() - timedelta(days=1)


def hand_interval(moment: datetime) -> date:
    """The interval a rollback by hand made at ``moment`` is recorded with: the day before it,
    as a night's run processing that day would have published it (its version is in force from
    ``moment``'s day on, like the night's)."""
    return _day_before(moment)


def main_version(messages: Mapping[int, float]) -> int | None:
    """The version that routed the most of the day's traffic (the lower number on a tie)."""
    if not messages:
        return None
    return min(messages, key=lambda v: (-messages[v], v))
