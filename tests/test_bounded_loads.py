"""``routeplan.planning.keyrouting.bounded_loads``: ``chbl`` (and ``porc``'s bounded planner)."""

from __future__ import annotations

import pytest

from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy, strategy_parameters


def test_chbl_tokens_per_worker_keeps_its_old_name_as_a_deprecated_alias(skewed):
    with pytest.warns(
        DeprecationWarning, match="virtual_workers_per_worker is now tokens_per_worker"
    ):
        old = get_strategy("chbl", virtual_workers_per_worker=5)
    assert old == get_strategy("chbl", tokens_per_worker=5)
    assert old.tokens_per_worker == 5
    workers = Workers.homogeneous(6)
    assert (
        old.plan(skewed, None, workers, Budget()).table.content()
        == get_strategy("chbl", tokens_per_worker=5)
        .plan(skewed, None, workers, Budget())
        .table.content()
    )
    assert "tokens_per_worker" in strategy_parameters("chbl")
    assert "virtual_workers_per_worker" in strategy_parameters("cg")  # cg's α keeps its name
