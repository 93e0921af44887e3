"""Key groups → workers under a migration budget: what ``milp``, ``flux`` and ``albic`` share
(paper 004 §4.3).

A :class:`Reassignment` is one planning instance: the key groups' loads, their current workers
(``q_{i,k}``), their migration costs ``mc_k``, the workers' capacities and states, and what is
left of the budget. :class:`Units` groups key groups that move together (ALBIC's partitions of
collocated groups, §4.3.2 step 2; one group per unit otherwise). Assignments are arrays
``unit → worker index``.

Conventions of the three strategies, documented once:

* **whole key groups**: they plan key groups, never split keys. Hot-key overrides of the current
  table are kept as they are when all their workers are active (their load is a fixed part of
  those workers' load); an override on a worker no longer listed is dropped (a forced move), one
  on a draining worker is dropped while the budget allows (heaviest first) and kept otherwise.
* **no current table** (or one of another size): every key group is new and free to place —
  nothing counts as a migration.
* **budget**: the ``Budget`` holds every limit. ``max_moves`` caps the moves (key groups and hot
  keys, as ``model.plan.moves`` counts them), ``max_migrated_load_share`` the moved load,
  ``max_migration_cost`` the summed ``mc_k`` (§4.3.1 constraint (2)) in ``migration_cost_unit``:
  ``moves`` (one per move), ``distinct_keys`` (a state-size proxy: ``LoadSnapshot.distinct_keys``;
  a hot key counts one) or ``load``. Only moves no table can avoid — groups whose worker left the
  workers list — may exceed it; they are reported as ``forced_moves``. The predicted
  ``migration_cost`` is in the same unit.
* **draining workers** receive nothing new; what they hold leaves as the budget allows (§4.3.1
  "Supporting Horizontal Scale-In").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.keyrouting.virtual_workers import dealt_owners, proportional_counts

SPEND = ("moves", "migrated_load", "migration_cost")  # the three budget dimensions, in order


def _limit(value: float | None) -> float:
    return np.inf if value is None else float(value)


@dataclass
class Reassignment:
    """One instance of §4.3.1's problem (see the module docstring for the conventions)."""

    loads: LoadSnapshot
    current: RoutingTable | None
    workers: Workers
    group_load: np.ndarray  # gLoad_k: what the group weighs on its worker
    group_owner: np.ndarray  # current worker index, −1 when new (or its worker left)
    group_spend: np.ndarray  # (G, 3): moves, migrated load, migration cost if the group moves
    base: np.ndarray  # per worker: load of the kept hot-key overrides
    limits: np.ndarray  # (3,): the budget per dimension (inf: none)
    reserved: np.ndarray  # (3,): spent on forced moves and dropped overrides
    forced_moves: int
    hot_keys: dict[str, tuple[tuple[str, float], ...]]
    resource_use: dict[str, np.ndarray] = field(default_factory=dict)  # name → per group
    resource_cap: dict[str, np.ndarray] = field(default_factory=dict)  # name → per worker

    @classmethod
    def build(
        cls,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
        *,
        resource_bounds: Mapping[str, float] | None = None,
    ) -> Reassignment:
        """The instance for ``loads`` against ``current`` (ignored unless a key-routing table of
        as many key groups) on ``workers`` within ``budget`` (every limit, in its
        ``migration_cost_unit``), in four steps: the limits, the forced moves of key groups, the
        hot-key overrides, the resources."""
        unit = budget.migration_cost_unit
        if unit == "distinct_keys" and loads.distinct_keys is None:
            raise ValueError(
                "migration_cost_unit='distinct_keys' needs distinct keys per key group "
                "(LoadSnapshot.distinct_keys, the loads file's distinct_keys column)"
            )
        current = comparable_table(loads, current)
        limits = budget_limits(loads, budget)
        hot = dict(current.hot_keys) if current is not None else {}
        moved_load = loads.residual_key_group_load([k for k in hot if k in loads.hot_key_load])
        group_spend = group_spending(loads, unit, moved_load)
        owner, gone = current_owners(loads, current, workers)
        reserved = group_spend[gone].sum(axis=0)
        overrides = HotKeyOverrides.of(loads, hot, workers, unit, limits, reserved)
        problem = cls(
            loads=loads,
            current=current,
            workers=workers,
            group_load=loads.residual_key_group_load(list(overrides.split)),
            group_owner=owner,
            group_spend=group_spend,
            base=overrides.base,
            limits=limits,
            reserved=overrides.reserved,
            forced_moves=int(gone.size) + overrides.forced,
            hot_keys=overrides.kept,
        )
        for name, bound in (resource_bounds or {}).items():
            problem.add_resource(name, float(bound))
        return problem

    def add_resource(self, name: str, bound: float) -> None:
        """§4.3.1 "Extending to Multi-Dimensional Load": no worker uses more than ``bound`` times
        its capacity's share of resource ``name`` (``distinct_keys``, also called ``keys``, or
        any ``LoadSnapshot.key_group_resources`` entry). Hot keys kept on their own are not
        counted."""
        use = self.loads.key_group_resources.get(name)
        if use is None and name in ("distinct_keys", "keys"):
            use = self.loads.distinct_keys
        if use is None:
            known = sorted(self.loads.key_group_resources) + ["distinct_keys"]
            raise ValueError(f"unknown resource {name!r} for the snapshot; known: {known}")
        if not bound > 0:
            raise ValueError(f"resource bound for {name!r} must be > 0")
        capacity = self.capacity
        share = use.sum() / capacity[self.active].sum()
        self.resource_use[name] = np.asarray(use, dtype=float)
        self.resource_cap[name] = bound * capacity * share

    @property
    def capacity(self) -> np.ndarray:
        return self.workers.capacities

    @property
    def active(self) -> np.ndarray:
        return self.workers.is_active

    @property
    def fair(self) -> float:
        """The mean load per unit of active capacity (§4.3.1 ``mean``; 1 when there is none)."""
        total = self.loads.total
        return total / self.capacity[self.active].sum() if total > 0 else 1.0

    @property
    def budget_left(self) -> np.ndarray:
        """What voluntary moves may spend: the budget less the forced moves (never below 0)."""
        return np.clip(self.limits - self.reserved, 0.0, None)

    def worker_load(self, units: Units, assign: np.ndarray) -> np.ndarray:
        """Raw load of every worker under ``assign`` (unit → worker)."""
        return self.base + np.bincount(assign, weights=units.load, minlength=len(self.workers))

    def normalised(self, units: Units, assign: np.ndarray) -> np.ndarray:
        """``u_w``: load over capacity over the mean (1 = the worker's fair share)."""
        return self.worker_load(units, assign) / (self.capacity * self.fair)

    def within_budget(self, units: Units, assign: np.ndarray) -> bool:
        return bool(np.all(units.spent(assign) <= self.budget_left))

    def within_resources(self, units: Units, assign: np.ndarray) -> bool:
        n = len(self.workers)
        return all(
            np.all(np.bincount(assign, units.resource(use), minlength=n) <= cap * (1 + 1e-9))
            for use, cap in zip(self.resource_use.values(), self.resource_cap.values(), strict=True)
        )

    def finish(
        self,
        strategy: str,
        group_worker: np.ndarray,
        params: Mapping[str, Any],
        state: Mapping[str, Any],
        extra: Mapping[str, float],
    ) -> Plan:
        """The routing table of ``group_worker`` (group → worker index) and its plan."""
        group_worker = self.placed_idle(group_worker)
        names = self.workers.names
        table = RoutingTable(
            stream=self.loads.stream,
            strategy=strategy,
            workers=self.workers,
            key_group_worker=tuple(names[i] for i in group_worker),
            hot_keys=self.hot_keys,
            params=dict(params),
            strategy_state=dict(state),
            hash_seed=self.loads.hash_seed,
        )
        extra = {**extra, "forced_moves": float(self.forced_moves)}
        cost = self.reserved[2] + self.group_spend[
            (group_worker != self.group_owner) & (self.group_owner >= 0), 2
        ].sum(initial=0.0)
        return finish_plan(
            table, self.loads, self.current, {**extra, "migration_cost": float(cost)}
        )

    def placed_idle(self, group_worker: np.ndarray) -> np.ndarray:
        """``group_worker`` with the idle key groups — no load, no resource use and no flow in
        the planning window — placed where tomorrow's traffic does not pile up.

        They cost nothing wherever they go, so a solver leaves them anywhere (HiGHS put every
        one on a single worker), and a sparse planning window has many: the next day's load of
        all of them would land on that worker. An idle group keeps its current worker when it is
        active (no move); the others — new, or on a draining or departed worker, where the
        solver did not keep them — are dealt over the active workers in proportion to capacity
        (largest remainder, round by round), in key-group order. Moves never grow: a group the
        solver kept on its current worker stays there."""
        idle = self.loads.key_group_load <= 0
        for usage in self.loads.key_group_resources.values():
            idle &= usage <= 0
        flow = self.loads.key_group_flow
        if flow is not None and flow.size:
            ends = flow[:, :2].astype(np.int64).ravel()
            idle[ends[ends < idle.size]] = False
        if not idle.any():
            return group_worker
        placed = np.asarray(group_worker, dtype=np.int64).copy()
        owner, active = self.group_owner, self.workers.is_active
        kept = idle & (owner >= 0) & (placed == owner)
        home = idle & ~kept & (owner >= 0) & active[np.maximum(owner, 0)]
        placed[home] = owner[home]
        dealt = np.flatnonzero(idle & ~kept & ~home)
        if dealt.size:
            choices = np.flatnonzero(active)
            counts = proportional_counts(self.workers.capacities[choices], int(dealt.size))
            placed[dealt] = choices[dealt_owners(counts)]
        return placed


def comparable_table(loads: LoadSnapshot, current: RoutingTable | None) -> RoutingTable | None:
    """``current`` when it is a key-routing table of as many key groups as ``loads``; else None
    (every key group is new: nothing counts as a migration)."""
    if current is None or current.kind != "key_routing":
        return None
    return current if current.num_key_groups == loads.num_key_groups else None


def budget_limits(loads: LoadSnapshot, budget: Budget) -> np.ndarray:
    """Step 1, the limits per budget dimension (:data:`SPEND`; inf when unset): ``max_moves``,
    ``max_migrated_load_share`` × the total load, ``max_migration_cost`` (§4.3.1 maxMigrCost,
    constraint (2))."""
    share = budget.max_migrated_load_share
    return np.array(
        [
            _limit(budget.max_moves),
            np.inf if share is None else share * loads.total,
            _limit(budget.max_migration_cost),
        ]
    )


def group_spending(loads: LoadSnapshot, unit: str, moved_load: np.ndarray) -> np.ndarray:
    """``(G, 3)``: what moving each key group spends per dimension — one move, its load (the
    residual ``moved_load`` once the current table's hot keys are set apart) and its migration
    cost ``mc_k`` in ``unit`` (one, its distinct keys, or its load)."""
    ones = np.ones(loads.num_key_groups)
    cost = {"moves": ones, "distinct_keys": loads.distinct_keys, "load": moved_load}[unit]
    return np.column_stack([ones, moved_load, cost])


def current_owners(
    loads: LoadSnapshot, current: RoutingTable | None, workers: Workers
) -> tuple[np.ndarray, np.ndarray]:
    """Step 2, forced moves: each key group's current worker index (−1 when new) and the groups
    whose worker is no longer listed — they must move, whatever the budget."""
    if current is None:
        return np.full(loads.num_key_groups, -1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    index = workers.index()
    owner = np.array([index.get(w, -1) for w in current.key_group_worker], dtype=np.int64)
    return owner, np.flatnonzero(owner < 0)


@dataclass(frozen=True)
class HotKeyOverrides:
    """Step 3, the current table's hot-key overrides: those kept (``kept``; ``split`` those of
    them the snapshot still sees, whose load ``base`` adds to their workers), the budget reserved
    once the others are dropped (``reserved``: the forced moves so far plus the dropped
    overrides) and how many overrides were forced (their worker left)."""

    kept: dict[str, tuple[tuple[str, float], ...]]
    split: dict[str, tuple[tuple[str, float], ...]]
    base: np.ndarray
    reserved: np.ndarray
    forced: int

    @classmethod
    def of(
        cls,
        loads: LoadSnapshot,
        hot: Mapping[str, tuple[tuple[str, float], ...]],
        workers: Workers,
        unit: str,
        limits: np.ndarray,
        reserved: np.ndarray,
    ) -> HotKeyOverrides:
        """An override on a worker no longer listed is dropped (a forced move); one on a
        draining worker is dropped while the budget (``limits``, ``reserved`` so far) allows,
        heaviest first, and kept otherwise; the others are kept."""
        index = workers.index()
        active = workers.is_active

        def key_spend(key: str) -> np.ndarray:
            load = loads.hot_key_load.get(key, 0.0)
            return np.array([1.0, load, load if unit == "load" else 1.0])

        reserved = np.array(reserved, dtype=float)
        forced = 0
        kept: dict[str, tuple[tuple[str, float], ...]] = {}
        draining_targets = []
        for key, targets in sorted(hot.items()):
            names = [w for w, _ in targets]
            if any(n not in index for n in names):
                reserved += key_spend(key)
                forced += 1
            elif all(active[index[n]] for n in names):
                kept[key] = targets
            else:
                draining_targets.append(key)
        for key in sorted(draining_targets, key=lambda k: -loads.hot_key_load.get(k, 0.0)):
            if np.all(reserved + key_spend(key) <= limits):
                reserved += key_spend(key)
            else:
                kept[key] = hot[key]
        base = np.zeros(len(workers))
        split = {k: v for k, v in kept.items() if k in loads.hot_key_load}
        for key, targets in split.items():
            total_weight = sum(w for _, w in targets)
            for name, weight in targets:
                base[index[name]] += loads.hot_key_load[key] * weight / total_weight
        return cls(kept, split, base, reserved, forced)


@dataclass(frozen=True)
class Units:
    """Key groups that move together; each unit's members share their current worker unless the
    unit is pinned (ALBIC §4.3.2 step 3 pins a pair, or two partitions, to one worker)."""

    of_group: np.ndarray  # group → unit
    load: np.ndarray  # (U,) summed gLoad
    owner: np.ndarray  # (U,) current worker of the members, −1 when none has one
    spend: np.ndarray  # (U, 3) when the unit leaves its owner
    pin: np.ndarray  # (U,) worker the unit must go to, −1 when free
    pin_spend: np.ndarray  # (U, 3) of going to the pin

    @classmethod
    def build(
        cls,
        problem: Reassignment,
        members: Sequence[Sequence[int]] | None = None,
        pins: Mapping[int, int] | None = None,
    ) -> Units:
        """Units from ``members`` (lists of groups covering each group once; one per group by
        default) with ``pins`` (unit → worker index)."""
        g = problem.loads.num_key_groups
        of_group = np.arange(g) if members is None else np.full(g, -1, dtype=np.int64)
        if members is not None:
            for u, groups in enumerate(members):
                of_group[np.asarray(groups, dtype=np.int64)] = u
            if np.any(of_group < 0):
                raise ValueError("units must cover every key group")
        n = int(of_group.max()) + 1
        owner_of = problem.group_owner
        owned = owner_of >= 0
        spend = np.zeros((n, 3))
        np.add.at(spend, of_group[owned], problem.group_spend[owned])
        owner = np.full(n, -1, dtype=np.int64)
        owner[of_group[owned]] = owner_of[owned]
        pin = np.full(n, -1, dtype=np.int64)
        for unit, worker in (pins or {}).items():
            pin[unit] = worker
        mixed = np.zeros(n, dtype=bool)
        mixed[of_group[owned]] |= owner_of[owned] != owner[of_group[owned]]
        if np.any(mixed & (pin < 0)):
            raise ValueError("a unit that is not pinned must sit on one worker")
        pin_spend = np.zeros((n, 3))
        leaving = owned & (owner_of != pin[of_group]) & (pin[of_group] >= 0)
        np.add.at(pin_spend, of_group[leaving], problem.group_spend[leaving])
        load = np.bincount(of_group, weights=problem.group_load, minlength=n)
        return cls(of_group, load, owner, spend, pin, pin_spend)

    def __len__(self) -> int:
        return int(self.load.size)

    def resource(self, group_use: np.ndarray) -> np.ndarray:
        return np.bincount(self.of_group, weights=group_use, minlength=len(self))

    def leaving(self, assign: np.ndarray) -> np.ndarray:
        """Units of ``assign`` that leave their worker (pinned ones aside)."""
        return (assign != self.owner) & (self.owner >= 0) & (self.pin < 0)

    def spent(self, assign: np.ndarray) -> np.ndarray:
        return self.spend[self.leaving(assign)].sum(axis=0) + self.pin_spend.sum(axis=0)

    def cost_to(self, unit: int, worker: int) -> np.ndarray:
        """What placing ``unit`` on ``worker`` spends (nothing to stay, or for a new unit)."""
        if self.pin[unit] >= 0 or self.owner[unit] < 0 or self.owner[unit] == worker:
            return np.zeros(3)
        return self.spend[unit]

    def group_worker(self, assign: np.ndarray) -> np.ndarray:
        return assign[self.of_group]

    def allowed(self, problem: Reassignment) -> list[np.ndarray]:
        """Workers each unit may go to: its pin; else the active workers, and its own worker when
        that one is draining (it may stay, nothing new arrives there)."""
        active = np.flatnonzero(problem.active)
        result = []
        for u in range(len(self)):
            if self.pin[u] >= 0:
                result.append(np.array([self.pin[u]]))
            elif self.owner[u] >= 0 and not problem.active[self.owner[u]]:
                result.append(np.append(active, self.owner[u]))
            else:
                result.append(active)
        return result

    def initial(self, problem: Reassignment) -> np.ndarray:
        """Pinned units on their pin, the others where they are; units without a worker go,
        heaviest first, to the allowed worker of least normalised load (LPT)."""
        assign = np.where(self.pin >= 0, self.pin, self.owner)
        capacity = problem.capacity * problem.fair
        load = problem.base + np.bincount(
            assign[assign >= 0], weights=self.load[assign >= 0], minlength=len(problem.workers)
        )
        active = np.flatnonzero(problem.active)
        for u in sorted(np.flatnonzero(assign < 0), key=lambda u: (-self.load[u], u)):
            target = active[np.argmin((load[active] + self.load[u]) / capacity[active])]
            assign[u] = target
            load[target] += self.load[u]
        return assign
