"""``routeplan.planning.reassign.albic``: the ``albic`` strategy
(paper 004) and its graph partitioning."""

from __future__ import annotations

import numpy as np

from routeplan.model.flow import flow_arrays
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.metrics import collocation_factor
from routeplan.planning.reassign.albic import balanced_partition, components
from routeplan.planning.registry import get_strategy
from routeplan.simulation.instances import flow_instance, table_of

# ---------------------------------------------------------------- albic


def test_balanced_partition_cuts_between_cliques():
    adjacency = np.zeros((8, 8))
    adjacency[:4, :4] = 5
    adjacency[4:, 4:] = 5
    np.fill_diagonal(adjacency, 0)
    adjacency[3, 4] = adjacency[4, 3] = 1
    labels = balanced_partition(np.ones(8), adjacency, 2)
    assert len(set(labels[:4])) == 1 and len(set(labels[4:])) == 1 and labels[0] != labels[7]
    assert np.bincount(balanced_partition(np.ones(9), np.zeros((9, 9)), 3)).tolist() == [3, 3, 3]
    assert [c.tolist() for c in components(6, np.array([[0, 1], [1, 2], [4, 5]]))] == [
        [0, 1, 2],
        [4, 5],
    ]


def test_albic_improves_collocation_over_a_static_assignment():
    snapshot, owner, workers = flow_instance()
    table = table_of(owner, workers)
    start = collocation_factor(table.key_group_worker, snapshot)
    factors = []
    for _ in range(6):
        plan = get_strategy("albic", operator_groups=24, collocations_per_run=2).plan(
            snapshot, table, workers, Budget(max_moves=6, time_limit_s=0.5)
        )
        assert plan.predicted["moves"] <= 6
        assert plan.predicted["load_distance"] <= 0.10 + 1e-9  # maxLD
        table = plan.table
        factors.append(plan.predicted["collocation_factor"])
    assert factors[-1] > start + 0.05
    assert all(b >= a - 1e-9 for a, b in zip(factors, factors[1:], strict=False))
    assert plan.predicted["load_index"] <= 1.0 + 1e-9
    # flux balances as well but collocates nothing on purpose
    flux = get_strategy("flux").plan(
        snapshot, table_of(owner, workers), workers, Budget(max_moves=6)
    )
    assert flux.predicted["collocation_factor"] <= start + 0.02


def test_albic_follows_an_upstream_stream_anchor():
    flow, anchors = flow_arrays(4, [(("up:7", "w1"), 0, 500.0), (("up:8", "w1"), 3, 1.0)])
    snapshot = LoadSnapshot("s", np.ones(4), key_group_flow=flow, flow_anchors=anchors)
    workers = Workers.homogeneous(2)
    current = table_of([0, 0, 1, 1], workers)
    plan = get_strategy("albic", score_factor=1.0).plan(
        snapshot, current, workers, Budget(time_limit_s=1)
    )
    assert plan.table.key_group_worker[0] == "w1"  # follows the group it hears most from
    assert plan.predicted["collocation_factor"] > collocation_factor(
        current.key_group_worker, snapshot
    )
