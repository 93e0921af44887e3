"""Move exchange: a local search over the moves a migration budget allows (ours, issue 32).

``milp`` starts from Flux (``flux``, paper 004 §2.2), which spends the budget greedily: the
most and least loaded workers pair off until ``max_moves`` is used up. When the budget is tight
(13 moves on 800 key groups × 40 workers) every later improvement must give one of those moves
back, and a MILP solver searching 32,000 binaries rarely finds such an exchange within seconds.
This search does, on the worker loads alone:

* a **step** tries, from the assignment and from each variant of it with one moved unit sent
  back to its worker (a move given back), every relocation of one movable unit on the
  :data:`SOURCES` workers farthest from their share to another active worker. Each relocation
  is scored in one vectorised pass by the model's objective terms for the load distance
  (``w1·d − w2·(d_u + d_l)``, :func:`relocation_scores`); the best candidates are checked
  exactly, in order (the MILP's whole objective ``milp_model.objective``, the budget, the
  resource bounds), and the first that improves the objective is made;
* steps repeat until none improves (a local optimum), then **iterated local search**: a few
  moved units (2–5, seeded) go back to their workers and the steps run again; the better
  result is kept. It stops after ``rounds`` perturbations or at ``deadline``.

The result is never worse than the start (only improving, feasible steps are kept), so it is
a warm start the MILP can take. Measured (``bench/paper004_milp.py --target``): Flux's 0.096
→ 0.083 on Zipf loads and 0.019 → 0.011 on §5.1's synthetic loads (the proven bound there) in
under a second.
"""

from __future__ import annotations

import time

import numpy as np

from routeplan.planning.reassign.milp_model import Weights, objective
from routeplan.planning.reassign.reassignment import Reassignment, Units

CHECKED = 8  # best-scored relocations per variant checked exactly
SOURCES = 8  # workers whose units are relocated: those farthest from their share
MAX_VARIANTS = 32  # moved units given back per step, at most (those on the most extreme workers)
_TOLERANCE = 1e-12


def relocation_scores(
    u: np.ndarray,
    scale: np.ndarray,
    active: np.ndarray,
    source: np.ndarray,
    load: np.ndarray,
    weights: Weights,
) -> np.ndarray:
    """``(C, W)``: the objective's load-distance terms after moving candidate ``c`` (load
    ``load[c]`` on worker ``source[c]``) to worker ``j``, every other worker unchanged.

    With normalised loads ``u`` (``u_w = L_w / scale_w``), the move changes two of them:
    ``u_s − load/scale_s`` and ``u_j + load/scale_j``. The largest of the others is the first of
    the three largest ``u`` that is neither ``s`` nor ``j`` (likewise the smallest, over active
    workers), so ``over = max u − 1``, ``under = 1 − min_active u``, ``d = max(over, under)`` and
    the score ``w1·d − w2·(2d − over − under)`` cost ``O(C·W)`` in all. Moves to the unit's own
    worker or to a worker that is not active score ``inf``."""
    workers = u.size
    targets = np.arange(workers)
    after_source = u[source] - load / scale[source]  # (C,)
    after_target = u[None, :] + load[:, None] / scale[None, :]  # (C, W)
    highest = np.full(after_target.shape, -np.inf)
    for k in np.argsort(-u, kind="stable")[:3]:
        free = (source[:, None] != k) & (targets[None, :] != k) & np.isinf(highest)
        highest[free] = u[k]
    lowest = np.full(after_target.shape, np.inf)
    for k in np.flatnonzero(active)[np.argsort(u[active], kind="stable")][:3]:
        free = (source[:, None] != k) & (targets[None, :] != k) & np.isinf(lowest)
        lowest[free] = u[k]
    over = np.maximum(np.maximum(highest, after_source[:, None]), after_target) - 1.0
    source_low = np.where(active[source], after_source, np.inf)
    under = 1.0 - np.minimum(np.minimum(lowest, source_low[:, None]), after_target)
    d = np.maximum(over, under)
    score = weights.w1 * d - weights.w2 * (2 * d - over - under)
    score[(source[:, None] == targets[None, :]) | ~active[None, :]] = np.inf
    return score


def exchange(
    problem: Reassignment,
    units: Units,
    assign: np.ndarray,
    movable: np.ndarray,
    weights: Weights,
    *,
    deadline: float,
    rounds: int = 100,
    seed: int = 0,
) -> np.ndarray:
    """The best assignment the search finds from ``assign`` (never worse by the MILP's
    objective, within the budget and the resource bounds); only ``movable`` unpinned units
    move, to active workers, and only units whose worker is active are given back."""
    movable = movable & (units.pin < 0)
    given_back = movable & (units.owner >= 0) & problem.active[np.clip(units.owner, 0, None)]
    best = _descend(problem, units, assign.copy(), movable, given_back, weights, deadline)
    best_value = objective(problem, units, best, weights)
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        moved = np.flatnonzero(given_back & (best != units.owner))
        if moved.size == 0 or time.perf_counter() >= deadline:
            break
        trial = best.copy()
        back = rng.choice(moved, size=min(int(rng.integers(2, 6)), moved.size), replace=False)
        trial[back] = units.owner[back]
        trial = _descend(problem, units, trial, movable, given_back, weights, deadline)
        value = objective(problem, units, trial, weights)
        if value < best_value - _TOLERANCE and _feasible(problem, units, trial):
            best, best_value = trial, value
    return best


def _feasible(problem: Reassignment, units: Units, assign: np.ndarray) -> bool:
    return problem.within_budget(units, assign) and problem.within_resources(units, assign)


def _descend(
    problem: Reassignment,
    units: Units,
    assign: np.ndarray,
    movable: np.ndarray,
    given_back: np.ndarray,
    weights: Weights,
    deadline: float,
) -> np.ndarray:
    """Improving steps (see the module) from ``assign`` until none is left or ``deadline``."""
    scale = problem.capacity * problem.fair
    value = objective(problem, units, assign, weights)
    while time.perf_counter() < deadline:
        u = problem.normalised(units, assign)
        moved = np.flatnonzero(given_back & (assign != units.owner))
        extreme = np.abs(u[assign[moved]] - 1.0) + np.abs(u[units.owner[moved]] - 1.0)
        variants = [-1] + moved[np.argsort(-extreme, kind="stable")][:MAX_VARIANTS].tolist()
        found: list[tuple[float, int, int, int]] = []
        for back in variants:
            base, normalised = assign, u
            if back >= 0:
                base = assign.copy()
                base[back] = units.owner[back]
                normalised = problem.normalised(units, base)
            sources = np.argsort(-np.abs(normalised - 1.0), kind="stable")[:SOURCES]
            candidates = np.flatnonzero(movable & np.isin(base, sources))
            if candidates.size == 0:
                continue
            scores = relocation_scores(
                normalised, scale, problem.active, base[candidates], units.load[candidates], weights
            )
            flat = np.argpartition(scores, min(CHECKED, scores.size) - 1, axis=None)[:CHECKED]
            for c, j in zip(*np.unravel_index(flat, scores.shape), strict=True):
                if np.isfinite(scores[c, j]):
                    found.append((float(scores[c, j]), back, int(candidates[c]), int(j)))
        for _, back, unit, worker in sorted(found):
            trial = assign.copy()
            if back >= 0:
                trial[back] = units.owner[back]
            trial[unit] = worker
            trial_value = objective(problem, units, trial, weights)
            if trial_value < value - _TOLERANCE and _feasible(problem, units, trial):
                assign, value = trial, trial_value
                break
        else:
            return assign
    return assign
