"""A plan's limits (budget) and its answer: the moves and the new table; ``moves`` lists the
key groups and hot keys whose workers differ between two key-routing tables (plans, validation
and ``routeplan diff`` count them one way)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from routeplan.model.loads import LoadSnapshot
    from routeplan.model.table import RoutingTable, Table


# The limits a budget may set; each strategy declares which of them it honours (``honours``) and
# a plan with a limit its strategy does not honour is refused, never silently ignored.
BUDGET_LIMITS = ("max_moves", "max_migrated_load_share", "max_migration_cost")
# What one move costs against ``max_migration_cost`` (paper 004 §4.3.1, mc_k): one per key group,
# its distinct keys (a state-size proxy), or its load.
MIGRATION_COST_UNITS = ("moves", "distinct_keys", "load")


@dataclass(frozen=True)
class Budget:
    """Limits on one plan. None means no limit.

    ``max_moves``: key groups, hot keys and partitions whose workers change;
    ``max_migrated_load_share``: the share of the total load they carry; ``max_migration_cost``:
    the summed cost of the moves in ``migration_cost_unit``; ``time_limit_s``: a solver's time
    (every strategy stays within it).
    """

    max_moves: int | None = None
    max_migrated_load_share: float | None = None
    max_migration_cost: float | None = None
    migration_cost_unit: str = "moves"
    time_limit_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_moves is not None and (isinstance(self.max_moves, bool) or self.max_moves < 0):
            raise ValueError(f"max_moves must be an integer >= 0, got {self.max_moves!r}")
        share = self.max_migrated_load_share
        if share is not None and not 0 <= share <= 1:
            raise ValueError(f"max_migrated_load_share must be in [0, 1], got {share!r}")
        if self.max_migration_cost is not None and not self.max_migration_cost >= 0:
            raise ValueError(f"max_migration_cost must be >= 0, got {self.max_migration_cost!r}")
        if self.migration_cost_unit not in MIGRATION_COST_UNITS:
            raise ValueError(
                f"migration_cost_unit must be one of {', '.join(MIGRATION_COST_UNITS)}, "
                f"got {self.migration_cost_unit!r}"
            )
        if not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be > 0, got {self.time_limit_s!r}")

    def limits(self) -> dict[str, float]:
        """The limits this budget sets (name → value), in ``BUDGET_LIMITS`` order."""
        return {k: getattr(self, k) for k in BUDGET_LIMITS if getattr(self, k) is not None}


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

    table: Table  # a RoutingTable or a PartitionAssignment
    moves: tuple[Move, ...]

    @property
    def predicted(self) -> Mapping[str, float]:
        """The predicted metrics (imbalance, moves, …): the table's ``predicted``."""
        return self.table.predicted


def moves(
    current: RoutingTable | None, new: RoutingTable, snapshot: LoadSnapshot
) -> tuple[Move, ...]:
    """Key groups and hot keys whose workers differ between ``current`` and ``new``."""
    if current is None or current.num_key_groups != new.num_key_groups:
        return ()
    hot = set(new.hot_keys) | set(current.hot_keys)
    residual = snapshot.residual_key_group_load([k for k in hot if k in snapshot.hot_key_load])
    old_groups = np.asarray(current.key_group_worker, dtype=object)
    new_groups = np.asarray(new.key_group_worker, dtype=object)
    result = [
        Move(f"key_group:{g}", (old_groups[g],), (new_groups[g],), float(residual[g]))
        for g in np.flatnonzero(old_groups != new_groups)
    ]
    for key in sorted(hot):
        before = _targets(current, key, snapshot)
        after = _targets(new, key, snapshot)
        if before != after:
            result.append(Move(f"key:{key}", before, after, snapshot.hot_key_load.get(key, 0.0)))
    return tuple(result)


def _targets(table: RoutingTable, key: str, snapshot: LoadSnapshot) -> tuple[str, ...]:
    if key in table.hot_keys:
        return tuple(sorted(w for w, _ in table.hot_keys[key]))
    return (table.key_group_worker[snapshot.hot_key_group(key)],)
