"""``binpack_milp``: the exact reference for partition → consumer assignment (paper 002 §III).

Eq. 3–7 (fewest consumers) with the Rscore (Eq. 11) as second objective, solved as one MILP
whose objective is ``M·Σ y_i + Rscore`` with ``M`` above any Rscore, so fewer consumers always
win. Consumers are the previous ones plus enough fresh ids for the warm start's count, and one more
per move ``max_moves`` allows (using a fresh consumer while a previous one stays idle never
pays: relabelling it can only cut moves).
Solved by HiGHS through PuLP (CBC as fallback), always with a time limit and a heuristic warm
start; the solver's own status and gap are reported (PuLP calls a time-limited run "Optimal").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions.scores import consumers, lower_bound, rscore
from routeplan.planning.solver import solve

WARM_STARTS = ("mwf", "mbfp", "bfd")  # the best of these seeds the solver


@dataclass(frozen=True)
class MilpResult:
    """The assignment and what the solver said about it."""

    assignment: np.ndarray
    status: str  # "optimal", "time_limit", "warm_start" (solver found nothing better), …
    mip_gap: float | None  # relative gap of the combined objective; 0 when proven optimal
    seconds: float


def warm_start(rates: np.ndarray, capacity: float, previous: np.ndarray | None) -> np.ndarray:
    """The best of :data:`WARM_STARTS`: fewest consumers, then least Rscore."""
    candidates = [
        heuristics.modified_any_fit(rates, capacity, previous, fit="worst"),
        heuristics.modified_any_fit(rates, capacity, previous, fit="best", sort="max_partition"),
        heuristics.any_fit(rates, capacity, previous, fit="best", sort_decreasing=True),
    ]
    return min(candidates, key=lambda a: (consumers(a), rscore(rates, capacity, previous, a)))


def binpack_milp(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    time_limit_s: float = 10.0,
    max_moves: int | None = None,
    start: np.ndarray | None = None,
    solver: str = "highs",
) -> MilpResult:
    """Fewest consumers, then least Rscore; ``max_moves`` caps the partitions that change
    consumer (ValueError when no assignment meets it)."""
    import pulp

    started = time.perf_counter()
    rates = np.asarray(rates, dtype=float)
    prev = np.full(rates.size, -1) if previous is None else np.asarray(previous, dtype=np.int64)
    if rates.size == 0:
        return MilpResult(np.zeros(0, dtype=np.int64), "optimal", 0.0, 0.0)
    if time_limit_s <= 0:
        raise ValueError("binpack_milp needs a time limit > 0")
    start = warm_start(rates, capacity, prev) if start is None else np.asarray(start)
    held = sorted(set(prev[prev >= 0].tolist()))
    start = _relabel(start, held)
    # a move budget may need more consumers than the warm start: one fresh per allowed move
    fresh_needed = max(0, consumers(start) - len(held)) + min(max_moves or 0, rates.size)
    taken = set(held)
    fresh = [i for i in range(len(held) + fresh_needed + 1) if i not in taken][:fresh_needed]
    bins = held + fresh
    big = rates > capacity  # alone on a consumer (see heuristics)
    scale = rates / capacity
    weight = float(scale.sum()) + 1.0  # > any Rscore

    prob = pulp.LpProblem("binpack", pulp.LpMinimize)
    y = [pulp.LpVariable(f"y{b}", cat="Binary") for b in range(len(bins))]
    x = [
        [pulp.LpVariable(f"x{b}_{j}", cat="Binary") for j in range(rates.size)]
        for b in range(len(bins))
    ]
    slot = {c: b for b, c in enumerate(bins)}
    kept = [j for j in range(rates.size) if prev[j] >= 0]
    stays = [x[slot[int(prev[j])]][j] for j in kept]
    # Rscore = Σ_{kept} scale_j · (1 − stays_j): minimise its variable part
    prob += weight * pulp.lpSum(y) - pulp.lpSum(
        scale[j] * s for j, s in zip(kept, stays, strict=True)
    )
    for j in range(rates.size):
        prob += pulp.lpSum(x[b][j] for b in range(len(bins))) == 1  # Eq. 5
    for b in range(len(bins)):
        prob += pulp.lpSum(scale[j] * x[b][j] for j in np.flatnonzero(~big)) <= y[b]  # Eq. 4
        for j in range(rates.size):
            prob += x[b][j] <= y[b]
        for o in np.flatnonzero(big):
            prob += pulp.lpSum(x[b][j] for j in range(rates.size) if j != o) <= (
                rates.size * (1 - x[b][o])
            )
    for a, b in zip(range(len(held), len(bins)), range(len(held) + 1, len(bins)), strict=False):
        prob += y[a] >= y[b]  # fresh consumers are interchangeable: open them in order
    prob += pulp.lpSum(y) >= lower_bound(rates, capacity)
    if max_moves is not None:
        prob += len(stays) - pulp.lpSum(stays) <= max_moves

    index = np.array([slot[int(c)] for c in start])
    for b in range(len(bins)):
        y[b].setInitialValue(int(np.any(index == b)))
        for j in range(rates.size):
            x[b][j].setInitialValue(int(index[j] == b))
    solved = solve(prob, solver, time_limit_s)
    status, gap = solved.status, solved.gap
    seconds = time.perf_counter() - started
    if status == "infeasible":
        if max_moves is None:
            raise RuntimeError("binpack_milp: the solver found its model infeasible")
        raise ValueError(f"no assignment moves at most {max_moves} partitions")
    chosen = np.array([[v.varValue or 0.0 for v in row] for row in x])
    if status == "no_solution" or not np.allclose(chosen.sum(axis=0), 1.0, atol=1e-6):
        return MilpResult(start, "warm_start", None, seconds)
    assignment = np.asarray(bins, dtype=np.int64)[chosen.argmax(axis=0)]
    return MilpResult(assignment, status, gap, seconds)


def _relabel(assignment: np.ndarray, held: list[int]) -> np.ndarray:
    """Give consumers that are not previous ones the ids of idle previous ones first (free:
    nobody was there), then fresh ids in order."""
    assignment = np.asarray(assignment, dtype=np.int64)
    used = list(dict.fromkeys(assignment.tolist()))
    idle = [c for c in held if c not in set(used)]
    previous, taken = set(held), set(held)
    mapping, next_fresh = {}, 0
    for c in used:
        if c in previous:
            mapping[c] = c
        elif idle:
            mapping[c] = idle.pop(0)
        else:
            while next_fresh in taken:
                next_fresh += 1
            mapping[c] = next_fresh
            taken.add(next_fresh)
    return np.array([mapping[c] for c in assignment.tolist()], dtype=np.int64)
