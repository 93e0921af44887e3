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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from routeplan.model.hashing import salted_choice
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.registry import register

_EPS = 1e-12


def porc_place(
    unit: str,
    load: float,
    virtual_worker_load: np.ndarray,
    capacity: float | np.ndarray,
    max_salt: int,
) -> int:
    """Paper 000 Alg. 1 for one unit: first salted choice with room for ``load``.

    ``capacity`` is one bound for every bin or one per bin (unequal workers). When none of
    ``max_salt`` choices has room, the least loaded of them is used (the unit is heavier than any
    spare capacity). Updates ``virtual_worker_load`` in place.
    """
    n = virtual_worker_load.size
    bound = np.broadcast_to(capacity, (n,))
    tried = []
    for salt in range(1, max_salt + 1):
        choice = salted_choice(unit, salt, n)
        if virtual_worker_load[choice] + load <= bound[choice] + _EPS:
            virtual_worker_load[choice] += load
            return choice
        tried.append(choice)
    choice = min(tried, key=lambda c: virtual_worker_load[c] / bound[c])
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


@register("cg")
class ConsistentGrouping:
    """Consistent Grouping (paper 000 §V) planning key groups and hot keys onto workers."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves", "max_migrated_load_share"})

    name = "cg"

    def __init__(
        self,
        virtual_workers_per_worker: int = 10,
        epsilon: float = 0.01,
        theta_busy: float = 1.03,
        theta_idle: float = 0.97,
        hot_key_fraction: float = 0.5,
        max_salt: int = 64,
    ) -> None:
        if virtual_workers_per_worker < 1:
            raise ValueError("virtual_workers_per_worker must be >= 1")
        if epsilon < 0:
            raise ValueError("epsilon must be >= 0")
        if not theta_idle <= 1.0 <= theta_busy:
            raise ValueError("need theta_idle <= 1 <= theta_busy")
        if not 0 < hot_key_fraction <= 1:
            raise ValueError("hot_key_fraction must be in (0, 1]")
        self.alpha = int(virtual_workers_per_worker)
        self.epsilon = float(epsilon)
        self.theta_busy = float(theta_busy)
        self.theta_idle = float(theta_idle)
        self.hot_key_fraction = float(hot_key_fraction)
        self.max_salt = int(max_salt)

    def params(self) -> dict[str, Any]:
        return {
            "virtual_workers_per_worker": self.alpha,
            "epsilon": self.epsilon,
            "theta_busy": self.theta_busy,
            "theta_idle": self.theta_idle,
            "hot_key_fraction": self.hot_key_fraction,
        }

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        state = self._previous_state(current, loads)
        active = [w.name for w in workers.active]
        n_virtual = len(state["virtual_worker_worker"]) if state else self.alpha * len(active)
        total = loads.total
        capacity = (1 + self.epsilon) * total / n_virtual if total > 0 else np.inf

        hot = sorted(
            (k for k, v in loads.hot_key_load.items() if v > self.hot_key_fraction * capacity),
            key=lambda k: (-loads.hot_key_load[k], k),
        )
        residual = loads.residual_key_group_load(hot)
        group_vw, vw_load = self._place_groups(residual, n_virtual, capacity, state)
        hot_pieces = {
            key: porc_split(key, loads.hot_key_load[key], vw_load, capacity, 4 * n_virtual)
            for key in hot
        }
        previous_owner = state["virtual_worker_worker"] if state else None
        vw_worker = self._assign_virtual_workers(
            vw_load, np.bincount(group_vw, minlength=n_virtual), workers, previous_owner, budget
        )
        hot_keys = {}
        for key, pieces in hot_pieces.items():
            weights: dict[str, float] = {}
            for vw, part in pieces:
                share = part / loads.hot_key_load[key]
                weights[vw_worker[vw]] = weights.get(vw_worker[vw], 0.0) + share
            hot_keys[key] = tuple(sorted(weights.items()))
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=tuple(vw_worker[v] for v in group_vw),
            hot_keys=hot_keys,
            params=self.params(),
            strategy_state={
                "virtual_worker_worker": list(vw_worker),
                "key_group_virtual_worker": group_vw.tolist(),
            },
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)

    @staticmethod
    def _previous_state(current: RoutingTable | None, loads: LoadSnapshot) -> Mapping[str, Any]:
        if current is None or current.strategy != "cg":
            return {}
        state = current.strategy_state
        groups = state.get("key_group_virtual_worker")
        owners = state.get("virtual_worker_worker")
        if not owners or groups is None or len(groups) != loads.num_key_groups:
            return {}
        if min(groups) < 0 or max(groups) >= len(owners):
            return {}
        return state

    def _place_groups(
        self,
        residual: np.ndarray,
        n_virtual: int,
        capacity: float,
        state: Mapping[str, Any],
    ) -> tuple[np.ndarray, np.ndarray]:
        """PoRC for key groups; with a previous state, only the overflow is placed again."""
        if state:
            group_vw = np.asarray(state["key_group_virtual_worker"], dtype=np.int64)
            vw_load = np.bincount(group_vw, weights=residual, minlength=n_virtual)
            pending = []
            for vw in np.flatnonzero(vw_load > capacity + _EPS):
                members = np.flatnonzero(group_vw == vw)
                for g in members[np.argsort(-residual[members], kind="stable")]:
                    if vw_load[vw] <= capacity + _EPS:
                        break
                    vw_load[vw] -= residual[g]
                    pending.append(int(g))
            pending_arr = np.asarray(pending, dtype=np.int64)
        else:
            group_vw = np.zeros(residual.size, dtype=np.int64)
            vw_load = np.zeros(n_virtual)
            pending_arr = np.arange(residual.size)
        for g in pending_arr[np.argsort(-residual[pending_arr], kind="stable")]:
            group_vw[g] = porc_place(f"g{g}", residual[g], vw_load, capacity, self.max_salt)
        return group_vw, vw_load

    def _assign_virtual_workers(
        self,
        vw_load: np.ndarray,
        vw_groups: np.ndarray,
        workers: Workers,
        previous_owner: Sequence[str] | None,
        budget: Budget,
    ) -> list[str]:
        active = workers.active
        names = [w.name for w in active]
        capacity = np.array([w.capacity for w in active])
        n_virtual = vw_load.size
        if previous_owner is None:
            counts = proportional_counts(capacity, n_virtual)
            # dealt round by round (w0, w1, …, w0, w1, …) so a worker's virtual workers spread
            owner = np.array(
                [w for r in range(counts.max()) for w in range(len(active)) if counts[w] > r],
                dtype=np.int64,
            )
        else:
            position = {name: i for i, name in enumerate(names)}
            owner = np.array([position.get(w, -1) for w in previous_owner], dtype=np.int64)

        load = np.zeros(len(active))
        for vw in np.flatnonzero(owner >= 0):
            load[owner[vw]] += vw_load[vw]
        # virtual workers of removed or draining workers move to the least loaded (mandatory)
        for vw in sorted(np.flatnonzero(owner < 0), key=lambda v: -vw_load[v]):
            target = int(np.argmin((load + vw_load[vw]) / capacity))
            owner[vw] = target
            load[target] += vw_load[vw]

        self.pair_busy_idle(owner, load, vw_load, vw_groups, capacity, budget)
        return [names[o] for o in owner]

    def pair_busy_idle(
        self,
        owner: np.ndarray,
        load: np.ndarray,
        vw_load: np.ndarray,
        vw_groups: np.ndarray,
        capacity: np.ndarray,
        budget: Budget,
    ) -> None:
        """Move virtual workers from busy to idle workers (FCFS pairing), in place.

        ``owner[v]`` is the worker of virtual worker ``v``, ``load`` the workers' loads and
        ``vw_groups[v]`` what moving ``v`` costs against ``budget.max_moves`` (key groups here;
        one per virtual worker in the simulator, which calls this once per time slot).
        """
        total = load.sum()
        if total <= 0:
            return
        share = total * capacity / capacity.sum()
        moved_groups, moved_load = 0, 0.0
        max_moves = budget.max_moves if budget.max_moves is not None else np.inf
        max_load = (
            budget.max_migrated_load_share * total
            if budget.max_migrated_load_share is not None
            else np.inf
        )
        for _ in range(owner.size * len(capacity)):
            ratio = load / share
            busy = [b for b in np.argsort(-ratio, kind="stable") if ratio[b] >= self.theta_busy]
            order = np.argsort(ratio, kind="stable")
            idle = [i for i in order if ratio[i] <= self.theta_idle]
            # §VI: failing an idle partner, any worker that is not overloaded may probe for more
            receivers = idle + [i for i in order if self.theta_idle < ratio[i] < self.theta_busy]
            best = None
            for b in busy:
                for i in receivers:
                    peak = max(ratio[b], ratio[i])
                    for vw in np.flatnonzero(owner == b):
                        if moved_groups + vw_groups[vw] > max_moves:
                            continue
                        if moved_load + vw_load[vw] > max_load + _EPS:
                            continue
                        after = max(
                            (load[b] - vw_load[vw]) / share[b], (load[i] + vw_load[vw]) / share[i]
                        )
                        if after < peak - _EPS and (best is None or after < best[0]):
                            best = (after, vw, b, i)
                    if best is not None:
                        break
                if best is not None:
                    break
            if best is None:
                return
            _, vw, b, i = best
            owner[vw] = i
            load[b] -= vw_load[vw]
            load[i] += vw_load[vw]
            moved_groups += int(vw_groups[vw])
            moved_load += float(vw_load[vw])
