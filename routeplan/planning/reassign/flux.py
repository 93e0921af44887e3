"""``flux``: the Flux baseline of paper 004 (§2.2, after Shah et al.), within a migration budget.

"At the end of each period, nodes are sorted in descending order of their workloads, and then it
moves the biggest suitable data partition at the first node to the last one in the list, so that
load-variance is decreased. If necessary, it also moves a partition at the second node to the
second last one in the list, and so on." Here, on normalised load (load / capacity, so unequal
workers compare), by default (``variant="paper"``) exactly that: ONE pass per plan, the k-th most
loaded worker gives its biggest suitable key group — the heaviest whose move lowers the pair's
summed squared deviation, within the budget (``Budget``: moves, moved load, migration cost) — to
the k-th least loaded one.

``variant="rounds"`` is our stronger variant (not the paper's): each pair moves the key group that
best evens it (the smallest resulting peak deviation, "best fitting"), and passes repeat until
one moves nothing or the budget is spent; a group moves at most once per plan. It is what
``milp`` starts from (``bench/paper004_milp.py`` shows both beside the MILP on §5.2.1's job).

Flux knows nothing of scale-in: draining workers are emptied first, each group to the least loaded
active worker, and the pairing balances with what is left of the budget — the "scale-in, then
balance" approach paper 004 compares its integrated MILP against (§5.1, Fig. 5). Conventions
shared with ``milp`` and ``albic``: :mod:`routeplan.planning.reassign`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import BUDGET_LIMITS, Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import parameters
from routeplan.planning.reassign.reassignment import Reassignment, Units
from routeplan.planning.registry import register
from routeplan.planning.windows import lower_peak, residual_windows

_EPS = 1e-12
VARIANTS = ("paper", "rounds")


class _Mover:
    """Moves units one at a time, keeping loads, budget and resource use up to date."""

    def __init__(
        self, problem: Reassignment, units: Units, assign: np.ndarray, movable: np.ndarray
    ):
        self.problem, self.units = problem, units
        self.assign = assign.copy()
        self.frozen = ~np.asarray(movable, dtype=bool)  # may not move (or moved already)
        self.scale = problem.capacity * problem.fair
        self.load = problem.worker_load(units, self.assign)
        self.left = problem.budget_left - units.spent(self.assign)
        self.use = [units.resource(u) for u in problem.resource_use.values()]
        self.cap = list(problem.resource_cap.values())
        n = len(problem.workers)
        self.used = [np.bincount(self.assign, weights=u, minlength=n) for u in self.use]

    def fits(self, unit: int, target: int) -> bool:
        """``unit`` may go to ``target`` within what is left of the budget and the caps."""
        return bool(np.all(self.units.cost_to(unit, target) <= self.left)) and all(
            used[target] + use[unit] <= cap[target] * (1 + 1e-9)
            for used, use, cap in zip(self.used, self.use, self.cap, strict=True)
        )

    def fits_all(self, step: Sequence[tuple[int, int]]) -> bool:
        """The moves of ``step`` (unit, target) may be made together within what is left of the
        budget and the caps."""
        cost = sum((self.units.cost_to(u, t) for u, t in step), np.zeros(3))
        if not np.all(cost <= self.left):
            return False
        for used, use, cap in zip(self.used, self.use, self.cap, strict=True):
            after = used.copy()
            for u, t in step:
                after[self.assign[u]] -= use[u]
                after[t] += use[u]
            if any(after[t] > cap[t] * (1 + 1e-9) for _, t in step):
                return False
        return True

    def candidates(self, source: int, target: int) -> np.ndarray:
        """Units on ``source`` that may move to the active ``target``."""
        found = np.flatnonzero((self.assign == source) & ~self.frozen)
        return np.asarray([u for u in found if self.fits(u, target)], dtype=np.int64)

    def move(self, unit: int, target: int) -> None:
        source = self.assign[unit]
        self.left -= self.units.cost_to(unit, target)
        self.load[source] -= self.units.load[unit]
        self.load[target] += self.units.load[unit]
        for used, use in zip(self.used, self.use, strict=True):
            used[source] -= use[unit]
            used[target] += use[unit]
        self.assign[unit] = target
        self.frozen[unit] = True


def drain(mover: _Mover) -> None:
    """Scale-in on its own: units leave draining workers (heaviest first) for the least loaded
    active worker, as long as the budget allows."""
    active = np.flatnonzero(mover.problem.active)
    draining = np.flatnonzero(~mover.problem.active)
    units = np.flatnonzero(np.isin(mover.assign, draining) & ~mover.frozen)
    for u in units[np.argsort(-mover.units.load[units], kind="stable")]:
        for target in active[np.argsort(mover.load[active] / mover.scale[active], kind="stable")]:
            if mover.fits(u, target):
                mover.move(u, target)
                break


def pair_once(mover: _Mover) -> None:
    """The paper's Flux (§2.2): one pass; the k-th most loaded worker gives its biggest suitable
    unit — the heaviest whose move lowers ``e_h² + e_l²`` of the pair (``e``: normalised excess) —
    to the k-th least loaded one. A draining worker's target is 0; only active workers
    receive."""
    active = mover.problem.active
    excess = mover.load / mover.scale - np.where(active, 1.0, 0.0)
    sources = np.argsort(-excess, kind="stable")
    receivers = np.flatnonzero(active)[np.argsort(excess[active], kind="stable")]
    for h, low in zip(sources, receivers, strict=False):
        if h == low or excess[h] <= excess[low] + _EPS:
            break
        found = mover.candidates(h, low)
        if found.size == 0:
            continue
        weight = mover.units.load[found]
        after = (excess[h] - weight / mover.scale[h]) ** 2 + (
            excess[low] + weight / mover.scale[low]
        ) ** 2
        suitable = found[after < excess[h] ** 2 + excess[low] ** 2 - _EPS]
        if suitable.size:
            heaviest = suitable[np.argmax(mover.units.load[suitable])]
            mover.move(int(heaviest), int(low))


def pair_rounds(mover: _Mover) -> None:
    """Flux's pairing: the k-th most loaded worker gives its best-fitting unit to the k-th least
    loaded one; rounds until one moves nothing. A draining worker's target is 0 (its whole load
    is excess); only active workers receive."""
    problem = mover.problem
    active = problem.active
    while True:
        excess = mover.load / mover.scale - np.where(active, 1.0, 0.0)
        sources = np.argsort(-excess, kind="stable")
        receivers = np.flatnonzero(active)[np.argsort(excess[active], kind="stable")]
        moved = False
        for h, low in zip(sources, receivers, strict=False):
            if excess[h] <= excess[low] + _EPS:
                break
            found = mover.candidates(h, low)
            if found.size == 0:
                continue
            weight = mover.units.load[found]
            after = np.maximum(
                np.abs(excess[h] - weight / mover.scale[h]),
                np.abs(excess[low] + weight / mover.scale[low]),
            )
            best = int(np.argmin(after))
            if after[best] < max(abs(excess[h]), abs(excess[low])) - _EPS:
                mover.move(int(found[best]), int(low))
                moved = True
        if not moved:
            return


def window_loads(problem: Reassignment, units: Units) -> tuple[np.ndarray, np.ndarray] | None:
    """The units' loads in every window of ``problem.loads.key_group_windows`` (windows ×
    units) and the load of the kept hot-key overrides per window and worker (windows ×
    workers), or None without windows. A hot key routed on its own leaves its group's windows in
    proportion (its share of the group's planning load), and the overrides follow the stream's
    shape (each window's share of the planning load)."""
    windows = problem.loads.key_group_windows
    if windows is None:
        return None
    groups, shape = residual_windows(windows, problem.loads.key_group_load, problem.group_load)
    unit_windows = np.zeros((windows.shape[0], len(units)))
    np.add.at(unit_windows.T, units.of_group, groups.T)
    return unit_windows, np.outer(shape, problem.base)


def hold_windows(
    problem: Reassignment, units: Units, assign: np.ndarray, movable: np.ndarray
) -> np.ndarray:
    """``assign`` with units moved off the day's peak worker while that lowers the peak excess
    over the windows of ``problem.loads.key_group_windows``
    (``routeplan.planning.windows.lower_peak``), within what is left of the budget and the
    resource bounds; ``assign`` itself without windows."""
    windows = window_loads(problem, units)
    if windows is None:
        return assign
    mover = _Mover(problem, units, assign, movable)
    unit_windows, base = windows
    return lower_peak(
        assign, unit_windows, base, problem.capacity, problem.active,
        movable, mover.fits_all, mover.move,
    )  # fmt: skip


def flux(
    problem: Reassignment,
    units: Units,
    assign: np.ndarray,
    movable: np.ndarray | None = None,
    *,
    drain_first: bool = True,
    variant: str = "rounds",
) -> np.ndarray:
    """Flux from ``assign`` (unit → worker); only ``movable`` units move (default: unpinned).
    With ``drain_first`` draining workers are emptied before the pairing (else the pairing
    treats them as workers whose target load is 0). ``variant``: ``paper`` (one pass,
    :func:`pair_once`) or ``rounds`` (:func:`pair_rounds`, what ``milp`` and ``albic`` start
    from)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    movable = units.pin < 0 if movable is None else movable
    mover = _Mover(problem, units, assign, movable)
    if drain_first:
        drain(mover)
    (pair_once if variant == "paper" else pair_rounds)(mover)
    return mover.assign


@register("flux")
@dataclass(frozen=True)
class Flux:
    """Flux (paper 004 §2.2, §5 baseline): pairwise most/least loaded moves within the budget.

    ``variant``: ``paper`` (default; one pass, each pair's biggest suitable key group) or
    ``rounds`` (ours: best-fitting groups, passes until none moves). Every limit is the
    ``Budget``'s."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset(BUDGET_LIMITS)

    variant: str = "paper"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}")

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        problem = Reassignment.build(loads, current, workers, budget)
        units = Units.build(problem)
        assign = flux(problem, units, units.initial(problem), variant=self.variant)
        return problem.finish(self.name, units.group_worker(assign), parameters(self), {}, {})
