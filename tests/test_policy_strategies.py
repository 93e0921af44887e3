"""A policy's strategy checked (routeplan.streams.policy_strategies): the strategy and its
kind, its parameters, the budget it must honour, auto's candidates."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy, strategy_names
from routeplan.streams.policy_strategies import (
    auto_candidates,
    check_honoured,
    check_params,
    check_strategy,
)


class Refused(Exception):
    pass


@dataclass(frozen=True)
class Context:
    where: str = "streams.yaml"
    label: str | None = None
    given: frozenset[str] = frozenset()

    def error(self, stream: str, field_path: str, message: str) -> Exception:
        return Refused(f"{stream}: {field_path}: {message}")


def test_a_strategy_must_exist_and_plan_the_streams_kind():
    check_strategy("s", "key_routing", "cg", "strategy", Context())
    with pytest.raises(Refused, match="s: strategy: unknown strategy 'nope'"):
        check_strategy("s", "key_routing", "nope", "strategy", Context())
    with pytest.raises(Refused, match="plans partition_assignment.*inherits the strategy"):
        check_strategy("s", "key_routing", "mwf", "strategy", Context())
    with pytest.raises(Refused) as caught:  # its own strategy: no word of inheriting
        check_strategy(
            "s", "key_routing", "mwf", "strategy", Context(given=frozenset({"strategy"}))
        )
    assert "inherits" not in str(caught.value)


def test_parameters_are_the_strategys_of_the_right_type_and_budget_limits_point_to_budget():
    assert check_params("s", "cg", {"epsilon": 0.02}, "params", Context()) == {"epsilon": 0.02}
    with pytest.raises(Refused, match=r"params\.epsilon: 'x' is not a number"):
        check_params("s", "cg", {"epsilon": "x"}, "params", Context())
    with pytest.raises(Refused, match=r"set it as budget: \{max_moves: 5\}"):
        check_params("s", "cg", {"max_moves": 5}, "params", Context())
    with pytest.raises(Refused, match="has no parameter 'bogus'"):
        check_params("s", "cg", {"bogus": 1}, "params", Context())


def test_auto_takes_by_default_every_strategy_of_the_kind_that_honours_the_budget():
    budget = Budget(max_moves=3)
    found, params = auto_candidates("s", "key_routing", None, {}, budget, Context())
    assert found and params == {}
    for name in strategy_names("key_routing"):
        honours = "max_moves" in get_strategy(name).honours
        assert (name in found) == honours, name
    with pytest.raises(Refused, match="cannot honour max_moves=3"):
        auto_candidates("s", "key_routing", ["pkg"], {}, budget, Context())
    with pytest.raises(Refused, match="auto cannot be its own candidate"):
        auto_candidates("s", "key_routing", ["auto"], {}, Budget(), Context())
    with pytest.raises(Refused, match=r"budget\.max_moves"):
        check_honoured("s", "pkg", budget, Context())
