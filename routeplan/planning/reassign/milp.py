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

Solving: HiGHS through PuLP (CBC with ``solver="cbc"``), always with ``Budget.time_limit_s`` and a
greedy warm start (LPT for new groups, then Flux, ``routeplan.planning.reassign.flux``); the plan
is the better of the two, so it is never worse than Flux. The solver's own status and gap are
reported (``routeplan.planning.solver``): ``strategy_state.solver_status``, and the predicted
``mip_gap`` and ``solver_seconds``. The LP relaxation of this model has ``d = 0`` whatever
the loads, so solvers rarely prove optimality and HiGHS spends seconds on root cuts of a 30
000-binary model without improving its start. Above ``max_variables`` binaries the same MILP is
therefore solved over neighbourhoods — the most over- and under-loaded workers (and draining ones),
every other worker's load fixed, each sub-model warm-started from the incumbent — until the time
limit or ``STALL_ROUNDS`` neighbourhoods without improvement (``strategy_state.model``: ``full`` or
``neighbourhood``; ``mip_gap`` only for ``full``). On §5.1's instances small neighbourhoods beat the
whole model within 1–3 s (``bench/paper004_milp.py``). Conventions shared with ``flux``
and ``albic`` (whole key groups, budget, forced moves): :mod:`routeplan.planning.reassign`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import BUDGET_LIMITS, Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import parameters
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
    """An assignment (unit → worker) and how it was found: the solver's own status
    (``solver_status``), its relative gap (``mip_gap``, the whole model only) and the time."""

    assign: np.ndarray
    solver_status: str
    solver: str
    model: str
    mip_gap: float | None = None
    solver_seconds: float = 0.0
    warm_start_load_distance: float = 0.0
    subproblems: int = 0
    statuses: dict[str, int] = field(default_factory=dict)

    def extra(self) -> dict[str, float]:
        """The numeric part, for the plan's predicted metrics."""
        numbers = {
            "solver_seconds": self.solver_seconds,
            "warm_start_load_distance": self.warm_start_load_distance,
            "subproblems": float(self.subproblems),
        }
        if self.mip_gap is not None:
            numbers["mip_gap"] = self.mip_gap
        return numbers

    def state(self) -> dict[str, Any]:
        """The rest, for the table's ``strategy_state``."""
        return {
            "solver_status": self.solver_status,
            "solver": self.solver,
            "model": self.model,
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
    ) -> None:
        import pulp

        self.problem, self.units, self.incumbent = problem, units, incumbent
        self.free, self.selected, self.allowed = free, selected, allowed
        self.weights, self.max_load_distance = weights, max_load_distance
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
        lowest = max(self.over_fixed, self.under_fixed, 0.0)
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


def optimise(
    problem: Reassignment,
    units: Units,
    *,
    weights: Weights,
    time_limit_s: float,
    solver: str = "highs",
    max_load_distance: float | None = None,
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
        outcome.solver_status = "trivial"
        return _checked(outcome, problem, units, max_load_distance, started)
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
            problem,
            units,
            best,
            sub_free,
            selected,
            allowed,
            weights,
            max_load_distance,
            require_drain,
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
        outcome.solver_status = last.status
        outcome.mip_gap = last.gap
    elif last is not None:
        outcome.model = "neighbourhood"
        ran_out = deadline - time.perf_counter() <= 0.05 or statuses.get("time_limit", 0) > 0
        outcome.solver_status = "time_limit" if ran_out else "local_optimum"
    return _checked(outcome, problem, units, max_load_distance, started)


def _checked(
    outcome: Outcome,
    problem: Reassignment,
    units: Units,
    max_load_distance: float | None,
    started: float,
) -> Outcome:
    outcome.solver_seconds = time.perf_counter() - started
    if (
        max_load_distance is not None
        and distance(problem, units, outcome.assign) > max_load_distance + 1e-9
    ):
        raise ValueError(
            f"no plan within load distance {max_load_distance} and the budget "
            f"(solver status {outcome.solver_status} after {outcome.solver_seconds:.1f} s)"
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
@dataclass(frozen=True)
class Milp:
    """Paper 004's MILP (§4.3.1): load distance first, within a migration budget, with scale-in.

    Parameters: the objective's weights (:class:`Weights`), ``max_load_distance`` (maxLD: a hard
    cap on ``d``, optional; it was called ``bound``), ``resource_bounds`` (resource name →
    ``bound_r``), ``scale_in`` (``integrated`` or ``first``: §5.1's two approaches), ``solver``,
    ``max_variables`` (the whole model up to that many binaries, neighbourhoods above) and
    ``seed`` (of the neighbourhoods' random picks). Every limit is the ``Budget``'s."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset(BUDGET_LIMITS)
    renamed: ClassVar[Mapping[str, str]] = {"bound": "max_load_distance"}

    w1: float = 1000.0
    w2: float = 1.0
    w_drain: float = 10.0
    w_migration: float = 1.0
    max_load_distance: float | None = None
    resource_bounds: Mapping[str, float] | None = None
    scale_in: str = "integrated"
    solver: str = "highs"
    max_variables: int | None = 800
    seed: int = 0

    def __post_init__(self) -> None:
        if self.scale_in not in SCALE_IN:
            raise ValueError(f"scale_in must be one of {SCALE_IN}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}")
        if self.max_load_distance is not None and not self.max_load_distance >= 0:
            raise ValueError("max_load_distance must be >= 0")
        if self.max_variables is not None and self.max_variables < 1:
            raise ValueError("max_variables must be >= 1")
        Weights(*map(float, (self.w1, self.w2, self.w_drain, self.w_migration)))  # checks
        bounds = {str(k): float(v) for k, v in (self.resource_bounds or {}).items()}
        object.__setattr__(self, "resource_bounds", MappingProxyType(bounds))

    @property
    def weights(self) -> Weights:
        return Weights(float(self.w1), float(self.w2), float(self.w_drain), float(self.w_migration))

    def recorded(self) -> dict[str, Any]:
        """What a table records in ``params``: the parameters, as plain data."""
        return {**parameters(self), "resource_bounds": dict(self.resource_bounds or {})}

    def instance(
        self, loads: LoadSnapshot, current: RoutingTable | None, workers: Workers, budget: Budget
    ) -> Reassignment:
        return Reassignment.build(
            loads, current, workers, budget, resource_bounds=self.resource_bounds
        )

    def optimise(self, problem: Reassignment, units: Units, time_limit_s: float) -> Outcome:
        return optimise(
            problem,
            units,
            weights=self.weights,
            time_limit_s=time_limit_s,
            solver=self.solver,
            max_load_distance=self.max_load_distance,
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
            self.recorded(),
            outcome.state(),
            outcome.extra(),
        )
