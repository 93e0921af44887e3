"""Online key-routing schemes: each routes one message at a time, as sources do (papers 000,
001, 003).

The interface between the simulator and the strategies is declared, not read off attributes:

* every online scheme is a subclass of ``OnlineScheme`` decorated with ``@online_form``, which
  reads its ``strategy_class: ClassVar[type]`` — the registered key-routing strategy class whose
  online form it is (``KeyGrouping``, ``ConsistentGrouping``, …) — and files the scheme in
  ``ONLINE_SCHEMES`` under that strategy's registered name;
* a scheme is built by ``from_strategy(strategy, setup)`` from the typed, immutable strategy
  value (``get_strategy(name, **params)``) and the ``Setup`` every scheme may know; it takes the
  strategy's fields it needs (``ConsistentGrouping.virtual_workers_per_worker`` …) as typed
  constructor arguments, so a renamed or retyped field breaks here, at build time, not mid-run;
* ``route(keys, start)`` routes a block of messages, ``end_slot(capacity, queue)`` is the feedback
  at the end of a time slot, ``moves`` counts reconfigurations.

``ONLINE_SCHEMES`` holds exactly the key-routing strategies with an online form in the papers:
``kg``, ``sg``, ``potc``, ``pkg`` (paper 003 §3, §6.2 Q4; paper 000 §III-D), ``dchoices`` (ours),
``porc``, ``chbl``, ``cg`` (paper 000 Alg. 1, §III-C, §V) and ``ring`` (paper 001 §4). The
``reassign`` strategies (``flux``, ``milp``, ``albic``) and the bin packers have none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

import numpy as np

from routeplan.model.hashing import (
    DEFAULT_SEED,
    hash_choices,
    hash_choices_many,
    key_hashes,
    salted_choice,
)
from routeplan.planning.keyrouting.bounded_loads import (
    ConsistentHashingBoundedLoads,
    PowerOfRandomChoices,
)
from routeplan.planning.keyrouting.consistent_grouping import ConsistentGrouping
from routeplan.planning.keyrouting.key_grouping import KeyGrouping
from routeplan.planning.keyrouting.partial_key_grouping import (
    DChoices,
    PartialKeyGrouping,
    head_choices,
)
from routeplan.planning.keyrouting.ring import HashRing, TokenRing, redistribute, triggered
from routeplan.planning.keyrouting.shuffle import PowerOfTwoChoices, ShuffleGrouping
from routeplan.planning.keyrouting.virtual_workers import (
    CountedHandovers,
    SignalQueues,
    dealt_owners,
    pair_busy_idle,
    pair_fcfs,
    proportional_counts,
)

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
    slot (busy/idle signals, queue lengths). ``moves`` counts reconfigurations. Subclasses
    declare ``strategy_class`` and build themselves in ``from_strategy``.
    """

    strategy_class: ClassVar[type]
    moves = 0

    def __init__(self, setup: Setup) -> None:
        self.setup = setup

    @classmethod
    def from_strategy(cls, strategy: object, setup: Setup) -> OnlineScheme:
        """The scheme of ``strategy`` (an instance of ``strategy_class``) on ``setup``."""
        return cls(setup)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        raise NotImplementedError

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        """Default: the scheme ignores feedback."""


# the online scheme of each key-routing strategy name (filled by ``online_form``)
ONLINE_SCHEMES: dict[str, type[OnlineScheme]] = {}

_Scheme = TypeVar("_Scheme", bound=type[OnlineScheme])


def online_form(cls: _Scheme) -> _Scheme:
    """Class decorator: file ``cls`` in ``ONLINE_SCHEMES`` as the online form of its
    ``strategy_class`` (under the name that class is registered as)."""
    name = cls.strategy_class.name
    if name in ONLINE_SCHEMES:
        raise ValueError(f"two online forms of strategy {name!r}")
    ONLINE_SCHEMES[name] = cls
    return cls


def online_scheme(strategy: object, setup: Setup) -> OnlineScheme:
    """The online scheme of a key-routing ``strategy`` value; ValueError when it has none."""
    name = getattr(type(strategy), "name", type(strategy).__name__)
    scheme = ONLINE_SCHEMES.get(name)
    if scheme is None or not isinstance(strategy, scheme.strategy_class):
        known = ", ".join(ONLINE_SCHEMES)
        raise ValueError(f"no online form of strategy {name!r}; known: {known}")
    return scheme.from_strategy(strategy, setup)


class PerSource(OnlineScheme):
    """A scheme whose sources decide independently on local state: each source's messages of a
    block go through ``route_source`` in one tight loop."""

    def __init__(self, setup: Setup, bins: int | None = None) -> None:
        super().__init__(setup)
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


@online_form
class KeyGroupingOnline(OnlineScheme):
    """``murmur3(key) mod W`` (paper 003 §3 "single choice")."""

    strategy_class = KeyGrouping

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.worker = (key_hashes(setup.names, setup.seed) % np.uint64(setup.workers)).astype(
            np.int64
        )

    @classmethod
    def from_strategy(cls, strategy: KeyGrouping, setup: Setup) -> KeyGroupingOnline:
        return cls(setup)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]


@online_form
class ShuffleGroupingOnline(OnlineScheme):
    """Round robin per source, source ``s`` starting at worker ``s`` (paper 003 §2.1)."""

    strategy_class = ShuffleGrouping

    @classmethod
    def from_strategy(cls, strategy: ShuffleGrouping, setup: Setup) -> ShuffleGroupingOnline:
        return cls(setup)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        i = start + np.arange(keys.size)
        s = self.setup.sources
        return (i % s + i // s) % self.setup.workers


@online_form
class PartialKeyGroupingOnline(PerSource):
    """Greedy-d over the key's ``d`` independent hash choices by local load (paper 003 §3, §5);
    ``distinct=True`` (ours) makes the ``min(d, W)`` choices differ."""

    strategy_class = PartialKeyGrouping

    def __init__(self, setup: Setup, d: int = 2, distinct: bool = False) -> None:
        super().__init__(setup, setup.workers)
        d = min(d, setup.workers) if distinct else d
        choices = hash_choices_many(list(setup.names), d, setup.workers, setup.seed, distinct)
        self.d = d
        self.c0 = choices[:, 0].tolist()
        self.c1 = choices[:, min(1, d - 1)].tolist()
        self.all = [tuple(row) for row in choices.tolist()] if d > 2 else None

    @classmethod
    def from_strategy(cls, strategy: PartialKeyGrouping, setup: Setup) -> PartialKeyGroupingOnline:
        return cls(setup, strategy.d, strategy.distinct_choices)

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


@online_form
class DChoicesOnline(PerSource):
    """Ours: PKG whose head keys get ``d_i`` distinct choices (``head_choices``; the head-only
    idea after Nasir et al., ICDE 2016 — paper 003 Q4 raises one uniform ``d``, ``pkg`` with ``d``).

    The sources refresh their view of the head from the key counts seen so far — an exact
    stand-in for the heavy-hitter sketch each would keep — after 1k, 2k, 4k, … messages, then
    every ``HEAD_REFRESH``; between refreshes a key outside the head keeps its two choices."""

    strategy_class = DChoices
    HEAD_REFRESH = 10_000

    def __init__(self, setup: Setup, head_threshold: float | None, fill: float) -> None:
        super().__init__(setup, setup.workers)
        d = min(2, setup.workers)
        choices = hash_choices_many(list(setup.names), d, setup.workers, setup.seed, True)
        self.c0 = choices[:, 0].tolist()
        self.c1 = choices[:, min(1, d - 1)].tolist()
        self.head_threshold = head_threshold
        self.fill = fill
        self.count = np.zeros(len(setup.names), dtype=np.int64)
        self.head: dict[int, list[int]] = {}  # key id → its first d_i hash choices
        self.order: dict[int, list[int]] = {}  # key id → all W hash choices, once in the head

    @classmethod
    def from_strategy(cls, strategy: DChoices, setup: Setup) -> DChoicesOnline:
        return cls(setup, strategy.head_threshold, strategy.fill)

    def _refresh(self) -> None:
        n, seen = self.setup.workers, self.count.sum()
        threshold = 1 / (5 * n) if self.head_threshold is None else self.head_threshold
        head = np.flatnonzero(self.count >= threshold * seen).tolist()
        d = head_choices((self.count[head] / seen).tolist(), n, threshold, self.fill)
        self.head = {}
        for k, dk in zip(head, d, strict=True):
            if k not in self.order:
                self.order[k] = hash_choices(self.setup.names[k], n, n, self.setup.seed, True)
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


@online_form
class PowerOfTwoChoicesOnline(PerSource):
    """The less loaded of ``d`` workers drawn at random per message (paper 000 §III-D)."""

    strategy_class = PowerOfTwoChoices

    def __init__(self, setup: Setup, d: int = 2) -> None:
        super().__init__(setup)
        self.d = d

    @classmethod
    def from_strategy(cls, strategy: PowerOfTwoChoices, setup: Setup) -> PowerOfTwoChoicesOnline:
        return cls(setup, strategy.d)

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load = self.load[source]
        d, n = self.d, len(keys)
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


@online_form
class PowerOfRandomChoicesOnline(PerSource):
    """Paper 000 Alg. 1 over ``bins`` bins: the first of the key's salted choices
    ``H(k + 1), …, H(k + max_salt)`` below ``(1+ε)·m_t/bins``; when none is, the least loaded
    of them (as the batch ``porc_place``)."""

    strategy_class = PowerOfRandomChoices

    def __init__(
        self, setup: Setup, epsilon: float, max_salt: int, bins: int | None = None
    ) -> None:
        bins = setup.workers if bins is None else bins
        super().__init__(setup, bins)
        if max_salt < 1:
            raise ValueError("max_salt must be >= 1")
        self.bins = bins
        self.epsilon = epsilon
        self.max_salt = max_salt
        labels = (f"{name}#1" for name in setup.names)
        self.first = (key_hashes(labels, setup.seed) % np.uint64(bins)).astype(np.int64).tolist()
        self.later: dict[int, list[int]] = {}

    @classmethod
    def from_strategy(
        cls, strategy: PowerOfRandomChoices, setup: Setup
    ) -> PowerOfRandomChoicesOnline:
        return cls(setup, strategy.epsilon, strategy.max_salt)

    def _probe(self, k: int, load: list[int], cap: float) -> int:
        """Alg. 1's loop past the principal choice: salts 2 … ``max_salt`` (cached per key),
        else the least loaded of the key's choices."""
        seq = self.later.get(k)
        if seq is None:
            seq = self.later[k] = []
        for v in seq:
            if load[v] < cap:
                return v
        name, seed = self.setup.names[k], self.setup.seed
        for salt in range(len(seq) + 2, self.max_salt + 1):
            v = salted_choice(name, salt, self.bins, seed)
            seq.append(v)
            if load[v] < cap:
                return v
        return min([self.first[k], *seq], key=load.__getitem__)

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, first, probe = self.load[source], self.first, self._probe
        factor = (1 + self.epsilon) / self.bins
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


@online_form
class BoundedRingOnline(PerSource):
    """Consistent hashing with bounded loads: clockwise to the first worker below the bound."""

    strategy_class = ConsistentHashingBoundedLoads

    def __init__(self, setup: Setup, epsilon: float, tokens_per_worker: int) -> None:
        super().__init__(setup, setup.workers)
        self.epsilon = epsilon
        tokens = dict.fromkeys((str(w) for w in range(setup.workers)), tokens_per_worker)
        ring = HashRing.build(tokens, setup.seed)
        self.owner = ring.owners.tolist()  # ring names are "0" … "W-1" in order
        self.start = ring.first_token(key_hashes(setup.names, setup.seed)).tolist()

    @classmethod
    def from_strategy(
        cls, strategy: ConsistentHashingBoundedLoads, setup: Setup
    ) -> BoundedRingOnline:
        return cls(setup, strategy.epsilon, strategy.tokens_per_worker)

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, owner, start = self.load[source], self.owner, self.start
        tokens = len(owner)
        factor = (1 + self.epsilon) / self.setup.workers
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


@online_form
class ConsistentGroupingOnline(OnlineScheme):
    """PoRC onto ``α·W`` virtual workers; busy/idle pairing at every slot end (paper 000 §V-B).

    Virtual workers start evenly dealt (§V-B: "CG initializes with the same number of virtual
    workers for each worker"); at a slot end each worker compares the load it received in the
    slot with its fair share (θ_b, θ_i) and signals busy or idle; the sources queue the signals
    first come, first served and move one virtual worker from each busy worker they can pair
    with an idle one (``virtual_workers.pair_fcfs``; unpaired workers stay queued). With
    ``pairing="exact"``: our variant, at most one move per busy worker and slot, chosen by
    exact ratios (``virtual_workers.pair_busy_idle``)."""

    strategy_class = ConsistentGrouping

    def __init__(self, setup: Setup, strategy: ConsistentGrouping) -> None:
        super().__init__(setup)
        self.virtual = strategy.virtual_workers_per_worker * setup.workers
        self.theta_busy = strategy.theta_busy
        self.theta_idle = strategy.theta_idle
        self.porc = PowerOfRandomChoicesOnline(
            setup, strategy.epsilon, strategy.max_salt, self.virtual
        )
        self.owner = dealt_owners(proportional_counts(np.ones(setup.workers), self.virtual))
        self.slot = np.zeros(self.virtual)
        self.pairing = strategy.pairing
        self.queues = SignalQueues()

    @classmethod
    def from_strategy(cls, strategy: ConsistentGrouping, setup: Setup) -> ConsistentGroupingOnline:
        return cls(setup, strategy)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        vw = self.porc.route(keys, start)
        self.slot += np.bincount(vw, minlength=self.virtual)
        return self.owner[vw]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        load = np.bincount(self.owner, weights=self.slot, minlength=self.setup.workers)
        share = load.sum() * capacity / capacity.sum()
        if self.pairing == "fcfs":
            if load.sum():
                self.queues.receive(load / share, self.theta_busy, self.theta_idle)
                self.moves += pair_fcfs(
                    self.owner, load, self.slot, self.queues, CountedHandovers(np.inf)
                )
            self.slot[:] = 0
            return
        busy = int(np.sum(load >= self.theta_busy * share)) if load.sum() else 0
        if busy:
            before = self.owner.copy()
            pair_busy_idle(
                self.owner,
                load,
                self.slot,
                capacity,
                self.theta_busy,
                self.theta_idle,
                CountedHandovers(busy),
            )
            self.moves += int(np.sum(before != self.owner))
        self.slot[:] = 0


@online_form
class TokenRingOnline(OnlineScheme):
    """Paper 001: keys on the token ring; at a slot end the trigger on queue lengths and one
    round of halving or doubling for the longest queue (each worker at most ``max_rounds``)."""

    strategy_class = TokenRing

    def __init__(self, setup: Setup, strategy: TokenRing) -> None:
        super().__init__(setup)
        self.method = strategy.method
        self.tau = strategy.tau
        self.max_rounds = strategy.max_rounds
        self.names = [str(w) for w in range(setup.workers)]
        self.tokens = strategy.initial(self.names)
        self.hashes = key_hashes(setup.names, setup.seed)
        self.rounds = [0] * setup.workers
        self._remap()

    @classmethod
    def from_strategy(cls, strategy: TokenRing, setup: Setup) -> TokenRingOnline:
        return cls(setup, strategy)

    def _remap(self) -> None:
        ring = HashRing.build(self.tokens, self.setup.seed)  # names "0" … "W-1" in order
        self.worker = ring.lookup(self.hashes)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        x = triggered(queue, self.tau)
        if x is None or self.rounds[x] >= self.max_rounds:
            return
        if redistribute(self.tokens, self.names[x], self.method):
            self.rounds[x] += 1
            self.moves += 1
            self._remap()
