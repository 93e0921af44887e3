"""``milp``: key groups → workers as the Mixed-Integer Linear Program of paper 004 §4.3.1.

The model — its objective, constraints (1)–(4), the resources, the drain progress and the cut
``d ≥ d_LB`` — is built in ``routeplan.planning.reassign.milp_model``; this module solves it.

Solving: HiGHS through PuLP (CBC with ``solver="cbc"``), always within ``Budget.time_limit_s`` and
from a warm start: LPT for new groups, Flux's ``rounds`` variant
(``routeplan.planning.reassign.flux``), then the move exchange (``exchange``: a local search that
gives moves of the budget back for better ones, at most :data:`EXCHANGE_SHARE` of the limit);
the plan is never worse than that start (``flux_load_distance`` and
``warm_start_load_distance`` in the predicted metrics say what each reached). Up to
``max_variables`` binaries (default :data:`MAX_VARIABLES`: 800 key groups × 40 workers, the paper's
largest, included) the whole model is solved, and by default it gets the whole time limit
(issue 32): on real loads HiGHS's incumbent keeps improving until then (800 × 40 flight loads:
0.13 at half the limit, 0.065 at its end). ``full_model_share`` < 1 stops it at that share of the
limit when it has found nothing better than the warm start by then (``solver.Stall``), and
neighbourhoods — the most over- and under-loaded workers (and draining ones), every other
worker's load fixed, each sub-model warm-started from the incumbent — get the rest, until the
limit or ``STALL_ROUNDS`` neighbourhoods without improvement: on §5.1's synthetic loads, where
HiGHS does not improve on Flux within 30 s, 0.5 ends at 0.011 instead of 0.019. Above
``max_variables`` neighbourhoods are the only path. With CBC (no callback) the whole model
always runs to the limit. The LP relaxation has ``d = 0`` whatever the loads
(fractions of key groups move freely), so the model gets the cut ``d ≥ d_LB``
(:func:`distance_bound`: the fewest whole moves the most and least loaded workers need). HiGHS's
RINS and RENS sub-MIPs overrun the time limit on large models and are off there
(:func:`_highs_options`).

Several windows (``LoadSnapshot.key_group_windows``, the day's expected shape the nightly
forecast gives): the MILP balances the planning load, then what is left of the budget lowers the
worst window — units move off the worker carrying the day's peak, or swap with a unit of a
less loaded worker, while that lowers the peak excess by ``windows.MIN_GAIN`` a step
(``flux.hold_windows``, ``routeplan.planning.windows``; never above ``max_load_distance``);
``window_moves`` in the predicted metrics counts them.

What the plan says of its quality: ``load_distance_bound``, a proven lower bound on the load
distance of every plan the model admits (the budget, the resource bounds, ``max_load_distance``
and, with draining workers, one loaded group leaving them) — the better of ``d_LB`` (which
needs the budget only) and the one HiGHS's dual bound on the whole model implies
(:func:`_distance_from_bound`) — and ``mip_gap``, the relative gap of the plan's objective to
the best bound (0 when the whole model was solved to optimality), both in the predicted
metrics. ``strategy_state`` says which path produced the plan (``solved_by``:
``full_model``, ``neighbourhood`` or ``warm_start``), the model (``full``,
``full+neighbourhood``, ``neighbourhood``), the solver's own status (``solver_status``,
``routeplan.planning.solver``; ``stalled`` when the whole model was stopped for neighbourhoods)
and ``mip_gap``. Conventions shared with ``flux`` and ``albic`` (whole key groups, budget, forced
moves): :mod:`routeplan.planning.reassign`.
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
from routeplan.planning.reassign.exchange import exchange
from routeplan.planning.reassign.flux import flux, hold_windows
from routeplan.planning.reassign.milp_model import (
    Weights,
    _d_of,
    _Model,
    distance,
    distance_bound,
    drain_progress,
    objective,
)
from routeplan.planning.reassign.reassignment import Reassignment, Units
from routeplan.planning.registry import register
from routeplan.planning.solver import SOLVERS, SolveResult, Stall, relative_gap, solve

SCALE_IN = ("integrated", "first")
_EPS = 1e-9
SUB_LIMIT_S = 0.5  # least time a neighbourhood MILP gets
STALL_ROUNDS = 8  # neighbourhoods in a row without improvement before the search stops
MAX_VARIABLES = 100_000  # the whole model up to this many binaries (800 groups × 40 workers: 32k)
FULL_SHARE = 1.0  # share of the limit by which the whole model must have improved on its start
SMALL_MODEL = 2_000  # binaries up to which the whole model is never stopped for neighbourhoods
NEIGHBOURHOOD_VARIABLES = 800  # size of a neighbourhood MILP after the whole model
EXCHANGE_SHARE = 0.1  # share of the limit the move exchange may take (it stops sooner, mostly)


@dataclass
class Outcome:
    """An assignment (unit → worker) and how it was found: the solver's own status
    (``solver_status``), the relative gap to the best bound (``mip_gap``), the proven lower bound
    on the load distance (``load_distance_bound``) and the time."""

    assign: np.ndarray
    solver_status: str
    solver: str
    model: str
    mip_gap: float | None = None
    solver_seconds: float = 0.0
    flux_load_distance: float = 0.0
    warm_start_load_distance: float = 0.0
    subproblems: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    solved_by: str = "warm_start"
    distance_bound: float = 0.0
    load_distance_bound: float = 0.0

    def extra(self) -> dict[str, float]:
        """The numeric part, for the plan's predicted metrics."""
        numbers = {
            "solver_seconds": self.solver_seconds,
            "flux_load_distance": self.flux_load_distance,
            "warm_start_load_distance": self.warm_start_load_distance,
            "subproblems": float(self.subproblems),
            "distance_bound": self.distance_bound,
            "load_distance_bound": self.load_distance_bound,
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
            "solved_by": self.solved_by,
            "mip_gap": self.mip_gap,
            "subproblem_status": dict(self.statuses),
        }


def optimise(
    problem: Reassignment,
    units: Units,
    *,
    weights: Weights,
    time_limit_s: float,
    solver: str = "highs",
    max_load_distance: float | None = None,
    scale_in: str = "integrated",
    max_variables: int | None = MAX_VARIABLES,
    seed: int = 0,
    full_model_share: float = FULL_SHARE,
) -> Outcome:
    """Warm start, then the MILP: the whole model for the whole limit (stopped at
    ``full_model_share`` of it only if it has found nothing better than the warm start, the rest
    then going to neighbourhoods), or neighbourhoods alone above ``max_variables``."""
    started = time.perf_counter()
    deadline = started + time_limit_s
    movable = units.pin < 0
    start = units.initial(problem)
    drained_at_most = float(problem.normalised(units, start)[~problem.active].sum())
    if scale_in == "first":
        warm = flux(problem, units, start, movable, drain_first=True)
        # §5.1 "non-integrated": the scale-in moves are decided, the MILP only balances
        from_draining = (units.owner >= 0) & ~problem.active[np.clip(units.owner, 0, None)]
        movable = movable & ~from_draining
        require_drain = False
        balancing = movable
    else:
        start, require_drain = drain_progress(problem, units, start, movable)
        progress = (start != units.owner) & (units.owner >= 0)
        balancing = movable & ~progress
        warm = flux(problem, units, start, balancing, drain_first=False)
    flux_distance = distance(problem, units, warm)
    warm = exchange(
        problem,
        units,
        warm,
        balancing,
        weights,
        deadline=started + EXCHANGE_SHARE * time_limit_s,
        seed=seed,
    )
    best = warm
    best_value = objective(problem, units, warm, weights)
    outcome = Outcome(
        warm,
        "warm_start",
        solver,
        "none",
        flux_load_distance=flux_distance,
        warm_start_load_distance=distance(problem, units, warm),
    )
    free = np.flatnonzero(movable)
    allowed = units.allowed(problem)
    if free.size == 0:
        outcome.solver_status = "trivial"
        outcome.load_distance_bound = distance(problem, units, warm)
        outcome.mip_gap = 0.0
        return _checked(outcome, problem, units, max_load_distance, started)
    size = sum(len(allowed[u]) for u in free)
    statuses: Counter[str] = Counter()
    full = max_variables is None or size <= max_variables
    every = np.arange(len(problem.workers))

    def attempt(
        selected: np.ndarray, sub_free: np.ndarray, limit: float, cut: float, patience: bool
    ) -> bool:
        nonlocal best, best_value
        model = _Model(
            problem, units, best, sub_free, selected, allowed, weights, max_load_distance,
            require_drain, cut,
        )  # fmt: skip
        limit = max(0.05, min(limit, deadline - time.perf_counter()))  # less the build time
        stall = Stall(best_value, started + full_model_share * time_limit_s) if patience else None
        result = solve(
            model.prob,
            solver,
            limit,
            options=_highs_options(len(model.x)),
            deadline=deadline,
            stall=stall,
        )
        statuses[result.status] += 1
        outcome.solver = result.solver
        attempts.append(result)
        if not result.feasible:
            return False
        candidate = model.solution(best)
        value = objective(problem, units, candidate, weights)
        if (
            problem.within_budget(units, candidate)
            and problem.within_resources(units, candidate)
            and value <= best_value - 1e-12
        ):
            best, best_value = candidate, value
            return True
        return False

    attempts: list[SolveResult] = []
    # the cut d ≥ d_LB (never above the warm start's own d, which must stay feasible)
    cut = min(distance_bound(problem, units, best, free), _d_of(problem, units, best))
    outcome.distance_bound = outcome.load_distance_bound = cut
    bound = (weights.w1 - 2 * weights.w2) * cut  # on the objective: d_u, d_l ≤ d, the rest ≥ 0
    if max_load_distance is not None and cut > max_load_distance + _EPS:
        outcome.solver_status = "infeasible"  # proven by the bound alone: no plan reaches maxLD
        return _finish(outcome, best, statuses, problem, units, max_load_distance, started)
    if full:
        remaining = deadline - time.perf_counter()
        patient = (
            full_model_share < 1 and max_variables is not None and size > SMALL_MODEL
        )  # a small model is solved or nearly so: never stopped for neighbourhoods
        if remaining > 0.05 and attempt(every, free, remaining, cut, patient):
            outcome.solved_by = "full_model"
        last = attempts[-1] if attempts else None
        if last is not None:
            outcome.model = "full"
            outcome.solver_status = last.status
            if last.bound is not None and last.status in FULL_BOUNDS:
                bound = max(bound, last.bound)
            migration = weights.per_cost(problem) * min(
                float(units.spend[:, 2].sum()), float(problem.budget_left[2])
            )
            outcome.load_distance_bound = max(
                cut,
                _distance_from_bound(bound, weights, drained_at_most, migration),
            )
        if last is None or last.status != "stalled":
            outcome.mip_gap = _gap(best_value, bound, last)
            return _finish(outcome, best, statuses, problem, units, max_load_distance, started)
    rng = np.random.default_rng(seed)
    stall = 0
    rounds = 0
    neighbourhood_size = NEIGHBOURHOOD_VARIABLES if full else max_variables
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0.05 or stall >= STALL_ROUNDS:
            break
        selected = _neighbourhood(
            problem, units, best, free, allowed, neighbourhood_size, stall, rng
        )
        sub_free = free[np.isin(best[free], selected)]
        limit = min(remaining, max(SUB_LIMIT_S, time_limit_s / 8))
        improved = attempt(selected, sub_free, limit, cut, False)
        rounds += 1
        if improved:
            outcome.solved_by = "neighbourhood"
        stall = 0 if improved else stall + 1
    if rounds:
        ran_out = deadline - time.perf_counter() <= 0.05 or statuses.get("time_limit", 0) > 0
        if not full:
            outcome.model = "neighbourhood"
            outcome.solver_status = "time_limit" if ran_out else "local_optimum"
        else:
            outcome.model = "full+neighbourhood"
    outcome.mip_gap = _gap(best_value, bound, None)
    return _finish(outcome, best, statuses, problem, units, max_load_distance, started)


# statuses after which the solver's dual bound holds for the whole model
FULL_BOUNDS = ("optimal", "time_limit", "interrupt", "stalled", "iteration_limit", "solution_limit")


def _gap(value: float, bound: float, whole: SolveResult | None) -> float | None:
    """The relative MIP gap of the plan's objective ``value`` to ``bound``, the better of the
    solver's dual bound on the whole model and ``(w1 − 2·w2)·d_LB`` (:func:`distance_bound`;
    ``d_u, d_l ≤ d`` and the other terms are ≥ 0) — the latter also when the solver stopped
    before its root LP gave one, or only neighbourhoods ran; 0 when the whole model (``whole``)
    was solved to optimality."""
    proven = whole is not None and whole.status == "optimal" and whole.objective is not None
    if proven and value <= whole.objective + 1e-9 * max(abs(whole.objective), 1.0):
        return 0.0  # within the solver's own optimality tolerance
    return relative_gap(value, bound)


def _distance_from_bound(
    bound: float, weights: Weights, drained_at_most: float, migration_at_most: float
) -> float:
    """The load distance a lower ``bound`` on the objective proves: every plan has
    ``w1·d ≥ objective − w_drain·Σ_B u_i − w_migration·C`` (``d_u, d_l ≥ 0``), and the draining
    workers' ``Σ_B u_i`` never exceeds what they hold now (nothing new goes there), nor the
    migration term what the budget lets move; so ``d ≥ (bound − w_drain·drained_at_most −
    migration_at_most) / w1``."""
    return max(0.0, (bound - weights.w_drain * drained_at_most - migration_at_most) / weights.w1)


def _highs_options(binaries: int) -> dict[str, Any]:
    """HiGHS's RINS and RENS sub-MIPs ignore the time limit on large models (a 3 s limit on
    800 groups × 40 workers overran by 20 s): off above :data:`SMALL_MODEL` binaries."""
    if binaries <= SMALL_MODEL:
        return {}
    return {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False}


def _finish(
    outcome: Outcome,
    best: np.ndarray,
    statuses: Counter[str],
    problem: Reassignment,
    units: Units,
    max_load_distance: float | None,
    started: float,
) -> Outcome:
    outcome.assign = best
    outcome.statuses = dict(statuses)
    outcome.subproblems = sum(statuses.values())
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
    ``max_variables`` (the whole model up to that many binaries, neighbourhoods above),
    ``full_model_share`` (the whole model runs to the time limit unless it has found nothing
    better than its warm start within this share of it; then neighbourhoods get the rest;
    default 1: never stopped) and ``seed`` (of the neighbourhoods' random picks). Every limit is the
    ``Budget``'s."""

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
    max_variables: int | None = MAX_VARIABLES
    seed: int = 0
    full_model_share: float = FULL_SHARE

    def __post_init__(self) -> None:
        if self.scale_in not in SCALE_IN:
            raise ValueError(f"scale_in must be one of {SCALE_IN}")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}")
        if self.max_load_distance is not None and not self.max_load_distance >= 0:
            raise ValueError("max_load_distance must be >= 0")
        if self.max_variables is not None and self.max_variables < 1:
            raise ValueError("max_variables must be >= 1")
        if not 0 < self.full_model_share <= 1:
            raise ValueError("full_model_share must be in (0, 1]")
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
            full_model_share=self.full_model_share,
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
        assign, extra = outcome.assign, outcome.extra()
        if loads.key_group_windows is not None:  # the day's windows: lower the worst one
            held = hold_windows(problem, units, assign, units.pin < 0)
            cap = self.max_load_distance
            if cap is None or distance(problem, units, held) <= cap + _EPS:
                extra["window_moves"] = float(np.count_nonzero(held != assign))
                assign = held
        return problem.finish(
            self.name, units.group_worker(assign), self.recorded(), outcome.state(), extra
        )
