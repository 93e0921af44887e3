"""Consistent Grouping's virtual workers on workers (paper 000 §V-B, §VI): how many each worker
gets, and the pairing of busy and idle workers that hands them over.

Shared by the ``cg`` batch planner (``consistent_grouping``: the first mapping, then
``pair_fcfs_rounds`` or ``pair_busy_idle`` on a snapshot, each handover priced by its move ledger)
and the message-by-message simulator (``routeplan.simulation.online``: ``SignalQueues`` and
``pair_fcfs`` slot by slot, at most one handover per busy worker and slot, ``CountedHandovers``),
and ``cg``'s hold of the day's windows (``hold_windows``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.workers import Workers
from routeplan.planning.windows import Step, lower_peak, residual_windows

_EPS = 1e-12

# --------------------------------------------------------------------------------------------
# virtual workers → workers (paper 000 §V-B, §VI: in proportion to capacity)


def proportional_counts(capacity: np.ndarray, total: int) -> np.ndarray:
    """``total`` virtual workers split in proportion to capacity (largest remainder), ≥ 1 each
    when ``total`` allows."""
    target = total * capacity / capacity.sum()
    counts = np.floor(target).astype(int)
    floor = 1 if total >= capacity.size else 0
    counts = np.maximum(counts, floor)
    while counts.sum() > total:
        excess = np.where(counts > floor, counts - target, -np.inf)
        counts[np.argmax(excess)] -= 1
    order = np.argsort(-(target - counts), kind="stable")
    for i in order[: total - counts.sum()]:
        counts[i] += 1
    return counts


def dealt_owners(counts: np.ndarray) -> np.ndarray:
    """Virtual worker → worker position when worker ``w`` gets ``counts[w]`` of them, dealt round
    by round (w0, w1, …, w0, w1, …) so that a worker's virtual workers spread over the range."""
    return np.array(
        [w for r in range(counts.max(initial=0)) for w in range(counts.size) if counts[w] > r],
        dtype=np.int64,
    )


# --------------------------------------------------------------------------------------------
# pairing busy and idle workers (paper 000 §V-B "Pairing virtual workers", §VI θ_b, θ_i)


class HandoverBudget(Protocol):
    """What pairing may still move: asked before, told after each virtual-worker handover."""

    def affordable(self, vw: int, to: int) -> bool: ...

    def spend(self, vw: int, to: int) -> None: ...


@dataclass
class CountedHandovers:
    """At most ``limit`` handovers, whatever they carry (the simulator: at most one per busy
    worker and slot, paper 000 §V-B)."""

    limit: float
    used: int = 0

    def affordable(self, vw: int, to: int) -> bool:
        return self.used + 1 <= self.limit

    def spend(self, vw: int, to: int) -> None:
        self.used += 1


@dataclass
class LedgerHandovers:
    """Pairing's budget in the batch planner (``consistent_grouping``'s ``_Layout``): each
    handover priced by the layout's ledger. Pairing indexes the active workers only
    (``active[p]`` is the listed index of position ``p``); ``load`` is the pairing's own array
    of their loads (it updates it in place) and ``bound`` their ε bounds, ``(1 + ε)`` × fair
    share.

    A handover that would give a hot key one more worker is refused while the giving worker is
    within its ε bound (issue 32): PoRC packs a hot key onto as few workers as its load needs,
    up to ``(1 + ε)`` of their share, and a pairing that spread it again to relieve a worker
    the bound allows would trade the key's memory for balance ε already gave away (a 24 % key on
    50 workers at ε = 0.5 went from the 8 workers it needs to 28). Virtual workers without such
    a piece move as §V-B says."""

    layout: Any
    active: np.ndarray
    load: np.ndarray
    bound: np.ndarray

    def affordable(self, vw: int, to: int) -> bool:
        giver = int(np.flatnonzero(self.active == self.layout.owner[vw])[0])
        within = self.load[giver] <= self.bound[giver] * (1 + 1e-9)  # rounding: loads add up
        if within and self._spreads(vw, int(self.active[to])):
            return False
        return self.layout.ledger.fits(self.layout.handover_cost(vw, int(self.active[to])))

    def _spreads(self, vw: int, to: int) -> bool:
        """Whether handing ``vw`` to worker ``to`` gives one of its hot keys a new worker."""
        owner = self.layout.owner
        return any(
            all(owner[v] != to for v, _ in self.layout.pieces[key])
            for key in self.layout.keys_on.get(vw, ())
        )

    def spend(self, vw: int, to: int) -> None:
        self.layout.hand_over(vw, int(self.active[to]))


def fair_share(load: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Each worker's fair share of the summed ``load``: ``Σ L · c_w / Σ c`` (§VI, ``α*_w``)."""
    return load.sum() * capacity / capacity.sum()


def busy_and_receivers(
    ratio: np.ndarray, theta_busy: float, theta_idle: float
) -> tuple[list[int], list[int]]:
    """§VI's classification of workers by ``ratio`` = load / fair share.

    Busy: ``ratio ≥ θ_b``, most overloaded first (first come, first served). Receivers: the idle
    (``ratio ≤ θ_i``), most idle first, then — failing an idle partner — every worker that is
    neither busy nor idle, least loaded first (§VI: "assigning virtual workers … to workers that
    have not reported becoming overloaded")."""
    busy = [int(b) for b in np.argsort(-ratio, kind="stable") if ratio[b] >= theta_busy]
    order = np.argsort(ratio, kind="stable")
    idle = [int(i) for i in order if ratio[i] <= theta_idle]
    between = [int(i) for i in order if theta_idle < ratio[i] < theta_busy]
    return busy, idle + between


def best_handover(
    owner: np.ndarray,
    load: np.ndarray,
    share: np.ndarray,
    vw_load: np.ndarray,
    busy: int,
    receiver: int,
    budget: HandoverBudget,
) -> tuple[float, int] | None:
    """The virtual worker of ``busy`` whose move to ``receiver`` lowers the pair's peak
    normalised load ``max(L_b/f_b, L_i/f_i)`` the most, among the moves ``budget`` affords:
    ``(peak after, virtual worker)``, or None when no move lowers it (ties: lowest index)."""
    peak = max(load[busy] / share[busy], load[receiver] / share[receiver])
    best: tuple[float, int] | None = None
    for vw in np.flatnonzero(owner == busy):
        if not budget.affordable(int(vw), receiver):
            continue
        after = max(
            (load[busy] - vw_load[vw]) / share[busy],
            (load[receiver] + vw_load[vw]) / share[receiver],
        )
        if after < peak - _EPS and (best is None or after < best[0]):
            best = (after, int(vw))
    return best


def next_pairing(
    owner: np.ndarray,
    load: np.ndarray,
    share: np.ndarray,
    vw_load: np.ndarray,
    theta_busy: float,
    theta_idle: float,
    budget: HandoverBudget,
) -> tuple[int, int, int] | None:
    """The next handover ``(virtual worker, busy, receiver)``: busy workers and receivers are
    paired first come, first served (``busy_and_receivers`` order) and the first pair with a
    helpful, affordable move (``best_handover``) makes it; None when no pair has one."""
    busy, receivers = busy_and_receivers(load / share, theta_busy, theta_idle)
    for b in busy:
        for i in receivers:
            found = best_handover(owner, load, share, vw_load, b, i, budget)
            if found is not None:
                return found[1], b, i
    return None


def pair_busy_idle(
    owner: np.ndarray,
    load: np.ndarray,
    vw_load: np.ndarray,
    capacity: np.ndarray,
    theta_busy: float,
    theta_idle: float,
    budget: HandoverBudget,
) -> int:
    """Move virtual workers from busy to idle workers, one per pairing, in place (§V-B).

    ``owner[v]`` is the worker of virtual worker ``v`` (−1: not taking part), ``load`` the
    workers' loads, ``vw_load`` the virtual workers' and ``capacity`` the workers'. The fair
    shares are fixed for the round; pairings go on while one lowers its pair's peak and the budget
    allows (at most ``V·n`` of them). Returns the number of handovers."""
    if load.sum() <= 0:
        return 0
    share = fair_share(load, capacity)
    moved = 0
    for _ in range(owner.size * len(capacity)):
        found = next_pairing(owner, load, share, vw_load, theta_busy, theta_idle, budget)
        if found is None:
            break
        vw, b, i = found
        owner[vw] = i
        load[b] -= vw_load[vw]
        load[i] += vw_load[vw]
        budget.spend(vw, i)
        moved += 1
    return moved


PAIRINGS = ("fcfs", "exact")


@dataclass
class SignalQueues:
    """The sources' two first-come-first-served queues of §V-B: workers that signalled busy
    (``load ≥ θ_b`` × fair share, "decrease workload") and idle (``≤ θ_i``, "increase"), in the
    order their signal arrived. A worker stays queued while it keeps signalling the same; one
    whose signal stops (or turns) leaves its queue. Signals of one time slot arrive together,
    in worker order."""

    busy: list[int] = field(default_factory=list)
    idle: list[int] = field(default_factory=list)

    def receive(self, ratio: np.ndarray, theta_busy: float, theta_idle: float) -> None:
        """The binary signals of one slot: ``ratio`` = each worker's load / its fair share."""
        busy, idle = ratio >= theta_busy, ratio <= theta_idle
        self.busy = [w for w in self.busy if busy[w]]
        self.busy += [int(w) for w in np.flatnonzero(busy) if int(w) not in self.busy]
        self.idle = [w for w in self.idle if idle[w]]
        self.idle += [int(w) for w in np.flatnonzero(idle) if int(w) not in self.idle]


def pair_fcfs(
    owner: np.ndarray,
    load: np.ndarray,
    vw_load: np.ndarray,
    queues: SignalQueues,
    budget: HandoverBudget,
) -> int:
    """Paper 000 §V-B "Pairing virtual workers", in place: while both queues hold a worker, the
    first busy and the first idle worker are paired and one virtual worker of the busy worker
    moves to the idle one ("the source only removes the virtual workers of the corresponding
    worker if it is able to pair it with an addition on an idle worker"); both leave their
    queue. The sources know no capacity, only their own count of each virtual worker's
    messages: the busy worker gives its lightest virtual worker (the smallest correction) the budget
    affords (a pair with
    none affordable moves nothing). Returns the number of handovers."""
    moved = 0
    while queues.busy and queues.idle:
        b, i = queues.busy.pop(0), queues.idle.pop(0)
        mine = np.flatnonzero(owner == b)
        for vw in mine[np.argsort(vw_load[mine], kind="stable")].tolist():
            if budget.affordable(vw, i):
                owner[vw] = i
                load[b] -= vw_load[vw]
                load[i] += vw_load[vw]
                budget.spend(vw, i)
                moved += 1
                break
    return moved


def pair_fcfs_rounds(
    owner: np.ndarray,
    load: np.ndarray,
    vw_load: np.ndarray,
    capacity: np.ndarray,
    theta_busy: float,
    theta_idle: float,
    budget: HandoverBudget,
) -> int:
    """The batch form of §V-B pairing on one snapshot: rounds of signals (``SignalQueues``) and
    FCFS pairing (``pair_fcfs``), as successive time slots would do with these loads, until a
    round moves nothing or the owners repeat an earlier round's (virtual workers too coarse for
    the thresholds ping-pong between busy and idle), at most ``V`` rounds. The planner, which
    knows the capacities, keeps the round with the lowest peak normalised load (handing back
    what later rounds moved), and starts another pass of rounds from it, with fresh queues,
    until a pass lowers that peak no more — so pairing on its own result moves nothing and
    re-planning unchanged loads republishes nothing. Returns the number of virtual workers
    whose worker changed."""
    if load.sum() <= 0:
        return 0
    share = fair_share(load, capacity)
    start = owner.copy()
    peak = float(np.max(load / share))
    for _ in range(owner.size):  # each pass starts where the previous one's best left off
        before = peak
        best = (peak, owner.copy(), load.copy())
        queues = SignalQueues()
        seen = {owner.tobytes()}
        for _ in range(owner.size):
            queues.receive(load / share, theta_busy, theta_idle)
            step = pair_fcfs(owner, load, vw_load, queues, budget)
            state = owner.tobytes()
            peak = float(np.max(load / share))
            if step and peak < best[0] - _EPS:
                best = (peak, owner.copy(), load.copy())
            if step == 0 or state in seen:
                break
            seen.add(state)
        for vw in np.flatnonzero(owner != best[1]).tolist():
            owner[vw] = best[1][vw]
            budget.spend(vw, int(owner[vw]))
        load[:] = best[2]
        peak = best[0]
        if peak >= before - _EPS:
            break
    return int(np.sum(owner != start))


# the day's windows (issue: plans that hold every window, not one)


def virtual_worker_windows(
    group_windows: np.ndarray,
    group_vw: np.ndarray,
    virtual_workers: int,
) -> np.ndarray:
    """Windows × virtual workers: the window loads of each virtual worker's key groups
    (``group_windows``, windows × groups; ``group_vw[g]`` = −1 for a group outside any)."""
    windows = np.zeros((group_windows.shape[0], virtual_workers))
    placed = group_vw >= 0
    np.add.at(windows.T, group_vw[placed], group_windows[:, placed].T)
    return windows


def hold_windows(layout: Any, loads: LoadSnapshot, residual: np.ndarray, workers: Workers) -> None:
    """Consistent Grouping's ``layout`` (its ``_Layout``) with virtual workers handed, or
    swapped, off the worker that carries the peak of the day's windows
    (``loads.key_group_windows``; ``routeplan.planning.windows.lower_peak``), each step priced
    by the layout's ledger. ``residual``: the key groups' load without the hot keys routed on
    their own; each such key leaves its group's windows by its own hours
    (``LoadSnapshot.hot_key_profile``) and its pieces carry them. The hot keys kept on their
    workers and the groups kept outside any virtual worker stay where they are."""
    windows = loads.key_group_windows
    assert windows is not None
    _, shape = residual_windows(windows, loads.key_group_load, residual)
    group_windows = windows.copy()
    for key in (*layout.pieces, *layout.kept_keys):
        g = loads.hot_key_group(key)
        group_windows[:, g] -= loads.hot_key_profile(key)
    np.clip(group_windows, 0.0, None, out=group_windows)
    base = np.outer(shape, layout.base)
    index = {n: i for i, n in enumerate(layout.names)}
    for g in np.flatnonzero(layout.group_vw < 0):  # kept on their current worker: fixed load
        worker = index.get(layout.ledger.before_group[g])
        if worker is not None:
            base[:, worker] += group_windows[:, g]
    vw_windows = virtual_worker_windows(group_windows, layout.group_vw, layout.owner.size)
    for key, parts in layout.pieces.items():
        hours = loads.hot_key_profile(key) / max(loads.hot_key_load[key], _EPS)
        for vw, load in parts:
            vw_windows[:, vw] += load * hours
    active = workers.is_active
    movable = (layout.owner >= 0) & active[np.maximum(layout.owner, 0)]

    def fits(step: Step) -> bool:
        costs = [layout.handover_cost(vw, to) for vw, to in step]
        return bool(layout.ledger.fits((sum(c[0] for c in costs), sum(c[1] for c in costs))))

    lower_peak(
        np.maximum(layout.owner, 0), vw_windows, base, workers.capacities, active, movable,
        fits, layout.hand_over,
    )  # fmt: skip
