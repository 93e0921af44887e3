"""Strategies, all behind one interface and registered by name (DESIGN.md "Layout").

plan = get_strategy("cg", epsilon=0.01).plan(loads, current, workers, budget)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from routeplan.models import Budget, LoadSnapshot, Plan, Workers
from routeplan.routing_table import RoutingTable, planning_load


class Strategy(Protocol):
    """One method, plain data in and out (like Kafka's ``ConsumerPartitionAssignor``)."""

    name: str

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan: ...


def finish_plan(
    table: RoutingTable,
    loads: LoadSnapshot,
    current: RoutingTable | None,
    extra: Mapping[str, float] | None = None,
) -> Plan:
    """Every strategy ends here: moves against ``current`` and predicted metrics, one way
    (plus ``extra`` numbers the strategy alone knows, e.g. a solver's gap)."""
    from routeplan import metrics

    moved, predicted = metrics.evaluate(table, loads, current)
    predicted = {**predicted, **(extra or {})}
    table = replace(table, predicted=predicted, planning_load=planning_load(loads))
    return Plan(table=table, moves=moved, metrics=predicted)


_REGISTRY: dict[str, Callable[..., Strategy]] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a strategy selectable by ``name`` in the CLI, DAG and benchmarks."""

    def decorate(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"strategy {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


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
    """Import every module of this package once: each registers its strategies."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
