"""``routeplan.planning.partitions``: partition → consumer assignment
by bin packing (paper 002): algorithms, scores, latency model, measurements, strategies."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from routeplan.contracts.schemas import validate_document
from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import BUDGET_LIMITS, Budget
from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import UnhonouredLimitError
from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.exact import binpack_milp
from routeplan.planning.partitions.latency import latency_summary, queue_segments
from routeplan.planning.partitions.measurements import measurement_stream
from routeplan.planning.partitions.packing import (
    ADAPTED,
    ALGORITHMS,
    KAFKA,
    MODIFIED,
    bin_capacity,
    pack,
)
from routeplan.planning.registry import get_strategy, strategy_names, strategy_parameters
from routeplan.publishing.store import RoutingStore
from routeplan_client import Assignment, Router

HEURISTICS = ADAPTED + MODIFIED
C = 100.0


@st.composite
def instances(draw, max_partitions=60, oversized=True):
    """Rates (some above C when ``oversized``) and a previous assignment (ids or -1)."""
    top = 130.0 if oversized else C
    rates = draw(st.lists(st.floats(0, top, allow_nan=False), min_size=1, max_size=max_partitions))
    previous = draw(
        st.lists(st.integers(-1, 12), min_size=len(rates), max_size=len(rates))
        | st.just([-1] * len(rates))
    )
    return np.array(rates), np.array(previous)


# --------------------------------------------------------------------------------------------
# Invariants


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(HEURISTICS))
def test_every_partition_on_one_consumer_none_over_capacity(instance, name):
    rates, previous = instance
    assignment = pack(name, rates, C, previous).assignment
    assert assignment.shape == rates.shape and assignment.min() >= 0
    ids, loads, counts = bm.consumer_loads(assignment, rates)
    assert bm.overloaded(assignment, rates, C) == 0
    # a consumer above C reads one partition, and that partition alone is above C
    for load, count in zip(loads, counts, strict=True):
        assert load <= C * (1 + 1e-9) or count == 1
    assert bm.consumers(assignment) >= bm.lower_bound(rates, C)
    assert np.sum(loads > C) == np.sum(rates > C)


@settings(max_examples=150, deadline=None)
@given(instances(), st.sampled_from(ADAPTED), st.integers(0, 2**16))
def test_adapted_never_use_more_consumers_than_plain(instance, name, seed):
    """§VI-A: reopening a partition's previous consumer only renames bins (Eq. 12–14)."""
    rates, previous = instance
    order = np.random.default_rng(seed).permutation(rates.size)
    adapted = pack(name, rates, C, previous, order=order).assignment
    plain = pack(name, rates, C, previous, order=order, reopen_previous=False).assignment
    assert bm.consumers(adapted) <= bm.consumers(plain)


def test_reopening_keeps_partitions_where_plain_moves_them():
    rates = np.array([60.0, 60.0])
    previous = np.array([7, 3])
    assert pack("ffd", rates, C, previous).assignment.tolist() == [7, 3]
    assert pack("ffd", rates, C, previous, reopen_previous=False).assignment.tolist() == [0, 1]


@settings(max_examples=40, deadline=None)
@given(instances(max_partitions=30, oversized=False))
def test_algorithm_1_without_history_is_its_decreasing_fit(instance):
    """With no previous consumer every partition is 'unassigned' (Alg. 1 lines 27–30)."""
    rates, _ = instance
    assert np.array_equal(pack("mwf", rates, C).assignment, pack("wfd", rates, C).assignment)
    assert np.array_equal(pack("mbfp", rates, C).assignment, pack("bfd", rates, C).assignment)


def test_algorithm_1_keeps_the_biggest_consumer_and_migrates_small_partitions():
    # consumer 0 (load 90) is visited first and kept; consumer 1's small partition (5) fits
    # into it and migrates; its big one (50) cannot and reopens consumer 1 (line 17)
    rates = np.array([50.0, 40.0, 5.0, 50.0])
    previous = np.array([0, 0, 1, 1])
    assert pack("mbf", rates, C, previous).assignment.tolist() == [0, 0, 0, 1]
    assert bm.rscore(rates, C, previous, pack("mbf", rates, C, previous).assignment) == 0.05


def test_oversized_partition_gets_a_consumer_of_its_own():
    rates = np.array([150.0, 0.0, 10.0])
    for name in HEURISTICS:
        assignment = pack(name, rates, C).assignment
        assert np.sum(assignment == assignment[0]) == 1, name
    result = binpack_milp(rates, C, time_limit_s=5)
    assert np.sum(result.assignment == result.assignment[0]) == 1
    assert bm.overloaded(result.assignment, rates, C) == 0


def test_kafka_assignors_balance_partition_counts():
    assert heuristics.kafka_range(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert heuristics.kafka_round_robin(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]
    order = np.array([6, 5, 4, 3, 2, 1, 0])
    assert heuristics.kafka_round_robin(7, 3, order).tolist() == [0, 2, 1, 0, 2, 1, 0]
    with pytest.raises(ValueError, match="number of consumers"):
        pack("kafka_range", np.ones(3), C)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_partitions=9))
@example((np.array([1.0, 6.10351562e-05]), np.array([0, 1])))  # HiGHS presolve said 2 optimal
def test_milp_never_uses_more_consumers_than_any_heuristic(instance):
    rates, previous = instance
    result = binpack_milp(rates, C, previous, time_limit_s=5)
    assert result.solver_status in ("optimal", "time_limit")
    assert bm.overloaded(result.assignment, rates, C) == 0
    best = bm.consumers(result.assignment)
    for name in HEURISTICS:
        assignment = pack(name, rates, C, previous).assignment
        assert best <= bm.consumers(assignment), name
        if result.solver_status == "optimal" and bm.consumers(assignment) == best:
            assert (
                bm.rscore(rates, C, previous, result.assignment)
                <= bm.rscore(rates, C, previous, assignment) + 1e-6
            )


def test_milp_honours_max_moves_and_reports_its_status():
    rates = np.array([60.0, 50.0, 40.0, 30.0])
    previous = np.array([0, 0, 1, 1])  # 110 on consumer 0: something must move
    with pytest.raises(ValueError, match="at most 0"):
        binpack_milp(rates, C, previous, max_moves=0, time_limit_s=5)
    free = binpack_milp(rates, C, previous, time_limit_s=5)
    assert free.solver_status == "optimal" and free.mip_gap == pytest.approx(0.0, abs=1e-9)
    assert free.solver_seconds > 0
    assert bm.consumers(free.assignment) == 2  # 60+30 and 50+40: the 30 and the 50 move
    assert bm.rscore(rates, C, previous, free.assignment) == pytest.approx(0.8)
    one = binpack_milp(rates, C, previous, max_moves=1, time_limit_s=5)
    assert bm.moved(previous, one.assignment).sum() == 1  # a third consumer takes the 50
    assert bm.consumers(one.assignment) == 3
    assert bm.rscore(rates, C, previous, one.assignment) == pytest.approx(0.5)
    cbc = binpack_milp(rates, C, previous, time_limit_s=5, solver="cbc")
    assert cbc.solver_status == "optimal" and bm.consumers(cbc.assignment) == 2


# --------------------------------------------------------------------------------------------
# Metrics


def test_rscore_is_the_papers_example():
    """§IV-A: three partitions of 100 bytes/s rebalanced, C = 100 bytes/s → Rscore 3."""
    rates = np.array([100.0, 100.0, 100.0, 100.0])
    previous = np.array([0, 1, 2, -1])  # the last one arrives: not a rebalance
    assert bm.rscore(rates, 100.0, previous, np.array([1, 2, 0, 3])) == 3.0
    assert bm.rscore(rates, 100.0, None, np.array([1, 2, 0, 3])) == 0.0


def test_cbs_lower_bound_and_pareto_front_by_hand():
    # Eq. 28: per iteration excess over the fewest, divided by the fewest, averaged
    cbs = bm.cbs({"a": [2, 3], "b": [3, 3], "c": [4, 6]})
    assert cbs == pytest.approx({"a": 0.0, "b": 0.25, "c": 1.0})
    assert bm.lower_bound(np.array([60.0, 60.0, 60.0]), 100.0) == 2
    assert bm.lower_bound(np.array([50.0, 50.0]), 100.0) == 1
    assert bm.lower_bound(np.array([150.0, 150.0]), 100.0) == 2
    assert bm.lower_bound(np.array([101.0]), 100.0) == 1
    assert bm.lower_bound(np.array([120.0, 0.0]), 100.0) == 2
    assert bm.lower_bound(np.zeros(3), 100.0) == 1
    points = {"bfd": (0.0, 25.0), "mwf": (0.11, 9.0), "nfd": (0.23, 20.0), "mbf": (0.04, 16.0)}
    assert bm.pareto_front(points) == ["bfd", "mbf", "mwf"]


def test_bin_capacity_is_five_sixths_for_30s_and_5s():
    assert bin_capacity(120.0) == pytest.approx(100.0)
    assert bin_capacity(120.0, 60.0, 0.0) == 120.0
    with pytest.raises(ValueError):
        bin_capacity(120.0, 30.0, 30.0)


# --------------------------------------------------------------------------------------------
# Eq. 15 generator


def test_measurement_stream_is_reproducible_and_follows_eq_15():
    a = measurement_stream(32, 50, 5, C, seed=7)
    assert np.array_equal(a, measurement_stream(32, 50, 5, C, seed=7))
    assert not np.array_equal(a, measurement_stream(32, 50, 5, C, seed=8))
    assert a.shape == (50, 32) and a.min() >= 0 and a.max() <= C
    assert np.abs(np.diff(a, axis=0)).max() <= 5 / 100 * C + 1e-12
    constant = measurement_stream(8, 10, 0, C, seed=1)
    assert np.all(constant == constant[0])
    free = measurement_stream(8, 400, 25, C, seed=1, clip_to_capacity=False)
    assert free.max() > C and free.min() >= 0


# --------------------------------------------------------------------------------------------
# §VI-C latency model


def test_latency_of_the_papers_example_consumer():
    """A consumer reading 10 bytes/s from two 8 bytes/s partitions: l = (0.1 − 0.0625)·i."""
    segments = queue_segments(np.array([[8.0, 8.0]]), np.array([[0, 0]]), 10.0)
    assert segments.first.tolist() == [0.0]
    assert segments.last[0] == pytest.approx((0.1 - 0.0625) * 16 * 30)  # 18 s, the last byte
    summary = latency_summary(segments)
    assert summary["delayed_share"] == pytest.approx(1.0)
    assert summary["p50"] == pytest.approx(9.0, rel=1e-6)
    assert summary["max"] == pytest.approx(18.0)


@settings(max_examples=30, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(1.01, 3.0), st.integers(1, 50))
def test_a_fixed_overloaded_consumer_carries_its_backlog(capacity, overload, iterations):
    """Eq. 20: a consumer never rebalanced (Kafka's fixed group, §VI-C) starts each iteration
    at the last latency of the previous one, so with W > C̄ throughout its last byte waits
    iterations·30·(W/C̄ − 1) s — why a fixed Kafka group's p90 reaches hundreds of seconds."""
    rates = np.full((iterations, 2), capacity * overload / 2)
    assignments = np.zeros((iterations, 2), dtype=np.int64)
    segments = queue_segments(rates, assignments, capacity)
    expected = iterations * 30.0 * (overload - 1.0)
    assert latency_summary(segments)["max"] == pytest.approx(expected, rel=1e-9)
    assert np.allclose(segments.first[1:], segments.last[:-1])  # no reset between iterations


def test_a_fully_rebalanced_consumer_catches_up_within_the_iteration():
    """C = 5/6·C̄: rebalanced bytes wait 5 s at first, 0 s at the iteration's end."""
    rates = np.array([[50.0, 50.0], [50.0, 50.0]])
    assignments = np.array([[0, 0], [1, 1]])
    summary = latency_summary(queue_segments(rates, assignments, 120.0))
    assert summary["delayed_share"] == pytest.approx(0.5)
    assert summary["p90"] == pytest.approx(4.5, rel=1e-6)
    assert summary["max"] == pytest.approx(5.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(1, 100), min_size=2, max_size=12),
    st.floats(1.0, 3.0),
    st.integers(1, 4),
)
def test_latency_grows_with_load_and_shrinks_with_capacity(rates, factor, consumers):
    rates = np.array([rates, rates])
    assignments = np.tile(np.arange(rates.shape[1]) % consumers, (2, 1))
    previous = np.roll(assignments[0], 1)  # some partitions rebalanced in iteration 1

    def summary(rates, capacity):
        segments = queue_segments(rates, assignments, capacity, previous=previous)
        return latency_summary(segments, delayed_only=False)  # over all bytes: monotone

    base = summary(rates, 120.0)
    heavier = summary(rates * factor, 120.0)
    faster = summary(rates, 120.0 * factor)
    for q in ("p50", "p90", "p99", "max"):
        assert heavier[q] >= base[q] - 1e-6
        assert faster[q] <= base[q] + 1e-6
    assert heavier["delayed_share"] >= base["delayed_share"] - 1e-9


# --------------------------------------------------------------------------------------------
# Strategies and routing tables


def snapshot(rates, stream="s"):
    return PartitionLoad(stream, np.asarray(rates, dtype=float))


def test_every_algorithm_is_a_strategy_with_the_same_name():
    assert set(ALGORITHMS) <= set(strategy_names())
    assert "consumer_capacity" in strategy_parameters("mwf")
    assert "consumers" in strategy_parameters("kafka_range")
    with pytest.raises(ValueError, match="bad parameters"):
        get_strategy("mwf", epsilon=0.1)


@pytest.mark.parametrize("name", ALGORITHMS)
def test_strategy_plans_a_schema_valid_partition_table(tmp_path, name):
    rates = np.random.default_rng(1).uniform(0, 1e6, 24)
    workers = Workers.homogeneous(4)
    plan = get_strategy(name, consumer_capacity=1.2e6).plan(
        snapshot(rates), None, workers, Budget(time_limit_s=5)
    )
    table = plan.table
    assert isinstance(table, PartitionAssignment) and table.kind == "partition_assignment"
    assert sorted(table.partition_consumer) == list(range(24))
    assert set(table.partition_consumer.values()) == set(table.consumers.names)
    assert table.params["bin_capacity"] == pytest.approx(1e6)
    assert plan.predicted["consumers"] == len(table.consumers)
    if name not in KAFKA:
        assert plan.predicted["overloaded"] == 0
        assert plan.predicted["consumers"] >= plan.predicted["lower_bound"]
        assert plan.predicted["lower_bound"] == bm.lower_bound(rates, 1e6)
        assert table.consumers.names[:4] == ("w0", "w1", "w2", "w3")  # known consumers first
    published = RoutingStore(tmp_path).publish(table)
    doc = json.loads((tmp_path / "s" / "v1.json").read_text())
    validate_document("routing_table", doc)
    assert doc["partition_consumer"]["0"] == table.partition_consumer[0]
    # the partition shape: consumers, none of the key-routing fields
    assert len(doc["consumers"]) == len(table.consumers)
    assert not {"workers", "hash", "num_key_groups", "key_group_worker", "hot_keys"} & set(doc)
    assert set(doc["planning_load"]) == {"partition_load"}
    again = table_from_document(doc)
    assert again.same_routing(published) and again.partition_consumer == table.partition_consumer


def test_replanning_moves_little_and_spares_draining_workers():
    rng = np.random.default_rng(2)
    rates = rng.uniform(0, 1e6, 40)
    workers = Workers.homogeneous(6)
    first = get_strategy("mwf", consumer_capacity=1.2e6).plan(
        snapshot(rates), None, workers, Budget()
    )
    drifted = snapshot(np.clip(rates + rng.uniform(-5e4, 5e4, 40), 0, None))
    mwf = get_strategy("mwf", consumer_capacity=1.2e6).plan(drifted, first.table, workers, Budget())
    bfd = get_strategy("bfd", consumer_capacity=1.2e6).plan(drifted, first.table, workers, Budget())
    assert mwf.predicted["rscore"] <= bfd.predicted["rscore"]
    assert mwf.predicted["moves"] == len(mwf.moves) < 40
    assert all(m.unit.startswith("partition:") for m in mwf.moves)
    # consumers an earlier plan created keep their names
    assert set(first.table.consumers.names) & set(mwf.table.consumers.names) >= {"c6"}
    draining = Workers(workers.items[:-1] + (Worker("w5", state="draining"),))
    spared = get_strategy("mwf", consumer_capacity=1.2e6).plan(
        drifted, first.table, draining, Budget()
    )
    assert "w5" not in spared.table.partition_consumer.values()
    on_w5 = [p for p, c in first.table.partition_consumer.items() if c == "w5"]
    assert {f"partition:{p}" for p in on_w5} <= {m.unit for m in spared.moves}


def test_capacity_defaults_to_the_workers_and_milp_obeys_the_move_budget():
    workers = Workers(tuple(Worker(f"w{i}", 120.0) for i in range(3)))
    rates = [60.0, 50.0, 40.0, 30.0]
    first = get_strategy("bfd").plan(snapshot(rates), None, workers, Budget())
    assert first.table.params["consumer_capacity"] == 120.0
    assert first.table.params["bin_capacity"] == pytest.approx(100.0)
    same = get_strategy("binpack_milp").plan(
        snapshot(rates), first.table, workers, Budget(max_moves=0, time_limit_s=5)
    )
    assert same.moves == () and same.table.strategy_state["solver_status"] == "optimal"
    assert same.predicted["solver_seconds"] > 0 and same.predicted["mip_gap"] >= 0
    assert "solver_optimal" not in same.predicted
    kafka = get_strategy("kafka_roundrobin").plan(snapshot(rates), None, workers, Budget())
    assert len(kafka.table.consumers) == 3  # the active workers
    kafka = get_strategy("kafka_roundrobin", consumers=2).plan(
        snapshot([60.0, 50.0, 45.0, 30.0]), None, workers, Budget()
    )
    assert len(kafka.table.consumers) == 2 and kafka.predicted["overloaded"] == 1  # 60 + 45


def test_tampered_partition_table_fails_and_schema_needs_its_map(tmp_path):
    table = PartitionAssignment("s", "mwf", Workers.homogeneous(2), {0: "w0", 1: "w1"})
    store = RoutingStore(tmp_path)
    store.publish(table)
    path = tmp_path / "s" / "v1.json"
    doc = json.loads(path.read_text())
    doc["partition_consumer"]["0"] = "w1"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="checksum mismatch"):
        store.load("s")
    del doc["partition_consumer"]
    with pytest.raises(ValueError, match="partition_consumer"):
        validate_document("routing_table", doc)
    key_doc = {**doc, "kind": "key_routing"}
    with pytest.raises(ValueError, match="key_group_worker|num_key_groups"):
        validate_document("routing_table", key_doc)


def test_consumers_read_their_partitions_with_assignment(tmp_path):
    table = PartitionAssignment("s", "mwf", Workers.homogeneous(2), {0: "w1", 1: "w0", 2: "w1"})
    RoutingStore(tmp_path).publish(table)
    assignment = Assignment.from_store(tmp_path, "s")
    assert assignment.version == 1
    assert assignment.consumer(2) == "w1"
    assert assignment.partitions("w1") == [0, 2] and assignment.partitions("nobody") == []
    assert assignment.consumers == ["w0", "w1"]
    with pytest.raises(KeyError):
        assignment.consumer(9)
    with pytest.raises(ValueError, match="Assignment"):
        Router(table)
    with pytest.raises(ValueError, match="not a partition_assignment"):
        Assignment(RoutingTable("s", "kg", Workers.homogeneous(1), ("w0",)))


PARTITION_STRATEGIES = sorted(
    n for n in strategy_names() if get_strategy(n).kind == "partition_assignment"
)
LIMITS = {"max_moves": 1, "max_migrated_load_share": 0.5, "max_migration_cost": 1.0}


def test_the_partition_strategies_are_the_algorithms_each_a_class_of_its_own():
    assert sorted(ALGORITHMS) == PARTITION_STRATEGIES
    classes = {type(get_strategy(n)) for n in PARTITION_STRATEGIES}
    assert len(classes) == len(ALGORITHMS)  # one class per strategy: grep finds each
    assert {
        n: get_strategy(n).honours for n in PARTITION_STRATEGIES if get_strategy(n).honours
    } == {"binpack_milp": frozenset({"max_moves"})}


@pytest.mark.parametrize(
    ("name", "limit"),
    [
        (n, limit)
        for n in PARTITION_STRATEGIES
        for limit in BUDGET_LIMITS
        if limit not in get_strategy(n).honours
    ],
)
def test_every_partition_strategy_refuses_a_limit_it_does_not_honour(name, limit):
    strategy = get_strategy(name, consumer_capacity=120.0)
    with pytest.raises(UnhonouredLimitError, match=f"{name}.*{limit}"):
        strategy.plan(
            snapshot([60.0, 50.0, 40.0]),
            None,
            Workers.homogeneous(3),
            Budget(**{limit: LIMITS[limit]}),
        )


def test_partition_strategies_plan_from_partition_loads_only():
    from routeplan.model.loads import LoadSnapshot

    with pytest.raises(TypeError, match="PartitionLoad"):
        get_strategy("mwf").plan(LoadSnapshot("s", [1.0]), None, Workers.homogeneous(2), Budget())


@pytest.mark.parametrize("max_moves", [0, 1, 3])
def test_binpack_milp_honours_max_moves(max_moves):
    rng = np.random.default_rng(11)
    workers = Workers(tuple(Worker(f"w{i}", 120.0) for i in range(6)))
    rates = rng.uniform(5, 40, 16)
    first = get_strategy("mwf").plan(snapshot(rates), None, workers, Budget())
    drifted = snapshot(rates * rng.uniform(0.3, 0.8, 16))  # fewer consumers would do now
    free = get_strategy("binpack_milp").plan(drifted, first.table, workers, Budget(time_limit_s=5))
    assert len(free.moves) > max_moves  # the limit binds
    capped = get_strategy("binpack_milp").plan(
        drifted, first.table, workers, Budget(max_moves=max_moves, time_limit_s=5)
    )
    assert len(capped.moves) == capped.predicted["moves"] <= max_moves
    assert capped.predicted["overloaded"] == 0
    # the partitions a draining worker must give up count against the budget
    on_w0 = sum(c == "w0" for c in first.table.partition_consumer.values())
    assert on_w0 >= 1
    draining = Workers((Worker("w0", 120.0, "draining"), *workers.items[1:]))
    with pytest.raises(ValueError, match="draining"):
        get_strategy("binpack_milp").plan(
            drifted, first.table, draining, Budget(max_moves=on_w0 - 1, time_limit_s=5)
        )
    spared = get_strategy("binpack_milp").plan(
        drifted, first.table, draining, Budget(max_moves=on_w0 + max_moves, time_limit_s=5)
    )
    assert "w0" not in spared.table.partition_consumer.values()
    assert len(spared.moves) <= on_w0 + max_moves


def test_consumer_names_number_known_consumers_first():
    names = ConsumerNames(["w0", "c2"], reserved=["w9"])
    assert names.encode(["c2", None, "w0"]).tolist() == [1, -1, 0]
    assert names.decode([0, 1, 2, 3]) == ["w0", "c2", "c2_1", "c3"]
