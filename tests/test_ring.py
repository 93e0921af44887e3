"""``routeplan.planning.keyrouting.ring``: the ``ring`` strategy (paper 001)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import zipf_snapshot
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.keyrouting.ring import HashRing
from routeplan.planning.metrics import skew, worker_load
from routeplan.planning.registry import get_strategy


def test_ring_budget_zero_keeps_a_foreign_table(skewed):
    workers = Workers.homogeneous(10)
    cg = get_strategy("cg").plan(skewed, None, workers, Budget()).table
    plan = get_strategy("ring").plan(skewed, cg, workers, Budget(max_moves=0))
    assert plan.moves == ()
    assert plan.table.strategy_state["pinned_key_groups"]


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50), st.integers(1, 6))
def test_ring_lookup_is_the_first_token_clockwise(hashes, tokens):
    ring = HashRing.build({"a": tokens, "b": 2 * tokens, "c": 1})
    got = ring.lookup(np.array(hashes))
    for h, owner in zip(hashes, got, strict=True):
        after = [i for i, p in enumerate(ring.positions) if p >= h]
        expected = ring.owners[after[0] if after else 0]  # wrap around past the last token
        assert owner == expected


@pytest.mark.parametrize("method", ["halving", "doubling"])
def test_ring_rounds_reduce_skew_and_carry_their_tokens(method):
    loads = zipf_snapshot(keys=3_000, messages=100_000, exponent=0.7, num_key_groups=256)
    workers = Workers.homogeneous(4)  # paper 001 §6: four reducers, τ = 0.2
    ring = {"method": method, "initial_tokens": 4}
    none = get_strategy("ring", max_rounds=0, **ring).plan(loads, None, workers, Budget())
    lb = get_strategy("ring", max_rounds=3, **ring).plan(loads, None, workers, Budget())
    assert lb.table.strategy_state["relieved"], "the trigger Q_max > Q_2·(1+τ) must fire"
    assert skew(worker_load(lb.table, loads)) < skew(worker_load(none.table, loads))
    tokens = lb.table.strategy_state["tokens"]
    start = none.table.strategy_state["tokens"]
    assert start == dict.fromkeys(workers.names, 4 if method == "halving" else 1)
    assert tokens != start
    # the next plan starts from these tokens; a zero-round plan keeps them and routes alike
    again = get_strategy("ring", max_rounds=0, **ring).plan(loads, lb.table, workers, Budget())
    assert again.table.strategy_state["tokens"] == tokens
    assert again.moves == ()


def test_ring_respects_the_move_budget():
    loads = zipf_snapshot(keys=3_000, messages=100_000, exponent=0.7, num_key_groups=256)
    workers = Workers.homogeneous(4)
    ring = get_strategy("ring", initial_tokens=4)
    first = get_strategy("ring", initial_tokens=4, max_rounds=0).plan(
        loads, None, workers, Budget()
    )
    capped = ring.plan(loads, first.table, workers, Budget(max_moves=0))
    free = ring.plan(loads, first.table, workers, Budget())
    assert capped.moves == ()
    assert len(free.moves) > 0
