"""The strategy contract: one method, plain data in and out.

Like Kafka's ``ConsumerPartitionAssignor``, a strategy has one method, ``plan``, from plain data
(loads, the current table, the workers, a budget) to a plain answer (the new table, its moves
and predicted metrics: a ``Plan``, Cruise Control's one proposal object). Besides it a strategy
declares, as class attributes:

* ``name`` — the name it is registered under (set by ``registry.register``);
* ``kind`` — what it plans (``KINDS``): ``key_routing`` (key groups and hot keys onto workers) or
  ``partition_assignment`` (partitions onto consumers);
* ``honours`` — the budget limits (``model.plan.BUDGET_LIMITS``) it keeps. ``registry.register``
  makes ``plan`` refuse a budget that sets any other limit (``UnhonouredLimitError``) before it
  plans, so no limit is ever silently ignored;
* optionally ``kept_home(state, groups)`` — a static method: its table's ``strategy_state``
  once key groups ``groups`` are given back to the worker they were on (a move pruned after
  planning, ``routeplan.streams.rebalance.prune``), for a strategy whose state says where key
  groups sit. Without it the state stands as it is.

A strategy is an immutable value: a frozen dataclass whose fields are its parameters (what
``parameters`` returns and a table records in ``params``); planning never changes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Protocol

from routeplan.model.loads import Loads
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import Table, planning_load
from routeplan.model.workers import Workers

KINDS = ("key_routing", "partition_assignment")


class Strategy(Protocol):
    """One method, plain data in and out; ``name``, ``kind`` and ``honours`` declared."""

    name: ClassVar[str]
    kind: ClassVar[str]
    honours: ClassVar[frozenset[str]]

    def plan(
        self,
        loads: Loads,
        current: Table | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        """``loads`` and ``current`` are of the strategy's kind: a ``LoadSnapshot`` and a
        ``RoutingTable`` (key_routing), a ``PartitionLoad`` and a ``PartitionAssignment``
        (partition_assignment); ``current`` is None for a first plan."""
        ...


class UnhonouredLimitError(ValueError):
    """A budget sets a limit the strategy cannot keep."""


def check_budget(strategy: Strategy, budget: Budget) -> None:
    """Refuse ``budget`` if it sets a limit ``strategy`` does not honour."""
    unhonoured = [k for k in budget.limits() if k not in strategy.honours]
    if unhonoured:
        kept = ", ".join(sorted(strategy.honours)) or "no budget limit"
        raise UnhonouredLimitError(
            f"strategy {strategy.name!r} cannot honour "
            + ", ".join(f"{k}={budget.limits()[k]}" for k in unhonoured)
            + f" (it honours {kept}); leave the limit unset or choose a strategy that honours it"
        )


def parameters(strategy: Strategy) -> dict[str, Any]:
    """The strategy's parameters as given: its dataclass fields (what a table records)."""
    return {f.name: getattr(strategy, f.name) for f in dataclasses.fields(strategy)}


def finish_plan(
    table: Table,
    loads: Loads,
    current: Table | None,
    extra: Mapping[str, float] | None = None,
) -> Plan:
    """Every strategy ends here: moves against ``current`` and predicted metrics, one way
    (plus ``extra`` numbers the strategy alone knows, e.g. a solver's gap)."""
    from routeplan.planning import metrics

    moved, predicted = metrics.evaluate(table, loads, current)
    predicted = {**predicted, **(extra or {})}
    table = replace(table, predicted=predicted, planning_load=planning_load(loads))
    return Plan(table=table, moves=moved)
