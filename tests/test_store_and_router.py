import json
from collections import Counter
from dataclasses import replace

import pytest
from conftest import zipf_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.client import Router
from routeplan.hashing import key_group
from routeplan.models import Budget, Workers
from routeplan.routing_table import RoutingTable
from routeplan.schemas import validate_document
from routeplan.store import RoutingStore
from routeplan.strategies import get_strategy

SNAPSHOT = zipf_snapshot(keys=5_000, messages=200_000, num_key_groups=256)
WORKERS = Workers.homogeneous(8)


@pytest.fixture(scope="module")
def cg_table() -> RoutingTable:
    return get_strategy("cg").plan(SNAPSHOT, None, WORKERS, Budget()).table


def test_publish_versions_and_latest(tmp_path, cg_table):
    store = RoutingStore(tmp_path)
    v1 = store.publish(cg_table)
    kg = get_strategy("kg").plan(SNAPSHOT, v1, WORKERS, Budget()).table
    v2 = store.publish(kg)
    assert (v1.version, v1.parent_version) == (1, None)
    assert (v2.version, v2.parent_version) == (2, 1)
    assert (tmp_path / "s" / "LATEST").read_text().strip() == "v2.json"
    assert store.versions("s") == [1, 2]
    assert store.load("s").same_routing(kg)
    assert store.load("s", version=1).same_routing(cg_table)
    validate_document("routing_table", json.loads((tmp_path / "s" / "v1.json").read_text()))


def test_a_published_version_is_never_rewritten(tmp_path, cg_table, monkeypatch):
    store = RoutingStore(tmp_path)
    store.publish(cg_table)
    before = (tmp_path / "s" / "v1.json").read_bytes()
    kg = get_strategy("kg").plan(SNAPSHOT, None, WORKERS, Budget()).table
    # a racing publisher that still believes v1 is free must fail, not overwrite
    monkeypatch.setattr(store, "versions", lambda stream: [])
    with pytest.raises(FileExistsError):
        store.publish(kg)
    assert (tmp_path / "s" / "v1.json").read_bytes() == before
    assert (tmp_path / "s" / "LATEST").read_text() == "v1.json\n"
    assert not list((tmp_path / "s").glob(".tmp-*"))


def test_tampered_table_fails_checksum(tmp_path, cg_table):
    store = RoutingStore(tmp_path)
    store.publish(cg_table)
    path = tmp_path / "s" / "v1.json"
    doc = json.loads(path.read_text())
    doc["key_group_worker"][0] = "w7" if doc["key_group_worker"][0] != "w7" else "w6"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="checksum mismatch"):
        store.load("s")


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
