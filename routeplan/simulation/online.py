"""Online key-routing schemes: each routes one message at a time, as sources do (papers 000,
001, 003)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routeplan.model.hashing import (
    DEFAULT_SEED,
    hash_choices,
    hash_choices_many,
    key_hashes,
    salted_choice,
)
from routeplan.model.plan import Budget
from routeplan.planning.keyrouting.consistent_grouping import proportional_counts
from routeplan.planning.keyrouting.partial_key_grouping import head_choices
from routeplan.planning.keyrouting.ring import HashRing, redistribute, triggered

# --------------------------------------------------------------------------------------------
# online schemes


@dataclass
class Setup:
    """What every online scheme may know: the keys, how many workers and sources (not the
    capacities: they reach a scheme only as feedback through ``end_slot``)."""

    names: Sequence[str]
    workers: int
    sources: int
    seed: int = DEFAULT_SEED
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))


class OnlineScheme:
    """One key-routing scheme replayed message by message.

    ``route(keys, start)`` returns the worker of messages ``start … start + len(keys) − 1``
    (source ``i mod S`` routes message ``i``); ``end_slot`` is the feedback at the end of a time
    slot (busy/idle signals, queue lengths). ``moves`` counts reconfigurations.
    """

    moves = 0

    def __init__(self, strategy: Any, setup: Setup) -> None:
        self.strategy = strategy
        self.setup = setup

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        raise NotImplementedError

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        """Default: the scheme ignores feedback."""


class PerSource(OnlineScheme):
    """A scheme whose sources decide independently on local state: each source's messages of a
    block go through ``route_source`` in one tight loop."""

    def __init__(self, strategy: Any, setup: Setup, bins: int | None = None) -> None:
        super().__init__(strategy, setup)
        bins = setup.workers if bins is None else bins
        self.load = [[0] * bins for _ in range(setup.sources)]
        self.sent = [0] * setup.sources

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        out = np.empty(keys.size, dtype=np.int64)
        sources = self.setup.sources
        for s in range(sources):
            first = (s - start) % sources
            mine = keys[first::sources]
            if mine.size:
                out[first::sources] = self.route_source(s, mine.tolist())
                self.sent[s] += mine.size
        return out

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        raise NotImplementedError


class KeyGroupingOnline(OnlineScheme):
    """``murmur3(key) mod W`` (paper 003 §3 "single choice")."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.worker = (key_hashes(setup.names, setup.seed) % np.uint64(setup.workers)).astype(
            np.int64
        )

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]


class ShuffleGroupingOnline(OnlineScheme):
    """Round robin per source, source ``s`` starting at worker ``s`` (paper 003 §2.1)."""

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        i = start + np.arange(keys.size)
        s = self.setup.sources
        return (i % s + i // s) % self.setup.workers


class PartialKeyGroupingOnline(PerSource):
    """Greedy-d over the key's hash choices by local load (paper 003 §3, §5)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup, setup.workers)
        d = min(getattr(strategy, "d", 2), setup.workers)
        choices = hash_choices_many(list(setup.names), d, setup.workers, setup.seed)
        self.d = d
        self.c0 = choices[:, 0].tolist()
        self.c1 = choices[:, min(1, d - 1)].tolist()
        self.all = [tuple(row) for row in choices.tolist()] if d > 2 else None

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load = self.load[source]
        out = [0] * len(keys)
        if self.all is None:
            c0, c1 = self.c0, self.c1
            for i, k in enumerate(keys):
                a = c0[k]
                b = c1[k]
                w = a if load[a] <= load[b] else b
                load[w] += 1
                out[i] = w
        else:
            every, get = self.all, load.__getitem__
            for i, k in enumerate(keys):
                w = min(every[k], key=get)
                load[w] += 1
                out[i] = w
        return out


class DChoicesOnline(PartialKeyGroupingOnline):
    """PKG whose head keys get ``d_i`` choices (paper 003 Q4, ``head_choices``).

    The sources refresh their view of the head from the key counts seen so far — an exact
    stand-in for the heavy-hitter sketch each would keep — after 1k, 2k, 4k, … messages, then
    every ``HEAD_REFRESH``; between refreshes a key outside the head keeps its two choices."""

    HEAD_REFRESH = 10_000

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.count = np.zeros(len(setup.names), dtype=np.int64)
        self.head: dict[int, list[int]] = {}  # key id → its first d_i hash choices
        self.order: dict[int, list[int]] = {}  # key id → all W hash choices, once in the head

    def _refresh(self) -> None:
        n, seen = self.setup.workers, self.count.sum()
        s = self.strategy
        threshold = 1 / (5 * n) if s.head_threshold is None else s.head_threshold
        head = np.flatnonzero(self.count >= threshold * seen).tolist()
        d = head_choices((self.count[head] / seen).tolist(), n, threshold, s.fill)
        self.head = {}
        for k, dk in zip(head, d, strict=True):
            if k not in self.order:
                self.order[k] = hash_choices(self.setup.names[k], n, n, self.setup.seed)
            self.head[k] = self.order[k][:dk]

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        out = np.empty(keys.size, dtype=np.int64)
        done = 0
        while done < keys.size:
            seen = start + done
            step = min(max(seen, 1_000), self.HEAD_REFRESH)
            part = keys[done : done + step]
            out[done : done + part.size] = super().route(part, seen)
            self.count += np.bincount(part, minlength=self.count.size)
            done += part.size
            self._refresh()
        return out

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, c0, c1, head = self.load[source], self.c0, self.c1, self.head
        get = load.__getitem__
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            choices = head.get(k)
            if choices is None:
                a = c0[k]
                b = c1[k]
                w = a if load[a] <= load[b] else b
            else:
                w = min(choices, key=get)
            load[w] += 1
            out[i] = w
        return out


class PowerOfTwoChoicesOnline(PerSource):
    """The less loaded of ``d`` workers drawn at random per message (paper 000 §III-D)."""

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load = self.load[source]
        d, n = self.strategy.d, len(keys)
        draws = self.setup.rng.integers(0, self.setup.workers, size=(d, n))
        out = [0] * n
        if d == 2:
            first, second = draws[0].tolist(), draws[1].tolist()
            for i in range(n):
                a = first[i]
                b = second[i]
                w = a if load[a] <= load[b] else b
                load[w] += 1
                out[i] = w
        else:
            get = load.__getitem__
            for i, pick in enumerate(draws.T.tolist()):
                w = min(pick, key=get)
                load[w] += 1
                out[i] = w
        return out


class PowerOfRandomChoicesOnline(PerSource):
    """Paper 000 Alg. 1 over ``bins`` bins: the first salted choice below ``(1+ε)·m_t/bins``."""

    def __init__(self, strategy: Any, setup: Setup, bins: int | None = None) -> None:
        bins = setup.workers if bins is None else bins
        super().__init__(strategy, setup, bins)
        self.bins = bins
        labels = (f"{name}#1" for name in setup.names)
        self.first = (key_hashes(labels, setup.seed) % np.uint64(bins)).astype(np.int64).tolist()
        self.later: dict[int, list[int]] = {}
        self.max_salt = max(64, 4 * bins)

    def _probe(self, k: int, load: list[int], cap: float) -> int:
        """Alg. 1's loop past the principal choice: salts 2, 3, … (cached per key)."""
        seq = self.later.get(k)
        if seq is None:
            seq = self.later[k] = []
        for v in seq:
            if load[v] < cap:
                return v
        name, seed = self.setup.names[k], self.setup.seed
        for salt in range(len(seq) + 2, self.max_salt + 2):
            v = salted_choice(name, salt, self.bins, seed)
            seq.append(v)
            if load[v] < cap:
                return v
        return min(range(self.bins), key=load.__getitem__)

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, first, probe = self.load[source], self.first, self._probe
        factor = (1 + self.strategy.epsilon) / self.bins
        t = self.sent[source]
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            t += 1
            cap = t * factor
            v = first[k]
            if load[v] >= cap:
                v = probe(k, load, cap)
            load[v] += 1
            out[i] = v
        return out


class BoundedRingOnline(PerSource):
    """Consistent hashing with bounded loads: clockwise to the first worker below the bound."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup, setup.workers)
        ring = HashRing.build({str(w): strategy.tokens for w in range(setup.workers)}, setup.seed)
        self.owner = ring.owners.tolist()  # ring names are "0" … "W-1" in order
        self.start = ring.first_token(key_hashes(setup.names, setup.seed)).tolist()

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, owner, start = self.load[source], self.owner, self.start
        tokens = len(owner)
        factor = (1 + self.strategy.epsilon) / self.setup.workers
        t = self.sent[source]
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            t += 1
            cap = t * factor
            j = start[k]
            w = owner[j]
            while load[w] >= cap:
                j = j + 1 if j + 1 < tokens else 0
                w = owner[j]
            load[w] += 1
            out[i] = w
        return out


class ConsistentGroupingOnline(OnlineScheme):
    """PoRC onto ``α·W`` virtual workers; busy/idle pairing at every slot end (paper 000 §V-B).

    Virtual workers start evenly dealt (§V-B: "CG initializes with the same number of virtual
    workers for each worker"); at a slot end each worker compares the load it received in the
    slot with its fair share (θ_b, θ_i) and the sources move virtual workers from busy to idle
    workers, at most one per busy worker (``ConsistentGrouping.pair_busy_idle``)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.virtual = strategy.alpha * setup.workers
        self.porc = PowerOfRandomChoicesOnline(strategy, setup, self.virtual)
        counts = proportional_counts(np.ones(setup.workers), self.virtual)
        self.owner = np.array(
            [w for r in range(counts.max()) for w in range(setup.workers) if counts[w] > r],
            dtype=np.int64,
        )
        self.slot = np.zeros(self.virtual)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        vw = self.porc.route(keys, start)
        self.slot += np.bincount(vw, minlength=self.virtual)
        return self.owner[vw]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        load = np.bincount(self.owner, weights=self.slot, minlength=self.setup.workers)
        share = load.sum() * capacity / capacity.sum()
        busy = int(np.sum(load >= self.strategy.theta_busy * share)) if load.sum() else 0
        if busy:
            before = self.owner.copy()
            self.strategy.pair_busy_idle(
                self.owner,
                load,
                self.slot,
                np.ones(self.virtual, dtype=np.int64),
                capacity,
                Budget(max_moves=busy),
            )
            self.moves += int(np.sum(before != self.owner))
        self.slot[:] = 0


class TokenRingOnline(OnlineScheme):
    """Paper 001: keys on the token ring; at a slot end the trigger on queue lengths and one
    round of halving or doubling for the longest queue (each worker at most ``max_rounds``)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.names = [str(w) for w in range(setup.workers)]
        self.tokens = strategy.initial(self.names)
        self.hashes = key_hashes(setup.names, setup.seed)
        self.rounds = [0] * setup.workers
        self._remap()

    def _remap(self) -> None:
        ring = HashRing.build(self.tokens, self.setup.seed)  # names "0" … "W-1" in order
        self.worker = ring.lookup(self.hashes)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        x = triggered(queue, self.strategy.tau)
        if x is None or self.rounds[x] >= self.strategy.max_rounds:
            return
        if redistribute(self.tokens, self.names[x], self.strategy.method):
            self.rounds[x] += 1
            self.moves += 1
            self._remap()


ONLINE: dict[str, Callable[[Any, Setup], OnlineScheme]] = {
    "kg": KeyGroupingOnline,
    "sg": ShuffleGroupingOnline,
    "potc": PowerOfTwoChoicesOnline,
    "pkg": PartialKeyGroupingOnline,
    "dchoices": DChoicesOnline,
    "porc": PowerOfRandomChoicesOnline,
    "chbl": BoundedRingOnline,
    "cg": ConsistentGroupingOnline,
    "ring": TokenRingOnline,
}
