"""``kg`` key grouping: every key group on one worker by hash (the papers' baseline, KG)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.registry import register


def key_grouping_workers(num_key_groups: int, workers: Workers) -> tuple[str, ...]:
    """Key group ``g`` → the ``g mod n``-th active worker (Storm's fields grouping over groups)."""
    active = [w.name for w in workers.active]
    return tuple(active[g % len(active)] for g in range(num_key_groups))


@register("kg")
@dataclass(frozen=True)
class KeyGrouping:
    """Hash partitioning, blind to load: what most streams run today (no parameters)."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset()

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=key_grouping_workers(loads.num_key_groups, workers),
            params=parameters(self),
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)
