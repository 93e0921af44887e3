"""Rack-aware partition plans (KIP-881): racks on workers and partitions, the packers' in-rack
preference (rack_weight 0 = the plans of before), the cross-rack share in predicted metrics,
explanations and outcomes, racks in the policy file, and bench/racks.py's short form."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeplan.contracts.schemas import validate_document
from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.table import table_from_document
from routeplan.model.workers import Worker, Workers
from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.exact import binpack_milp
from routeplan.planning.partitions.packing import pack
from routeplan.planning.partitions.racks import cross_rack, cross_rack_fraction, in_rack
from routeplan.planning.registry import get_strategy
from routeplan.publishing.explain import explain_version, format_explanation
from routeplan.streams.outcomes import outcome, realized_cross_rack
from routeplan.streams.policy import PolicyError, load_policies

BENCH = Path(__file__).resolve().parents[1] / "bench"
RACKS = ("az1", "az2", "az3")

# ------------------------------------------------------------------------------- the model


def test_worker_rack_is_optional_and_kept_out_of_records_when_unknown():
    plain = Workers((Worker("c0", 2.0), Worker("c1", 2.0, rack="az1")))
    records = plain.to_records()
    assert records[0] == {"worker": "c0", "capacity": 2.0, "state": "active"}
    assert records[1]["rack"] == "az1"
    assert Workers.from_records(records) == plain
    assert plain.racks == (None, "az1")
    assert not plain.routes_like(Workers((Worker("c0", 2.0), Worker("c1", 2.0, rack="az2"))))


@pytest.mark.parametrize("rack", ["", "a/b", ".hidden", "x" * 200, 3])
def test_a_rack_breaking_the_name_rule_is_refused(rack):
    with pytest.raises(ValueError, match="rack"):
        Worker("c0", rack=rack)


def test_partition_racks_need_one_entry_per_partition_and_valid_names():
    loads = PartitionLoad("s", np.ones(2), partition_racks=[["az1", "az2"], []])
    assert loads.partition_racks == (("az1", "az2"), ())
    with pytest.raises(ValueError, match="each of the 2 partitions"):
        PartitionLoad("s", np.ones(2), partition_racks=[["az1"]])
    with pytest.raises(ValueError, match="partition 1: rack"):
        PartitionLoad("s", np.ones(2), partition_racks=[["az1"], ["no such/rack"]])


def test_documents_without_racks_are_unchanged_and_with_racks_round_trip():
    loads = PartitionLoad("s", np.array([5.0, 1.0, 1.0]))
    workers = Workers.homogeneous(2)
    plain = get_strategy("bfd", consumer_capacity=12.0).plan(loads, None, workers, Budget())
    doc = plain.table.published(1, None, "2026-11-28T00:00:00Z").to_document()
    assert "partition_racks" not in doc["planning_load"]
    assert all("rack" not in c for c in doc["consumers"])
    racked = PartitionLoad("s", loads.partition_load, partition_racks=[["az1"], ["az2"], []])
    rack_workers = Workers((Worker("w0", rack="az2"), Worker("w1", rack="az1")))
    plan = get_strategy("bfd", consumer_capacity=12.0).plan(racked, None, rack_workers, Budget())
    doc = plan.table.published(1, None, "2026-11-28T00:00:00Z").to_document()
    validate_document("routing_table", doc)
    back = table_from_document(doc)
    assert back.planning_snapshot().partition_racks == racked.partition_racks
    assert back.consumers.racks == plan.table.consumers.racks


# ------------------------------------------------------------------------------- the measure


def test_cross_rack_counts_only_what_both_racks_are_known_for():
    rates = np.array([10.0, 20.0, 30.0, 40.0])
    readers = ["az1", "az1", None, "az2"]
    racks = [("az1", "az2"), ("az3",), ("az1",), ()]
    assert cross_rack(rates, readers, racks) == (20.0, 30.0)  # partitions 2, 3 unknown
    assert cross_rack_fraction(rates, readers, racks) == pytest.approx(2 / 3)
    assert cross_rack_fraction(rates, [None] * 4, racks) is None
    local = in_rack(["az1", None, "az3"], racks)
    assert local.tolist() == [
        [True, False, False],
        [False, False, True],
        [True, False, False],
        [False, False, False],
    ]


# ------------------------------------------------------------------------------- planning


def _cluster(seed: int, partitions: int = 30, consumers: int = 9):
    rng = np.random.default_rng(seed)
    consumer_racks = [RACKS[i % 3] for i in range(consumers)]
    replicas = [tuple(rng.choice(RACKS, size=2, replace=False)) for _ in range(partitions)]
    rates = rng.lognormal(0.0, 1.0, partitions)
    return consumer_racks, replicas, rates / rates.sum() * 0.6 * consumers * 100.0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=st.lists(st.floats(0.0, 150.0), min_size=1, max_size=25),
    seed=st.integers(0, 10_000),
    name=st.sampled_from(["ff", "bf", "wf", "ffd", "bfd", "wfd", "mwf", "mbf", "mwfp", "mbfp"]),
    with_previous=st.booleans(),
)
def test_rack_weight_zero_plans_exactly_as_before(rates, seed, name, with_previous):
    """rack_weight = 0 with racks known gives the plan racks did not exist for; so does any
    rack_weight when no consumer is in any partition's rack."""
    rates = np.asarray(rates)
    rng = np.random.default_rng(seed)
    consumer_racks = [RACKS[i % 3] for i in range(6)]
    replicas = [tuple(rng.choice(RACKS, size=2, replace=False)) for _ in rates]
    previous = rng.integers(-1, 6, rates.size) if with_previous else None
    before = pack(name, rates, 100.0, previous).assignment
    ignored = pack(
        name,
        rates,
        100.0,
        previous,
        consumer_racks=consumer_racks,
        partition_racks=replicas,
        rack_weight=0.0,
    ).assignment
    elsewhere = pack(
        name,
        rates,
        100.0,
        previous,
        consumer_racks=["az9"] * 6,
        partition_racks=replicas,
        rack_weight=1.0,
    ).assignment
    np.testing.assert_array_equal(ignored, before)
    np.testing.assert_array_equal(elsewhere, before)


@pytest.mark.parametrize("name", ["bfd", "wfd", "ffd", "mwf", "binpack_milp"])
def test_in_rack_preference_cuts_cross_rack_bytes_without_costing_consumers(name):
    crossed = kept = 0.0
    for seed in range(4):
        consumer_racks, replicas, rates = _cluster(seed)
        plans = {
            w: pack(
                name,
                rates,
                100.0,
                None,
                consumer_racks=consumer_racks,
                partition_racks=replicas,
                rack_weight=w,
                time_limit_s=3.0,
            ).assignment
            for w in (0.0, 1.0)
        }
        for w, plan in plans.items():
            assert bm.overloaded(plan, rates, 100.0) == 0
            readers = [consumer_racks[c] if c < len(consumer_racks) else None for c in plan]
            share = cross_rack_fraction(rates, readers, replicas)
            crossed, kept = (crossed + share, kept) if w == 0 else (crossed, kept + share)
        assert bm.consumers(plans[1.0]) <= bm.consumers(plans[0.0])
    assert kept < 0.5 * crossed


def test_a_constructed_case_goes_in_rack():
    """Two consumers in az1 and az2, four partitions that fit two per consumer: rack-blind Best
    Fit Decreasing pairs them by size; with racks, each reads its own rack's."""
    rates = np.array([40.0, 39.0, 38.0, 37.0])
    replicas = [("az1",), ("az1",), ("az2",), ("az2",)]
    racks = {"consumer_racks": ["az2", "az1"], "partition_racks": replicas}
    blind = pack("bfd", rates, 100.0, None, rack_weight=0.0, **racks).assignment
    aware = pack("bfd", rates, 100.0, None, rack_weight=1.0, **racks).assignment
    readers = lambda plan: [racks["consumer_racks"][c] for c in plan]  # noqa: E731
    assert cross_rack_fraction(rates, readers(blind), replicas) > 0
    assert aware.tolist() == [1, 1, 0, 0]
    assert cross_rack_fraction(rates, readers(aware), replicas) == 0.0


def test_rack_repair_never_moves_a_partition_that_stays():
    rates = np.array([50.0, 50.0])
    local = np.array([[False, True], [True, False]])
    staying = np.array([False, False])
    assignment = np.array([0, 1])
    kept = heuristics.rack_repair(rates, 100.0, assignment, local, staying)
    np.testing.assert_array_equal(kept, assignment)
    swapped = heuristics.rack_repair(rates, 100.0, assignment, local, ~staying)
    np.testing.assert_array_equal(swapped, [1, 0])


def test_binpack_milp_reads_in_rack_at_no_cost_in_consumers():
    consumer_racks, replicas, rates = _cluster(7, partitions=16, consumers=6)
    local = in_rack(consumer_racks, replicas)
    blind = binpack_milp(rates, 100.0, time_limit_s=3.0)
    aware = binpack_milp(rates, 100.0, time_limit_s=3.0, local=local, rack_weight=1.0)
    assert bm.consumers(aware.assignment) == bm.consumers(blind.assignment)

    def share(plan):
        readers = [consumer_racks[c] if c < len(consumer_racks) else None for c in plan]
        return cross_rack_fraction(rates, readers, replicas)

    assert share(aware.assignment) <= share(blind.assignment)


def test_kafka_range_follows_kip_881():
    """Rack-aware range: each consumer first takes the partitions of its rack up to its quota,
    then the standard range pass fills the quotas; counts stay balanced."""
    replicas = [("b",), ("a",), ("b",), ("a",), ("c",)]
    plain = heuristics.kafka_range(5, 2)
    aware = heuristics.kafka_range(5, 2, ["a", "b"], replicas)
    assert plain.tolist() == [0, 0, 0, 1, 1]
    assert aware.tolist() == [1, 0, 1, 0, 0]  # c0 (a): 1, 3 then 4; c1 (b): 0, 2
    assert sorted(np.bincount(aware).tolist()) == [2, 3]
    # every partition on every rack: Kafka falls back to plain range
    same = heuristics.kafka_range(4, 2, ["a", "b"], [("a", "b")] * 4)
    np.testing.assert_array_equal(same, heuristics.kafka_range(4, 2))
    # a consumer without a rack matches any partition
    loose = heuristics.kafka_range(4, 2, [None, "b"], [("b",), ("a",), ("b",), ("a",)])
    assert loose.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize("name", ["nf", "nfd", "kafka_roundrobin"])
def test_strategies_that_cannot_prefer_a_rack_refuse_rack_weight(name):
    with pytest.raises(ValueError, match="rack_weight"):
        get_strategy(name, rack_weight=1.0)
    with pytest.raises(ValueError, match="cannot prefer in-rack"):
        pack(name, np.ones(3), 10.0, None, consumers=2, rack_weight=1.0)


def test_rack_weight_must_be_a_number_at_least_zero():
    for bad in (-1.0, float("inf"), True, "1"):
        with pytest.raises(ValueError, match="rack_weight"):
            get_strategy("bfd", rack_weight=bad)


# ------------------------------------------------------------------------------- reports


def _racked_plan(name: str = "bfd", **params):
    consumer_racks, replicas, rates = _cluster(3, partitions=12, consumers=6)
    workers = Workers(tuple(Worker(f"c{i}", 120.0, rack=r) for i, r in enumerate(consumer_racks)))
    loads = PartitionLoad("orders", rates, partition_racks=replicas)
    strategy = get_strategy(name, consumer_capacity=120.0, **params)
    return strategy.plan(loads, None, workers, Budget()), loads


def test_predicted_metrics_and_explanation_report_racks_even_for_a_rack_blind_strategy():
    aware, _ = _racked_plan("bfd")
    blind, _ = _racked_plan("nf")
    for plan in (aware, blind):
        predicted = plan.table.predicted
        assert 0.0 <= predicted["cross_rack_fraction"] <= 1.0
        assert predicted["rack_known_share"] == pytest.approx(1.0)
    assert (
        aware.table.predicted["cross_rack_fraction"] < blind.table.predicted["cross_rack_fraction"]
    )
    explained = explain_version(blind.table.published(1, None, "2026-11-28T00:00:00Z"), None)
    validate_document("routing_explain", explained)
    assert explained["racks"]["planned_by_racks"] is False
    assert sum(explained["racks"]["consumers_by_rack"].values()) == len(blind.table.consumers)
    assert "nf did not plan by racks" in format_explanation(explained)
    text = format_explanation(
        explain_version(aware.table.published(1, None, "2026-11-28T00:00:00Z"), None)
    )
    assert "read across racks" in text and "planned by racks" in text


def test_no_racks_no_rack_metrics():
    loads = PartitionLoad("orders", np.array([3.0, 4.0]))
    plan = get_strategy("bfd", consumer_capacity=10.0).plan(
        loads, None, Workers.homogeneous(2), Budget()
    )
    assert "cross_rack_fraction" not in plan.table.predicted
    assert (
        explain_version(plan.table.published(1, None, "2026-11-28T00:00:00Z"), None)["racks"]
        is None
    )


def test_outcomes_realize_the_cross_rack_share_on_measured_partition_loads():
    plan, loads = _racked_plan("bfd")
    table = plan.table.published(1, None, "2026-11-28T00:00:00Z")
    same = realized_cross_rack(table, loads.partition_load)
    assert same == pytest.approx(table.predicted["cross_rack_fraction"])
    rack_of = {w.name: w.rack for w in table.consumers.items}
    far = [
        p for p, c in table.partition_consumer.items() if rack_of[c] not in loads.partition_racks[p]
    ]
    near = sorted(set(table.partition_consumer) - set(far))
    only_near = np.zeros(loads.num_partitions)
    only_near[near] = 1.0
    assert realized_cross_rack(table, only_near) == 0.0  # that day, every byte read in rack
    if far:
        only_far = np.zeros(loads.num_partitions)
        only_far[far] = 1.0
        assert realized_cross_rack(table, only_far) == pytest.approx(1.0)
    found = outcome(
        "orders", "2026-11-28", 1, table, "event_version", 10.0, None, None, None, 0.1,
        partition_load=loads.partition_load,
    )  # fmt: skip
    assert found.realized_cross_rack_fraction == pytest.approx(same)
    assert found.predicted_cross_rack_fraction == pytest.approx(same)


# ------------------------------------------------------------------------------- the policy


def _policies(tmp_path: Path, entry: str):
    path = tmp_path / "streams.yaml"
    path.write_text(f"streams:\n  orders:\n{entry}")
    return load_policies(path)


def test_policy_reads_consumer_and_partition_racks(tmp_path):
    policies = _policies(
        tmp_path,
        "    kind: partition_assignment\n    strategy: bfd\n"
        "    workers: [{worker: c0, capacity: 5, rack: az1}, {worker: c1, capacity: 5}]\n"
        "    partition_racks: {0: [az1, az2], 2: [az3]}\n",
    )
    policy = policies.for_stream("orders")
    assert [w.rack for w in policy.to_workers().items] == ["az1", None]
    racks, note = policy.racks_for(4)
    assert racks == (("az1", "az2"), (), ("az3",), ())
    assert note == ""
    assert "partitions the loads do not have (2)" in policy.racks_for(2)[1]
    listed = _policies(
        tmp_path,
        "    kind: partition_assignment\n    strategy: bfd\n    partition_racks: [[a], [b]]\n",
    )
    assert listed.for_stream("orders").racks_for(2)[0] == (("a",), ("b",))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("    strategy: cg\n    partition_racks: [[az1]]\n", "only a partition_assignment"),
        (
            "    kind: partition_assignment\n    strategy: bfd\n    partition_racks: {-1: [a]}\n",
            "not a partition",
        ),
        (
            "    kind: partition_assignment\n    strategy: bfd\n    partition_racks: {0: []}\n",
            "partition_racks",
        ),
        (
            "    kind: partition_assignment\n    strategy: bfd\n    partition_racks: [[a/b]]\n",
            "partition_racks",
        ),
        (
            "    kind: partition_assignment\n    strategy: bfd\n"
            "    workers: [{worker: c0, rack: 'x y'}]\n",
            "rack",
        ),
        (
            "    kind: partition_assignment\n    strategy: nf\n    params: {rack_weight: 1}\n",
            "rack_weight",
        ),
    ],
)
def test_policy_rack_mistakes_name_the_file_stream_and_field(tmp_path, entry, message):
    with pytest.raises(PolicyError, match=message) as caught:
        _policies(tmp_path, entry)
    assert "streams.yaml" in str(caught.value) and "orders" in str(caught.value)


# ------------------------------------------------------------------------------- the bench


def test_bench_short_form_prints_the_table_and_a_verdict(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    sys.modules.pop("racks", None)
    bench = importlib.import_module("racks")
    result = bench.main(["--short"])
    out = capsys.readouterr().out
    assert "| kafka_range_racks |" in out and "| bfd_racks |" in out
    assert "verdict:" in out
    means = result["means"]
    assert means["bfd_racks"]["cross_rack_fraction"] < means["bfd"]["cross_rack_fraction"]
    assert (
        means["kafka_range_racks"]["cross_rack_fraction"]
        < means["kafka_range"]["cross_rack_fraction"]
    )
    assert means["bfd_racks"]["overloaded"] == 0
    assert result["verdict"].startswith("racks pay")
