import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import stream_names, zipf_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.contracts.documents import parse_document
from routeplan.contracts.schemas import validate_document
from routeplan.model.hashing import key_group
from routeplan.model.names import InvalidNameError, is_valid_name
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
from routeplan.producers.client import Router
from routeplan.publishing.store import RoutingStore

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


# --------------------------------------------------------------------------------------------
# names from data never become paths unchecked; documents are bounded before they are parsed


def small_table(stream: str, owner: str = "w0") -> RoutingTable:
    return RoutingTable(stream, "kg", Workers.homogeneous(2), (owner, "w1", "w0", "w1"))


def outside(outer: Path, root: Path) -> list[str]:
    """Everything under ``outer`` that is not ``root`` or under it."""
    return sorted(str(p) for p in outer.rglob("*") if p != root and root not in p.parents)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> tuple[Path, Path]:
    """A store root inside a folder that holds a valid table of its own: ``..`` must not reach
    it, and nothing may appear beside the root."""
    outer = tmp_path_factory.mktemp("sandbox")
    root = outer / "inner" / "routing"
    RoutingStore(outer).publish(small_table("inner"))  # outer/inner/{v1.json,LATEST}
    RoutingStore(outer / "inner").publish(small_table("routing_decoy"))
    root.mkdir()
    return outer, root


STORE_CALLS = {
    "versions": lambda store, name: store.versions(name),
    "latest_version": lambda store, name: store.latest_version(name),
    "path": lambda store, name: store.path(name, 1),
    "read_document": lambda store, name: store.read_document(name),
    "load": lambda store, name: store.load(name),
    "publish": lambda store, name: store.publish(small_table(name)),
    "rollback": lambda store, name: store.rollback(name, 1, "property test"),
    "restore": lambda store, name: store.restore(small_table(name).published(1, None, "t"), "x"),
    "prune": lambda store, name: store.prune(name, 1),
    "doctor": lambda store, name: store.doctor(name),
}


@settings(max_examples=150, deadline=None)
@given(name=stream_names())
def test_the_store_takes_a_valid_name_or_refuses_it_before_touching_files(sandbox, name):
    outer, root = sandbox
    before, inside = outside(outer, root), sorted(root.iterdir())
    store = RoutingStore(root)
    for call, run in STORE_CALLS.items():
        if is_valid_name(name):
            try:
                result = run(store, name)
            except FileNotFoundError as err:  # not published yet: simply "not found"
                assert call in ("read_document", "rollback"), (call, err)
                continue
            if call == "path":
                assert result.parent == root / name and result.resolve().is_relative_to(root)
        else:
            with pytest.raises(InvalidNameError, match="invalid stream name"):
                run(store, name)
    assert outside(outer, root) == before
    assert all(is_valid_name(s) for s in store.streams())
    if not is_valid_name(name):
        assert sorted(root.iterdir()) == inside


def test_streams_skips_folders_whose_names_are_invalid(tmp_path):
    store = RoutingStore(tmp_path)
    store.publish(small_table("good"))
    for bad in (".hidden", "a b", "-flag", "é"):
        (tmp_path / bad).mkdir()
        (tmp_path / bad / "LATEST").write_text("v1.json\n")
    assert store.streams() == ["good"]


def test_documents_are_bounded_in_size_and_depth(tmp_path):
    store = RoutingStore(tmp_path)
    store.publish(small_table("s"))
    size = store.path("s", 1).stat().st_size
    with pytest.raises(ValueError, match=r"s/v1\.json: more than 100 bytes \(max_bytes\)"):
        RoutingStore(tmp_path, max_bytes=100).read_document("s")
    assert RoutingStore(tmp_path, max_bytes=size).load("s").version == 1
    deep = "[" * 200_000 + "]" * 200_000
    (tmp_path / "s" / "v2.json").write_text(deep)
    (tmp_path / "s" / "LATEST").write_text("v2.json\n")
    with pytest.raises(ValueError, match=r"s/v2\.json: JSON nested deeper than 64 levels"):
        store.read_document("s")
    with pytest.raises(ValueError, match="nested deeper"):
        store.load("s")


def test_the_depth_bound_counts_containers_not_brackets_in_strings():
    at_limit = "[" * 63 + '{"k": "[[[[{{{{"}' + "]" * 63  # 64 levels, brackets in a string
    assert parse_document(at_limit.encode(), "x")[0] is not None
    with pytest.raises(ValueError, match="x: JSON nested deeper than 64 levels"):
        parse_document(("[" + at_limit + "]").encode(), "x")
    escaped = '{"k\\"[[": "\\\\", "v": [[1]]}'  # escaped quotes and backslashes end no string
    assert parse_document(escaped.encode(), "x", max_depth=3) == {'k"[[': "\\", "v": [[1]]}
    with pytest.raises(ValueError, match="x: JSON nested deeper than 2 levels"):
        parse_document(escaped.encode(), "x", max_depth=2)
    with pytest.raises(ValueError, match="x: not JSON: Expecting value"):
        parse_document(b"[1,", "x")
    for unterminated in (b'"' + b'\\"' * 200_000, b'["' + b"[" * 100 + b"\\"):  # linear scan
        with pytest.raises(ValueError, match="x: not JSON: Unterminated string"):
            parse_document(unterminated, "x")
    with pytest.raises(ValueError, match=r"x: more than 3 bytes \(max_bytes\)"):
        parse_document(b"[1,2]", "x", max_bytes=3)
