"""``routeplan.publishing.diff``: the diff of two routing tables or partition assignments."""

from __future__ import annotations

import numpy as np
import pytest
from test_versions import SNAPSHOT, WORKERS, plan  # the same loads, workers and tables

from routeplan.contracts.schemas import validate_document
from routeplan.model.loads import PartitionLoad
from routeplan.model.table import PartitionAssignment, RoutingTable, planning_load
from routeplan.model.workers import Workers
from routeplan.publishing.diff import diff_tables


@pytest.fixture(scope="module")
def kg() -> RoutingTable:
    return plan("kg")


@pytest.fixture(scope="module")
def cg(kg) -> RoutingTable:
    return plan("cg", kg)


def test_diff_weighs_moves_with_the_planning_loads(kg, cg):
    diff = diff_tables(kg.published(1, None, "t"), cg.published(2, 1, "t"))
    validate_document("routing_diff", diff)
    assert diff["load_basis"] == "planning_load of v2"
    moved = [m for m in diff["moves"] if m["unit"].startswith("key_group:")]
    assert diff["moved_key_groups"] == len(moved) > 0
    assert diff["key_space_share"] == pytest.approx(len(moved) / kg.num_key_groups)
    assert diff["moved_load"] == pytest.approx(sum(m["load"] for m in diff["moves"]))
    assert diff["total_load"] == pytest.approx(SNAPSHOT.key_group_load.sum())
    assert diff["moved_load"] == pytest.approx(cg.predicted["migrated_load"])
    same = diff_tables(cg, cg)
    assert same["moves"] == [] and same["moved_load"] == 0


def test_diff_without_loads_lists_moves_but_no_load(kg):
    bare = RoutingTable(stream="s", strategy="x", workers=WORKERS, key_group_worker=["w0"] * 256)
    diff = diff_tables(bare, RoutingTable(**{**bare.__dict__, "key_group_worker": ["w1"] * 256}))
    validate_document("routing_diff", diff)
    assert diff["load_basis"] is None and diff["moved_load"] is None
    assert diff["moved_key_groups"] == 256 and diff["key_space_share"] == 1.0
    rehashed = diff_tables(bare, RoutingTable(**{**bare.__dict__, "hash_seed": 7}))
    assert rehashed["rehashed"] and rehashed["key_space_share"] == 1.0


def test_diff_of_partition_assignments():
    consumers = Workers.homogeneous(3)
    loads = PartitionLoad("p", np.array([5.0, 1.0, 2.0, 3.0]))

    def table(assign):
        return PartitionAssignment(
            stream="p",
            strategy="mwf",
            consumers=consumers,
            partition_consumer=assign,
            planning_load=planning_load(loads),
        )

    old = table({0: "w0", 1: "w0", 2: "w1", 3: "w2"})
    new = table({0: "w0", 1: "w1", 2: "w1", 3: "w1"})
    diff = diff_tables(old, new)
    validate_document("routing_diff", diff)
    assert [(m["unit"], m["load"]) for m in diff["moves"]] == [
        ("partition:1", 1.0),
        ("partition:3", 3.0),
    ]
    assert diff["moved_partitions"] == 2 and diff["moved_load_share"] == pytest.approx(4 / 11)
