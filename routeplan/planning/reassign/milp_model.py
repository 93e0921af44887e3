"""The Mixed-Integer Linear Program of paper 004 §4.3.1 that ``milp`` solves: key groups → workers.

With ``x_{i,k}`` = 1 when key group ``k`` goes to worker ``i``, ``q_{i,k}`` its current worker,
normalised loads ``u_i = Σ_k x_{i,k}·gLoad_k / (c_i·mean)`` (capacity weights, "Extending to
Heterogeneous Nodes"; ``mean`` = total load / active capacity) and ``B`` the draining workers::

    min  w1·d − w2·(d_u + d_l) + w_drain·Σ_{i∈B} u_i + w_migration·Σ mc_k·moved_k / Σ mc_k
    (1)  Σ_i x_{i,k} = 1                                  every key group on one worker
    (2)  Σ_{i,k} (1 − q_{i,k})·x_{i,k}·mc_k ≤ maxMigrCost  and the same for moves and moved load
    (3)  u_i ≤ 1 + (d − d_u)                              every worker
    (4)  u_i ≥ 1 − (d − d_l)                              active workers only (scale-in)
         Σ_i x_{i,k}·r_k ≤ bound_r·c_i·Σr/Σc               optional resources ("Multi-Dimensional")
         d ≤ maxLD                                        optional cap (``max_load_distance``)

``mc_k`` is in the budget's ``migration_cost_unit`` (one move, the group's distinct keys or its
load) — in (2), where maxMigrCost is ``Budget.max_migration_cost`` (the moves and the moved load
are capped by ``max_moves`` and ``max_migrated_load_share``), and in the objective's last term.
``d`` is the load distance (``metrics.load_distance``); ``w1 ≫ w2`` minimises it first, then
tightens both sides. The objective term on ``B`` is the paper's stated second objective
("minimize … and Σ_{n_i∈B} load_i"), which its MILP leaves implicit (Lemmas 1–2); with a budget,
minimising ``d`` alone may leave a draining worker untouched, so the term (``w_drain``) and one
constraint — at least one loaded group leaves a draining worker per plan when the budget allows —
make draining workers empty run over run. The last term (tiny by default) only breaks ties: a
loose budget does not invite moves that gain nothing. Constraint (5) ``mean − d ≥ 0`` is left
out: loads are non-negative anyway, and with it a key group heavier than twice the mean makes
the model infeasible. New groups cannot go to draining workers (Lemma 1: the MILP sends none).

This module builds the model (``_Model``: over all key groups or a neighbourhood of them, with
an incumbent as its warm start) and evaluates an assignment as the model does (``objective``,
``_d_of``, ``distance``); ``drain_progress`` makes a start meet the drain-progress constraint and
``distance_bound`` is the cut ``d ≥ d_LB``. How ``milp`` solves it:
``routeplan.planning.reassign.milp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.planning.metrics import load_distance
from routeplan.planning.reassign.reassignment import Reassignment, Units

_EPS = 1e-9


@dataclass(frozen=True)
class Weights:
    """The objective's weights: ``w1·d − w2·(d_u + d_l) + w_drain·Σ_B u_i + w_migration·C``
    (§4.3.1, plus ``C`` = the migration cost spent over all groups' cost: a tie-breaker so that a
    loose budget does not invite moves that gain nothing; 0 gives the paper's objective)."""

    w1: float = 1000.0
    w2: float = 1.0
    w_drain: float = 10.0
    w_migration: float = 1.0

    def __post_init__(self) -> None:
        if not (self.w1 > 2 * self.w2 >= 0 and self.w_drain >= 0 and self.w_migration >= 0):
            raise ValueError("need w1 > 2·w2 >= 0 (w1 ≫ w2, §4.3.1), w_drain, w_migration >= 0")

    def per_cost(self, problem: Reassignment) -> float:
        """The objective's weight of one unit of migration cost."""
        total = problem.group_spend[:, 2].sum()
        return self.w_migration / total if total > 0 else 0.0


def objective(problem: Reassignment, units: Units, assign: np.ndarray, weights: Weights) -> float:
    """The MILP's objective of ``assign`` with ``d``, ``d_u``, ``d_l`` at their best values."""
    u = problem.normalised(units, assign)
    over = u.max() - 1.0
    under = 1.0 - u[problem.active].min()
    d = max(over, under)
    drained = u[~problem.active].sum()
    migration = weights.per_cost(problem) * units.spent(assign)[2]
    value = weights.w1 * d - weights.w2 * (2 * d - over - under) + weights.w_drain * drained
    return float(value + migration)


def _d_of(problem: Reassignment, units: Units, assign: np.ndarray) -> float:
    """The model's ``d`` of ``assign``: ``max(max_i u_i − 1, 1 − min_{active} u_i)``."""
    u = problem.normalised(units, assign)
    return float(max(u.max() - 1.0, 1.0 - u[problem.active].min(initial=1.0), 0.0))


def distance(problem: Reassignment, units: Units, assign: np.ndarray) -> float:
    return load_distance(problem.worker_load(units, assign), problem.capacity, problem.active)


def _drain_candidates(problem: Reassignment, units: Units, movable: np.ndarray) -> np.ndarray:
    owner = units.owner
    on_draining = (owner >= 0) & ~problem.active[np.clip(owner, 0, None)]
    return np.flatnonzero(on_draining & (units.load > 0) & movable)


def drain_progress(
    problem: Reassignment, units: Units, assign: np.ndarray, movable: np.ndarray
) -> tuple[np.ndarray, bool]:
    """Make at least one loaded unit leave a draining worker when the budget allows (the heaviest
    that fits, to the least loaded active worker). Returns the assignment and whether the MILP
    must keep such a move."""
    candidates = _drain_candidates(problem, units, movable)
    if candidates.size == 0:
        return assign, False
    if np.any(assign[candidates] != units.owner[candidates]):
        return assign, True
    left = problem.budget_left - units.spent(assign)
    fits = [u for u in candidates if np.all(units.spend[u] <= left)]
    if not fits:
        return assign, False
    unit = max(fits, key=lambda u: (units.load[u], -u))
    active = np.flatnonzero(problem.active)
    scale = problem.capacity * problem.fair
    load = problem.worker_load(units, assign)
    result = assign.copy()
    result[unit] = active[np.argmin((load[active] + units.load[unit]) / scale[active])]
    if not problem.within_resources(units, result):
        return assign, False
    return result, True


def distance_bound(
    problem: Reassignment, units: Units, incumbent: np.ndarray, free: np.ndarray
) -> float:
    """A lower bound on the load distance ``d`` any plan within the budget reaches: the LP
    relaxation of §4.3.1 has ``d = 0`` (fractions of key groups move freely), so the full model
    gets ``d ≥ d_LB`` as a cut. For a candidate ``d``, worker ``i`` above ``1 + d`` must shed at
    least its excess, which takes at least ``n_i(d)`` moves (its heaviest free groups first) and
    that much moved load; an active worker below ``1 − d`` must receive at least ``m_i(d)`` groups
    (the heaviest free groups anywhere) when no free group is new (new groups move for free).
    Each move leaves one worker and reaches one, so ``Σ_i n_i(d)`` and ``Σ_i m_i(d)`` each fit in
    the moves left, and the excesses in the moved load left; ``d_LB`` is the least ``d``
    (bisection) where they do."""
    n = len(problem.workers)
    scale = problem.capacity * problem.fair
    fixed = np.ones(len(units), dtype=bool)
    fixed[free] = False
    owned = free[units.owner[free] >= 0]
    new = free.size > owned.size
    place = np.where(fixed, incumbent, units.owner)
    keep = fixed | (units.owner >= 0)
    load = problem.base + np.bincount(place[keep], weights=units.load[keep], minlength=n)
    u = load / scale
    spent_fixed = units.pin_spend.sum(axis=0) + units.spend[units.leaving(incumbent) & fixed].sum(
        axis=0
    )
    left = problem.budget_left - spent_fixed
    moves_left, load_left = left[0], left[1]
    if problem.limits[2] < np.inf and not np.any(units.spend[owned, 2] != 1.0):
        moves_left = min(moves_left, left[2])  # the cost is one per move
    if not (np.isfinite(moves_left) or np.isfinite(load_left)):
        return 0.0
    shed = [np.cumsum(np.sort(units.load[owned[units.owner[owned] == i]])[::-1]) for i in range(n)]
    heaviest = np.cumsum(np.sort(units.load[owned])[::-1])
    active = problem.active

    def fits(d: float) -> bool:
        over = np.clip(u - 1.0 - d, 0.0, None) * scale
        under = np.where(active, np.clip(1.0 - d - u, 0.0, None), 0.0) * scale
        if over.sum() > load_left * (1 + 1e-9) + 1e-12:
            return False
        count = 0
        for i in np.flatnonzero(over > 1e-12):
            reach = np.searchsorted(shed[i], over[i] * (1 - 1e-9))
            if reach >= shed[i].size:
                return False
            count += reach + 1
        if count > moves_left:
            return False
        if new:
            return True
        if under.sum() > load_left * (1 + 1e-9) + 1e-12:
            return False
        count = 0
        for i in np.flatnonzero(under > 1e-12):
            reach = np.searchsorted(heaviest, under[i] * (1 - 1e-9))
            if reach >= heaviest.size:
                return False
            count += reach + 1
        return count <= moves_left

    high = max(float((u - 1.0).max()), float((1.0 - u[active]).max(initial=0.0)), 0.0)
    if fits(0.0):
        return 0.0
    low = 0.0
    for _ in range(40):
        mid = (low + high) / 2
        if fits(mid):
            high = mid
        else:
            low = mid
    return low


class _Model:
    """One MILP over the ``free`` units and the ``selected`` workers; everything else is fixed at
    the incumbent and enters as constants (the whole §4.3.1 model when all are free).

    Built one part of the paper's model per method, in this order: the variables, the load of
    each worker, constraints (3) and (4), the objective, constraints (1) and (2), the resources,
    the drain progress, then the incumbent as the warm start."""

    def __init__(
        self,
        problem: Reassignment,
        units: Units,
        incumbent: np.ndarray,
        free: np.ndarray,
        selected: np.ndarray,
        allowed: list[np.ndarray],
        weights: Weights,
        max_load_distance: float | None,
        require_drain: bool,
        d_bound: float = 0.0,
    ) -> None:
        import pulp

        self.problem, self.units, self.incumbent = problem, units, incumbent
        self.free, self.selected, self.allowed = free, selected, allowed
        self.weights, self.max_load_distance = weights, max_load_distance
        self.d_bound = d_bound
        n = len(problem.workers)
        self.in_model = np.zeros(n, dtype=bool)
        self.in_model[selected] = True
        self.fixed = np.ones(len(units), dtype=bool)
        self.fixed[free] = False
        fixed_load = problem.base + np.bincount(
            incumbent[self.fixed], weights=units.load[self.fixed], minlength=n
        )
        self.scale = problem.capacity * problem.fair
        self.u_fixed = fixed_load / self.scale
        rest = ~self.in_model
        self.over_fixed = (self.u_fixed[rest] - 1.0).max(initial=-np.inf)
        self.under_fixed = (1.0 - self.u_fixed[rest & problem.active]).max(initial=-np.inf)
        self.prob = pulp.LpProblem("key_group_allocation", pulp.LpMinimize)
        self.variables()
        self.load = self.worker_load()
        self.upper_load()
        self.lower_load()
        self.objective()
        self.one_worker_per_group()
        self.migration_budget()
        self.resources()
        if require_drain:
            self.drain_progress()
        self.warm_start()

    def variables(self) -> None:
        """``x_{i,k}`` ∈ {0, 1} for each free unit ``k`` and each allowed worker ``i`` in the
        model; ``d`` ∈ [d_fixed, maxLD] (``d_fixed``: the distance the fixed workers already
        impose; ``maxLD`` = ``max_load_distance``, optional), ``d_u``, ``d_l`` ≥ 0."""
        import pulp

        prob = self.prob
        self.x: dict[tuple[int, int], Any] = {}
        for u in self.free:
            for i in self.allowed[u]:
                if self.in_model[i]:
                    self.x[i, u] = prob.add_variable(f"x_{i}_{u}", 0, 1, cat=pulp.LpBinary)
        lowest = max(self.over_fixed, self.under_fixed, self.d_bound, 0.0)
        self.d = prob.add_variable("d", lowest, self.max_load_distance)
        self.du = prob.add_variable("d_u", 0)
        self.dl = prob.add_variable("d_l", 0)
        self.by_worker: dict[int, list[tuple[Any, int]]] = {int(i): [] for i in self.selected}
        for (i, u), var in self.x.items():
            self.by_worker[i].append((var, u))
        self.moving = [
            (var, u) for (i, u), var in self.x.items() if self.units.owner[u] not in (-1, i)
        ]

    def worker_load(self) -> dict[int, Any]:
        """``u_i = Σ_k x_{i,k}·gLoad_k / (c_i·mean)`` for each worker in the model (fixed units
        as a constant): its load over its fair share ("Extending to Heterogeneous Nodes")."""
        import pulp

        units, scale = self.units, self.scale
        return {
            i: pulp.LpAffineExpression(
                [(var, units.load[u] / scale[i]) for var, u in terms], constant=self.u_fixed[i]
            )
            for i, terms in self.by_worker.items()
        }

    def upper_load(self) -> None:
        """(3) ``u_i ≤ 1 + (d − d_u)`` for every worker; for the workers outside the model, their
        fixed largest ``u_i − 1 ≤ d − d_u``."""
        prob, d, du = self.prob, self.d, self.du
        for i, expr in self.load.items():
            prob += expr <= 1.0 + d - du, f"upper_{i}"
        if np.isfinite(self.over_fixed):
            prob += du - d <= -self.over_fixed, "upper_fixed"

    def lower_load(self) -> None:
        """(4) ``u_i ≥ 1 − (d − d_l)`` for the active workers only (draining ones may empty:
        "Supporting Horizontal Scale-In"); outside the model, ``1 − u_i ≤ d − d_l``."""
        prob, d, dl = self.prob, self.d, self.dl
        active = self.problem.active
        for i, expr in self.load.items():
            if active[i]:
                prob += expr >= 1.0 - d + dl, f"lower_{i}"
        if np.isfinite(self.under_fixed):
            prob += dl - d <= -self.under_fixed, "lower_fixed"

    def objective(self) -> None:
        """``min w1·d − w2·(d_u + d_l) + w_drain·Σ_{i∈B} u_i
        + w_migration·Σ_{i,k} (1 − q_{i,k})·x_{i,k}·mc_k / Σ_k mc_k`` (:class:`Weights`)."""
        import pulp

        weights, units = self.weights, self.units
        drained = [expr for i, expr in self.load.items() if not self.problem.active[i]]
        per_cost = weights.per_cost(self.problem)
        self.prob += (
            weights.w1 * self.d
            - weights.w2 * (self.du + self.dl)
            + weights.w_drain * pulp.lpSum(drained)
            + pulp.LpAffineExpression(
                [(var, per_cost * units.spend[u, 2]) for var, u in self.moving]
            )
        )

    def one_worker_per_group(self) -> None:
        """(1) ``Σ_i x_{i,k} = 1``: every free unit on exactly one worker."""
        import pulp

        for u in self.free:
            self.prob += (
                pulp.lpSum(self.x[i, u] for i in self.allowed[u] if self.in_model[i]) == 1,
                f"one_{u}",
            )

    def migration_budget(self) -> None:
        """(2) ``Σ_{i,k} (1 − q_{i,k})·x_{i,k}·mc_k ≤ maxMigrCost``, and the same for the moves
        and the moved load: one row per budget dimension that has a limit, less what the fixed
        units spend (and a hair, so that a solver's tolerance cannot overspend)."""
        import pulp

        units, incumbent = self.units, self.incumbent
        if not self.moving:
            return
        leaving_fixed = units.leaving(incumbent) & self.fixed
        spent_fixed = units.pin_spend.sum(axis=0) + units.spend[leaving_fixed].sum(axis=0)
        for j, limit in enumerate(self.problem.budget_left):
            if np.isfinite(limit):
                rhs = limit - spent_fixed[j] - _EPS * max(1.0, abs(limit))
                self.prob += (
                    pulp.LpAffineExpression([(var, units.spend[u, j]) for var, u in self.moving])
                    <= rhs,
                    f"budget_{j}",
                )

    def resources(self) -> None:
        """§4.3.1 "Extending to Multi-Dimensional Load":
        ``Σ_k x_{i,k}·r_k ≤ bound_r·c_i·Σ_k r_k / Σ c`` for every resource ``r``
        (``Reassignment.add_resource``) and worker in the model."""
        import pulp

        problem, units, n = self.problem, self.units, len(self.problem.workers)
        for r, (use, cap) in enumerate(
            zip(problem.resource_use.values(), problem.resource_cap.values(), strict=True)
        ):
            unit_use = units.resource(use)
            used_fixed = np.bincount(
                self.incumbent[self.fixed], weights=unit_use[self.fixed], minlength=n
            )
            for i, terms in self.by_worker.items():
                if terms:
                    self.prob += (
                        pulp.LpAffineExpression([(var, unit_use[u]) for var, u in terms])
                        <= cap[i] - used_fixed[i],
                        f"resource_{r}_{i}",
                    )

    def drain_progress(self) -> None:
        """``Σ_{k on B} x_{q(k),k} ≤ |{k on B}| − 1``: at least one loaded unit leaves a draining
        worker (unless a fixed unit already does, or one of their workers is outside the
        model)."""
        import pulp

        problem, units = self.problem, self.units
        candidates = _drain_candidates(problem, units, ~self.fixed)
        done = _drain_candidates(problem, units, self.fixed)
        satisfied = np.any(self.incumbent[done] != units.owner[done]) or not np.all(
            self.in_model[units.owner[candidates]]
        )
        if candidates.size and not satisfied:
            stays = [self.x[units.owner[u], u] for u in candidates]
            self.prob += pulp.lpSum(stays) <= len(stays) - 1, "drain_progress"

    def warm_start(self) -> None:
        """The incumbent as every variable's initial value (``d`` clipped to ``maxLD``: an
        infeasible start HiGHS would refuse)."""
        problem, units, incumbent = self.problem, self.units, self.incumbent
        for (i, u), var in self.x.items():
            var.setInitialValue(int(incumbent[u] == i))
        uu = problem.normalised(units, incumbent)
        over, under = uu.max() - 1.0, 1.0 - uu[problem.active].min()
        d0 = max(over, under, self.d.lowBound)
        if self.max_load_distance is not None:
            d0 = min(d0, self.max_load_distance)
        self.d.setInitialValue(d0)
        self.du.setInitialValue(max(d0 - over, 0.0))
        self.dl.setInitialValue(max(d0 - under, 0.0))

    def solution(self, incumbent: np.ndarray) -> np.ndarray:
        assign = incumbent.copy()
        best: dict[int, tuple[float, int]] = {}
        for (i, u), var in self.x.items():
            value = var.varValue or 0.0
            if u not in best or value > best[u][0]:
                best[u] = (value, i)
        for u, (_, i) in best.items():
            assign[u] = i
        return assign
