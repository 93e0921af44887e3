"""``routeplan.publishing.store``: publishing, reading and guarding routing tables."""

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import stream_names, zipf_snapshot
from hypothesis import given, settings

from routeplan.contracts.schemas import validate_document
from routeplan.model.names import InvalidNameError, is_valid_name
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
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


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def private_umask():
    """A process umask of 077, as a hardened service account has: files 0600, folders 0700."""
    before = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(before)


def test_published_files_are_readable_by_every_user_whatever_the_umask(
    tmp_path, cg_table, private_umask, monkeypatch
):
    """Versions, LATEST and HOLD get 0644 (a producer running as another user reads them);
    ``ROUTEPLAN_ROUTING_FILE_MODE`` (or ``file_mode``) says otherwise. A folder's mode is never
    changed."""
    monkeypatch.delenv("ROUTEPLAN_ROUTING_FILE_MODE", raising=False)
    store = RoutingStore(tmp_path)
    store.publish(cg_table)
    store.hold("s", "checking v1")
    held = mode(tmp_path / "s" / "HOLD")
    store.clear_hold("s")
    store.publish(small_table("s"))
    files = {p.name: mode(p) for p in (tmp_path / "s").iterdir() if p.name != ".lock"}
    assert (files, held) == ({"v1.json": 0o644, "v2.json": 0o644, "LATEST": 0o644}, 0o644)
    assert mode(tmp_path / "s") == 0o700  # made under the umask, never widened

    shared = tmp_path / "shared"
    (shared / "t").mkdir(parents=True)
    shared.chmod(0o750)
    (shared / "t").chmod(0o710)
    monkeypatch.setenv("ROUTEPLAN_ROUTING_FILE_MODE", "0640")
    RoutingStore(shared).publish(small_table("t"))
    RoutingStore(shared, file_mode=0o600).publish(small_table("t", "w1"))
    files = {p.name: mode(p) for p in (shared / "t").iterdir() if p.name != ".lock"}
    assert files == {"v1.json": 0o640, "v2.json": 0o600, "LATEST": 0o600}
    assert (mode(shared), mode(shared / "t")) == (0o750, 0o710)


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
    "unpublished": lambda store, name: store.unpublished(name),
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
