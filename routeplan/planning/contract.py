"""The strategy contract: one method, plain data in and out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable, planning_load
from routeplan.model.workers import Workers


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
    from routeplan.planning import metrics

    moved, predicted = metrics.evaluate(table, loads, current)
    predicted = {**predicted, **(extra or {})}
    table = replace(table, predicted=predicted, planning_load=planning_load(loads))
    return Plan(table=table, moves=moved, metrics=predicted)
