"""``routeplan.planning.contract``: budget limits honoured or refused, strategies as values."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import zipf_snapshot

from routeplan.model.plan import BUDGET_LIMITS, Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import UnhonouredLimitError, parameters
from routeplan.planning.registry import get_strategy, strategy_names


def heterogeneous(n=10, fast=3, speedup=5.0):
    """Paper 000 §VII: y machines z times faster."""
    return Workers(tuple(Worker(f"w{i}", speedup if i < fast else 1.0) for i in range(n)))


# --------------------------------------------------------------------------------------------
# the contract: honest budgets, immutable strategies, renamed parameters


def key_routing_strategies():
    return [n for n in strategy_names() if get_strategy(n).kind == "key_routing"]


LIMITS = {"max_moves": 3, "max_migrated_load_share": 0.05, "max_migration_cost": 2.0}
UNHONOURED = [
    (name, limit)
    for name in key_routing_strategies()
    for limit in BUDGET_LIMITS
    if limit not in get_strategy(name).honours
]
HONOURED = [
    (name, limit)
    for name in key_routing_strategies()
    for limit in BUDGET_LIMITS
    if limit in get_strategy(name).honours
]


@pytest.mark.parametrize(("name", "limit"), UNHONOURED)
def test_a_limit_a_strategy_does_not_honour_is_refused_before_planning(skewed, name, limit):
    budget = Budget(**{limit: LIMITS[limit]})
    with pytest.raises(UnhonouredLimitError, match=rf"{name!r}.*{limit}"):
        get_strategy(name).plan(skewed, None, Workers.homogeneous(4), budget)


def test_every_budget_limit_is_covered_by_the_parametrisation():
    assert {"cg", "ring"} <= {n for n, _ in HONOURED}
    assert len(UNHONOURED) + len(HONOURED) == len(key_routing_strategies()) * len(BUDGET_LIMITS)


@pytest.mark.parametrize(("name", "limit"), HONOURED)
@pytest.mark.parametrize("previous", ["kg", "same"])
@pytest.mark.parametrize("scale", [0.0, 0.3])
def test_an_honoured_limit_holds_against_a_current_table(name, limit, previous, scale):
    small = {"keys": 2_000, "messages": 50_000, "num_key_groups": 64}
    snapshot, drifted = zipf_snapshot(**small), zipf_snapshot(seed=3, **small)
    workers = heterogeneous()
    previous = name if previous == "same" else previous
    current = get_strategy(previous).plan(snapshot, None, Workers.homogeneous(10), Budget()).table
    value = {
        "max_moves": round(10 * scale),
        "max_migrated_load_share": 0.2 * scale,
        "max_migration_cost": 10.0 * scale,  # in moves, the default unit
    }[limit]
    budget = Budget(**{limit: value}, time_limit_s=2)
    plan = get_strategy(name).plan(drifted, current, workers, budget)
    predicted = plan.predicted
    assert predicted.get("forced_moves", 0) == 0  # every worker is still listed
    assert predicted["moves"] == len(plan.moves)
    spent = {
        "max_moves": predicted["moves"],
        "max_migrated_load_share": predicted["migrated_load_share"],
        "max_migration_cost": predicted.get("migration_cost", predicted["moves"]),
    }[limit]
    assert spent <= value + 1e-9
    if scale == 0:  # nothing may move: no move, or (a load-share limit) only moves of no load
        assert predicted["migrated_load_share"] == 0
        assert predicted["moves"] == 0 or limit == "max_migrated_load_share"


@pytest.mark.parametrize(
    "name", ["kg", "sg", "potc", "pkg", "dchoices", "porc", "chbl", "cg", "ring"]
)
def test_strategies_are_immutable_values(skewed, name):
    strategy = get_strategy(name)
    workers = heterogeneous()
    first = strategy.plan(skewed, None, workers, Budget()).table
    budget = Budget(max_moves=2) if "max_moves" in strategy.honours else Budget()
    again = strategy.plan(skewed, first, workers, budget).table
    twice = strategy.plan(skewed, None, workers, Budget()).table
    assert twice.content() == first.content()
    assert strategy == get_strategy(name)
    assert first.params == parameters(strategy) == again.params
    fields = dataclasses.fields(strategy)
    if fields:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(strategy, fields[0].name, getattr(strategy, fields[0].name))
    assert not hasattr(strategy, "params")
