"""``binpack_milp``: the exact reference for partition → consumer assignment (paper 002 §III).

With ``y_i`` = 1 when consumer ``i`` is used, ``x_{i,j}`` = 1 when partition ``j`` goes to it,
``s_j`` its rate over the bin capacity C and ``q_j`` its previous consumer (−1: none)::

    min  M·Σ_i y_i + Σ_{j: q_j ≥ 0} s_j·(1 − x_{q_j,j})       Eq. 3, then Eq. 11 (Rscore)
    (4)  Σ_j s_j·x_{i,j} ≤ y_i,   x_{i,j} ≤ y_i               capacity of a used consumer
    (5)  Σ_i x_{i,j} = 1                                     every partition on one consumer
    (6)  y_i ∈ {0, 1}      (7)  x_{i,j} ∈ {0, 1}
         Σ_{j'≠j} x_{i,j'} ≤ P·(1 − x_{i,j})   for s_j > 1     an oversized partition reads alone
         Σ_{j: q_j ≥ 0} (1 − x_{q_j,j}) ≤ max_moves          optional move budget
         Σ_i y_i ≥ ⌈Σ s_j⌉,  y_a ≥ y_{a+1} (fresh ids)       valid cuts: bound, no symmetry

With the rates of several windows (``rates[t, j]``: the assignment must hold every window of
a day), Eq. 4 holds in each window, ``s_j`` elsewhere is partition ``j``'s highest window and the
bound on consumers is the busiest window's.

Racks (KIP-881, ``racks``): with ``local`` (partitions × known consumer ids, the consumer in the
partition's rack) and ``rack_weight`` w > 0 the objective also subtracts
``w·Σ_{i,j: local} s_j·x_{i,j}`` — the load read in rack, in consumers' worth, traded against the
Rscore at w per unit (w = 1: a byte read in rack is worth a byte not moved) — and ``M`` becomes
``(1 + w)·Σ s_j + 1``, so racks never cost a consumer. The warm start is rack-aware too.

``M`` = Σ s_j + 1 is above any Rscore, so fewer consumers always win. The Rscore breaks ties by
amounts down to a partition's rate over C, and Eq. 4's rows hold ``y_i``'s coefficient 1 beside
rates many orders of magnitude below C. So the model is solved exactly (``solver.solve``'s
``exact``: no relative gap, no presolve) with the capacity tolerance of the heuristics
(``scores.TOLERANCE``): with HiGHS's defaults — a 10⁻⁴ relative gap, a 10⁻⁶ feasibility
tolerance and its MIP presolve, which reduced ``rates = [1, 6.1·10⁻⁵]``, ``C = 100`` to an
empty model and reported "optimal" for two consumers where one holds both — the answer could be
a consumer more than a heuristic's, a worse Rscore, or a consumer over C.

Consumers are the previous ones plus enough fresh ids for the warm start's count, and one more
per move ``max_moves`` allows (using a fresh consumer while a previous one stays idle never
pays: relabelling it can only cut moves).
Solved by HiGHS through PuLP (CBC as fallback), always with a time limit and a heuristic warm
start; the solver's own status (``solver_status``), gap (``mip_gap``) and time
(``solver_seconds``) are reported (PuLP calls a time-limited run "Optimal"). The answer is never
worse than a warm start within the move budget: should a solver return a worse assignment, the
warm start is kept (``solver_status`` "warm_start").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions.scores import TOLERANCE, consumers, lower_bound, moved, rscore
from routeplan.planning.solver import solve

WARM_STARTS = ("mwf", "mbfp", "bfd")  # the best of these seeds the solver


@dataclass(frozen=True)
class MilpResult:
    """The assignment and what the solver said about it."""

    assignment: np.ndarray
    solver_status: str  # "optimal", "time_limit", "warm_start" (solver found nothing better), …
    mip_gap: float | None  # relative gap of the combined objective; 0 when proven optimal
    solver_seconds: float


def warm_start(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None,
    local: np.ndarray | None = None,
    rack_weight: float = 0.0,
) -> np.ndarray:
    """The best of :data:`WARM_STARTS`: fewest consumers, then least cost (:func:`cost`)."""
    racks = {"local": local, "rack_weight": rack_weight}
    candidates = [
        heuristics.modified_any_fit(rates, capacity, previous, fit="worst", **racks),
        heuristics.modified_any_fit(
            rates, capacity, previous, fit="best", sort="max_partition", **racks
        ),
        heuristics.any_fit(rates, capacity, previous, fit="best", sort_decreasing=True, **racks),
    ]
    size = heuristics.peak(rates)
    return min(
        candidates,
        key=lambda a: (consumers(a), cost(size, capacity, previous, a, local, rack_weight)),
    )


def in_rack_load(rates: np.ndarray, assignment: np.ndarray, local: np.ndarray | None) -> float:
    """The load of the partitions ``assignment`` gives a consumer in their rack (``local``:
    partitions × known consumer ids; higher ids are never in rack)."""
    if local is None or local.size == 0:
        return 0.0
    ids = np.asarray(assignment, dtype=np.int64)
    known = ids < local.shape[1]
    near = np.zeros(ids.shape, dtype=bool)
    near[known] = local[np.flatnonzero(known), ids[known]]
    return float(np.asarray(rates, dtype=float)[near].sum())


def cost(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None,
    assignment: np.ndarray,
    local: np.ndarray | None = None,
    rack_weight: float = 0.0,
) -> float:
    """What the model minimises after the consumers: the Rscore less ``rack_weight`` × the
    load read in rack, in consumers' worth."""
    near = in_rack_load(rates, assignment, local) if rack_weight > 0 else 0.0
    return rscore(rates, capacity, previous, assignment) - rack_weight * near / capacity


def binpack_milp(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    time_limit_s: float = 10.0,
    max_moves: int | None = None,
    start: np.ndarray | None = None,
    solver: str = "highs",
    local: np.ndarray | None = None,
    rack_weight: float = 0.0,
) -> MilpResult:
    """Fewest consumers, then least Rscore (less ``rack_weight`` × the load read in rack, with
    ``local``: the module's racks); ``max_moves`` caps the partitions that change consumer
    (ValueError when no assignment meets it). ``rates``: per partition, or windows ×
    partitions (every window must fit)."""
    started = time.perf_counter()
    windows = np.atleast_2d(np.asarray(rates, dtype=float))  # windows × partitions
    rates = windows.max(axis=0)
    prev = np.full(rates.size, -1) if previous is None else np.asarray(previous, dtype=np.int64)
    if rates.size == 0:
        return MilpResult(np.zeros(0, dtype=np.int64), "optimal", 0.0, 0.0)
    if time_limit_s <= 0:
        raise ValueError("binpack_milp needs a time limit > 0")
    if rack_weight > 0 and local is not None:
        local = np.asarray(local, dtype=bool)
        if local.ndim != 2 or local.shape[0] != rates.size:
            raise ValueError("local must be partitions × known consumer ids")
    else:
        local, rack_weight = None, 0.0
    if start is None:
        start = warm_start(windows, capacity, prev, local, rack_weight)
    held = sorted(set(prev[prev >= 0].tolist()))
    start = _relabel(np.asarray(start), held)
    model = _BinPackModel(windows, capacity, prev, held, start, max_moves, local, rack_weight)
    solved = solve(model.prob, solver, time_limit_s, feasibility_tolerance=TOLERANCE, exact=True)
    seconds = time.perf_counter() - started
    if solved.status == "infeasible":
        if max_moves is None:
            raise RuntimeError("binpack_milp: the solver found its model infeasible")
        raise ValueError(f"no assignment moves at most {max_moves} partitions")
    assignment = model.solution()
    if solved.status == "no_solution" or assignment is None:
        return MilpResult(start, "warm_start", None, seconds)
    racks = (local, rack_weight)
    if _worse(rates, capacity, prev, assignment, start, racks) and within(start, prev, max_moves):
        return MilpResult(start, "warm_start", None, seconds)
    return MilpResult(assignment, solved.status, solved.gap, seconds)


def within(assignment: np.ndarray, prev: np.ndarray, max_moves: int | None) -> bool:
    """``assignment`` moves at most ``max_moves`` partitions (any number when None)."""
    return max_moves is None or int(moved(prev, assignment).sum()) <= max_moves


def _worse(
    rates: np.ndarray,
    capacity: float,
    prev: np.ndarray,
    found: np.ndarray,
    start: np.ndarray,
    racks: tuple[np.ndarray | None, float] = (None, 0.0),
) -> bool:
    """``found`` uses more consumers than ``start``, or as many at a higher :func:`cost`."""
    key = [(consumers(a), cost(rates, capacity, prev, a, *racks)) for a in (found, start)]
    return key[0][0] > key[1][0] or (key[0][0] == key[1][0] and key[0][1] > key[1][1] + 1e-9)


class _BinPackModel:
    """The MILP of the module docstring over the previous consumers ``held`` and fresh ids, one
    method per part of the model, warm-started from ``start``."""

    def __init__(
        self,
        rates: np.ndarray,
        capacity: float,
        prev: np.ndarray,
        held: list[int],
        start: np.ndarray,
        max_moves: int | None,
        local: np.ndarray | None = None,
        rack_weight: float = 0.0,
    ) -> None:
        import pulp

        self.windows = rates / capacity  # s_{t,j} in every window t
        self.rates = rates.max(axis=0)
        self.capacity, self.prev, self.held = capacity, prev, held
        self.local, self.rack_weight = local, rack_weight
        self.scale = self.rates / capacity  # s_j: the highest window
        self.big = self.rates > capacity  # alone on a consumer (see heuristics)
        self.bins = self.consumer_ids(start, max_moves)
        self.prob = pulp.LpProblem("binpack", pulp.LpMinimize)
        self.variables()
        self.objective()
        self.one_consumer_per_partition()
        self.capacity_of_used_consumers()
        self.oversized_alone()
        self.fresh_in_order()
        self.consumer_lower_bound()
        if max_moves is not None:
            self.move_budget(max_moves)
        self.warm_start(start)

    def consumer_ids(self, start: np.ndarray, max_moves: int | None) -> list[int]:
        """The previous consumers, then fresh ids: as many as the warm start needs beyond the
        previous ones, plus one per allowed move (a move budget may need more consumers)."""
        held = self.held
        fresh_needed = max(0, consumers(start) - len(held)) + min(max_moves or 0, self.rates.size)
        taken = set(held)
        fresh = [i for i in range(len(held) + fresh_needed + 1) if i not in taken][:fresh_needed]
        return held + fresh

    def variables(self) -> None:
        """(6) ``y_i`` ∈ {0, 1} per consumer id; (7) ``x_{i,j}`` ∈ {0, 1} per consumer and
        partition; ``stays_j = x_{q_j,j}`` for the partitions that had a consumer."""
        import pulp

        n, m = len(self.bins), self.rates.size
        self.y = [pulp.LpVariable(f"y{b}", cat="Binary") for b in range(n)]
        self.x = [[pulp.LpVariable(f"x{b}_{j}", cat="Binary") for j in range(m)] for b in range(n)]
        self.slot = {c: b for b, c in enumerate(self.bins)}
        self.kept = [j for j in range(m) if self.prev[j] >= 0]
        self.stays = [self.x[self.slot[int(self.prev[j])]][j] for j in self.kept]

    def objective(self) -> None:
        """Eq. 3 then Eq. 11: ``min M·Σ_i y_i + Σ_{j: q_j ≥ 0} s_j·(1 − stays_j)`` with
        ``M = Σ_j s_j + 1`` above any Rscore; the constant ``Σ s_j`` of the Rscore is left out.
        With racks, ``− w·Σ_{i,j: local} s_j·x_{i,j}`` and ``M = (1 + w)·Σ_j s_j + 1``."""
        import pulp

        weight = (1.0 + self.rack_weight) * float(self.scale.sum()) + 1.0
        self.prob += (
            weight * pulp.lpSum(self.y)
            - pulp.lpSum(self.scale[j] * s for j, s in zip(self.kept, self.stays, strict=True))
            - pulp.lpSum(self.rack_weight * self.scale[j] * self.x[b][j] for b, j in self.near())
        )

    def near(self) -> list[tuple[int, int]]:
        """(slot, partition) pairs whose consumer is in the partition's rack (none without
        racks)."""
        if self.local is None or self.rack_weight <= 0:
            return []
        width = self.local.shape[1]
        return [
            (b, int(j))
            for b, c in enumerate(self.bins)
            if c < width
            for j in np.flatnonzero(self.local[:, c])
        ]

    def one_consumer_per_partition(self) -> None:
        """Eq. 5: ``Σ_i x_{i,j} = 1`` for every partition ``j``."""
        import pulp

        for j in range(self.rates.size):
            self.prob += pulp.lpSum(row[j] for row in self.x) == 1

    def capacity_of_used_consumers(self) -> None:
        """Eq. 4: ``Σ_j s_j·x_{i,j} ≤ y_i`` in every window over the partitions up to C, and the
        valid
        inequalities ``x_{i,j} ≤ y_i`` (a partition of rate 0 opens its consumer too)."""
        import pulp

        normal = np.flatnonzero(~self.big)
        for b, row in enumerate(self.x):
            for share in self.windows:
                self.prob += pulp.lpSum(share[j] * row[j] for j in normal) <= self.y[b]
            for var in row:
                self.prob += var <= self.y[b]

    def oversized_alone(self) -> None:
        """A partition above C reads alone (the heuristics' rule):
        ``Σ_{j'≠j} x_{i,j'} ≤ P·(1 − x_{i,j})`` for each such ``j`` and consumer ``i``."""
        import pulp

        m = self.rates.size
        for row in self.x:
            for o in np.flatnonzero(self.big):
                self.prob += pulp.lpSum(row[j] for j in range(m) if j != o) <= m * (1 - row[o])

    def fresh_in_order(self) -> None:
        """``y_a ≥ y_{a+1}`` for consecutive fresh ids: they are interchangeable, so they open in
        order (no symmetric solutions)."""
        first = len(self.held)
        for a in range(first, len(self.bins) - 1):
            self.prob += self.y[a] >= self.y[a + 1]

    def consumer_lower_bound(self) -> None:
        """``Σ_i y_i ≥ ⌈Σ_j s_j⌉`` in the busiest window (``scores.lower_bound``): a valid cut
        the LP relaxation misses."""
        import pulp

        self.prob += pulp.lpSum(self.y) >= lower_bound(self.windows, 1.0)

    def move_budget(self, max_moves: int) -> None:
        """``Σ_{j: q_j ≥ 0} (1 − stays_j) ≤ max_moves``."""
        import pulp

        self.prob += len(self.stays) - pulp.lpSum(self.stays) <= max_moves

    def warm_start(self, start: np.ndarray) -> None:
        """``start`` (relabelled onto :attr:`bins`) as every variable's initial value."""
        index = np.array([self.slot[int(c)] for c in start])
        for b, row in enumerate(self.x):
            self.y[b].setInitialValue(int(np.any(index == b)))
            for j, var in enumerate(row):
                var.setInitialValue(int(index[j] == b))

    def solution(self) -> np.ndarray | None:
        """Each partition's consumer id in the solver's answer; None without a whole one."""
        chosen = np.array([[v.varValue or 0.0 for v in row] for row in self.x])
        if not np.allclose(chosen.sum(axis=0), 1.0, atol=1e-6):
            return None
        return np.asarray(self.bins, dtype=np.int64)[chosen.argmax(axis=0)]


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
