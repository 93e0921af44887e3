"""``routeplan.planning.reassign.milp_model``: the MILP model's bounds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.simulation.instances import table_of


@settings(max_examples=25, deadline=None)
@given(
    loads=st.lists(st.floats(0.1, 10), min_size=4, max_size=6),
    workers=st.integers(2, 3),
    max_moves=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_distance_bound_is_below_every_plan_within_the_budget(loads, workers, max_moves, seed):
    """The cut d ≥ d_LB of the full model never excludes a plan: brute force over every
    assignment with at most ``max_moves`` moves."""
    from itertools import combinations, product

    from routeplan.planning.reassign.milp_model import _d_of, distance_bound
    from routeplan.planning.reassign.reassignment import Reassignment, Units

    ws = Workers.homogeneous(workers)
    owner = np.random.default_rng(seed).integers(0, workers, len(loads))
    snapshot = LoadSnapshot("s", np.array(loads))
    problem = Reassignment.build(snapshot, table_of(owner, ws), ws, Budget(max_moves=max_moves))
    units = Units.build(problem)
    bound = distance_bound(problem, units, owner, np.arange(len(loads)))
    best = np.inf
    for count in range(max_moves + 1):
        for moved in combinations(range(len(loads)), count):
            for targets in product(range(workers), repeat=count):
                assign = owner.copy()
                assign[list(moved)] = targets
                best = min(best, _d_of(problem, units, assign))
    assert bound <= best + 1e-9
