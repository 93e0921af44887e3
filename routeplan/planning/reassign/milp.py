"""``milp``: key groups → workers as the Mixed-Integer Linear Program of paper 004 §4.3.1.

With ``x_{i,k}`` = 1 when key group ``k`` goes to worker ``i``, ``q_{i,k}`` its current worker,
normalised loads ``u_i = Σ_k x_{i,k}·gLoad_k / (c_i·mean)`` (capacity weights, "Extending to
Heterogeneous Nodes"; ``mean`` = total load / active capacity) and ``B`` the draining workers::

    min  w1·d − w2·(d_u + d_l) + w_drain·Σ_{i∈B} u_i + w_migration·Σ mc_k·moved_k / Σ mc_k
    (1)  Σ_i x_{i,k} = 1                                  every key group on one worker
    (2)  Σ_{i,k} (1 − q_{i,k})·x_{i,k}·mc_k ≤ maxMigrCost  and the same for moves and moved load
    (3)  u_i ≤ 1 + (d − d_u)                              every worker
    (4)  u_i ≥ 1 − (d − d_l)                              active workers only (scale-in)
         Σ_i x_{i,k}·r_k ≤ bound_r·c_i·Σr/Σc               optional resources ("Multi-Dimensional")
         d ≤ bound                                        optional hard bound on the load distance

``d`` is the load distance (``metrics.load_distance``); ``w1 ≫ w2`` minimises it first, then
tightens both sides. The objective term on ``B`` is the paper's stated second objective
("minimize … and Σ_{n_i∈B} load_i"), which its MILP leaves implicit (Lemmas 1–2); with a budget,
minimising ``d`` alone may leave a draining worker untouched, so the term (``w_drain``) and one
constraint — at least one loaded group leaves a draining worker per plan when the budget allows —
make draining workers empty run over run. The last term (tiny by default) only breaks ties: a
loose budget does not invite moves that gain nothing. Constraint (5) ``mean − d ≥ 0`` is left
out: loads are non-negative anyway, and with it a key group heavier than twice the mean makes
the model infeasible. New groups cannot go to draining workers (Lemma 1: the MILP sends none).

Solving: HiGHS through PuLP (CBC with ``solver="cbc"``), always with ``Budget.time_limit_s`` and a
greedy warm start (LPT for new groups, then Flux, ``routeplan.planning.reassign.flux``); the plan
is the better of the two, so it is never worse than Flux. The solver's own status and gap are
reported (``routeplan.planning.solver``). The LP relaxation of this model has ``d = 0`` whatever
the loads, so solvers rarely prove optimality and HiGHS spends seconds on root cuts of a 30
000-binary model without improving its start. Above ``max_variables`` binaries the same MILP is
therefore solved over neighbourhoods — the most over- and under-loaded workers (and draining ones),
every other worker's load fixed, each sub-model warm-started from the incumbent — until the time
limit or ``STALL_ROUNDS`` neighbourhoods without improvement (``strategy_state.model``: ``full`` or
``neighbourhood``; ``gap`` only for ``full``). On §5.1's instances small neighbourhoods beat the
whole model within 1–3 s (``bench/paper004_milp.py``). Conventions shared with ``flux``
and ``albic`` (whole key groups, budget, forced moves): :mod:`routeplan.planning.reassign`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import BUDGET_LIMITS, Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.metrics import load_distance
from routeplan.planning.reassign.flux import flux
from routeplan.planning.reassign.reassignment import Reassignment, Units
from routeplan.planning.registry import register
from routeplan.planning.solver import SOLVERS, SolveResult, solve

SCALE_IN = ("integrated", "first")
_EPS = 1e-9
SUB_LIMIT_S = 0.5  # least time a neighbourhood MILP gets
STALL_ROUNDS = 8  # neighbourhoods in a row without improvement before the search stops


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


@dataclass
class Outcome:
    """An assignment (unit → worker) and how it was found."""

    assign: np.ndarray
    status: str
    solver: str
    model: str
    gap: float | None = None
    seconds: float = 0.0
    warm_start_load_distance: float = 0.0
    subproblems: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def extra(self) -> dict[str, float]:
        """The numeric part, for the plan's metrics."""
        numbers = {
            "solve_seconds": self.seconds,
            "warm_start_load_distance": self.warm_start_load_distance,
            "subproblems": float(self.subproblems),
        }
        if self.gap is not None:
            numbers["gap"] = self.gap
        return numbers

    def state(self) -> dict[str, Any]:
        """The rest, for the table's ``strategy_state``."""
        return {
            "solve_status": self.status,
            "solver": self.solver,
            "model": self.model,
            "gap": self.gap,
            "subproblem_status": dict(self.statuses),
        }


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


class _Model:
    """One MILP over the ``free`` units and the ``selected`` workers; everything else is fixed at
    the incumbent and enters as constants (the whole §4.3.1 model when all are free)."""

    def __init__(
        self,
        problem: Reassignment,
        units: Units,
        incumbent: np.ndarray,
        free: np.ndarray,
        selected: np.ndarray,
        allowed: list[np.ndarray],
        weights: Weights,
        bound: float | None,
        require_drain: bool,
    ) -> None:
        import pulp

        self.free = free
        n = len(problem.workers)
        in_model = np.zeros(n, dtype=bool)
        in_model[selected] = True
        scale = problem.capacity * problem.fair
        fixed = np.ones(len(units), dtype=bool)
        fixed[free] = False
        fixed_load = problem.base + np.bincount(
            incumbent[fixed], weights=units.load[fixed], minlength=n
        )
        u_fixed = fixed_load / scale
        active = problem.active
        prob = pulp.LpProblem("key_group_allocation", pulp.LpMinimize)
        self.x: dict[tuple[int, int], Any] = {}
        for u in free:
            for i in allowed[u]:
                if in_model[i]:
                    self.x[i, u] = prob.add_variable(f"x_{i}_{u}", 0, 1, cat=pulp.LpBinary)
        rest = ~in_model
        over_fixed = (u_fixed[rest] - 1.0).max(initial=-np.inf)
        under_fixed = (1.0 - u_fixed[rest & active]).max(initial=-np.inf)
        d = prob.add_variable("d", max(over_fixed, under_fixed, 0.0), bound)
        du = prob.add_variable("d_u", 0)
        dl = prob.add_variable("d_l", 0)
        self.d = d
        by_worker: dict[int, list[tuple[Any, int]]] = {int(i): [] for i in selected}
        for (i, u), var in self.x.items():
            by_worker[i].append((var, u))
        drain_terms = []
        for i, terms in by_worker.items():
            expr = pulp.LpAffineExpression(
                [(var, units.load[u] / scale[i]) for var, u in terms], constant=u_fixed[i]
            )
            prob += expr <= 1.0 + d - du, f"upper_{i}"  # (3)
            if active[i]:
                prob += expr >= 1.0 - d + dl, f"lower_{i}"  # (4)
            else:
                drain_terms.append(expr)
        if np.isfinite(over_fixed):
            prob += du - d <= -over_fixed, "upper_fixed"
        if np.isfinite(under_fixed):
            prob += dl - d <= -under_fixed, "lower_fixed"
        moving = [(var, u) for (i, u), var in self.x.items() if units.owner[u] not in (-1, i)]
        per_cost = weights.per_cost(problem)
        prob += (
            weights.w1 * d
            - weights.w2 * (du + dl)
            + weights.w_drain * pulp.lpSum(drain_terms)
            + pulp.LpAffineExpression([(var, per_cost * units.spend[u, 2]) for var, u in moving])
        )
        for u in free:  # (1)
            prob += pulp.lpSum(self.x[i, u] for i in allowed[u] if in_model[i]) == 1, f"one_{u}"
        leaving_fixed = units.leaving(incumbent) & fixed
        spent_fixed = units.pin_spend.sum(axis=0) + units.spend[leaving_fixed].sum(axis=0)
        for j, limit in enumerate(problem.budget_left):  # (2), per budget dimension
            if np.isfinite(limit) and moving:
                rhs = limit - spent_fixed[j] - _EPS * max(1.0, abs(limit))
                prob += (
                    pulp.LpAffineExpression([(var, units.spend[u, j]) for var, u in moving]) <= rhs,
                    f"budget_{j}",
                )
        for r, (use, cap) in enumerate(
            zip(problem.resource_use.values(), problem.resource_cap.values(), strict=True)
        ):
            unit_use = units.resource(use)
            used_fixed = np.bincount(incumbent[fixed], weights=unit_use[fixed], minlength=n)
            for i, terms in by_worker.items():
                if terms:
                    prob += (
                        pulp.LpAffineExpression([(var, unit_use[u]) for var, u in terms])
                        <= cap[i] - used_fixed[i],
                        f"resource_{r}_{i}",
                    )
        if require_drain:  # at least one loaded unit leaves a draining worker
            candidates = _drain_candidates(problem, units, ~fixed)
            done = _drain_candidates(problem, units, fixed)
            satisfied = np.any(incumbent[done] != units.owner[done]) or not np.all(
                in_model[units.owner[candidates]]
            )
            if candidates.size and not satisfied:
                stays = [self.x[units.owner[u], u] for u in candidates]
                prob += pulp.lpSum(stays) <= len(stays) - 1, "drain_progress"
        self.prob = prob
        # warm start: the incumbent
        for (i, u), var in self.x.items():
            var.setInitialValue(int(incumbent[u] == i))
        uu = problem.normalised(units, incumbent)
        over, under = uu.max() - 1.0, 1.0 - uu[active].min()
        d0 = max(over, under, d.lowBound)
        d0 = d0 if bound is None else min(d0, bound)  # an infeasible start HiGHS will refuse
        d.setInitialValue(d0)
        du.setInitialValue(max(d0 - over, 0.0))
        dl.setInitialValue(max(d0 - under, 0.0))

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


def optimise(
    problem: Reassignment,
    units: Units,
    *,
    weights: Weights,
    time_limit_s: float,
    solver: str = "highs",
    bound: float | None = None,
    scale_in: str = "integrated",
    max_variables: int | None = 800,
    seed: int = 0,
) -> Outcome:
    """Warm start, then the MILP (whole, or by neighbourhoods above ``max_variables``)."""
    started = time.perf_counter()
    deadline = started + time_limit_s
    movable = units.pin < 0
    start = units.initial(problem)
    if scale_in == "first":
        warm = flux(problem, units, start, movable, drain_first=True)
        # §5.1 "non-integrated": the scale-in moves are decided, the MILP only balances
        from_draining = (units.owner >= 0) & ~problem.active[np.clip(units.owner, 0, None)]
        movable = movable & ~from_draining
        require_drain = False
    else:
        start, require_drain = drain_progress(problem, units, start, movable)
        progress = (start != units.owner) & (units.owner >= 0)
        warm = flux(problem, units, start, movable & ~progress, drain_first=False)
    best = warm
    best_value = objective(problem, units, warm, weights)
    outcome = Outcome(
        warm, "warm_start", solver, "none", warm_start_load_distance=distance(problem, units, warm)
    )
    free = np.flatnonzero(movable)
    allowed = units.allowed(problem)
    if free.size == 0:
        outcome.status = "trivial"
        return _checked(outcome, problem, units, bound, started)
    size = sum(len(allowed[u]) for u in free)
    statuses: Counter[str] = Counter()
    full = max_variables is None or size <= max_variables
    rng = np.random.default_rng(seed)
    stall = 0
    last: SolveResult | None = None
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0.05 or (not full and stall >= STALL_ROUNDS):
            break
        if full:
            selected, sub_free = np.arange(len(problem.workers)), free
        else:
            selected = _neighbourhood(
                problem, units, best, free, allowed, max_variables, stall, rng
            )
            sub_free = free[np.isin(best[free], selected)]
        model = _Model(
            problem, units, best, sub_free, selected, allowed, weights, bound, require_drain
        )
        limit = remaining if full else min(remaining, max(SUB_LIMIT_S, time_limit_s / 8))
        last = solve(model.prob, solver, limit)
        statuses[last.status] += 1
        outcome.solver = last.solver
        improved = False
        if last.feasible:
            candidate = model.solution(best)
            value = objective(problem, units, candidate, weights)
            if (
                problem.within_budget(units, candidate)
                and problem.within_resources(units, candidate)
                and value <= best_value - 1e-12
            ):
                best, best_value, improved = candidate, value, True
        if full:
            break
        stall = 0 if improved else stall + 1
    outcome.assign = best
    outcome.statuses = dict(statuses)
    outcome.subproblems = sum(statuses.values())
    if full and last is not None:
        outcome.model = "full"
        outcome.status = last.status
        outcome.gap = last.gap
    elif last is not None:
        outcome.model = "neighbourhood"
        ran_out = deadline - time.perf_counter() <= 0.05 or statuses.get("time_limit", 0) > 0
        outcome.status = "time_limit" if ran_out else "local_optimum"
    return _checked(outcome, problem, units, bound, started)


def _checked(
    outcome: Outcome, problem: Reassignment, units: Units, bound: float | None, started: float
) -> Outcome:
    outcome.seconds = time.perf_counter() - started
    if bound is not None and distance(problem, units, outcome.assign) > bound + 1e-9:
        raise ValueError(
            f"no plan within load distance {bound} and the budget "
            f"(solver status {outcome.status} after {outcome.seconds:.1f} s)"
        )
    return outcome


def _neighbourhood(
    problem: Reassignment,
    units: Units,
    assign: np.ndarray,
    free: np.ndarray,
    allowed: list[np.ndarray],
    max_variables: int,
    stall: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Workers for one sub-MILP: draining workers that still hold load, then the most over- and
    under-loaded active workers in turn (after a round without improvement, partly random ones),
    as many as keep the model within ``max_variables``."""
    u = problem.normalised(units, assign)
    n = len(problem.workers)
    holding = np.bincount(assign[free], minlength=n)
    draining = [int(i) for i in np.flatnonzero(~problem.active) if holding[i] > 0]
    active = np.flatnonzero(problem.active)
    by_load = active[np.argsort(-u[active], kind="stable")]
    order = [int(i) for pair in zip(by_load, by_load[::-1], strict=True) for i in pair]
    if stall:
        keep = order[: max(2, 4 - stall)]
        order = keep + [int(i) for i in rng.permutation(active) if i not in keep]
    selected: list[int] = []
    for i in dict.fromkeys(draining + order):
        trial = selected + [i]
        units_in = holding[trial].sum()
        if len(selected) >= 2 and units_in * len(trial) > max_variables:
            break
        selected = trial
    return np.array(sorted(selected), dtype=np.int64)


@register("milp")
class Milp:
    """Paper 004's MILP (§4.3.1): load distance first, within a migration budget, with scale-in."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset(BUDGET_LIMITS)

    name = "milp"

    def __init__(
        self,
        w1: float = 1000.0,
        w2: float = 1.0,
        w_drain: float = 10.0,
        w_migration: float = 1.0,
        bound: float | None = None,
        max_migrations: int | None = None,
        migration_cost: str = "moves",
        max_migration_cost: float | None = None,
        resource_bounds: Mapping[str, float] | None = None,
        scale_in: str = "integrated",
        solver: str = "highs",
        max_variables: int | None = 800,
        seed: int = 0,
    ) -> None:
        if scale_in not in SCALE_IN:
            raise ValueError(f"scale_in must be one of {SCALE_IN}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}")
        if bound is not None and bound < 0:
            raise ValueError("bound must be >= 0")
        if max_migrations is not None and max_migrations < 0:
            raise ValueError("max_migrations must be >= 0")
        if max_variables is not None and max_variables < 1:
            raise ValueError("max_variables must be >= 1")
        self.weights = Weights(float(w1), float(w2), float(w_drain), float(w_migration))
        self.bound = bound
        self.max_migrations = max_migrations
        self.migration_cost = migration_cost
        self.max_migration_cost = max_migration_cost
        self.resource_bounds = dict(resource_bounds or {})
        self.scale_in = scale_in
        self.solver = solver
        self.max_variables = max_variables
        self.seed = int(seed)

    def params(self) -> dict[str, Any]:
        return {
            "w1": self.weights.w1,
            "w2": self.weights.w2,
            "w_drain": self.weights.w_drain,
            "w_migration": self.weights.w_migration,
            "bound": self.bound,
            "max_migrations": self.max_migrations,
            "migration_cost": self.migration_cost,
            "max_migration_cost": self.max_migration_cost,
            "resource_bounds": self.resource_bounds,
            "scale_in": self.scale_in,
            "solver": self.solver,
            "max_variables": self.max_variables,
        }

    def instance(
        self, loads: LoadSnapshot, current: RoutingTable | None, workers: Workers, budget: Budget
    ) -> Reassignment:
        return Reassignment.build(
            loads,
            current,
            workers,
            budget,
            max_migrations=self.max_migrations,
            migration_cost=self.migration_cost,
            max_migration_cost=self.max_migration_cost,
            resource_bounds=self.resource_bounds,
        )

    def optimise(self, problem: Reassignment, units: Units, time_limit_s: float) -> Outcome:
        return optimise(
            problem,
            units,
            weights=self.weights,
            time_limit_s=time_limit_s,
            solver=self.solver,
            bound=self.bound,
            scale_in=self.scale_in,
            max_variables=self.max_variables,
            seed=self.seed,
        )

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        problem = self.instance(loads, current, workers, budget)
        units = Units.build(problem)
        outcome = self.optimise(problem, units, budget.time_limit_s)
        return problem.finish(
            self.name,
            units.group_worker(outcome.assign),
            self.params(),
            outcome.state(),
            outcome.extra(),
        )
