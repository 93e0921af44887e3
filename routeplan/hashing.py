"""Key → key group hashing, the one function producers and planners must share.

``key_group(key) = murmur3_x86_32(utf8(key), seed) mod num_key_groups`` with the hash read as an
unsigned 32-bit integer. Any producer (Java's Guava ``Hashing.murmur3_32_fixed(seed)``, Go's
``murmur3.Sum32WithSeed``) reproduces it from the routing table's ``hash`` block alone.
Like Flink's ``KeyGroupRangeAssignment``: tiny, total and pure.
"""

from __future__ import annotations

from collections.abc import Iterable

import mmh3
import numpy as np

HASH_FUNCTION = "murmur3_x86_32"
DEFAULT_SEED = 0
DEFAULT_NUM_KEY_GROUPS = 1024


def key_hash(key: str, seed: int = DEFAULT_SEED) -> int:
    """Unsigned 32-bit Murmur3 (x86_32) of the key's UTF-8 bytes."""
    return mmh3.hash(key, seed, signed=False)


def key_group(key: str, num_key_groups: int, seed: int = DEFAULT_SEED) -> int:
    """The key group of ``key``: an int in ``[0, num_key_groups)``."""
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")
    return mmh3.hash(key, seed, signed=False) % num_key_groups


def key_groups(keys: Iterable[str], num_key_groups: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Key groups of many keys as an int64 array (one hash call per key)."""
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")
    hashes = np.fromiter((mmh3.hash(k, seed, signed=False) for k in keys), dtype=np.uint64)
    return (hashes % np.uint64(num_key_groups)).astype(np.int64)


def salted_choice(name: str, salt: int, n: int, seed: int = DEFAULT_SEED) -> int:
    """The ``salt``-th hash choice in ``[0, n)`` for ``name``: PoRC's H(j+salt) (000 Alg. 1)."""
    return mmh3.hash(f"{name}#{salt}", seed, signed=False) % n
