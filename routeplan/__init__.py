"""routeplan: plan how keyed streams are spread over workers.

The domain library; it knows nothing of Spark or Airflow (jobs adapt data to it). Its face::

    from routeplan import Budget, LoadSnapshot, Router, RoutingStore, Workers, get_strategy

    plan = get_strategy("cg").plan(loads, current, workers, Budget(max_moves=50))
    RoutingStore("var/routing").publish(plan.table)
    worker = Router.from_store("var/routing", "clicks").route("user-42")

Everything named in ``__all__`` is public and stable; the subpackages behind it (``model``,
``planning``, ``simulation``, ``publishing``, ``cli``) may move. ``Router`` and ``Assignment``
are the client package's (``routeplan_client``, which producers install alone).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> module that defines it; imported on first use so that ``import routeplan.model.hashing``
# (e.g. in a Spark UDF) stays cheap.
_PUBLIC = {
    "Worker": "routeplan.model.workers",
    "Workers": "routeplan.model.workers",
    "LoadSnapshot": "routeplan.model.loads",
    "PartitionLoad": "routeplan.model.loads",
    "Budget": "routeplan.model.plan",
    "Move": "routeplan.model.plan",
    "Plan": "routeplan.model.plan",
    "RoutingTable": "routeplan.model.table",
    "PartitionAssignment": "routeplan.model.table",
    "table_from_document": "routeplan.model.table",
    "key_group": "routeplan.model.hashing",
    "Strategy": "routeplan.planning.contract",
    "get_strategy": "routeplan.planning.registry",
    "strategy_names": "routeplan.planning.registry",
    "RoutingStore": "routeplan.publishing.store",
    "diff_tables": "routeplan.publishing.diff",
    "Router": "routeplan_client",
    "Assignment": "routeplan_client",
}
__all__ = [
    "Assignment",
    "Budget",
    "LoadSnapshot",
    "Move",
    "PartitionAssignment",
    "PartitionLoad",
    "Plan",
    "Router",
    "RoutingStore",
    "RoutingTable",
    "Strategy",
    "Worker",
    "Workers",
    "diff_tables",
    "get_strategy",
    "key_group",
    "strategy_names",
    "table_from_document",
]

if TYPE_CHECKING:
    from routeplan.model.hashing import key_group
    from routeplan.model.loads import LoadSnapshot, PartitionLoad
    from routeplan.model.plan import Budget, Move, Plan
    from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
    from routeplan.model.workers import Worker, Workers
    from routeplan.planning.contract import Strategy
    from routeplan.planning.registry import get_strategy, strategy_names
    from routeplan.publishing.diff import diff_tables
    from routeplan.publishing.store import RoutingStore
    from routeplan_client import Assignment, Router


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'routeplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
