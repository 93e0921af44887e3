import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import moves
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import imbalance, normalised_load, observed_imbalance


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


def test_moves_list_changed_groups_and_hot_keys_with_their_load():
    workers = Workers.homogeneous(2)
    loads = LoadSnapshot("s", np.array([5.0, 7.0, 1.0]), {})
    a = RoutingTable("s", "kg", workers, ("w0", "w1", "w0"))
    b = RoutingTable("s", "kg", workers, ("w0", "w0", "w1"))
    found = moves(a, b, loads)
    assert [m.unit for m in found] == ["key_group:1", "key_group:2"]
    assert sum(m.load for m in found) == 8.0
    assert moves(a, a, loads) == ()


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
