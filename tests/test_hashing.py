import struct

from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.hashing import key_group, key_groups, key_hash, salted_choice


def murmur3_x86_32(data: bytes, seed: int = 0) -> int:
    """Independent reference (Austin Appleby's MurmurHash3_x86_32), as a producer would port it."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed & mask
    rounded = len(data) - len(data) % 4
    for (k,) in struct.iter_unpack("<I", data[:rounded]):
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    tail = data[rounded:]
    k = 0
    for i, byte in enumerate(tail):
        k |= byte << (8 * i)
    if tail:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


def test_published_vectors():
    # Values any murmur3_x86_32 port must give (seed 0 / 42): the routing-table contract.
    assert key_hash("") == 0
    assert key_hash("hello") == 0x248BFA47
    assert key_hash("hello", seed=42) == murmur3_x86_32(b"hello", 42)


@given(st.text(max_size=40), st.integers(0, 2**32 - 1))
def test_key_hash_matches_reference_implementation(key, seed):
    assert key_hash(key, seed) == murmur3_x86_32(key.encode("utf-8"), seed)


@given(st.text(max_size=30), st.integers(1, 5000), st.integers(0, 1000))
def test_key_group_is_total_and_in_range(key, groups, seed):
    g = key_group(key, groups, seed)
    assert 0 <= g < groups
    assert g == key_hash(key, seed) % groups


@given(st.lists(st.text(max_size=12), max_size=50), st.integers(1, 4096))
def test_vectorised_key_groups_equal_scalar(keys, groups):
    assert key_groups(keys, groups).tolist() == [key_group(k, groups) for k in keys]


def test_key_group_rejects_zero_groups():
    import pytest

    with pytest.raises(ValueError, match="num_key_groups"):
        key_group("k", 0)


def test_salted_choices_spread_over_all_slots():
    seen = {salted_choice("unit", salt, 10) for salt in range(1, 200)}
    assert seen == set(range(10))
