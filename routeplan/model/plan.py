"""A plan's limits (budget) and its answer: the moves and the new table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from routeplan.model.table import RoutingTable


@dataclass(frozen=True)
class Budget:
    """Limits on one plan: moves of key groups / hot keys, migrated load share, solver time."""

    max_moves: int | None = None
    max_migrated_load_share: float | None = None
    time_limit_s: float = 30.0


@dataclass(frozen=True)
class Move:
    """One key group (or one hot key) whose workers change between two tables."""

    unit: str  # "key_group:<g>", "key:<key>" or "partition:<p>"
    from_workers: tuple[str, ...]
    to_workers: tuple[str, ...]
    load: float


@dataclass(frozen=True)
class Plan:
    """A strategy's answer: the new table, the moves against the current one, predicted metrics."""

    table: RoutingTable
    moves: tuple[Move, ...]
    metrics: Mapping[str, float]
