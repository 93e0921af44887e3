"""``routeplan.cli.binpack``: ``routeplan binpack`` (paper 002), and the partition document of the
old shape (``tests/test_api.py`` imports it from here)."""

import csv
import json

import numpy as np
import pytest
from hypothesis import strategies as st

from routeplan.cli.main import main
from routeplan.contracts.schemas import validate_document
from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.table import PartitionAssignment, table_from_document
from routeplan.model.workers import Worker, Workers
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.measurements import measurement_stream
from routeplan.planning.partitions.packing import (
    ADAPTED,
    KAFKA,
    MODIFIED,
)
from routeplan.planning.registry import get_strategy
from routeplan.publishing.store import RoutingStore
from routeplan_client import Assignment

HEURISTICS = ADAPTED + MODIFIED
C = 100.0

rates_lists = st.lists(st.floats(0, 130, allow_nan=False), min_size=1, max_size=60)


# A partition_assignment document as routeplan published it before partition assignments had
# their own shape (consumers as "workers", empty key-routing fields, a dummy key-group load).
OLD_PARTITION_DOCUMENT = {
    "stream": "orders",
    "version": 1,
    "parent_version": None,
    "created_at": "2026-11-20T00:00:00+00:00",
    "strategy": "mwf",
    "params": {
        "algorithm": "mwf",
        "consumer_capacity": 120.0,
        "iteration_s": 30.0,
        "rebalance_s": 5.0,
        "capacity": 100.0,
    },
    "kind": "partition_assignment",
    "hash": {"function": "murmur3_x86_32", "seed": 0},
    "num_key_groups": 0,
    "workers": [
        {"worker": "w0", "capacity": 120.0, "state": "active"},
        {"worker": "w1", "capacity": 120.0, "state": "active"},
    ],
    "key_group_worker": [],
    "hot_keys": [],
    "partition_consumer": {"0": "w0", "1": "w1", "2": "w1", "3": "w0", "4": "w0"},
    "strategy_state": {},
    "predicted": {
        "consumers": 2.0,
        "lower_bound": 2.0,
        "rscore": 0.0,
        "imbalance": 0.05263157894736836,
        "max_consumer_load": 100.0,
        "capacity": 100.0,
        "overloaded": 0.0,
        "oversized_partitions": 0.0,
        "total_load": 190.0,
        "moves": 0.0,
        "migrated_load": 0.0,
        "migrated_load_share": 0.0,
        "delayed_share": 0.0,
        "latency_p50_s": 0.0,
        "latency_p90_s": 0.0,
        "latency_p99_s": 0.0,
    },
    "planning_load": {
        "key_group_load": [1.0, 1.0],
        "hot_key_load": {},
        "partition_load": [60.0, 50.0, 40.0, 30.0, 10.0],
    },
    "reason": "mwf plan: first version",
    "checksum": "sha256:3909bb492b8d50b4391e0d9a66ee0ab244bdcd86f4451ca4f487e087c052844f",
}


def write_old_partition_document(root, doc=OLD_PARTITION_DOCUMENT):
    folder = root / doc["stream"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"v{doc['version']}.json").write_text(json.dumps(doc, indent=1))
    (folder / "LATEST").write_text(f"v{doc['version']}.json\n")


def test_a_partition_document_of_the_old_shape_still_loads_and_verifies(tmp_path):
    validate_document("routing_table", OLD_PARTITION_DOCUMENT)
    write_old_partition_document(tmp_path)
    store = RoutingStore(tmp_path)
    old = store.load("orders")
    assert isinstance(old, PartitionAssignment) and old.version == 1
    assert old.consumers.names == ("w0", "w1")
    assert old.partition_consumer == {0: "w0", 1: "w1", 2: "w1", 3: "w0", 4: "w0"}
    assert store.doctor("orders").clean
    assignment = Assignment.from_store(tmp_path, "orders")
    assert assignment.partitions("w0") == [0, 3, 4] and assignment.consumers == ["w0", "w1"]
    loads = old.planning_snapshot()
    assert isinstance(loads, PartitionLoad) and loads.partition_load.tolist()[0] == 60.0
    # a replan on the same loads routes alike: no new version's worth of change
    workers = Workers(tuple(Worker(f"w{i}", 120.0) for i in range(3)))
    again = get_strategy("mwf").plan(loads, old, workers, Budget())
    assert again.table.same_routing(old) and again.moves == ()
    # the metrics read the old tables' bin capacity ("capacity")
    from routeplan.planning.metrics import evaluate

    _, predicted = evaluate(old, loads)
    assert predicted["bin_capacity"] == 100.0 and predicted["consumers"] == 2.0
    # the checksum covers the document as stored: a tampered old document fails
    tampered = {**OLD_PARTITION_DOCUMENT, "partition_consumer": {"0": "w1"}}
    with pytest.raises(ValueError, match="checksum mismatch"):
        table_from_document(tampered)
    # a new version is published in the new shape, and diffs against the old one
    drifted = PartitionLoad("orders", [60.0, 50.0, 40.0, 30.0, 75.0])
    moved = get_strategy("mwf").plan(drifted, old, workers, Budget())
    new = store.publish(moved.table)
    doc = store.read_document("orders", new.version)
    assert "consumers" in doc and "workers" not in doc and doc["parent_version"] == 1
    from routeplan.publishing.diff import diff_tables

    diff = diff_tables(old, new)
    assert diff["moved_partitions"] == len(moved.moves) >= 1
    assert diff["load_basis"] == "planning_load of v2"
    validate_document("routing_diff", diff)
    # and a rollback republishes the old routing in the new shape
    restored, published = store.rollback("orders", 1, "back")
    assert published and restored.same_routing(old)
    assert "consumers" in store.read_document("orders", restored.version)


# --------------------------------------------------------------------------------------------
# CLI


def write_rates(path, rates, iterations=True):
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["iteration", "partition", "rate"] if iterations else ["partition", "rate"])
        for k, row in enumerate(np.atleast_2d(rates)):
            for p, rate in enumerate(row):
                out.writerow([k, p, rate] if iterations else [p, rate])
    return path


def test_cli_plans_a_single_measurement_from_a_current_assignment(tmp_path, capsys):
    rates = write_rates(tmp_path / "one.csv", [60.0, 50.0, 40.0, 30.0], iterations=False)
    current = tmp_path / "current.json"
    current.write_text(json.dumps({"0": "a", "1": "a", "2": "b", "3": "b"}))
    args = ["binpack", "--rates", str(rates), "--consumer-capacity", "120", "--strategies", "mwf"]
    assert main([*args, "--current", str(current), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mwf = out["algorithms"]["mwf"]
    assert out["iterations"] == 1 and out["lower_bound"] == [2] and out["bin_capacity"] == 100.0
    assert mwf["consumers"] == [2] and len(mwf["rscore"]) == 1 and mwf["rscore"][0] > 0
    assert set(mwf["partition_consumer"]) == {"0", "1", "2", "3"}
    assert set(mwf["partition_consumer"].values()) == {"a", "b"}
    assert {"p50", "p90", "p99", "delayed_share"} <= set(mwf["latency"])
    assert "cbs" not in out


def test_cli_replays_a_stream_with_several_algorithms(tmp_path, capsys):
    rates = write_rates(tmp_path / "rates.csv", measurement_stream(12, 5, 10, 100.0, seed=3))
    args = ["binpack", "--rates", str(rates), "--consumer-capacity", "120", "--json"]
    assert main([*args, "--strategies", "mwf,bfd,kafka_range", "--consumers", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["iterations"] == 5 and len(out["lower_bound"]) == 5
    for name in ("mwf", "bfd", "kafka_range"):
        entry = out["algorithms"][name]
        assert len(entry["consumers"]) == len(entry["rscore"]) == 5
        assert entry["mean_consumers"] == pytest.approx(np.mean(entry["consumers"]))
        assert entry["mean_rscore"] == pytest.approx(np.mean(entry["rscore"]), abs=1e-5)
        assert "p90" in entry["latency"]
    assert set(out["cbs"]) == {"mwf", "bfd"}  # Kafka overloads consumers: not compared
    assert min(out["cbs"].values()) == 0.0 and out["pareto_front"]
    assert main([*args, "--strategies", "kafka_range"]) == 2
    assert "--consumers" in capsys.readouterr().err
    assert main([*args, "--strategies", "nope"]) == 2
    rated = ["binpack", "--rates", str(rates), "--consumer-capacity", "120"]
    assert main([*rated, "--strategies", "mwf"]) == 0
    assert "Pareto" not in capsys.readouterr().out


def test_cli_deprecated_flags_warn_and_give_the_same_numbers(tmp_path, capsys):
    rates = write_rates(tmp_path / "rates.csv", measurement_stream(10, 4, 10, 100.0, seed=4))
    common = ["binpack", "--rates", str(rates), "--consumers", "3", "--json"]
    names = "mwf,nf,bfd,kafka_roundrobin"
    assert main([*common, "--algorithm", names, "--capacity", "120"]) == 0
    captured = capsys.readouterr()
    old = json.loads(captured.out)
    assert "--algorithm is deprecated, use --strategies" in captured.err
    assert "--capacity is deprecated, use --consumer-capacity" in captured.err
    assert main([*common, "--strategies", names, "--consumer-capacity", "120"]) == 0
    captured = capsys.readouterr()
    new = json.loads(captured.out)
    assert "deprecated" not in captured.err
    for entry in (*old["algorithms"].values(), *new["algorithms"].values()):
        entry.pop("planning_ms")
    assert old == new and set(new["algorithms"]) == set(names.split(","))
    assert main([*common, "--strategies", "mwf", "--algorithm", "mwf", "--capacity", "1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["binpack", "--rates", str(rates), "--strategies", "mwf"]) == 2
    assert "--consumer-capacity" in capsys.readouterr().err


def test_cli_replays_through_the_strategies_as_pack_does(tmp_path):
    """``routeplan binpack`` runs the registered strategies; on arrays ``replay`` runs
    ``pack``: the same assignments, iteration after iteration, from a current assignment."""
    from routeplan.planning.partitions.replay import replay, replay_strategy

    rates = measurement_stream(14, 6, 10, C, seed=9)
    current = ConsumerNames(["a", "b", "c1"])
    previous = current.encode([["a", "b", "c1"][p % 3] for p in range(14)])
    for name in (*HEURISTICS, "kafka_range"):
        arrays = replay(name, rates, C, previous, consumers=3)
        strategy = get_strategy(
            name, **({"consumers": 3} if name in KAFKA else {}), consumer_capacity=120.0
        )
        run, tables = replay_strategy(strategy, rates, ConsumerNames(current.known), previous)
        assert np.array_equal(run.assignments, arrays.assignments), name
        assert np.array_equal(run.moves, arrays.moves) and np.allclose(run.rscore, arrays.rscore)
        assert len(tables) == 6 and all(t.strategy == name for t in tables)
