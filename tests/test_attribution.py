"""Which version was in force on a day and the loads it carried (routeplan.streams.attribution):
the rules the outcomes and plan jobs share."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from routeplan.streams.attribution import (
    UNRECORDED,
    WindowLoads,
    hand_interval,
    main_version,
    peak_window,
    split_by_version,
    version_by_history,
)

T0 = datetime(2026, 11, 21)


def row(hour: int, worker: str, messages: float, version: int = 1, size: float = 1.0) -> dict:
    start = T0 + timedelta(hours=hour)
    return {
        "window_start": start,
        "window_end": start + timedelta(hours=1),
        "worker": worker,
        "messages": messages,
        "bytes": messages * size,
        "routing_version": version,
    }


@given(st.dictionaries(st.integers(0, 23), st.integers(0, 5), min_size=1))
def test_the_peak_window_is_the_busiest_and_the_earliest_on_a_tie(counts):
    chosen = peak_window(counts)
    assert counts[chosen] == max(counts.values())
    assert chosen == min(w for w, n in counts.items() if n == counts[chosen])


def test_window_loads_give_the_peak_window_and_the_day_in_the_metric_asked():
    rows = [row(0, "a", 10), row(0, "b", 5), row(1, "a", 2, size=100.0), row(1, "b", 20)]
    loads = WindowLoads(rows, "bytes")
    window, seconds = loads.planning_window("peak")
    assert (window, seconds) == ({"a": 200.0, "b": 20.0}, 3600.0)  # hour 1: 22 messages
    assert loads.planning_window("interval") == ({"a": 210.0, "b": 25.0}, 7200.0)
    assert loads.messages == 37


def test_stamped_events_that_name_no_worker_are_never_attributed():
    """Defect 5: ``(unrecorded)`` rows made every outcome ``unknown``."""
    rows = [row(0, "a", 10, 3), row(0, UNRECORDED, 4, 3), row(0, "b", 6, 4)]
    versions, unrecorded = split_by_version(rows)
    assert sorted(versions) == [3, 4] and unrecorded == 4
    assert all(r["worker"] != UNRECORDED for rs in versions.values() for r in rs)
    assert main_version({3: 10.0, 4: 10.0, 5: 2.0}) == 3 and main_version({}) is None


def test_a_rollback_by_hand_counts_from_the_day_it_was_made():
    """Defect 5: a rollback by hand logged a null interval and was skipped."""
    day = date(2026, 11, 22)
    log = [
        {"stream": "s", "version": 2, "interval_start": date(2026, 11, 20), "logged_at": None},
        {
            "stream": "s",
            "version": 3,
            "interval_start": None,
            "logged_at": datetime(2026, 11, 21, 9, 30),
        },  # fmt: skip
        {"stream": "t", "version": 9, "interval_start": date(2026, 11, 20), "logged_at": None},
    ]
    assert version_by_history(log, "s", day) == 3
    # made on the 21st, in force from that day on, like the version the night before published
    assert version_by_history(log, "s", date(2026, 11, 21)) == 3
    assert version_by_history(log, "s", date(2026, 11, 20)) is None
    assert version_by_history(log, "u", day) is None
    assert hand_interval(datetime(2026, 11, 21, 9, 30)) == date(2026, 11, 20)
