"""Key → key group: the one function every producer and planner shares (the routing spec, §1).

``key_group(key) = murmur3_x86_32(utf8(key), seed) mod num_key_groups`` with the hash read as an
unsigned 32-bit integer. Java (Guava's ``Hashing.murmur3_32_fixed(seed)``) and Go
(``murmur3.Sum32WithSeed``) reproduce it from a table's ``hash`` block alone. Tiny, total and
pure, like Flink's ``KeyGroupRangeAssignment``.
"""

from __future__ import annotations

import mmh3

HASH_FUNCTION = "murmur3_x86_32"
DEFAULT_SEED = 0
DEFAULT_NUM_KEY_GROUPS = 1024
MAX_NUM_KEY_GROUPS = 2**24  # the most key groups a table may have

__all__ = [
    "DEFAULT_NUM_KEY_GROUPS",
    "DEFAULT_SEED",
    "HASH_FUNCTION",
    "MAX_NUM_KEY_GROUPS",
    "key_group",
    "key_group_mask",
    "key_hash",
    "key_hash_fast",
]


def key_hash(key: str, seed: int = DEFAULT_SEED) -> int:
    """Unsigned 32-bit Murmur3 (x86_32) of the key's UTF-8 bytes."""
    return mmh3.hash(key, seed, signed=False)


# ``key_hash_fast(key, seed, False) == key_hash(key, seed)``: Murmur3 (x86_32) itself, the C
# function with no Python frame in between, for per-message loops (``Router.route``). Its third
# argument, ``signed``, must be False for the unsigned hash of the contract: True (its default)
# gives the same 32 bits read as two's complement, ``key_hash − 2**32`` when ``key_hash ≥ 2**31``
# — the same low bits, so with a power-of-two number of key groups ``key_hash_fast(key, seed) &
# key_group_mask(n)`` is the key group, without the arguments' cost (``key_hash_fast(key)`` for
# seed 0: a third of a call's time, measured).
key_hash_fast = mmh3.hash


def key_group_mask(num_key_groups: int) -> int | None:
    """``num_key_groups − 1`` when it is a power of two (up to ``2**32``): then
    ``key_hash_fast(key, seed) & mask == key_group(key, num_key_groups, seed)`` (the low bits of
    the two's complement are the unsigned hash's); None otherwise."""
    n = num_key_groups
    return n - 1 if 0 < n <= 2**32 and n & (n - 1) == 0 else None


def key_group(key: str, num_key_groups: int, seed: int = DEFAULT_SEED) -> int:
    """The key group of ``key``: an int in ``[0, num_key_groups)``."""
    if num_key_groups < 1:
        raise ValueError(f"num_key_groups must be >= 1, got {num_key_groups}")
    return mmh3.hash(key, seed, signed=False) % num_key_groups
