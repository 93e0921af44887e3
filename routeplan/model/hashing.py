"""Key → key group hashing, the one function producers and planners must share.

The scalar functions (``key_hash``, ``key_group``, ``key_group_mask``, ``key_hash_fast``) are
``routeplan_client.hashing``'s; this module adds their numpy forms for planners and the
simulator, and the hash choices of PKG and PoRC.

``key_group(key) = murmur3_x86_32(utf8(key), seed) mod num_key_groups`` with the hash read as an
unsigned 32-bit integer. Any producer (Java's Guava ``Hashing.murmur3_32_fixed(seed)``, Go's
``murmur3.Sum32WithSeed``) reproduces it from the routing table's ``hash`` block alone.
Like Flink's ``KeyGroupRangeAssignment``: tiny, total and pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

import mmh3
import numpy as np

# the scalar contract lives in the client every producer installs (one implementation)
from routeplan_client.hashing import (
    DEFAULT_NUM_KEY_GROUPS,
    DEFAULT_SEED,
    HASH_FUNCTION,
    MAX_NUM_KEY_GROUPS,
    key_group,
    key_group_mask,
    key_hash,
    key_hash_fast,
)

__all__ = [
    "DEFAULT_NUM_KEY_GROUPS",
    "DEFAULT_SEED",
    "HASH_FUNCTION",
    "MAX_NUM_KEY_GROUPS",
    "hash_choices",
    "hash_choices_many",
    "key_group",
    "key_group_mask",
    "key_groups",
    "key_groups_of",
    "key_hash",
    "key_hash_array",
    "key_hash_fast",
    "key_hashes",
    "salted_choice",
]


def key_hashes(keys: Iterable[str], seed: int = DEFAULT_SEED) -> np.ndarray:
    """Unsigned 32-bit Murmur3 of many keys as a uint64 array (one hash call per key)."""
    return np.fromiter((mmh3.hash(k, seed, signed=False) for k in keys), dtype=np.uint64)


def key_hash_array(keys: Iterable[str], seed: int = DEFAULT_SEED) -> np.ndarray:
    """``key_hash`` of many keys as a uint32 array: ``a[i] = murmur3_x86_32(utf8(keys[i]), seed)``.

    One C call per key and no Python frame (``map``), sized up front when ``keys`` has a length;
    no keys give an empty array. ``key_groups_of(a, n)`` are then their key groups.
    """
    hashes = map(mmh3.hash, keys, repeat(seed), repeat(False))
    count = len(keys) if hasattr(keys, "__len__") else -1
    return np.fromiter(hashes, dtype=np.uint32, count=count)


def key_groups_of(hashes: np.ndarray, num_key_groups: int) -> np.ndarray:
    """The key groups of unsigned 32-bit hashes, as a uint32 array: ``g[i] = hashes[i] mod
    num_key_groups``; for ``hashes = key_hash_array(keys, seed)``,
    ``g[i] == key_group(keys[i], num_key_groups, seed)``."""
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")
    return np.asarray(hashes, dtype=np.uint32) % np.uint32(num_key_groups)


def key_groups(keys: Iterable[str], num_key_groups: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Key groups of many keys as an int64 array (one hash call per key)."""
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")
    return (key_hashes(keys, seed) % np.uint64(num_key_groups)).astype(np.int64)


def salted_choice(name: str, salt: int, n: int, seed: int = DEFAULT_SEED) -> int:
    """The ``salt``-th hash choice in ``[0, n)`` for ``name``: PoRC's H(j+salt) (000 Alg. 1)."""
    return mmh3.hash(f"{name}#{salt}", seed, signed=False) % n


def hash_choices(
    key: str, d: int, n: int, seed: int = DEFAULT_SEED, distinct: bool = False
) -> list[int]:
    """The ``d`` hash choices of ``key`` among ``n`` workers: PKG's H_1 … H_d (paper 003 §5).

    Paper 003 §5 chooses "``d`` independent hash functions ``H_1, …, H_d : K → [n]``":
    ``H_i(k) = murmur3(k, seed + i − 1) mod n`` for ``i = 1 … d``, so ``H_1`` is key grouping's
    worker and two choices coincide with probability ``1/n`` (the key then has one worker, as
    under key grouping). The list has ``d`` entries, repeats included; ``d ≫ n ln n`` reaches
    every worker (§5: shuffle grouping).

    ``distinct=True`` (ours, not the paper's): the first ``min(d, n)`` distinct values of the same
    sequence ``i = 1, 2, …``, so ``H_1`` is unchanged and ``d ≥ n`` gives every worker (``H_1``
    first, the rest in the key's hash order, then by index should the sequence not reach them
    all — a safeguard, the hash sequence is searched ``8n + 4d`` deep).
    """
    if n < 1 or d < 1:
        raise ValueError(f"need n >= 1 and d >= 1, got n={n}, d={d}")
    if not distinct:
        return [mmh3.hash(key, (seed + i) & 0xFFFFFFFF, signed=False) % n for i in range(d)]
    want = min(d, n)
    choices: list[int] = []
    seen: set[int] = set()
    for i in range(8 * n + 4 * want):
        c = mmh3.hash(key, (seed + i) & 0xFFFFFFFF, signed=False) % n
        if c not in seen:
            seen.add(c)
            choices.append(c)
            if len(choices) == want:
                return choices
    return choices + [c for c in range(n) if c not in seen][: want - len(choices)]


def hash_choices_many(
    keys: list[str], d: int, n: int, seed: int = DEFAULT_SEED, distinct: bool = False
) -> np.ndarray:
    """``hash_choices`` of many keys at once: a ``(len(keys), d)`` int64 array
    (``(len(keys), min(d, n))`` with ``distinct=True``)."""
    if n < 1 or d < 1:
        raise ValueError(f"need n >= 1 and d >= 1, got n={n}, d={d}")
    if not distinct:
        choices = np.empty((len(keys), d), dtype=np.int64)
        for i in range(d):
            choices[:, i] = key_hashes(keys, (seed + i) & 0xFFFFFFFF) % np.uint64(n)
        return choices
    want = min(d, n)
    choices = np.full((len(keys), want), -1, dtype=np.int64)
    count = np.zeros(len(keys), dtype=np.int64)
    pending = np.arange(len(keys))
    for i in range(8 * n + 4 * want):
        if pending.size == 0:
            return choices
        c = (key_hashes((keys[j] for j in pending), (seed + i) & 0xFFFFFFFF) % n).astype(np.int64)
        new = ~np.any(choices[pending] == c[:, None], axis=1)
        fresh = pending[new]
        choices[fresh, count[fresh]] = c[new]
        count[fresh] += 1
        pending = pending[count[pending] < want]
    for j in pending:  # the hash sequence missed some workers: the rest by index (as scalar)
        choices[j] = hash_choices(keys[j], want, n, seed, distinct=True)
    return choices
