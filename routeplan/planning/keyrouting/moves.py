"""The moves of a key-routing plan in progress, counted against the current table and the budget.

``cg`` and ``ring`` honour ``Budget.max_moves`` and ``Budget.max_migrated_load_share``: every
change they make to the current table is priced here **as ``model.plan.moves`` counts it** — a key
group whose worker changes (its load: the group's load less the hot keys routed on their own in
either table), a hot key whose set of workers changes (its load) — before it is made, and a change
the budget cannot pay for is not made (the unit stays where the current table has it).

Forced moves follow ``reassign.reassignment``'s convention: a unit whose worker (or one of whose
workers) left the workers list must move whatever the table; it is not refused, its spend is
reserved first, and the voluntary moves get what is left (``max(0, limit − forced)``). So a plan
has ``moves ≤ max(max_moves, forced_moves)``, and ``forced_moves`` is reported in its predicted
metrics. A draining worker is still listed: leaving it is a voluntary move. Without a current
table of as many key groups nothing counts as a move (``model.plan.moves`` reports none).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers

_EPS = 1e-9
UNKNOWN = None  # a unit's worker not decided yet: priced as a move (never under-counted)


def usable_current(current: RoutingTable | None, loads: LoadSnapshot) -> RoutingTable | None:
    """``current`` when moves are counted against it (a key-routing table of as many groups)."""
    if current is None or getattr(current, "kind", "key_routing") != "key_routing":
        return None
    return current if current.num_key_groups == loads.num_key_groups else None


def targets_of(table: RoutingTable, key: str, loads: LoadSnapshot) -> tuple[str, ...]:
    """A key's workers in ``table`` as ``model.plan.moves`` compares them (sorted names)."""
    if key in table.hot_keys:
        return tuple(sorted(w for w, _ in table.hot_keys[key]))
    return (table.key_group_worker[loads.hot_key_group(key)],)


@dataclass
class MoveLedger:
    """What a plan has moved so far against ``current`` and what the budget still allows.

    One ledger per plan (mutable, never stored on a strategy). ``group_worker[g]`` and
    ``key_targets[k]`` are the plan's present choices; ``spent`` = (moves, load) of the units
    that now differ from the current table, forced ones included."""

    counting: bool
    before_group: np.ndarray  # object: current worker of each group (None without current)
    group_load: np.ndarray  # what moving the group migrates
    forced_group: np.ndarray  # bool: its current worker left the list
    before_key: dict[str, tuple[str, ...]]
    key_load: dict[str, float]
    forced_key: set[str]
    group_worker: np.ndarray  # object: the plan's present choice
    key_targets: dict[str, tuple[str, ...] | None]
    limit: tuple[float, float]  # (moves, load)
    spent: list[float]
    forced: tuple[float, float]

    @classmethod
    def build(
        cls,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
        hot: Iterable[str] = (),
    ) -> MoveLedger:
        """A ledger for a plan routing the keys ``hot`` on their own, against ``current``."""
        current = usable_current(current, loads)
        groups = loads.num_key_groups
        listed = set(workers.names)
        share = budget.max_migrated_load_share
        limit = (
            np.inf if budget.max_moves is None else float(budget.max_moves),
            np.inf if share is None else share * loads.total,
        )
        if current is None:
            empty = np.full(groups, None, dtype=object)
            return cls(
                False, empty, np.zeros(groups), np.zeros(groups, bool), {}, {}, set(),
                empty.copy(), {}, limit, [0.0, 0.0], (0.0, 0.0),
            )  # fmt: skip
        keys = sorted(set(hot) | set(current.hot_keys))
        routed = [k for k in keys if k in loads.hot_key_load]
        group_load = loads.residual_key_group_load(routed)
        before_group = np.asarray(current.key_group_worker, dtype=object)
        forced_group = np.array([w not in listed for w in before_group], dtype=bool)
        before_key = {k: targets_of(current, k, loads) for k in keys}
        key_load = {k: float(loads.hot_key_load.get(k, 0.0)) for k in keys}
        forced_key = {k for k in keys if any(w not in listed for w in before_key[k])}
        forced = (
            float(forced_group.sum() + len(forced_key)),
            float(group_load[forced_group].sum() + sum(key_load[k] for k in forced_key)),
        )
        return cls(
            True, before_group, group_load, forced_group, before_key, key_load, forced_key,
            before_group.copy(), dict(before_key), limit, list(forced), forced,
        )  # fmt: skip

    # ---------------------------------------------------------------- pricing and spending

    def _group_moved(self, groups: np.ndarray, workers: np.ndarray) -> np.ndarray:
        return ~self.forced_group[groups] & (workers != self.before_group[groups])

    def group_cost(self, groups: Sequence[int] | np.ndarray, worker: object) -> tuple[float, float]:
        """(moves, load) the plan would spend more by putting ``groups`` on ``worker`` (a name,
        or ``UNKNOWN``); negative when it undoes moves."""
        if not self.counting:
            return 0.0, 0.0
        g = np.asarray(groups, dtype=np.int64)
        now = self._group_moved(g, self.group_worker[g])
        new = self._group_moved(g, np.full(g.size, worker, dtype=object))
        diff = new.astype(float) - now.astype(float)
        return float(diff.sum()), float((diff * self.group_load[g]).sum())

    def key_cost(self, key: str, targets: Sequence[str] | None) -> tuple[float, float]:
        """(moves, load) the plan would spend more by routing ``key`` to ``targets``."""
        if not self.counting or key in self.forced_key or key not in self.before_key:
            return 0.0, 0.0
        now = self.key_targets[key] != self.before_key[key]
        new = targets is None or tuple(sorted(set(targets))) != self.before_key[key]
        diff = float(new) - float(now)
        return diff, diff * self.key_load[key]

    def fits(self, cost: tuple[float, float]) -> bool:
        """Whether spending ``cost`` more keeps the voluntary moves within the budget."""
        moves, load = cost
        if moves <= 0 and load <= _EPS:
            return True
        return self.fits_spent(moves, load)

    def set_groups(self, groups: Sequence[int] | np.ndarray, worker: object) -> None:
        """Record ``groups`` on ``worker`` (whatever it costs: forced or already checked)."""
        cost = self.group_cost(groups, worker)
        if self.counting:
            self.group_worker[np.asarray(groups, dtype=np.int64)] = worker
        self._spend(cost)

    def set_key(self, key: str, targets: Sequence[str] | None) -> None:
        cost = self.key_cost(key, targets)
        if self.counting and key in self.before_key:
            self.key_targets[key] = None if targets is None else tuple(sorted(set(targets)))
        self._spend(cost)

    def try_groups(self, groups: Sequence[int] | np.ndarray, worker: object) -> bool:
        """Put ``groups`` on ``worker`` if the budget allows; False (nothing recorded) if not."""
        if not self.fits(self.group_cost(groups, worker)):
            return False
        self.set_groups(groups, worker)
        return True

    def try_key(self, key: str, targets: Sequence[str] | None) -> bool:
        if not self.fits(self.key_cost(key, targets)):
            return False
        self.set_key(key, targets)
        return True

    def fits_spent(self, moves: float = 0.0, load: float = 0.0) -> bool:
        """Whether what is spent so far, plus ``moves`` and ``load``, keeps the voluntary moves
        within what the budget leaves once the forced moves are paid."""
        forced_moves, forced_load = self.forced
        voluntary = (self.spent[0] - forced_moves + moves, self.spent[1] - forced_load + load)
        left = (max(self.limit[0] - forced_moves, 0.0), max(self.limit[1] - forced_load, 0.0))
        return voluntary[0] <= left[0] + _EPS and voluntary[1] <= left[1] * (1 + _EPS) + _EPS

    def _spend(self, cost: tuple[float, float]) -> None:
        self.spent[0] += cost[0]
        self.spent[1] += cost[1]

    # ---------------------------------------------------------------- what the plan keeps

    def is_forced_group(self, g: int) -> bool:
        return bool(self.counting and self.forced_group[g])

    def kept_targets(
        self, key: str, current: RoutingTable | None
    ) -> tuple[tuple[str, float], ...] | None:
        """The weighted workers a key keeps when its change is refused: its current split, or
        its key group's current worker (None without a current table)."""
        if not self.counting or current is None:
            return None
        if key in current.hot_keys:
            return tuple(current.hot_keys[key])
        return ((self.before_key[key][0], 1.0),)

    @property
    def forced_moves(self) -> float:
        return self.forced[0]

    def extra(self) -> Mapping[str, float]:
        """What a plan adds to its predicted metrics: ``forced_moves`` (with a current table)."""
        return {"forced_moves": self.forced[0]} if self.counting else {}
