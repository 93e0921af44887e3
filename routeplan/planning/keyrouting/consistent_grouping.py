"""``cg`` Consistent Grouping with Power of Random Choices (paper 000, Nasir et al.).

Batch form of the paper's scheme, planning from aggregated loads:

1. **PoRC** (§V-A, Alg. 1; module ``porc``): ``V = α·n`` equal-sized virtual workers of capacity
   ``(1 + ε) · total / V``. Key groups and hot keys are placed together **in decreasing load**
   (the batch planner knows the loads up front): a key group goes whole to the first virtual
   worker of its salted hash sequence ``H(g + salt)`` with room for it; a hot key fills the
   virtual workers of as few workers as its load needs — ``⌈load / (α·capacity)⌉ ≈
   ⌈p_k·W/(1+ε)⌉`` workers, the first salted choice's worker first (§VI-B, Eq. 2 at the level
   of workers; the paper's pieces, one per virtual worker, landed on as many workers) — and the
   table lists it with weighted workers.
   No virtual worker passes the capacity unless a single key group is heavier than the room left
   (its worker's other virtual workers then lend it theirs). With a previous table, key groups
   keep their virtual worker and hot keys their pieces; only a worker whose virtual workers
   together pass their bound sheds units (from those over capacity, lightest last), and they
   are placed again — so a plan on unchanged loads reproduces the current table.
2. **Virtual workers → workers** (§V-B; module ``virtual_workers``): counts in proportion to
   capacity (``α*_w = c_w·n·α``, §VI), or the previous table's assignment. Workers no longer
   active hand their virtual workers to the least loaded.
3. **Pairing** (§V-B "Pairing virtual workers", θ_b/θ_i of §VI; module ``virtual_workers``),
   ``pairing="fcfs"`` (default): a worker signals busy when its load is ``≥ θ_b`` times its fair
   share and idle when ``≤ θ_i`` times it; the signals queue first come, first served and each
   busy–idle pair moves one virtual worker (``pair_fcfs``; rounds of it on the snapshot,
   ``pair_fcfs_rounds``). ``pairing="exact"`` (our variant, ``pair_busy_idle``): busy workers
   most overloaded first, each pairing moves the virtual worker that lowers the pair's peak
   normalised load the most, failing an idle partner to a worker that is not busy (§VI:
   "assigning virtual workers … to workers that have not reported becoming overloaded").
   Either way a handover that gives a hot key one more worker is refused while the giving
   worker is within its ε bound (``virtual_workers.LedgerHandovers``): ε is the imbalance the
   user allowed for the key's memory, so pairing does not spend it again.

4. **The day's windows** (``LoadSnapshot.key_group_windows``, which the nightly forecast gives;
   ours, not the paper's): once the passes reach their fixed point, virtual workers are handed
   from the worker that carries the day's peak window to where the peak excess falls most, or
   swapped with one of a less loaded worker (``virtual_workers.hold_windows``,
   ``routeplan.planning.windows``), each step taking at least 2 % of the busiest window's fair
   share off the peak: workers whose units peak at the same hour share less.

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
from typing import Any, ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.keyrouting.moves import UNKNOWN, MoveLedger, usable_current
from routeplan.planning.keyrouting.porc import hot_key_pieces, place_hot_key, place_whole
from routeplan.planning.keyrouting.virtual_workers import (
    PAIRINGS,
    LedgerHandovers,
    dealt_owners,
    fair_share,
    hold_windows,
    pair_busy_idle,
    pair_fcfs_rounds,
    proportional_counts,
)
from routeplan.planning.registry import register

_EPS = 1e-12
_PASSES = 8  # planning passes on a plan's own result, at most (``ConsistentGrouping.plan``)


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

    @staticmethod
    def kept_home(state: Mapping[str, Any], groups: Sequence[int]) -> dict[str, Any]:
        """``state`` with ``groups`` outside any virtual worker (-1): they stay on the worker
        they were on, and a later plan that can afford it places them again."""
        found = dict(state)
        if "key_group_virtual_worker" in found:
            by_group = list(found["key_group_virtual_worker"])
            for g in groups:
                by_group[g] = -1
            found["key_group_virtual_worker"] = by_group
        return found

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
        republishes nothing. Passes that come back to the current table's routing stop there:
        coarse loads (a quiet hour, whole key groups far above the ε slack) can make passes
        cycle, and the current table is then as good as the cycle offers. Moves and metrics are
        against ``current``. With budget limits one pass, priced against ``current``: a later
        plan goes on from there. The day's windows are held once, by a last pass from the fixed
        point (in the one pass with budget limits)."""
        windows = loads.key_group_windows is not None
        limited = bool(budget.limits())
        first = plan = self._plan_once(loads, current, workers, budget, windows and limited)
        if limited:
            return first
        for _ in range(_PASSES):
            if current is not None and plan.table.same_routing(current):
                break  # back where it started: nothing to republish
            again = self._plan_once(loads, plan.table, workers, budget)
            if again.table.same_routing(plan.table):
                break
            plan = again
        if windows:  # once, from the fixed point: the passes' pairing would undo it
            plan = self._plan_once(loads, plan.table, workers, budget, windows=True)
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
        windows: bool = False,
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
        per_worker = n_virtual / max(active.size, 1)  # α: a worker's capacity, in virtual workers
        self._place_units(
            layout, residual, hot, loads, current, capacity, previous_pieces, per_worker
        )
        layout.index_members()
        load = self._hand_over_leaving(layout, workers)
        self._pair(layout, workers, load)
        if windows:
            hold_windows(layout, loads, residual, workers)
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
        per_worker: float,
    ) -> None:
        """PoRC (§V-A, Alg. 1) for key groups and hot keys together, **in decreasing load**: a
        key group goes whole to its first salted choice with room (``place_whole``), a hot key
        fills the virtual workers of as few workers as its load allows (``place_hot_key``:
        ``⌈load / (α·capacity)⌉``, the worker-level need), so the heavy units take the empty
        virtual workers and the light ones fill the gaps.

        With a previous state, key groups keep their virtual worker and hot keys their pieces
        (when their workers are the current table's and number the worker-level need, or one
        more — the ε slack —, or as many as when they were placed while that need is unchanged);
        only the overflow of workers over their bound (``_worker_excess``), taken from
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
            if old is None:
                continue
            need = hot_key_pieces(amounts[key], capacity * per_worker)
            spread = len({int(layout.owner[vw]) for vw, _ in old})
            if need <= spread <= need + 1 or (
                spread > need == self._need_when_placed(key, placed_on, vw_load.size, per_worker)
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
            choice = place_whole(f"g{g}", amount, vw_load, bound, self.max_salt, layout.owner)
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

    def _need_when_placed(
        self, key: str, placed_on: LoadSnapshot | None, n_virtual: int, per_worker: float
    ) -> int:
        """How many workers ``key`` needed on the loads its current pieces were placed on (0
        when unknown). A key placed on more workers than it needed (no salted choice had room
        for the rest, which then filled the spare room of several) keeps them while its need is
        unchanged: placing it again would only churn."""
        if placed_on is None or key not in placed_on.hot_key_load or placed_on.total <= 0:
            return 0
        capacity = (1 + self.epsilon) * placed_on.total / n_virtual
        return hot_key_pieces(float(placed_on.hot_key_load[key]), capacity * per_worker)

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
        """``place_hot_key`` for one key, on the virtual workers' current workers; a key whose
        workers would change beyond the budget keeps its current ones."""
        pieces = place_hot_key(
            key, amount, layout.vw_load, capacity, self.max_salt, bound, layout.owner
        )
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
        capacity = workers.capacities[positions]
        bound = (1 + self.epsilon) * fair_share(load, capacity)
        pair(
            owner,
            load,
            layout.vw_load,
            capacity,
            self.theta_busy,
            self.theta_idle,
            LedgerHandovers(layout, positions, load, bound),
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
