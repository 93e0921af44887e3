import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.flow import flow_arrays
from routeplan.model.loads import LoadSnapshot
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import (
    collocation_factor,
    imbalance,
    load_distance,
    normalised_load,
    observed_imbalance,
    observed_peak_excess,
    skew,
)


def test_imbalance_is_zero_when_load_follows_capacity():
    assert imbalance(np.array([10.0, 10, 10])) == 0.0
    assert imbalance(np.array([50.0, 10, 10]), np.array([5.0, 1, 1])) == pytest.approx(0.0)
    assert imbalance(np.zeros(3)) == 0.0


def test_imbalance_is_max_over_mean_minus_one():
    assert imbalance(np.array([30.0, 10, 20])) == pytest.approx(30 / 20 - 1)
    # a slow worker at the same load as a fast one is the overloaded one
    assert imbalance(np.array([10.0, 10]), np.array([3.0, 1])) == pytest.approx(10 / 5 - 1)


@given(
    st.lists(st.floats(0, 1e6), min_size=1, max_size=30).filter(lambda x: sum(x) > 0),
    st.data(),
)
def test_normalised_load_averages_to_one_by_capacity(loads, data):
    caps = np.array(
        data.draw(st.lists(st.floats(0.1, 10), min_size=len(loads), max_size=len(loads)))
    )
    u = normalised_load(np.array(loads), caps)
    assert float((u * caps).sum() / caps.sum()) == pytest.approx(1.0)
    assert imbalance(np.array(loads), caps) >= -1e-12


def test_observed_imbalance_counts_unknown_workers_at_capacity_one():
    workers = Workers((Worker("a", 2.0), Worker("b", 1.0)))
    assert observed_imbalance({"a": 20.0, "b": 10.0}, workers) == pytest.approx(0.0)
    assert observed_imbalance({"a": 20.0, "b": 10.0, "x": 30.0}, workers) == pytest.approx(1.0)


def test_observed_peak_excess_is_the_peak_excess_of_the_logged_windows():
    workers = Workers((Worker("a", 2.0), Worker("b", 1.0)))
    windows = [{"a": 20.0, "b": 10.0}, {"a": 2.0, "b": 6.0}]
    # busiest window: 30 over capacity 3 = 10; the most any worker carried per capacity: 10
    assert observed_peak_excess(windows, workers) == pytest.approx(0.0)
    windows.append({"x": 30.0})  # an unknown worker at capacity 1: 30 / (30 / 4) - 1
    assert observed_peak_excess(windows, workers) == pytest.approx(3.0)
    assert observed_peak_excess([], workers) == 0.0


def test_evaluate_takes_each_kind_with_its_loads_and_a_current_of_the_other_kind_as_none():
    from routeplan.model.loads import PartitionLoad
    from routeplan.model.table import PartitionAssignment
    from routeplan.planning.metrics import evaluate

    workers = Workers.homogeneous(2)
    keys = RoutingTable("s", "kg", workers, ("w0", "w1", "w0"))
    parts = PartitionAssignment(
        "s",
        "mwf",
        Workers((Worker("w0", 120.0), Worker("w1", 120.0))),
        {0: "w0", 1: "w1", 2: "w1"},
        params={"bin_capacity": 100.0, "consumer_capacity": 120.0, "iteration_s": 30.0}
        | {"rebalance_s": 5.0},
    )
    moved, predicted = evaluate(parts, PartitionLoad("s", [60.0, 30.0, 30.0]), keys)
    assert moved == () and predicted["consumers"] == 2 and predicted["imbalance"] == 0.0
    before = PartitionAssignment("s", "mwf", parts.consumers, {0: "w1", 1: "w1", 2: "w1"})
    moved, predicted = evaluate(parts, PartitionLoad("s", [60.0, 30.0, 30.0]), before)
    assert [m.unit for m in moved] == ["partition:0"] and predicted["rscore"] == 0.6
    moved, predicted = evaluate(keys, LoadSnapshot("s", [1.0, 2.0, 1.0]), parts)
    assert moved == () and predicted["imbalance"] == pytest.approx(0.0)
    with pytest.raises(TypeError, match="PartitionLoad"):
        evaluate(parts, LoadSnapshot("s", [1.0]))
    with pytest.raises(TypeError, match="LoadSnapshot"):
        evaluate(keys, PartitionLoad("s", [1.0]))


# ---------------------------------------------------------------- metrics


def test_load_distance_is_the_largest_deviation_from_the_active_mean():
    assert load_distance(np.array([10.0, 10.0])) == 0.0
    assert load_distance(np.array([12.0, 8.0])) == pytest.approx(0.2)
    # capacity weights: a worker twice as fast carries twice the load at distance 0
    assert load_distance(np.array([20.0, 10.0]), np.array([2.0, 1.0])) == pytest.approx(0.0)
    # draining workers count only above the mean (§4.3.1 constraints (3) and (4))
    active = np.array([True, True, False])
    assert load_distance(np.array([10.0, 10.0, 0.0]), None, active) == pytest.approx(0.0)
    assert load_distance(np.array([9.0, 9.0, 2.0]), None, active) == pytest.approx(0.1)


def test_collocation_factor_counts_messages_between_groups_on_one_worker():
    flow, anchors = flow_arrays(3, [(0, 1, 30.0), (1, 2, 10.0), (("up:0", "a"), 2, 60.0)])
    snap = LoadSnapshot("s", np.ones(3), key_group_flow=flow, flow_anchors=anchors)
    assert anchors == ("a",)
    assert collocation_factor(("a", "a", "b"), snap) == pytest.approx(0.3)
    assert collocation_factor(("b", "b", "a"), snap) == pytest.approx(0.9)
    assert collocation_factor(("a", "b", "c"), LoadSnapshot("s", np.ones(3))) is None


def test_skew_metric_matches_paper_001_definition():
    assert skew(np.array([25.0, 25, 25, 25])) == 0.0
    assert skew(np.array([100.0, 0, 0, 0])) == 1.0
    # M = 100, U = 25, W = 40: (40 − 25) / (100 − 25) = 0.2 (WL5-like)
    assert skew(np.array([40.0, 20, 20, 20])) == pytest.approx(0.2)


def test_peak_excess_is_the_busiest_worker_window_over_the_busiest_windows_fair_share():
    from routeplan.planning.metrics import peak_excess

    # hour 0 balanced at its peak, hour 1 quiet but all on one worker
    loads = np.array([[10.0, 10.0], [0.0, 8.0]])
    assert peak_excess(loads) == pytest.approx(0.0)  # 10 = the busiest window's share
    assert peak_excess(np.array([[10.0, 10.0], [0.0, 14.0]])) == pytest.approx(0.4)
    # capacities: w1 twice as fast carries twice the share
    assert peak_excess(np.array([[10.0, 20.0]]), np.array([1.0, 2.0])) == pytest.approx(0.0)
    # one window: the imbalance of that window
    one = np.array([[3.0, 1.0, 2.0]])
    assert peak_excess(one) == pytest.approx(imbalance(one[0]))
    assert peak_excess(np.zeros((3, 2))) == 0.0


@given(
    st.lists(
        st.lists(st.floats(0, 1e6, allow_nan=False), min_size=3, max_size=3),
        min_size=1,
        max_size=6,
    )
)
def test_peak_excess_is_at_least_each_windows_and_the_busiest_windows_imbalance(rows):
    from routeplan.planning.metrics import peak_excess

    loads = np.array(rows)
    found = peak_excess(loads)
    busiest = loads.sum(axis=1).argmax()
    if loads.sum() > 0:
        assert found >= imbalance(loads[busiest]) - 1e-9
        assert found >= -1e-9
