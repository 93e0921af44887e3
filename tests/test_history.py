"""A stream's windows over its last days (routeplan.streams.history): a day's loads routed
through a table as producers route them, and scored on the day's workers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.hashing import key_group
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import peak_excess
from routeplan.streams.history import (
    History,
    day_score,
    on_workers,
    overload_score,
    window_loads,
)

WORKERS = Workers.homogeneous(2)


def table(owners: list[str], hot=None) -> RoutingTable:
    return RoutingTable("s", "kg", WORKERS, tuple(owners), hot or {})


def test_key_groups_go_to_their_worker_and_a_hot_key_is_split_by_its_weights():
    units = np.array([[4.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    hot_key = "k"
    group = key_group(hot_key, 4)
    split = table(["w0", "w1", "w0", "w1"], {hot_key: (("w0", 1.0), ("w1", 3.0))})
    own = np.array([min(2.0, units[0, group]), 0.0])
    loads = window_loads(split, units, {hot_key: own})
    assert loads.sum(axis=1) == pytest.approx(units.sum(axis=1))  # nothing lost or made
    rest = units.copy()
    rest[:, group] -= own
    expected_w0 = rest[:, [0, 2]].sum(axis=1) + own * 0.25
    assert loads[:, 0] == pytest.approx(expected_w0)
    with pytest.raises(ValueError, match="loads of 3 units"):
        window_loads(split, units[:, :3])


def test_partitions_go_to_their_consumer_and_unknown_partitions_to_none():
    assignment = PartitionAssignment(
        "s", "mwf", Workers.homogeneous(2, "c"), {0: "c0", 1: "c1", 2: "c0"}
    )
    loads = window_loads(assignment, np.array([[1.0, 2.0, 3.0, 9.0]]))
    assert loads.tolist() == [[4.0, 2.0]]


def test_a_worker_the_day_no_longer_has_counts_as_not_active():
    old = table(["w0", "w1"])
    today = Workers((Worker("w1"), Worker("w2")))
    loads, every = on_workers(old, np.array([[3.0, 1.0]]), today)
    assert every.names == ("w1", "w2", "w0") and not every.is_active[2]
    assert loads.tolist() == [[1.0, 0.0, 3.0]]


@given(st.integers(1, 3), st.integers(1, 4), st.data())
def test_a_days_score_is_the_peak_excess_of_its_windows_routed_by_the_table(days, windows, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    units = rng.random((days, windows, 4)) * 10
    missing = data.draw(st.integers(0, windows - 1))
    units[0, missing] = np.nan  # a window the first day does not have
    history = History(tuple(str(d) for d in range(days)), units)
    kg = table(["w0", "w1", "w1", "w0"])
    for d in range(days):
        present = ~np.isnan(units[d]).all(axis=1)
        expected = peak_excess(window_loads(kg, units[d][present]))
        assert day_score(kg, history, d, WORKERS).peak_excess == pytest.approx(expected)
    assert history.first(1).days == ("0",)
    with pytest.raises(ValueError, match="days × windows × units"):
        History(("a",), np.zeros((2, 1, 1)))


def test_a_partition_assignment_is_scored_by_its_peak_overload():
    consumers = Workers.homogeneous(2, "c")
    packed = PartitionAssignment(
        "s", "mwf", consumers, {0: "c0", 1: "c0", 2: "c1"}, params={"bin_capacity": 10.0}
    )
    # window 1: c0 reads 12 > C with two partitions (2 of 15 over); c1 alone above C is fine
    loads = window_loads(packed, np.array([[4.0, 4.0, 3.0], [6.0, 6.0, 13.0], [1.0, 1.0, 1.0]]))
    found = overload_score(packed, loads)
    assert found.peak_excess == pytest.approx(2.0 / 25.0)
    assert found.day_imbalance == pytest.approx(0.0)  # the mean rates fit
    history = History(("d",), np.array([[[6.0, 6.0, 13.0]]]))
    assert day_score(packed, history, 0, consumers).peak_excess == pytest.approx(2.0 / 25.0)
