"""``cg`` Consistent Grouping with Power of Random Choices (paper 000, Nasir et al.).

Batch form of the paper's scheme, planning from aggregated loads:

1. **PoRC** (§V-A, Alg. 1): ``V = α·n`` equal-sized virtual workers of capacity
   ``(1 + ε) · total / V``. Each key group goes to the first virtual worker of its salted hash
   sequence ``H(g + salt)`` with spare capacity. Units are visited in decreasing load (the batch
   planner knows the loads up front). A hot key too heavy for one virtual worker is split over
   the virtual workers of its own sequence, filling their spare capacity — the table lists it with
   weighted workers. With a previous table, key groups keep their virtual worker unless it is over
   capacity; only the excess is placed again.
2. **Virtual workers → workers** (§V-B): counts in proportion to capacity (``α*_w = c_w·n·α``,
   §VI), or the previous table's assignment. Workers no longer active hand their virtual workers
   to the least loaded.
3. **Pairing** (§V-B "Pairing virtual workers", θ_b/θ_i of §VI): a worker is busy when its load
   ``≥ θ_b`` times its fair share and idle when ``≤ θ_i`` times it; busy and idle workers are
   paired first-come-first-served (most overloaded / most idle first) and one virtual worker moves
   from busy to idle per pairing — failing an idle partner, to a worker that is not busy (§VI:
   "assigning virtual workers … to workers that have not reported becoming overloaded") — while
   that lowers the pair's peak normalised load and the budget allows.

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

# --------------------------------------------------------------------------------------------
# PoRC (paper 000 §V-A, Alg. 1)


def porc_choice(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Paper 000 Alg. 1 for one unit: the first of its salted choices ``H(unit + 1), …,
    H(unit + max_salt)`` with room for ``load`` under ``capacity`` (one bound for every bin or
    one per bin); when none has room, the least loaded of them. Changes nothing."""
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    tried = []
    for salt in range(1, max_salt + 1):
        choice = salted_choice(unit, salt, n)
        if virtual_worker_load[choice] + load <= bound[choice] + _EPS:
            return choice
        tried.append(choice)
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

    ``virtual_workers_per_worker`` is the paper's α (``V = α·n`` virtual workers)."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves", "max_migrated_load_share"})

    virtual_workers_per_worker: int = 10
    epsilon: float = 0.01
    theta_busy: float = 1.03
    theta_idle: float = 0.97
    hot_key_fraction: float = 0.5
    max_salt: int = 64

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
        self._place_groups(layout, residual, capacity)
        self._place_hot_keys(layout, hot, loads, current, capacity)
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

    def _place_groups(self, layout: _Layout, residual: np.ndarray, capacity: float) -> None:
        """PoRC for key groups (§V-A). With a previous state only the overflow of virtual workers
        over capacity, and the groups kept outside them, are placed again; a placement that
        moves a group to another worker is made only if the budget allows — otherwise the
        group stays in its virtual worker, or on its current worker."""
        group_vw, vw_load = layout.group_vw, layout.vw_load
        inside = group_vw >= 0
        vw_load += np.bincount(group_vw[inside], weights=residual[inside], minlength=vw_load.size)
        pending = []
        for vw in np.flatnonzero(vw_load > capacity + _EPS):
            members = np.flatnonzero(group_vw == vw)
            for g in members[np.argsort(-residual[members], kind="stable")]:
                if vw_load[vw] <= capacity + _EPS:
                    break
                vw_load[vw] -= residual[g]
                pending.append(int(g))
        pending += np.flatnonzero(~inside).tolist()
        pending_arr = np.asarray(pending, dtype=np.int64)
        before = layout.ledger.before_group
        for g in pending_arr[np.argsort(-residual[pending_arr], kind="stable")]:
            choice = porc_choice(f"g{g}", residual[g], vw_load, capacity, self.max_salt)
            if layout.ledger.try_groups([g], layout.worker_name(choice)):
                group_vw[g] = choice
                vw_load[choice] += residual[g]
            elif group_vw[g] >= 0:  # back into its virtual worker
                vw_load[group_vw[g]] += residual[g]
            else:  # stays on its current worker
                layout.base[layout.names.index(before[g])] += residual[g]

    @staticmethod
    def _place_hot_keys(
        layout: _Layout,
        hot: Sequence[str],
        loads: LoadSnapshot,
        current: RoutingTable | None,
        capacity: float,
    ) -> None:
        """Split each hot key over its salted virtual workers (``porc_split``), heaviest first;
        a key whose workers would change beyond the budget keeps its current ones."""
        for key in hot:
            amount = loads.hot_key_load[key]
            pieces = porc_split(key, amount, layout.vw_load, capacity, 4 * layout.owner.size)
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
        """§V-B pairing over the active workers (``pair_busy_idle``, ``load`` theirs), each
        handover priced by the ledger; virtual workers a draining worker keeps take no part."""
        positions = np.flatnonzero(workers.is_active)
        at = np.full(len(workers), -1, dtype=np.int64)
        at[positions] = np.arange(positions.size)
        owner = np.where(layout.owner >= 0, at[np.maximum(layout.owner, 0)], -1)
        pair_busy_idle(
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
            },
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current, layout.ledger.extra())
