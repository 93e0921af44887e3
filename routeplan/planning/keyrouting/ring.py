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
from routeplan.planning.contract import finish_plan
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
class TokenRing:
    """Consistent hashing with token halving or doubling (paper 001)."""

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves", "max_migrated_load_share"})

    name = "ring"

    def __init__(
        self,
        method: str = "halving",
        tau: float = 0.2,
        initial_tokens: int = 8,
        max_rounds: int = 3,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}")
        if tau < 0:
            raise ValueError("tau must be >= 0")
        if initial_tokens < 1 or initial_tokens & (initial_tokens - 1):
            raise ValueError("initial_tokens must be a power of 2 (halving, §4.2)")
        if max_rounds < 0:
            raise ValueError("max_rounds must be >= 0")
        self.method = method
        self.tau = float(tau)
        self.initial_tokens = int(initial_tokens)
        self.max_rounds = int(max_rounds)

    def params(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "tau": self.tau,
            "initial_tokens": self.initial_tokens,
            "max_rounds": self.max_rounds,
        }

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
        before = (
            np.asarray(current.key_group_worker, dtype=object)
            if current is not None and current.num_key_groups == loads.num_key_groups
            else None
        )
        rounds = dict.fromkeys(names, 0)
        owner = HashRing.build(tokens, loads.hash_seed).lookup(positions)
        applied = []
        for _ in range(self.max_rounds * len(names)):
            worker_load = np.bincount(owner, weights=loads.key_group_load, minlength=len(names))
            x = triggered(worker_load / capacity, self.tau)
            if x is None or rounds[names[x]] >= self.max_rounds:
                break
            trial = dict(tokens)
            if not redistribute(trial, names[x], self.method):
                break
            trial_owner = HashRing.build(trial, loads.hash_seed).lookup(positions)
            if not self._within_budget(trial_owner, names, before, loads, budget):
                break
            tokens, owner = trial, trial_owner
            rounds[names[x]] += 1
            applied.append(names[x])
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=tuple(names[o] for o in owner),
            params=self.params(),
            strategy_state={"method": self.method, "tokens": tokens, "relieved": applied},
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)

    @staticmethod
    def _within_budget(
        owner: np.ndarray,
        names: Sequence[str],
        before: np.ndarray | None,
        loads: LoadSnapshot,
        budget: Budget,
    ) -> bool:
        if before is None:
            return True
        moved = np.asarray(names, dtype=object)[owner] != before
        if budget.max_moves is not None and moved.sum() > budget.max_moves:
            return False
        share = loads.key_group_load[moved].sum() / loads.total if loads.total > 0 else 0.0
        limit = budget.max_migrated_load_share
        return limit is None or share <= limit + 1e-12
