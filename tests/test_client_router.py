"""``routeplan_client``: the ``Router`` on published tables."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest
from conftest import zipf_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.hashing import key_group
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
from routeplan.publishing.store import RoutingStore
from routeplan_client import Router

SNAPSHOT = zipf_snapshot(keys=5_000, messages=200_000, num_key_groups=256)
WORKERS = Workers.homogeneous(8)


@pytest.fixture(scope="module")
def cg_table() -> RoutingTable:
    return get_strategy("cg").plan(SNAPSHOT, None, WORKERS, Budget()).table


def test_router_sends_unsplit_keys_to_their_group_worker(tmp_path, cg_table):
    RoutingStore(tmp_path).publish(cg_table)
    router = Router.from_store(tmp_path, "s")
    assert router.version == 1
    for i in range(2_000):
        key = f"k{i}"
        if key in cg_table.hot_keys:
            continue
        assert router.route(key) == cg_table.key_group_worker[key_group(key, 256)]


def test_router_balances_a_split_key_by_capacity_with_local_load(cg_table):
    """PKG's local load estimation (paper 003 §3.2): alone on a router, a split key's messages
    fill its workers in proportion to their capacities, to within one message."""
    key, targets = max(cg_table.hot_keys.items(), key=lambda kv: len(kv[1]))
    assert len(targets) > 1
    capacities = {w.name: 1.0 + (i % 3) for i, w in enumerate(cg_table.workers.items)}
    workers = Workers(tuple(replace(w, capacity=capacities[w.name]) for w in WORKERS.items))
    router = Router(replace(cg_table, workers=workers))
    seen = Counter(router.route(key) for _ in range(10_000))
    assert set(seen) == {w for w, _ in targets}
    filled = [seen[w] / capacities[w] for w in seen]
    assert max(filled) - min(filled) <= 1 / min(capacities[w] for w in seen)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["kg", "cg"]), st.integers(1, 16), st.integers(0, 3))
def test_router_follows_any_plan(strategy, n_workers, seed):
    snapshot = zipf_snapshot(keys=2_000, messages=50_000, num_key_groups=128, seed=seed, hot=20)
    table = (
        get_strategy(strategy).plan(snapshot, None, Workers.homogeneous(n_workers), Budget()).table
    )
    router = Router(RoutingTable.from_document(json.loads(json.dumps(table.to_document()))))
    for i in range(0, 2_000, 7):
        key = f"k{i}"
        worker = router.route(key)
        if key in table.hot_keys:
            assert worker in {w for w, _ in table.hot_keys[key]}
        else:
            assert worker == table.key_group_worker[key_group(key, 128)]


def test_router_without_a_table_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no routing table"):
        Router.from_store(tmp_path, "nothing")
