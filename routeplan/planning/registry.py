"""Strategies registered by name: the CLI, the DAG and the benchmarks choose them by it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from routeplan.model.plan import BUDGET_LIMITS, Plan
from routeplan.planning.contract import KINDS, Strategy, check_budget

STRATEGY_MODULES = (
    "routeplan.planning.keyrouting.key_grouping",
    "routeplan.planning.keyrouting.shuffle",
    "routeplan.planning.keyrouting.partial_key_grouping",
    "routeplan.planning.keyrouting.consistent_grouping",
    "routeplan.planning.keyrouting.ring",
    "routeplan.planning.keyrouting.bounded_loads",
    "routeplan.planning.reassign.flux",
    "routeplan.planning.reassign.milp",
    "routeplan.planning.reassign.albic",
    "routeplan.planning.partitions.strategies",
)

_REGISTRY: dict[str, Callable[..., Strategy]] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a strategy selectable by ``name`` in the CLI, DAG and benchmarks.

    The class must declare ``kind`` and ``honours`` (see ``contract``); its ``plan`` is wrapped
    to refuse, before planning, a budget limit the strategy does not honour."""

    def decorate(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"strategy {name!r} registered twice")
        if getattr(cls, "kind", None) not in KINDS:
            raise TypeError(f"strategy {name!r} must declare kind, one of {KINDS}")
        honours = getattr(cls, "honours", None)
        if not isinstance(honours, frozenset) or not honours <= set(BUDGET_LIMITS):
            raise TypeError(f"strategy {name!r} must declare honours ⊆ {BUDGET_LIMITS}")
        cls.name = name
        if "plan" in vars(cls) or not getattr(cls.plan, "checks_budget", False):
            cls.plan = _checking_budget(cls.plan)
        _REGISTRY[name] = cls
        return cls

    return decorate


def _checking_budget(plan: Callable[..., Plan]) -> Callable[..., Plan]:
    @functools.wraps(plan)
    def checked(self, loads, current, workers, budget) -> Plan:  # noqa: ANN001 (the contract's)
        check_budget(self, budget)
        return plan(self, loads, current, workers, budget)

    checked.checks_budget = True  # type: ignore[attr-defined]
    return checked


def strategy_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def strategy_parameters(name: str) -> list[str]:
    """The parameter names strategy ``name`` accepts (its constructor's keywords)."""
    import inspect

    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return [p for p in inspect.signature(_REGISTRY[name]).parameters if p != "self"]


def strategy_parameter_types(name: str) -> dict[str, Any]:
    """Each parameter of strategy ``name`` and its annotation (None where it has none)."""
    import typing

    names = strategy_parameters(name)
    try:
        hints = typing.get_type_hints(_REGISTRY[name].__init__)
    except (NameError, TypeError):  # an annotation that does not resolve: no type checks
        hints = {}
    return {p: hints.get(p) for p in names}


def get_strategy(name: str, **params: Any) -> Strategy:
    """Build the strategy registered as ``name`` with its parameters."""
    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    try:
        return _REGISTRY[name](**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for strategy {name!r}: {err}") from None


def _load_builtin() -> None:
    """Import every strategy module once: each registers its strategies."""
    import importlib

    for module in STRATEGY_MODULES:
        importlib.import_module(module)
