"""Strategies registered by name: the CLI, the DAG and the benchmarks choose them by it."""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any

from routeplan.model.plan import BUDGET_LIMITS, Plan
from routeplan.planning.budget import OLD_PARAMETERS
from routeplan.planning.contract import KINDS, Strategy, check_budget

STRATEGY_MODULES = (
    "routeplan.planning.keyrouting.key_grouping",
    "routeplan.planning.keyrouting.shuffle",
    "routeplan.planning.keyrouting.partial_key_grouping",
    "routeplan.planning.keyrouting.consistent_grouping",
    "routeplan.planning.keyrouting.ring",
    "routeplan.planning.keyrouting.bounded_loads",
    "routeplan.planning.keyrouting.lpt",
    "routeplan.planning.reassign.flux",
    "routeplan.planning.reassign.milp",
    "routeplan.planning.reassign.albic",
    "routeplan.planning.partitions.strategies",
)

_REGISTRY: dict[str, Callable[..., Strategy]] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a strategy selectable by ``name`` in the CLI, DAG and benchmarks.

    The class must be a frozen dataclass declaring ``kind`` and ``honours`` (see ``contract``);
    its ``plan`` is wrapped to refuse, before planning, a budget limit it does not honour."""

    def decorate(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"strategy {name!r} registered twice")
        if getattr(cls, "kind", None) not in KINDS:
            raise TypeError(f"strategy {name!r} must declare kind, one of {KINDS}")
        honours = getattr(cls, "honours", None)
        if not isinstance(honours, frozenset) or not honours <= set(BUDGET_LIMITS):
            raise TypeError(f"strategy {name!r} must declare honours ⊆ {BUDGET_LIMITS}")
        if not (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):
            raise TypeError(f"strategy {name!r} must be a frozen dataclass (an immutable value)")
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


def strategy_names(kind: str | None = None) -> list[str]:
    """The registered names (of one ``kind`` of plan, if given), sorted."""
    _load_builtin()
    return sorted(n for n, cls in _REGISTRY.items() if kind is None or cls.kind == kind)


def strategy_parameters(name: str) -> list[str]:
    """The parameter names strategy ``name`` accepts (its constructor's keywords)."""
    import inspect

    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return [p for p in inspect.signature(_REGISTRY[name]).parameters if p != "self"]


def strategy_parameter_types(name: str) -> dict[str, Any]:
    """Each parameter of strategy ``name`` and its annotation (None where it has none), and each
    renamed parameter's old name with its new name's annotation (still accepted, deprecated).

    A strategy that is a dataclass is typed by its fields (resolved in its module), any other by
    its constructor's annotations."""
    import dataclasses
    import typing

    names = strategy_parameters(name)
    cls = _REGISTRY[name]
    try:
        hints = typing.get_type_hints(cls if dataclasses.is_dataclass(cls) else cls.__init__)
    except (NameError, TypeError):  # an annotation that does not resolve: no type checks
        hints = {}
    types = {p: hints.get(p) for p in names}
    for old, new in getattr(cls, "renamed", {}).items():
        if new in types:
            types.setdefault(old, types[new])
    return types


def get_strategy(name: str, **params: Any) -> Strategy:
    """Build the strategy registered as ``name`` with its parameters.

    A parameter the strategy renamed (its ``renamed`` map, old → new) is accepted under its old
    name with a ``DeprecationWarning``; a budget limit passed as a parameter is refused, naming the
    ``Budget`` field it belongs to (``budget.read_budget`` converts old parameter sets)."""
    _load_builtin()
    if name not in _REGISTRY:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    cls = _REGISTRY[name]
    for old, new in getattr(cls, "renamed", {}).items():
        if old in params:
            if new in params:
                raise ValueError(f"strategy {name!r}: give {new} or its old name {old}, not both")
            warnings.warn(
                f"strategy {name!r}: parameter {old} is now {new}", DeprecationWarning, stacklevel=2
            )
            params[new] = params.pop(old)
    for old, field in OLD_PARAMETERS.items():
        if old in params and old not in strategy_parameters(name):
            raise ValueError(
                f"strategy {name!r}: {old} is a budget limit, not a strategy parameter; "
                f"set Budget({field}=…) (--{field.replace('_', '-')} on the command line)"
            )
    try:
        return cls(**params)
    except TypeError as err:
        raise ValueError(f"bad parameters for strategy {name!r}: {err}") from None


def kept_home(name: str, state: dict[str, Any], groups: list[int]) -> dict[str, Any]:
    """Strategy ``name``'s table state once key groups ``groups`` are given back to the worker
    they were on: what the strategy declares (``kept_home``, see ``contract``), else ``state``
    as it is."""
    _load_builtin()
    declared = getattr(_REGISTRY.get(name), "kept_home", None)
    return dict(declared(state, groups)) if declared is not None else dict(state)


def _load_builtin() -> None:
    """Import every strategy module once: each registers its strategies."""
    import importlib

    for module in STRATEGY_MODULES:
        importlib.import_module(module)
