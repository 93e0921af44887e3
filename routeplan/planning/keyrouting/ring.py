"""``ring``: a consistent-hash ring of tokens rebalanced by token halving or doubling (paper 001).

Paper 001 §4.2: worker ``i`` owns tokens ``token-{i}-{j}`` (here ``i`` is the worker's name), each
at ``murmur3(token)`` on a 2^32 ring; a key belongs to the owner of the first token clockwise from
``murmur3(key)``, found by binary search over the sorted tokens (``HashRing.lookup``). §4.1: when
``Q_max > Q_second · (1 + τ)`` the most loaded worker ``x`` gets relief — **halving** (every worker
starts with ``N = 2^k`` tokens; ``x`` drops the upper half of its tokens) or **doubling** (every
worker starts with one token; every worker but ``x`` doubles its tokens). §6.4: several rounds,
each worker triggering at most ``max_rounds`` of them.

Batch table: the ring places **key groups** (position ``murmur3(str(g))``), so the table's
``key_group_worker[g]`` is the ring's owner of group ``g`` and a producer routes with the Router
as for any table (``key → group → worker``); the tokens per worker live in ``strategy_state`` and
the next plan starts from them. ``Q`` is the worker's predicted load over its capacity. Rounds
that would break the budget (moves, migrated load) are not applied. No key is split (the ring
cannot help a single hot key: §4.2 "in the worst case the skew is related to a single key").

Budget (``moves.MoveLedger``): the starting ring itself may move key groups away from the current
table (a newcomer's tokens, a draining worker's groups, a current table of another strategy). When
it does more than the budget allows, the heaviest of those moves are made while the budget allows
and the other key groups stay on their current worker — listed in ``strategy_state`` as
``pinned_key_groups`` until a later plan can afford their move — and no round is applied; hot keys
the current table routes on their own stay so unless their return to their group is affordable.
Groups of workers no longer listed move whatever the budget (forced moves, reported).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from routeplan.model.hashing import DEFAULT_SEED, key_hash, key_hashes
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.keyrouting.moves import MoveLedger
from routeplan.planning.registry import register

METHODS = ("halving", "doubling")


@dataclass(frozen=True)
class HashRing:
    """Tokens of workers on a Murmur3 ring; ``owners[t]`` indexes ``names``."""

    names: tuple[str, ...]
    positions: np.ndarray  # sorted token positions (uint64)
    owners: np.ndarray  # worker index of each token, same order

    @classmethod
    def build(cls, tokens: Mapping[str, int], seed: int = DEFAULT_SEED) -> HashRing:
        """A ring where worker ``name`` holds ``tokens[name]`` tokens ``token-{name}-{j}``."""
        names = tuple(tokens)
        if not names or any(tokens[n] < 1 for n in names):
            raise ValueError("every worker on the ring needs at least one token")
        labels = [f"token-{n}-{j}" for n in names for j in range(tokens[n])]
        owner = np.repeat(np.arange(len(names)), [tokens[n] for n in names])
        pos = key_hashes(labels, seed)
        order = np.lexsort((np.arange(pos.size), pos))
        return cls(names, pos[order], owner[order])

    def first_token(self, hashes: np.ndarray) -> np.ndarray:
        """Index of the first token clockwise from each hash (binary search, wraps around)."""
        index = np.searchsorted(self.positions, np.asarray(hashes, dtype=np.uint64), side="left")
        index[index == self.positions.size] = 0
        return index

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Worker index owning each hash (paper 001 ``key_lookup``)."""
        return self.owners[self.first_token(hashes)]

    def lookup_key(self, key: str, seed: int = DEFAULT_SEED) -> str:
        return self.names[int(self.lookup(np.array([key_hash(key, seed)]))[0])]


def redistribute(tokens: dict[str, int], worker: str, method: str) -> bool:
    """Give ``worker`` relief in place (paper 001 §4.2); False when halving has run out."""
    if method == "halving":
        if tokens[worker] <= 1:
            return False
        tokens[worker] //= 2
    else:
        for name in tokens:
            if name != worker:
                tokens[name] *= 2
    return True


def triggered(queue: np.ndarray, tau: float) -> int | None:
    """Index of the worker to relieve when ``Q_max > Q_second · (1 + τ)`` (§4.1), else None."""
    if queue.size < 2:
        return None
    order = np.argsort(-queue, kind="stable")
    q_max, q_second = queue[order[0]], queue[order[1]]
    return int(order[0]) if q_max > q_second * (1 + tau) else None


def group_positions(num_key_groups: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Ring position of each key group: ``murmur3(str(g))``."""
    return key_hashes((str(g) for g in range(num_key_groups)), seed)


@register("ring")
@dataclass(frozen=True)
class TokenRing:
    """Consistent hashing with token halving or doubling (paper 001)."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves", "max_migrated_load_share"})

    method: str = "halving"
    tau: float = 0.2
    initial_tokens: int = 8
    max_rounds: int = 3

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}")
        if self.tau < 0:
            raise ValueError("tau must be >= 0")
        if self.initial_tokens < 1 or self.initial_tokens & (self.initial_tokens - 1):
            raise ValueError("initial_tokens must be a power of 2 (halving, §4.2)")
        if self.max_rounds < 0:
            raise ValueError("max_rounds must be >= 0")
        object.__setattr__(self, "tau", float(self.tau))
        object.__setattr__(self, "initial_tokens", int(self.initial_tokens))
        object.__setattr__(self, "max_rounds", int(self.max_rounds))

    def start_tokens(self) -> int:
        """Tokens per worker on a fresh ring: ``N`` for halving, one for doubling."""
        return self.initial_tokens if self.method == "halving" else 1

    def initial(self, names: Sequence[str], previous: Mapping[str, int] | None = None) -> dict:
        """Tokens for ``names``: the previous ring's where known; a newcomer gets the start count
        (halving) or the median of the others (doubling, so it is not drowned out)."""
        previous = {n: int(c) for n, c in (previous or {}).items() if n in names and c >= 1}
        fresh = self.start_tokens()
        if self.method == "doubling" and previous:
            fresh = int(np.median(list(previous.values())))
        return {n: previous.get(n, fresh) for n in names}

    @staticmethod
    def kept_home(state: Mapping[str, Any], groups: Sequence[int]) -> dict[str, Any]:
        """``state`` with ``groups`` pinned (``pinned_key_groups``): kept on the worker they
        were on until a later plan can afford their move."""
        pinned = sorted({*state.get("pinned_key_groups", ()), *map(int, groups)})
        return {**state, "pinned_key_groups": pinned}

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
        state = current.strategy_state if current is not None and current.strategy == "ring" else {}
        same = state.get("method") == self.method
        tokens = self.initial(names, state.get("tokens") if same else None)
        positions = group_positions(loads.num_key_groups, loads.hash_seed)

        def ledger_for(owner: np.ndarray) -> MoveLedger:
            """The moves of the table routing every group by the ring ``owner`` against current."""
            ledger = MoveLedger.build(loads, current, workers, budget)
            for w, name in enumerate(names):
                ledger.set_groups(np.flatnonzero(owner == w), name)
            for key in ledger.before_key:
                ledger.set_key(key, (name_of[owner[loads.hot_key_group(key)]],))
            return ledger

        name_of = np.asarray(names, dtype=object)
        owner = HashRing.build(tokens, loads.hash_seed).lookup(positions)
        ledger = ledger_for(owner)
        fits = ledger.fits_spent()
        rounds = dict.fromkeys(names, 0)
        applied = []
        for _ in range(self.max_rounds * len(names) if fits else 0):
            worker_load = np.bincount(owner, weights=loads.key_group_load, minlength=len(names))
            x = triggered(worker_load / capacity, self.tau)
            if x is None or rounds[names[x]] >= self.max_rounds:
                break
            trial = dict(tokens)
            if not redistribute(trial, names[x], self.method):
                break
            trial_owner = HashRing.build(trial, loads.hash_seed).lookup(positions)
            if not ledger_for(trial_owner).fits_spent():
                break
            tokens, owner = trial, trial_owner
            rounds[names[x]] += 1
            applied.append(names[x])
        group_worker = name_of[owner]
        pinned: list[int] = []
        hot_keys: dict[str, tuple[tuple[str, float], ...]] = {}
        if not fits:
            group_worker, pinned, hot_keys = self._settle(
                group_worker, loads, current, workers, budget
            )
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=tuple(group_worker),
            hot_keys=hot_keys,
            params=parameters(self),
            strategy_state={
                "method": self.method,
                "tokens": tokens,
                "relieved": applied,
                **({"pinned_key_groups": pinned} if pinned else {}),
            },
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current, ledger.extra())

    @staticmethod
    def _settle(
        ring_worker: np.ndarray,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> tuple[np.ndarray, list[int], dict[str, tuple[tuple[str, float], ...]]]:
        """The ring's routing within the budget: forced moves, then the heaviest voluntary moves
        while the budget allows; every other group stays on its current worker (pinned), and a
        hot key of the current table stays routed on its own unless its return is affordable."""
        ledger = MoveLedger.build(loads, current, workers, budget)
        final = ledger.before_group.copy()
        for g in np.flatnonzero(ledger.forced_group):
            ledger.set_groups([g], ring_worker[g])
            final[g] = ring_worker[g]
        pinned = []
        for g in np.argsort(-ledger.group_load, kind="stable"):
            if ledger.forced_group[g] or ring_worker[g] == final[g]:
                continue
            if ledger.try_groups([g], ring_worker[g]):
                final[g] = ring_worker[g]
            else:
                pinned.append(int(g))
        hot_keys = {}
        for key in sorted(ledger.before_key, key=lambda k: (-ledger.key_load[k], k)):
            if not ledger.try_key(key, (final[loads.hot_key_group(key)],)):
                kept = ledger.kept_targets(key, current)
                if kept is not None:
                    hot_keys[key] = kept
        return final, sorted(pinned), hot_keys
