"""``porc`` Power of Random Choices and ``chbl`` consistent hashing with bounded loads.

Both bound every worker at ``(1 + ε)`` times its fair share of the load (paper 000 §V-A, §III-C):

* **PoRC** (paper 000 Alg. 1) sends a unit to the first of its salted hash choices
  ``H(j + 1), H(j + 2), …`` with spare capacity; a heavy key overflows to its later choices.
* **CH** (Mirrokni et al., paper 000 §III-C "Consistent Hashing with Bounded Load") sends a unit
  to the first worker with spare capacity clockwise on a Murmur3 ring where each worker holds
  ``tokens_per_worker`` tokens (paper 000 §VII: 10 per worker, ε = 0.01); a heavy key
  overflows to the next workers on the ring.

Batch tables: key groups are placed whole, in decreasing load, by the rule above, with each
worker's bound ``(1 + ε) · total · c_w / Σ c`` (capacity-aware, the planner knows capacities); a
hot key heavier than ``hot_key_fraction`` of the smallest bound is routed on its own and split
over its choices (PoRC: ``porc_split``; CH: the next workers clockwise), filling their spare
capacity — the parts the online scheme's overflow would send to each. PoRC on *virtual* workers
mapped to workers by capacity is ``cg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from routeplan.model.hashing import key_hash
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.keyrouting.porc import porc_place, porc_split
from routeplan.planning.keyrouting.ring import HashRing
from routeplan.planning.registry import register

_EPS = 1e-12


def check_bounded(epsilon: float, hot_key_fraction: float) -> None:
    """The checks ``porc`` and ``chbl`` share: ``ε ≥ 0`` and a hot-key fraction in (0, 1]."""
    if epsilon < 0:
        raise ValueError("epsilon must be >= 0")
    if not 0 < hot_key_fraction <= 1:
        raise ValueError("hot_key_fraction must be in (0, 1]")


class Placer(Protocol):
    """How one plan of a bounded scheme places units on workers (built per plan, never stored:
    the strategy itself stays unchanged)."""

    def place(self, unit: str, amount: float, load: np.ndarray, bound: np.ndarray) -> int:
        """The worker of a whole unit (adds ``amount`` to ``load``)."""
        ...

    def split(
        self, key: str, amount: float, load: np.ndarray, bound: np.ndarray
    ) -> list[tuple[int, float]]:
        """A hot key's ``(worker, part)`` pieces (adds them to ``load``)."""
        ...


class _BoundedPlanner:
    """Shared skeleton: bounds, hot keys routed on their own, groups in decreasing load.

    Subclasses are frozen dataclasses with ``epsilon`` and ``hot_key_fraction`` fields and a
    ``placer(names, seed)`` giving the per-plan ``Placer``."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset()
    name: ClassVar[str]
    epsilon: float
    hot_key_fraction: float

    def placer(self, names: Sequence[str], seed: int) -> Placer:
        raise NotImplementedError

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        active = workers.active
        names = [w.name for w in active]
        capacity = np.array([w.capacity for w in active])
        total = loads.total
        bound = (
            (1 + self.epsilon) * total * capacity / capacity.sum()
            if total > 0
            else np.full(len(active), np.inf)
        )
        placer = self.placer(names, loads.hash_seed)
        hot = sorted(
            (k for k, v in loads.hot_key_load.items() if v > self.hot_key_fraction * bound.min()),
            key=lambda k: (-loads.hot_key_load[k], k),
        )
        residual = loads.residual_key_group_load(hot)
        load = np.zeros(len(active))
        owner = np.zeros(loads.num_key_groups, dtype=np.int64)
        for g in np.argsort(-residual, kind="stable"):
            owner[g] = placer.place(f"g{g}", float(residual[g]), load, bound)
        hot_keys = {}
        for key in hot:
            amount = loads.hot_key_load[key]
            pieces = placer.split(key, amount, load, bound)
            hot_keys[key] = tuple((names[w], part / amount) for w, part in pieces)
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=tuple(names[o] for o in owner),
            hot_keys=hot_keys,
            params=parameters(self),
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)


@dataclass(frozen=True)
class SaltedPlacer:
    """PoRC's placement: the first salted choice with room (paper 000 Alg. 1)."""

    max_salt: int

    def place(self, unit: str, amount: float, load: np.ndarray, bound: np.ndarray) -> int:
        return porc_place(unit, amount, load, bound, self.max_salt)

    def split(
        self, key: str, amount: float, load: np.ndarray, bound: np.ndarray
    ) -> list[tuple[int, float]]:
        return porc_split(key, amount, load, bound, 4 * self.max_salt)


@register("porc")
@dataclass(frozen=True)
class PowerOfRandomChoices(_BoundedPlanner):
    """PoRC straight onto workers (paper 000 Alg. 1, ε-bounded)."""

    epsilon: float = 0.01
    hot_key_fraction: float = 0.5
    max_salt: int = 64

    def __post_init__(self) -> None:
        check_bounded(self.epsilon, self.hot_key_fraction)
        if self.max_salt < 1:
            raise ValueError("max_salt must be >= 1")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "hot_key_fraction", float(self.hot_key_fraction))
        object.__setattr__(self, "max_salt", int(self.max_salt))

    def placer(self, names: Sequence[str], seed: int) -> Placer:
        return SaltedPlacer(self.max_salt)


@dataclass(frozen=True)
class RingPlacer:
    """CH's placement: clockwise on the ring to the first worker with room (Mirrokni et al.)."""

    ring: HashRing
    seed: int

    def clockwise(self, unit: str) -> np.ndarray:
        """Workers in ring order from the unit's position (each worker once)."""
        start = int(self.ring.first_token(np.array([key_hash(unit, self.seed)]))[0])
        walk = np.roll(self.ring.owners, -start)
        _, first = np.unique(walk, return_index=True)
        return walk[np.sort(first)]

    def place(self, unit: str, amount: float, load: np.ndarray, bound: np.ndarray) -> int:
        order = self.clockwise(unit)
        room = load[order] + amount <= bound[order] + _EPS
        w = int(order[np.argmax(room)]) if room.any() else int(np.argmin(load / bound))
        load[w] += amount
        return w

    def split(
        self, key: str, amount: float, load: np.ndarray, bound: np.ndarray
    ) -> list[tuple[int, float]]:
        pieces: dict[int, float] = {}
        remaining = amount
        for w in self.clockwise(key):
            if remaining <= _EPS * max(amount, 1.0):
                break
            take = min(bound[w] - load[w], remaining)
            if take > _EPS * max(amount, 1.0):
                load[w] += take
                pieces[int(w)] = take
                remaining -= take
        if remaining > _EPS * max(amount, 1.0) or not pieces:
            w = int(np.argmin(load / bound))
            load[w] += remaining
            pieces[w] = pieces.get(w, 0.0) + remaining
        return sorted(pieces.items())


@register("chbl")
@dataclass(frozen=True)
class ConsistentHashingBoundedLoads(_BoundedPlanner):
    """Consistent hashing with bounded loads (Mirrokni et al.; paper 000 §III-C, "CH").

    ``tokens_per_worker``: ring tokens of each worker (formerly ``virtual_workers_per_worker``,
    still accepted by ``get_strategy`` with a ``DeprecationWarning``)."""

    renamed: ClassVar[dict[str, str]] = {"virtual_workers_per_worker": "tokens_per_worker"}

    epsilon: float = 0.01
    tokens_per_worker: int = 10
    hot_key_fraction: float = 0.5

    def __post_init__(self) -> None:
        check_bounded(self.epsilon, self.hot_key_fraction)
        if self.tokens_per_worker < 1:
            raise ValueError("tokens_per_worker must be >= 1")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "hot_key_fraction", float(self.hot_key_fraction))
        object.__setattr__(self, "tokens_per_worker", int(self.tokens_per_worker))

    def placer(self, names: Sequence[str], seed: int) -> Placer:
        return RingPlacer(HashRing.build(dict.fromkeys(names, self.tokens_per_worker), seed), seed)
