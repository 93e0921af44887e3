"""``cg`` Consistent Grouping with Power of Random Choices (paper 000, Nasir et al.).

Batch form of the paper's scheme, planning from aggregated loads:

1. **PoRC** (§V-A, Alg. 1): ``V = α·n`` equal-sized virtual workers of capacity
   ``(1 + ε) · total / V``. Key groups and hot keys are placed together **in decreasing load**
   (the batch planner knows the loads up front): a key group goes whole to the first virtual
   worker of its salted hash sequence ``H(g + salt)`` with room for it; a hot key is split over
   only the ``⌈load / capacity⌉ ≈ ⌈p_k·V/(1+ε)⌉`` virtual workers its load needs (§VI-B, Eq. 2),
   each piece on the first salted choice with room — the table lists it with weighted workers.
   No virtual worker passes the capacity unless a single key group is heavier than the room left
   (its worker's other virtual workers then lend it theirs). With a previous table, key groups
   keep their virtual worker and hot keys their pieces; only a worker whose virtual workers
   together pass their bound sheds units (from those over capacity, lightest last), and they
   are placed again — so a plan on unchanged loads reproduces the current table.
2. **Virtual workers → workers** (§V-B): counts in proportion to capacity (``α*_w = c_w·n·α``,
   §VI), or the previous table's assignment. Workers no longer active hand their virtual workers
   to the least loaded.
3. **Pairing** (§V-B "Pairing virtual workers", θ_b/θ_i of §VI), ``pairing="fcfs"`` (default):
   a worker signals busy when its load is ``≥ θ_b`` times its fair share and idle when
   ``≤ θ_i`` times it; the signals queue first come, first served and each busy–idle pair moves
   one virtual worker (``pair_fcfs``; rounds of it on the snapshot, ``pair_fcfs_rounds``).
   ``pairing="exact"`` (our variant, ``pair_busy_idle``): busy workers most overloaded first,
   each pairing moves the virtual worker that lowers the pair's peak normalised load the most,
   failing an idle partner to a worker that is not busy (§VI: "assigning virtual workers … to
   workers that have not reported becoming overloaded").

**Budget** (``max_moves``, ``max_migrated_load_share``; ``moves.MoveLedger``): against a current
table of as many key groups, every change of every step is priced before it is made, as
``metrics.moves`` counts it — a key group placed again by PoRC on another worker, a hot key whose
workers change, a virtual worker handed over (all its key groups and hot-key pieces), a key that
stops being hot — and a change the budget cannot pay for is not made: the key group stays in its
virtual worker, or on its current worker outside any virtual worker (``-1`` in
``key_group_virtual_worker``, placed again by a later plan that can afford it); the hot key keeps
its current workers; the virtual worker stays with its (draining) worker. With a current table of
another strategy, or without a ``cg`` state that matches it, the plan starts afresh and every
key group whose fresh place is unaffordable stays where it is. So ``Budget(max_moves=0)`` gives a
plan without moves — except the forced ones, of key groups and hot keys whose worker left the
workers list, which no table can avoid: they are paid first and reported as ``forced_moves``
(the convention of ``reassign.reassignment``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from routeplan.model.hashing import salted_choice
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.keyrouting.moves import UNKNOWN, MoveLedger, usable_current
from routeplan.planning.registry import register

_EPS = 1e-12
_PASSES = 8  # planning passes on a plan's own result, at most (``ConsistentGrouping.plan``)

# --------------------------------------------------------------------------------------------
# PoRC (paper 000 §V-A, Alg. 1)


def first_with_room(
    unit: str, load: float, virtual_worker_load: np.ndarray, bound: np.ndarray, max_salt: int
) -> int | None:
    """Paper 000 Alg. 1's scan: the first of ``unit``'s salted choices ``H(unit + 1), …,
    H(unit + max_salt)`` with room for ``load`` under its ``bound``; None when none has."""
    n = virtual_worker_load.size
    for salt in range(1, max_salt + 1):
        choice = salted_choice(unit, salt, n)
        if virtual_worker_load[choice] + load <= bound[choice] + _EPS:
            return choice
    return None


def porc_choice(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Paper 000 Alg. 1 for one unit: the first of its salted choices with room for ``load``
    under ``capacity`` (one bound for every bin or one per bin, ``first_with_room``); when none
    has room, the least loaded of them. Changes nothing."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    choice = first_with_room(unit, load, virtual_worker_load, bound, max_salt)
    if choice is not None:
        return choice
    tried = [salted_choice(unit, salt, n) for salt in range(1, max_salt + 1)]
    return min(tried, key=lambda c: virtual_worker_load[c] / bound[c])


def porc_place(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """``porc_choice``, its load added to ``virtual_worker_load`` in place."""
    choice = porc_choice(unit, load, virtual_worker_load, capacity, max_salt)
    virtual_worker_load[choice] += load
    return choice


def porc_split(
    key: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> list[tuple[int, float]]:
    """Spread one hot key over its salted choices, filling their spare capacity (PoRC for a key
    whose messages overflow its principal virtual worker). Returns ``(virtual worker, load)``."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    pieces: dict[int, float] = {}
    remaining = load
    for salt in range(1, max_salt + 1):
        if remaining <= _EPS:
            break
        choice = salted_choice(f"key:{key}", salt, n)
        take = min(bound[choice] - virtual_worker_load[choice], remaining)
        if take > _EPS:
            virtual_worker_load[choice] += take
            pieces[choice] = pieces.get(choice, 0.0) + take
            remaining -= take
    if remaining > _EPS:
        choice = int(np.argmin(virtual_worker_load / bound))
        virtual_worker_load[choice] += remaining
        pieces[choice] = pieces.get(choice, 0.0) + remaining
    return sorted(pieces.items())


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


def hot_key_pieces(load: float, capacity: float) -> int:
    """How many virtual workers a hot key needs at least: ``⌈load / capacity⌉`` with
    ``capacity = (1 + ε)·total / V``, i.e. ``⌈p_k · V / (1 + ε)⌉`` (paper 000 §VI-B, Eq. 2)."""
    if not np.isfinite(capacity) or capacity <= 0:
        return 1
    return max(1, int(np.ceil(load / capacity - 1e-9)))


def place_whole(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Alg. 1 for an indivisible unit in the batch planner: the first of its salted choices with
    room for ``load`` under ``capacity`` (one bound, or one per virtual worker); when none has
    room, the virtual worker with the most room of all — which has room whenever
    ``load ≤ ε·total/V`` (equal bounds), so small units never break the ε bound. Adds the
    load; returns the virtual worker."""
    bound = np.broadcast_to(capacity, virtual_worker_load.shape)
    choice = first_with_room(unit, load, virtual_worker_load, bound, max_salt)
    if choice is None:
        choice = int(np.argmax(bound - virtual_worker_load))
    virtual_worker_load[choice] += load
    return choice


def place_hot_key(
    key: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float,
    max_salt: int,
    bound: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """A hot key split over as few virtual workers as its load allows (paper 000 §V-A, §VI-B):
    ``⌈load / capacity⌉`` pieces — full virtual workers and the remainder, the parts Alg. 1's
    overflow of a key's messages makes — each placed by Alg. 1 on the key's salted sequence
    ``H(key + 1), H(key + 2), …`` (first choice with room for the piece, another piece's choice
    passed over). A piece no choice has room for fills the spare capacity of the least loaded
    virtual workers — so a hot key never breaks the ε bound (``V·capacity ≥ total``). Adds the
    load; returns ``(virtual worker, load)`` sorted. ``bound``: each virtual worker's bound when
    not ``capacity`` for all."""
    bound = np.broadcast_to(capacity if bound is None else bound, virtual_worker_load.shape)
    n_pieces = min(hot_key_pieces(load, capacity), virtual_worker_load.size)
    full = min(capacity, load / n_pieces) if n_pieces == virtual_worker_load.size else capacity
    sizes = [full] * (n_pieces - 1) + [load - full * (n_pieces - 1) if n_pieces > 1 else load]
    pieces: dict[int, float] = {}
    n = virtual_worker_load.size
    salt = 0
    for piece in sizes:
        placed = False
        while salt < max_salt and not placed:
            salt += 1
            choice = salted_choice(f"key:{key}", salt, n)
            if choice not in pieces and virtual_worker_load[choice] + piece <= bound[choice] + _EPS:
                virtual_worker_load[choice] += piece
                pieces[choice] = piece
                placed = True
        if placed:
            continue
        remaining = piece
        for choice in np.argsort(virtual_worker_load - bound, kind="stable").tolist():
            room = bound[choice] - virtual_worker_load[choice] if np.isfinite(capacity) else piece
            take = min(max(room, 0.0), remaining)
            if take > _EPS * max(piece, 1.0):
                virtual_worker_load[choice] += take
                pieces[choice] = pieces.get(choice, 0.0) + take
                remaining -= take
            if remaining <= _EPS * max(piece, 1.0):
                break
        if remaining > _EPS * max(piece, 1.0):  # no room anywhere (only with ε < 0 rounding)
            choice = int(np.argmin(virtual_worker_load))
            virtual_worker_load[choice] += remaining
            pieces[choice] = pieces.get(choice, 0.0) + remaining
    return sorted(pieces.items())


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


# --------------------------------------------------------------------------------------------
# the batch planner


@dataclass
class _Layout:
    """One plan's placement in progress (built per plan; the strategy never changes).

    Workers are indexed as listed (``workers.items``); ``owner[v]`` is virtual worker ``v``'s
    worker (−1 while its worker has left the list), ``group_vw[g]`` key group ``g``'s virtual
    worker (−1: kept on its current worker outside any), ``pieces[k]`` a hot key's
    ``(virtual worker, load)`` parts and ``kept_keys[k]`` the current workers of a hot key whose
    change the budget refused; ``base`` is the load those kept units put on each worker."""

    names: tuple[str, ...]
    owner: np.ndarray
    group_vw: np.ndarray
    vw_load: np.ndarray
    ledger: MoveLedger
    base: np.ndarray
    pieces: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    kept_keys: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    members: list[np.ndarray] = field(default_factory=list)  # vw → its key groups
    keys_on: dict[int, list[str]] = field(default_factory=dict)  # vw → hot keys with a piece

    def worker_name(self, vw: int) -> str | None:
        return self.names[self.owner[vw]] if self.owner[vw] >= 0 else UNKNOWN

    def key_targets(self, key: str, moved: int = -1, to: int = -1) -> list[str] | None:
        """A hot key's workers (None while one is unknown), with ``moved`` handed to ``to``."""
        found = []
        for vw, _ in self.pieces[key]:
            w = to if vw == moved else self.owner[vw]
            if w < 0:
                return None
            found.append(self.names[w])
        return found

    def keep(self, key: str, targets: tuple[tuple[str, float], ...], load: float) -> None:
        """Route ``key`` to ``targets`` (its current workers) outside the virtual workers."""
        self.kept_keys[key] = targets
        index = {n: i for i, n in enumerate(self.names)}
        weight = sum(w for _, w in targets)
        for name, w in targets:
            self.base[index[name]] += load * w / weight

    def index_members(self) -> None:
        """Who sits on each virtual worker, once groups and hot keys are placed."""
        order = np.argsort(self.group_vw, kind="stable")
        bounds = np.searchsorted(self.group_vw[order], np.arange(self.owner.size + 1))
        self.members = [order[bounds[v] : bounds[v + 1]] for v in range(self.owner.size)]
        self.keys_on = {}
        for key, parts in self.pieces.items():
            for vw, _ in parts:
                self.keys_on.setdefault(vw, []).append(key)

    def handover_cost(self, vw: int, to: int) -> tuple[float, float]:
        """What handing ``vw`` to worker ``to`` spends: its key groups and hot-key pieces."""
        if not self.ledger.counting:
            return 0.0, 0.0
        moves, load = self.ledger.group_cost(self.members[vw], self.names[to])
        for key in dict.fromkeys(self.keys_on.get(vw, ())):
            m, x = self.ledger.key_cost(key, self.key_targets(key, vw, to))
            moves, load = moves + m, load + x
        return moves, load

    def hand_over(self, vw: int, to: int) -> None:
        """Give ``vw`` to worker ``to`` and record what moves with it."""
        if self.ledger.counting:
            self.ledger.set_groups(self.members[vw], self.names[to])
            for key in dict.fromkeys(self.keys_on.get(vw, ())):
                self.ledger.set_key(key, self.key_targets(key, vw, to))
        self.owner[vw] = to


@dataclass
class _LedgerHandovers:
    """Pairing's budget in the batch planner: each handover priced by the ledger. Pairing
    indexes the active workers only (``active[p]`` is the listed index of position ``p``)."""

    layout: _Layout
    active: np.ndarray

    def affordable(self, vw: int, to: int) -> bool:
        return self.layout.ledger.fits(self.layout.handover_cost(vw, int(self.active[to])))

    def spend(self, vw: int, to: int) -> None:
        self.layout.hand_over(vw, int(self.active[to]))


@register("cg")
@dataclass(frozen=True)
class ConsistentGrouping:
    """Consistent Grouping (paper 000 §V) planning key groups and hot keys onto workers.

    ``virtual_workers_per_worker`` is the paper's α (``V = α·n`` virtual workers). ``pairing``:
    ``"fcfs"`` (default) is §V-B's pairing of busy and idle workers from binary signals in FCFS
    queues (``pair_fcfs``); ``"exact"`` is our variant that pairs by exact load ratios and
    capacities, picks the best virtual worker and falls back to non-busy receivers
    (``pair_busy_idle``)."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves", "max_migrated_load_share"})

    virtual_workers_per_worker: int = 10
    epsilon: float = 0.01
    theta_busy: float = 1.03
    theta_idle: float = 0.97
    hot_key_fraction: float = 0.5
    max_salt: int = 64
    pairing: str = "fcfs"

    def __post_init__(self) -> None:
        if self.virtual_workers_per_worker < 1:
            raise ValueError("virtual_workers_per_worker must be >= 1")
        if self.epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        if not self.theta_idle <= 1.0 <= self.theta_busy:
            raise ValueError("need theta_idle <= 1 <= theta_busy")
        if not 0 < self.hot_key_fraction <= 1:
            raise ValueError("hot_key_fraction must be in (0, 1]")
        if self.max_salt < 1:
            raise ValueError("max_salt must be >= 1")
        if self.pairing not in PAIRINGS:
            raise ValueError(f"pairing must be one of {', '.join(PAIRINGS)}")
        object.__setattr__(self, "virtual_workers_per_worker", int(self.virtual_workers_per_worker))
        for name in ("epsilon", "theta_busy", "theta_idle", "hot_key_fraction"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "max_salt", int(self.max_salt))

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        """One planning pass (``_plan_once``) and, without budget limits, more passes on its own
        result until one changes nothing (at most ``_PASSES``): the greedy placement of units
        that passed their bound, and the pairing, then start from where the last pass left
        them — so a plan is a fixed point of the planner, and re-planning unchanged loads
        republishes nothing. Moves and metrics are against ``current``. With budget limits one
        pass, priced against ``current``: a later plan goes on from there."""
        first = plan = self._plan_once(loads, current, workers, budget)
        if budget.limits():
            return first
        for _ in range(_PASSES):
            again = self._plan_once(loads, plan.table, workers, budget)
            if again.table.same_routing(plan.table):
                break
            plan = again
        if plan is first:
            return first
        forced = {k: v for k, v in first.table.predicted.items() if k == "forced_moves"}
        return finish_plan(plan.table, loads, current, forced)

    def _plan_once(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        state = self._previous_state(usable_current(current, loads), loads)
        active = np.flatnonzero(workers.is_active)
        index = workers.index()
        n_virtual = (
            len(state["virtual_worker_worker"])
            if state
            else self.virtual_workers_per_worker * active.size
        )
        total = loads.total
        capacity = (1 + self.epsilon) * total / n_virtual if total > 0 else np.inf
        hot = sorted(
            (k for k, v in loads.hot_key_load.items() if v > self.hot_key_fraction * capacity),
            key=lambda k: (-loads.hot_key_load[k], k),
        )
        residual = loads.residual_key_group_load(hot)
        if state:
            owner = np.array([index.get(w, -1) for w in state["virtual_worker_worker"]])
            group_vw = np.asarray(state["key_group_virtual_worker"], dtype=np.int64)
        else:
            counts = proportional_counts(workers.capacities[active], n_virtual)
            owner = active[dealt_owners(counts)]
            group_vw = np.full(loads.num_key_groups, -1, dtype=np.int64)
        layout = _Layout(
            names=workers.names,
            owner=owner.astype(np.int64),
            group_vw=group_vw,
            vw_load=np.zeros(n_virtual),
            ledger=MoveLedger.build(loads, current, workers, budget, hot),
            base=np.zeros(len(workers)),
        )
        previous_pieces = state.get("hot_key_virtual_workers", {}) if state else {}
        self._place_units(layout, residual, hot, loads, current, capacity, previous_pieces)
        layout.index_members()
        load = self._hand_over_leaving(layout, workers)
        self._pair(layout, workers, load)
        self._return_cooled_keys(layout, hot, loads, current)
        return self._table(layout, hot, loads, current, workers)

    @staticmethod
    def _previous_state(current: RoutingTable | None, loads: LoadSnapshot) -> Mapping[str, Any]:
        """The current table's virtual workers when it is a ``cg`` table they describe."""
        if current is None or current.strategy != "cg":
            return {}
        state = current.strategy_state
        groups = state.get("key_group_virtual_worker")
        owners = state.get("virtual_worker_worker")
        if not owners or groups is None or len(groups) != loads.num_key_groups:
            return {}
        if min(groups, default=0) < -1 or max(groups, default=0) >= len(owners):
            return {}
        placed = [(g, v) for g, v in enumerate(groups) if v >= 0]
        if any(owners[v] != current.key_group_worker[g] for g, v in placed):
            return {}
        return state

    def _place_units(
        self,
        layout: _Layout,
        residual: np.ndarray,
        hot: Sequence[str],
        loads: LoadSnapshot,
        current: RoutingTable | None,
        capacity: float,
        previous_pieces: Mapping[str, Any],
    ) -> None:
        """PoRC (§V-A, Alg. 1) for key groups and hot keys together, **in decreasing load**: a
        key group goes whole to its first salted choice with room (``place_whole``), a hot key
        is split over as few virtual workers as its load allows (``place_hot_key``), so the
        heavy units take the empty virtual workers and the light ones fill the gaps.

        With a previous state, key groups keep their virtual worker and hot keys their pieces
        (when they need as many as when they were placed and their workers are the current
        table's); only the overflow of workers over their bound (``_worker_excess``), taken from
        their virtual workers over capacity, and the units kept outside them, are placed again.
        A key group heavier than the capacity, or without load, is never shed: no placement
        could do better for it. A placement that changes a unit's workers is made only if the
        budget allows — otherwise the group stays in its virtual worker, or on its current
        worker, and the hot key keeps its current workers."""
        group_vw, vw_load = layout.group_vw, layout.vw_load
        inside = group_vw >= 0
        vw_load += np.bincount(group_vw[inside], weights=residual[inside], minlength=vw_load.size)
        amounts = {k: float(loads.hot_key_load[k]) for k in hot}
        kept: dict[str, list[tuple[int, float]]] = {}
        placed_on = current.planning_snapshot() if current is not None else None
        for key in hot:
            old = self._previous_pieces(key, previous_pieces, layout, current)
            need = hot_key_pieces(amounts[key], capacity)
            if old is not None and (
                len(old) == need
                or len(old) > need == self._need_when_placed(key, placed_on, vw_load.size)
            ):
                kept[key] = [(vw, share * amounts[key]) for vw, share in old]
                for vw, part in kept[key]:
                    vw_load[vw] += part
        pending: list[tuple[float, int, str | int]] = []
        excess = self._worker_excess(layout.owner, vw_load, capacity)
        for vw in np.flatnonzero(vw_load > capacity + _EPS).tolist():
            w = layout.owner[vw]
            members = np.flatnonzero(group_vw == vw)
            for g in members[np.argsort(-residual[members], kind="stable")]:
                if vw_load[vw] <= capacity + _EPS or (w >= 0 and excess[w] <= _EPS):
                    break
                if not _EPS < residual[g] <= capacity:  # placing it again only churns
                    continue
                vw_load[vw] -= residual[g]
                excess[w] -= residual[g] if w >= 0 else 0.0
                pending.append((float(residual[g]), 1, int(g)))
            for key in [k for k, parts in kept.items() if any(v == vw for v, _ in parts)]:
                if vw_load[vw] <= capacity + _EPS or (w >= 0 and excess[w] <= _EPS):
                    break
                for v, part in kept.pop(key):
                    vw_load[v] -= part
                    if layout.owner[v] >= 0:
                        excess[layout.owner[v]] -= part
        pending += [(float(residual[g]), 1, int(g)) for g in np.flatnonzero(~inside)]
        pending += [(amounts[k], 0, k) for k in hot if k not in kept]
        before = layout.ledger.before_group
        bound = np.full(vw_load.size, capacity)
        for key, parts in kept.items():
            layout.pieces[key] = parts
            layout.ledger.set_key(key, layout.key_targets(key))
        # decreasing load; at equal load hot keys first, then by group / key
        for amount, is_group, unit in sorted(pending, key=lambda u: (-u[0], u[1], str(u[2]))):
            if not is_group:
                self._place_hot_key(layout, str(unit), amount, capacity, current, bound)
                continue
            g = int(unit)
            choice = place_whole(f"g{g}", amount, vw_load, bound, self.max_salt)
            vw_load[choice] -= amount
            if layout.ledger.try_groups([g], layout.worker_name(choice)):
                group_vw[g] = choice
                vw_load[choice] += amount
                self._lend_bound(layout, bound, vw_load, choice)
            elif group_vw[g] >= 0:  # back into its virtual worker
                vw_load[group_vw[g]] += amount
            else:  # stays on its current worker
                layout.base[layout.names.index(before[g])] += amount

    @staticmethod
    def _worker_excess(owner: np.ndarray, vw_load: np.ndarray, capacity: float) -> np.ndarray:
        """How far each worker's virtual workers together pass theirs, ``count × capacity`` (the
        worker's ε bound), indexed by worker (a previous plan's virtual workers may pass the
        capacity one by one where ``_lend_bound`` let a heavy key group borrow from siblings:
        only a worker over its bound sheds units)."""
        placed = owner >= 0
        size = max(int(owner.max(initial=-1)) + 1, 1)
        count = np.bincount(owner[placed], minlength=size)
        total = np.bincount(owner[placed], weights=vw_load[placed], minlength=size)
        return total - count * capacity

    @staticmethod
    def _lend_bound(layout: _Layout, bound: np.ndarray, vw_load: np.ndarray, vw: int) -> None:
        """A key group heavier than any room (no unit is split but hot keys) overflows ``vw``;
        the other virtual workers of its worker lend it that much of their bound, so the worker
        stays within ``(1 + ε)`` of its share when the rest of its virtual workers can."""
        over = vw_load[vw] - bound[vw]
        if over <= _EPS or layout.owner[vw] < 0:
            return
        siblings = np.flatnonzero(layout.owner == layout.owner[vw])
        siblings = siblings[siblings != vw]
        if siblings.size:
            bound[vw] = vw_load[vw]
            bound[siblings] = np.maximum(bound[siblings] - over / siblings.size, 0.0)

    def _need_when_placed(self, key: str, placed_on: LoadSnapshot | None, n_virtual: int) -> int:
        """How many virtual workers ``key`` needed on the loads its current pieces were placed
        on (0 when unknown). A key placed with more pieces than it needed (no salted choice had
        room for a piece, which then filled the spare room of several) keeps them while its need
        is unchanged: placing it again would only churn."""
        if placed_on is None or key not in placed_on.hot_key_load or placed_on.total <= 0:
            return 0
        capacity = (1 + self.epsilon) * placed_on.total / n_virtual
        return hot_key_pieces(float(placed_on.hot_key_load[key]), capacity)

    @staticmethod
    def _previous_pieces(
        key: str,
        previous: Mapping[str, Any],
        layout: _Layout,
        current: RoutingTable | None,
    ) -> list[tuple[int, float]] | None:
        """A hot key's ``(virtual worker, share)`` pieces in the previous state, when they
        still describe the current table's workers of the key."""
        parts = previous.get(key)
        if not parts or current is None or key not in current.hot_keys:
            return None
        out = [(int(v), float(s)) for v, s in parts]
        if any(not 0 <= v < layout.owner.size or layout.owner[v] < 0 for v, _ in out):
            return None
        workers = {layout.names[layout.owner[v]] for v, _ in out}
        return out if workers == {w for w, _ in current.hot_keys[key]} else None

    def _place_hot_key(
        self,
        layout: _Layout,
        key: str,
        amount: float,
        capacity: float,
        current: RoutingTable | None,
        bound: np.ndarray,
    ) -> None:
        """``place_hot_key`` for one key; a key whose workers would change beyond the budget
        keeps its current ones."""
        pieces = place_hot_key(key, amount, layout.vw_load, capacity, self.max_salt, bound)
        layout.pieces[key] = pieces
        if not layout.ledger.try_key(key, layout.key_targets(key)):
            for vw, part in pieces:
                layout.vw_load[vw] -= part
            del layout.pieces[key]
            kept = layout.ledger.kept_targets(key, current)
            assert kept is not None  # refusals only happen against a current table
            layout.keep(key, kept, amount)

    @staticmethod
    def _hand_over_leaving(layout: _Layout, workers: Workers) -> np.ndarray:
        """§V-B: virtual workers of workers no longer listed go to the least loaded active
        worker (forced); those of draining workers likewise while the budget allows, heaviest
        first (the rest stay until a later plan can afford their move). Returns the active
        workers' loads."""
        active = workers.is_active
        positions = np.flatnonzero(active)
        capacity = workers.capacities[positions]
        load = np.zeros(positions.size)
        at = {int(w): p for p, w in enumerate(positions)}
        owner, vw_load = layout.owner, layout.vw_load
        for vw in np.flatnonzero(owner >= 0):
            if active[owner[vw]]:
                load[at[int(owner[vw])]] += vw_load[vw]
        load += layout.base[positions]
        leaving = np.flatnonzero((owner < 0) | ~active[np.maximum(owner, 0)])
        for vw in sorted(leaving, key=lambda v: -vw_load[v]):
            target = int(np.argmin((load + vw_load[vw]) / capacity))
            to = int(positions[target])
            if owner[vw] >= 0 and not layout.ledger.fits(layout.handover_cost(vw, to)):
                continue  # a draining worker keeps it: the budget cannot pay for the move
            layout.hand_over(vw, to)
            load[target] += vw_load[vw]
        return load

    def _pair(self, layout: _Layout, workers: Workers, load: np.ndarray) -> None:
        """§V-B pairing over the active workers (``pair_fcfs_rounds``, or ``pair_busy_idle``
        with ``pairing="exact"``; ``load`` theirs), each handover priced by the ledger; virtual
        workers a draining worker keeps take no part."""
        positions = np.flatnonzero(workers.is_active)
        at = np.full(len(workers), -1, dtype=np.int64)
        at[positions] = np.arange(positions.size)
        owner = np.where(layout.owner >= 0, at[np.maximum(layout.owner, 0)], -1)
        pair = pair_busy_idle if self.pairing == "exact" else pair_fcfs_rounds
        pair(
            owner,
            load,
            layout.vw_load,
            workers.capacities[positions],
            self.theta_busy,
            self.theta_idle,
            _LedgerHandovers(layout, positions),
        )

    @staticmethod
    def _return_cooled_keys(
        layout: _Layout, hot: Sequence[str], loads: LoadSnapshot, current: RoutingTable | None
    ) -> None:
        """Keys the current table routes on their own that are no longer hot return to their key
        group, unless that changes their workers beyond the budget (they keep them)."""
        ledger = layout.ledger
        cooled = sorted(
            (k for k in ledger.before_key if k not in set(hot)),
            key=lambda k: (-ledger.key_load[k], k),
        )
        for key in cooled:
            g = loads.hot_key_group(key)
            vw = layout.group_vw[g]
            worker = layout.worker_name(vw) if vw >= 0 else ledger.before_group[g]
            if not ledger.try_key(key, (worker,)):
                kept = ledger.kept_targets(key, current)
                assert kept is not None
                layout.kept_keys[key] = kept

    def _table(
        self,
        layout: _Layout,
        hot: Sequence[str],
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
    ) -> Plan:
        names, owner, group_vw = layout.names, layout.owner, layout.group_vw
        before = layout.ledger.before_group
        group_worker = tuple(
            names[owner[v]] if v >= 0 else before[g] for g, v in enumerate(group_vw.tolist())
        )
        hot_keys: dict[str, tuple[tuple[str, float], ...]] = {}
        for key in hot:
            if key in layout.kept_keys:
                hot_keys[key] = layout.kept_keys[key]
                continue
            weights: dict[str, float] = {}
            for vw, part in layout.pieces[key]:
                share = part / loads.hot_key_load[key]
                weights[names[owner[vw]]] = weights.get(names[owner[vw]], 0.0) + share
            hot_keys[key] = tuple(sorted(weights.items()))
        hot_keys.update({k: v for k, v in layout.kept_keys.items() if k not in hot_keys})
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=group_worker,
            hot_keys=hot_keys,
            params=parameters(self),
            strategy_state={
                "virtual_worker_worker": [names[o] for o in owner],
                "key_group_virtual_worker": group_vw.tolist(),
                "hot_key_virtual_workers": {
                    key: [[vw, part / loads.hot_key_load[key]] for vw, part in parts]
                    for key, parts in sorted(layout.pieces.items())
                },
            },
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current, layout.ledger.extra())
