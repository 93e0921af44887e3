import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.hashing import (
    hash_choices,
    hash_choices_many,
    key_group,
    key_group_mask,
    key_groups,
    key_groups_of,
    key_hash,
    key_hash_array,
    key_hash_fast,
    salted_choice,
)

SEEDS = st.integers(0, 2**32 - 1)


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


@given(st.text(max_size=40), SEEDS)
def test_key_hash_fast_is_key_hash_unsigned_and_its_twos_complement_signed(key, seed):
    unsigned = key_hash(key, seed)
    assert key_hash_fast(key, seed, False) == unsigned
    assert key_hash_fast(key, seed) == unsigned - (unsigned >= 2**31) * 2**32


@given(st.text(max_size=40), SEEDS, st.integers(0, 32))
def test_a_power_of_two_mask_of_the_signed_hash_is_the_key_group(key, seed, bits):
    mask = key_group_mask(2**bits)
    assert mask == 2**bits - 1
    assert key_hash_fast(key, seed) & mask == key_group(key, 2**bits, seed)
    if seed == 0:
        assert key_hash_fast(key) & mask == key_group(key, 2**bits)


def test_no_mask_for_a_number_of_key_groups_that_is_not_a_power_of_two():
    assert [key_group_mask(n) for n in (3, 6, 1000, 2**32 + 1, 2**33, 0)] == [None] * 6
    assert key_group_mask(1) == 0


@given(st.lists(st.text(max_size=20), max_size=60), SEEDS, st.booleans())
def test_key_hash_array_equals_scalar_key_hash(keys, seed, as_iterator):
    hashes = key_hash_array(iter(keys) if as_iterator else keys, seed)
    assert hashes.dtype == np.uint32 and hashes.shape == (len(keys),)
    assert hashes.tolist() == [key_hash(k, seed) for k in keys]


@given(st.lists(st.text(max_size=20), max_size=60), st.integers(1, 2**24), SEEDS)
def test_key_groups_of_key_hash_array_equal_scalar_key_group(keys, groups, seed):
    found = key_groups_of(key_hash_array(keys, seed), groups)
    assert found.dtype == np.uint32 and found.shape == (len(keys),)
    assert found.tolist() == [key_group(k, groups, seed) for k in keys]
    assert found.tolist() == key_groups(keys, groups, seed).tolist()


def test_vectorised_hashes_of_no_keys_are_empty_and_typed():
    for keys in ([], (), iter([]), {}):
        hashes = key_hash_array(keys, 7)
        assert hashes.dtype == np.uint32 and hashes.shape == (0,)
        groups = key_groups_of(hashes, 1024)
        assert groups.dtype == np.uint32 and groups.shape == (0,)


def test_key_group_rejects_zero_groups():
    import pytest

    with pytest.raises(ValueError, match="num_key_groups"):
        key_group("k", 0)
    with pytest.raises(ValueError, match="num_key_groups"):
        key_groups_of(key_hash_array(["k"]), 0)


def test_salted_choices_spread_over_all_slots():
    seen = {salted_choice("unit", salt, 10) for salt in range(1, 200)}
    assert seen == set(range(10))


@given(st.text(max_size=12), st.integers(1, 40), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_hash_choices_are_the_papers_independent_hashes(key, d, n, seed):
    """Paper 003 §5: ``H_i(k) = murmur3(k, seed + i − 1) mod n``, ``d`` of them, repeats kept."""
    choices = hash_choices(key, d, n, seed)
    assert choices == [key_hash(key, (seed + i) % 2**32) % n for i in range(d)]
    assert choices[0] == key_group(key, n, seed)
    assert hash_choices_many([key, "other"], d, n, seed)[0].tolist() == choices


@given(st.text(max_size=12), st.integers(1, 40), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_distinct_hash_choices_keep_the_first_and_then_skip_repeats(key, d, n, seed):
    choices = hash_choices(key, d, n, seed, distinct=True)
    assert len(choices) == min(d, n) == len(set(choices))
    assert choices[0] == key_group(key, n, seed)
    independent = hash_choices(key, 8 * n + 4 * d, n, seed)
    firsts = list(dict.fromkeys(independent))[: len(choices)]
    assert choices[: len(firsts)] == firsts


def test_two_independent_choices_coincide_at_rate_one_over_n_and_distinct_ones_never():
    keys = [f"key-{i}" for i in range(20_000)]
    for n in (2, 5, 10, 40):
        both = hash_choices_many(keys, 2, n, seed=7)
        rate = float(np.mean(both[:, 0] == both[:, 1]))
        assert abs(rate - 1 / n) < 5 * np.sqrt((1 / n) * (1 - 1 / n) / len(keys)), (n, rate)
        apart = hash_choices_many(keys, 2, n, seed=7, distinct=True)
        assert np.all(apart[:, 0] != apart[:, 1])
        assert np.array_equal(apart[:, 0], both[:, 0])  # H_1 is key grouping's worker either way


def test_hash_choices_reject_empty_arguments():
    import pytest

    for d, n in ((0, 3), (2, 0)):
        with pytest.raises(ValueError):
            hash_choices("k", d, n)
        with pytest.raises(ValueError):
            hash_choices_many(["k"], d, n, distinct=True)


@given(st.text(min_size=1, max_size=12), st.integers(1, 40), st.integers(1, 50), st.integers(0, 99))
def test_distinct_hash_choices_differ_and_start_with_key_grouping(key, d, n, seed):
    choices = hash_choices(key, d, n, seed, distinct=True)
    assert len(choices) == min(d, n) == len(set(choices))
    assert all(0 <= c < n for c in choices)
    assert choices[0] == key_hash(key, seed) % n
    assert hash_choices_many([key, "other"], d, n, seed, distinct=True)[0].tolist() == choices
