"""``routeplan.planning.reassign.flux``: the ``flux`` strategy."""

from __future__ import annotations

import pytest

from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy
from routeplan.simulation.instances import varies_instance


def test_distinct_keys_unit_needs_distinct_keys():
    snapshot, current, workers = varies_instance(workers=3, per_worker=3)
    budget = Budget(max_migration_cost=3, migration_cost_unit="distinct_keys")
    with pytest.raises(ValueError, match="distinct_keys"):
        get_strategy("flux").plan(snapshot, current, workers, budget)
