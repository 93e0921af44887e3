"""``kg`` key grouping: every key group on one worker by hash (the papers' baseline, KG)."""

from __future__ import annotations

from typing import ClassVar

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.registry import register


def key_grouping_workers(num_key_groups: int, workers: Workers) -> tuple[str, ...]:
    """Key group ``g`` → the ``g mod n``-th active worker (Storm's fields grouping over groups)."""
    active = [w.name for w in workers.active]
    return tuple(active[g % len(active)] for g in range(num_key_groups))


@register("kg")
class KeyGrouping:
    """Hash partitioning, blind to load: what most streams run today."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset()

    name = "kg"

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
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)
