"""``routeplan.publishing.explain``: why a published version routes as it does."""

from __future__ import annotations

import pytest

from routeplan.contracts.schemas import validate_document
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.explain import explain_version, format_explanation, published_by

WORKERS = Workers.homogeneous(2)  # w0, w1 of capacity 1
LOADS = {"key_group_load": [4.0, 1.0, 1.0, 2.0], "hot_key_load": {}}  # total 8: a share is 4


def keys(owners: list[str], version: int, parent: int | None, **kw) -> RoutingTable:
    table = RoutingTable(
        "clicks",
        kw.pop("strategy", "cg"),
        WORKERS,
        tuple(owners),
        planning_load=kw.pop("planning_load", LOADS),
        predicted={"imbalance": 0.0, "moves": 2.0, "memory": 9.0, "unrelated": 1.0},
        params={"epsilon": 0.01, "theta_busy": 1.03},
    )
    return table.published(version, parent, "2026-11-20T00:00:00+00:00", **kw)


def partitions(
    assign: dict[int, str], version: int, parent: int | None, stream: str = "orders"
) -> PartitionAssignment:
    table = PartitionAssignment(
        stream,
        "mwf",
        Workers.homogeneous(2, prefix="c"),
        assign,
        params={"bin_capacity": 4.0},
        planning_load={"partition_load": [3.0, 2.0, 1.0]},
        predicted={"consumers": 2.0, "overloaded": 0.0},
    )
    return table.published(version, parent, "2026-11-20T00:00:00+00:00")


def test_each_move_says_its_load_share_and_the_overloaded_worker_it_relieved():
    v1 = keys(["w0", "w0", "w1", "w0"], 1, None)  # w0 carries 7 of 8: 1.75× its share
    v2 = keys(["w0", "w1", "w1", "w1"], 2, 1, reason="cg plan: 2 moves against v1")
    explained = explain_version(v2, v1)
    validate_document("routing_explain", explained)
    assert explained["published_by"] == "plan" and explained["compared_with"] == 1
    assert explained["reference"] == "fair share"
    workers = {w["worker"]: w for w in explained["workers"]}
    assert workers["w0"]["before"] == pytest.approx(1.75) and workers["w0"]["overloaded_before"]
    assert workers["w0"]["after"] == pytest.approx(1.0) and not workers["w0"]["overloaded_after"]
    assert workers["w1"]["before"] == pytest.approx(0.25)
    # heaviest first, each with its share of the planning load
    assert [(m["unit"], m["load_share"], m["relieved"]) for m in explained["moves"]] == [
        ("key_group:3", pytest.approx(0.25), ["w0"]),
        ("key_group:1", pytest.approx(0.125), ["w0"]),
    ]
    assert explained["moves"][0]["why"] == "relieves w0 (1.75×)"
    assert explained["relieved"] == ["w0"]
    assert explained["moved_load_share"] == pytest.approx(0.375)
    # the objective: cg's terms among the predicted numbers, and its weights among its params
    objective = explained["objective"]
    assert (objective["title"], objective["paper"]) == ("Consistent Grouping", "000")
    assert objective["terms"] == {"imbalance": 0.0, "memory": 9.0, "moves": 2.0}
    assert objective["weights"] == {"epsilon": 0.01, "theta_busy": 1.03}
    text = format_explanation(explained)
    assert "key_group:3" in text and "relieves w0 (1.75×)" in text
    assert "budget: not recorded for this version" in text


def test_a_move_between_workers_within_their_share_relieves_none():
    v2 = keys(["w0", "w1", "w1", "w1"], 2, 1)  # 4 and 4: balanced
    v3 = keys(["w1", "w1", "w1", "w1"], 3, 2)
    (move,) = explain_version(v3, v2)["moves"]
    assert move["relieved"] == [] and move["why"].startswith("no overloaded worker relieved")


def test_a_hot_key_split_relieves_the_worker_it_sheds_load_from():
    loads = {"key_group_load": [4.0, 1.0, 1.0, 2.0], "hot_key_load": {"hot": 3.0}}
    old = keys(["w0", "w0", "w1", "w0"], 1, None, planning_load=loads)
    old = RoutingTable(**{**old.__dict__, "hot_keys": {"hot": (("w0", 1.0),)}})
    new = RoutingTable(**{**old.__dict__, "hot_keys": {"hot": (("w0", 0.5), ("w1", 0.5))}})
    new = new.published(2, 1, "t")
    explained = explain_version(new, old)
    hot = next(m for m in explained["moves"] if m["unit"] == "key:hot")
    assert hot["to_workers"] == ["w0", "w1"] and hot["relieved"] == ["w0"]
    before = explained["workers"][0]["before"]
    assert before > 1 and hot["why"] == f"split over 2 workers; relieves w0 ({before:.2f}×)"


def test_a_partition_move_against_the_bin_capacity_and_the_budget_used():
    v1 = partitions({0: "c0", 1: "c0", 2: "c1"}, 1, None)  # c0 reads 5 of C = 4
    v2 = partitions({0: "c0", 1: "c1", 2: "c1"}, 2, 1)
    budget = {
        "max_moves": 1,
        "max_migrated_load_share": 0.5,
        "max_migration_cost": 1.5,
        "migration_cost_unit": "load",
    }
    explained = explain_version(v2, v1, budget)
    validate_document("routing_explain", explained)
    assert explained["reference"] == "bin capacity C"
    (move,) = explained["moves"]
    assert (move["what"], move["id"], move["from_workers"], move["to_workers"]) == (
        "partition",
        "1",
        ["c0"],
        ["c1"],
    )
    assert move["load_share"] == pytest.approx(2 / 6) and move["relieved"] == ["c0"]
    spent = explained["budget"]
    assert spent["known"] and spent["migration_cost_unit"] == "load"
    assert spent["used"] == {
        "moves": 1,
        "migrated_load_share": pytest.approx(1 / 3),
        "migration_cost": 2.0,
    }
    assert spent["within"] == {
        "max_moves": True,
        "max_migrated_load_share": True,
        "max_migration_cost": False,
    }
    assert "max_migration_cost 2 of 1.5" in format_explanation(explained)


def test_without_a_comparable_parent_the_note_says_why_and_nothing_moves():
    v1 = keys(["w0", "w0", "w1", "w0"], 1, None)
    v2 = keys(["w0", "w1", "w1", "w1"], 2, 1)
    cases = {
        "the first version: nothing to compare with": (v1, None),
        "v1 is no longer stored: its moves cannot be listed": (v2, None),
        "v1 cannot be compared: cannot diff a partition_assignment table with a key_routing one": (
            v2,
            partitions({0: "c0"}, 1, None, stream="clicks"),
        ),
    }
    for note, (table, parent) in cases.items():
        explained = explain_version(table, parent)
        validate_document("routing_explain", explained)
        assert explained["note"] == note
        assert explained["moves"] == [] and explained["compared_with"] is None
        assert all(w["before"] is None for w in explained["workers"])
    rehashed = RoutingTable(**{**v1.__dict__, "hash_seed": 7})
    explained = explain_version(v2, rehashed)
    assert explained["note"] == "the hash spec changed: every key may move"
    assert explained["moves"] == [] and explained["budget"]["used"]["moves"] is None


def test_who_published_a_version_is_read_from_it():
    assert published_by(keys(["w0"] * 4, 1, None)) == "first"
    assert published_by(keys(["w0"] * 4, 2, 1)) == "plan"
    rollback = keys(["w0"] * 4, 3, 2, restored_version=1, reason="rollback to v1: w1 died")
    assert published_by(rollback) == "rollback"
    guard = keys(
        ["w0"] * 4, 4, 3, restored_version=1, reason="rollback to v1: regression: v3's realized …"
    )
    assert published_by(guard) == "regression_guard"


def test_a_version_planned_on_the_forecast_says_its_band_and_the_moves_given_back():
    from dataclasses import replace

    v1 = keys(["w0", "w0", "w1", "w0"], 1, None)
    v2 = keys(["w0", "w1", "w1", "w1"], 2, 1)
    banded = {"peak_excess": 0.06, "peak_excess_low": 0.02, "peak_excess_high": 0.1}
    v2 = replace(v2, predicted={**v2.predicted, **banded, "pruned_moves": 3.0})
    text = format_explanation(explain_version(v2, v1))
    assert "predicted peak excess: 0.0600 (band 0.0200–0.1000); 3 moves that did not pay" in text
    assert "predicted peak excess" not in format_explanation(explain_version(v1, None))
