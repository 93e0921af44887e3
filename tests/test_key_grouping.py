"""``routeplan.planning.keyrouting.key_grouping``: the ``kg`` strategy."""

from __future__ import annotations

from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.registry import get_strategy


def test_kg_is_hash_partitioning_over_active_workers(skewed):
    workers = Workers((Worker("a"), Worker("b", state="draining"), Worker("c")))
    table = get_strategy("kg").plan(skewed, None, workers, Budget()).table
    assert table.key_group_worker[:4] == ("a", "c", "a", "c")
    assert not table.hot_keys
