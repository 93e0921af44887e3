"""routeplan_client: routing (route = route_many, PKG local load) and loading (directory,
file://, fsspec, HTTP: routeplan_client.sources) with hot reload that never gives up the last
good table."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import stream_names
from hypothesis import given, settings
from hypothesis import strategies as st

import routeplan_client.router as router_module
import routeplan_client.sources as sources_module
from routeplan.model.hashing import key_group
from routeplan.model.names import InvalidNameError, is_valid_name
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.publishing.store import RoutingStore
from routeplan_client import Assignment, Router
from routeplan_client import table_from_document as client_table

WORKERS = Workers((Worker("a", 1.0), Worker("b", 2.0), Worker("c", 1.0)))


def keys_of_group(group: int, num_key_groups: int, count: int, seed: int = 0) -> list[str]:
    """``count`` distinct keys that hash to ``group``."""
    found = (f"key-{i}" for i in range(100_000))
    return [k for k in found if key_group(k, num_key_groups, seed) == group][:count]


def split_table(**hot: tuple[tuple[str, float], ...]) -> RoutingTable:
    """Key group g of 3 on worker "abc"[g]; ``hot`` keys split as given."""
    return RoutingTable("s", "test", WORKERS, ("a", "b", "c"), hot_keys=hot)


# --------------------------------------------------------------------------------------------
# routing


def test_plain_keys_go_to_their_key_group_worker():
    table = RoutingTable("s", "test", Workers.homogeneous(5), tuple(f"w{g % 5}" for g in range(64)))
    keys = [f"user-{i}" for i in range(3_000)]
    expected = [table.key_group_worker[key_group(k, 64)] for k in keys]
    assert [Router(table).route(k) for k in keys] == expected
    assert Router(table).route_many(keys) == expected
    assert Router(table).candidates("user-7") == [expected[7]]


def test_a_split_key_goes_to_the_least_locally_loaded_candidate_per_capacity():
    """Paper 003 §3.2: the router balances the load *it* sends, counting every key."""
    router = Router(split_table(hot=(("a", 0.7), ("b", 0.3))))
    to_a, to_b = keys_of_group(0, 3, 3), keys_of_group(1, 3, 4)
    for key in to_a + to_b + keys_of_group(2, 3, 9):  # c's load does not matter to "hot"
        router.route(key)
    # local load / capacity: a 3/1, b 4/2 -> b; then b 5/2 -> b; then b 6/2 = a 3/1: the tie
    # goes to the larger table weight (a); then a 4 > b 3 -> b
    assert [router.route("hot") for _ in range(4)] == ["b", "b", "a", "b"]
    assert router.local_loads() == {"a": 4, "b": 7, "c": 9}
    assert router.candidates("hot") == ["a", "b"]


def test_equal_weights_tie_in_table_order():
    router = Router(split_table(hot=(("c", 1.0), ("a", 1.0))))
    assert [router.route("hot") for _ in range(4)] == ["c", "a", "c", "a"]


def reference_route(table: RoutingTable, keys: list[str]) -> tuple[list[str], dict[str, int]]:
    """The rule written plainly: least load / capacity, then larger weight, then table order;
    the local loads (every message counted when the table splits keys, none kept otherwise)."""
    capacity = {w.name: w.capacity for w in table.workers.items}
    load = dict.fromkeys(table.workers.names, 0)
    out = []
    for key in keys:
        if key in table.hot_keys:
            ranked = [
                (load[w] / capacity[w], -weight, i)
                for i, (w, weight) in enumerate(table.hot_keys[key])
            ]
            worker = table.hot_keys[key][min(ranked)[2]][0]
        else:
            worker = table.key_group_worker[key_group(key, table.num_key_groups, table.hash_seed)]
        load[worker] += 1
        out.append(worker)
    return out, load if table.hot_keys else {}  # no split key: no local load is kept


@st.composite
def tables_and_keys(draw) -> tuple[RoutingTable, list[str], int]:
    """A random key_routing table with split keys and capacities, a key sequence, a cut."""
    n = draw(st.integers(1, 6))
    capacities = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=n, max_size=n))
    workers = Workers(tuple(Worker(f"w{i}", c) for i, c in enumerate(capacities)))
    groups = draw(st.integers(1, 16))
    owners = draw(st.lists(st.sampled_from(workers.names), min_size=groups, max_size=groups))
    universe = [f"k{i}" for i in range(draw(st.integers(1, 30)))]
    hot = {}
    for key in draw(st.lists(st.sampled_from(universe), unique=True, max_size=6)):
        targets = draw(
            st.lists(st.sampled_from(workers.names), min_size=1, max_size=n, unique=True)
        )
        weights = draw(
            st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=len(targets), max_size=len(targets))
        )
        hot[key] = tuple(zip(targets, weights, strict=True))
    seed = draw(st.integers(0, 2**32 - 1))
    table = RoutingTable("s", "test", workers, tuple(owners), hot_keys=hot, hash_seed=seed)
    keys = draw(st.lists(st.sampled_from(universe), max_size=400))
    return table, keys, draw(st.integers(0, len(keys)))


@settings(max_examples=150, deadline=None)
@given(tables_and_keys())
def test_route_many_decides_exactly_as_route_and_as_the_rule(case):
    """Both ways ``route_many`` decides — numpy's batch, and one ``route`` per key (what a
    client without numpy does) — give ``route``'s decisions and leave its local loads."""
    table, keys, cut = case
    one = Router(table)
    routed = [one.route(k) for k in keys]
    assert (routed, one.local_loads()) == reference_route(table, keys)
    for smallest_batch in (0, len(keys) + 1):  # vectorised for every batch / for none
        with batches_vectorised_from(smallest_batch):
            many, halves = Router(table), Router(table)
            batch = many.route_many(keys)
            assert isinstance(batch, list) and batch == routed
            assert many.local_loads() == one.local_loads()
            # a batch starts from the loads the router has: two halves are one batch
            assert halves.route_many(keys[:cut]) + halves.route_many(keys[cut:]) == routed
            assert halves.local_loads() == one.local_loads()


@contextlib.contextmanager
def batches_vectorised_from(size: int):
    """``route_many`` decides batches of at least ``size`` keys with numpy, smaller ones key by
    key (the router's own threshold, restored after)."""
    kept = router_module._VECTOR_MIN
    router_module._VECTOR_MIN = size
    try:
        yield
    finally:
        router_module._VECTOR_MIN = kept


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("groups", [16, 12])
@pytest.mark.parametrize("split", [False, True])
def test_every_compiled_route_decides_as_the_rule(seed, groups, split):
    """``route`` is compiled per table (issue 32): the signed hash's low bits for seed 0 and a
    power-of-two number of key groups, the unsigned hash mod n otherwise; with split keys or
    without. Each form routes and counts as the rule says."""
    workers = Workers((Worker("a", 1.0), Worker("b", 2.0), Worker("c", 1.0)))
    owners = tuple("abc"[g % 3] for g in range(groups))
    keys = [f"user-{i}" for i in range(400)] + ["hot"] * 50 + [f"user-{i}" for i in range(50)]
    hot = {"hot": (("a", 1.0), ("c", 1.0))} if split else {}
    table = RoutingTable("s", "test", workers, owners, hot_keys=hot, hash_seed=seed)
    router = Router(table)
    assert ([router.route(k) for k in keys], router.local_loads()) == reference_route(table, keys)
    assert all(isinstance(v, int) for v in router.local_loads().values())


def test_route_many_takes_any_iterable_and_mixes_with_route():
    table = split_table(hot=(("a", 1.0), ("b", 1.0)))
    keys = ["hot", *keys_of_group(0, 3, 5), "hot", "hot", *keys_of_group(1, 3, 2), "hot"]
    mixed = Router(table)
    got = [mixed.route(keys[0])] + mixed.route_many(iter(keys[1:6]))
    got += [mixed.route(k) for k in keys[6:]]
    assert got == reference_route(table, keys)[0]
    assert Router(table).route_many([]) == []


# --------------------------------------------------------------------------------------------
# loading from a directory, file://, fsspec


def key_table(stream: str = "s", owner: str = "a") -> RoutingTable:
    return RoutingTable(
        stream, "test", WORKERS, (owner, "b", "c"), hot_keys={"hot": (("a", 1.0), ("c", 1.0))}
    )


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="routeplan_client.router")
    return caplog


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_open_a_directory_or_a_file_url(tmp_path):
    RoutingStore(tmp_path).publish(key_table())
    for source in (tmp_path, str(tmp_path), tmp_path.as_uri()):
        with Router.open(source, "s") as router:
            assert router.version == 1
            assert router.route(keys_of_group(0, 3, 1)[0]) == "a"
    with pytest.raises(FileNotFoundError, match="no routing table published for stream 'x'"):
        Router.open(tmp_path.as_uri(), "x")


def test_reload_to_a_new_version_restarts_the_local_loads_and_the_same_version_keeps_them(
    tmp_path, logs
):
    """Local loads are per version (the routing spec, step 4): a new version's split weights
    describe the traffic from then on, so its decisions start from zero counts."""
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    changes = []
    router = Router.open(tmp_path, "s", on_change=lambda old, new: changes.append((old, new)))
    moved = keys_of_group(0, 3, 1)[0]
    assert [router.route(moved) for _ in range(3)] + [router.route("hot")] == ["a"] * 3 + ["c"]
    assert router.reload() is False  # LATEST has not moved
    assert router.local_loads() == {"a": 3, "b": 0, "c": 1}
    router._install(client_table(store.read_document("s", 1)))  # read again: nothing restarts
    assert router.local_loads() == {"a": 3, "b": 0, "c": 1}
    store.publish(key_table(owner="c"))
    assert router.reload() is True
    assert (router.version, changes) == (2, [(1, 2)])
    assert router.local_loads() == {"a": 0, "b": 0, "c": 0}
    # v2's own counts: a 0 = c 0, the tie to a (table order); v1's a 3, c 1 would say c
    assert router.route("hot") == "a"
    assert router.route(moved) == "c"
    assert router.local_loads() == {"a": 1, "b": 0, "c": 1}
    assert any("now serving v2 (was v1)" in m for m in logs.messages)
    router.close()


def test_a_table_without_split_keys_keeps_no_local_loads():
    router = Router(RoutingTable("s", "test", Workers((Worker("a"), Worker("b"))), ("a", "b")))
    assert [router.route(k) for k in keys_of_group(1, 2, 3)] == ["b"] * 3
    assert router.route_many(keys_of_group(0, 2, 2)) == ["a", "a"]
    assert router.local_loads() == {}


def write_version(tmp_path: Path, name: str, text: str) -> None:
    """A version file and LATEST written by hand (as a broken publisher might)."""
    (tmp_path / "s" / name).write_text(text)
    (tmp_path / "s" / "LATEST").write_text(f"{name}\n")


def corrupt_documents(version: int = 2) -> dict[str, str]:
    """Ways a version file can be bad, each as the text of ``v<version>.json``."""
    created = "2026-01-01T00:00:00+00:00"
    good = key_table().published(version, version - 1, created).to_document()
    assignment = PartitionAssignment("s", "mwf", WORKERS, {0: "a"})
    return {
        "garbage": "{not json",
        "checksum": json.dumps({**good, "checksum": "sha256:" + "0" * 64}),
        "schema": json.dumps({k: v for k, v in good.items() if k != "workers"}),
        "kind": json.dumps(assignment.published(version, version - 1, created).to_document()),
        "stream": json.dumps(key_table("other").published(version, None, created).to_document()),
    }


@pytest.mark.parametrize(
    ("corruption", "reason"),
    [
        ("garbage", "Expecting property name"),
        ("checksum", "checksum mismatch"),
        ("schema", "workers"),
        ("kind", "partition_assignment table"),
        ("stream", "holds 'other' v2"),
    ],
)
def test_a_corrupt_version_is_rejected_once_and_the_last_good_one_serves(
    tmp_path, logs, corruption, reason
):
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    router = Router.open(tmp_path, "s")
    write_version(tmp_path, "v2.json", corrupt_documents()[corruption])
    reads = []
    real_read = sources_module.StoreSource._read

    def read(name: str, limit: int) -> bytes:
        if name != "LATEST":
            reads.append(name)
        return real_read(router._source, name, limit)

    router._source._read = read
    assert [router.reload() for _ in range(3)] == [False, False, False]
    assert router.version == 1 and router.route(keys_of_group(0, 3, 1)[0]) == "a"
    assert reads == ["v2.json"]  # the bad version is read once, not at every poll
    (warning,) = warnings_of(logs)
    assert re.search(rf"stream s: rejected v2\.json, keeps serving v1: .*{reason}", warning, re.S)
    store.publish(key_table(owner="c"))  # v3, LATEST -> v3
    assert router.reload() is True and router.version == 3
    assert any("v3 is good, after rejecting v2.json" in m for m in logs.messages)
    assert len(warnings_of(logs)) == 1


def test_latest_naming_no_version_is_logged_once(tmp_path, logs):
    RoutingStore(tmp_path).publish(key_table())
    router = Router.open(tmp_path, "s")
    (tmp_path / "s" / "LATEST").write_text("v2.jsn\n")
    assert [router.reload() for _ in range(3)] == [False] * 3
    (warning,) = warnings_of(logs)
    assert "does not name a version file: 'v2.jsn'" in warning and router.version == 1


def test_an_unreachable_directory_keeps_the_last_good_table(tmp_path, logs):
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    router = Router.open(tmp_path, "s")
    shutil.rmtree(tmp_path / "s")
    assert [router.reload() for _ in range(3)] == [False] * 3
    assert router.version == 1 and router.route(keys_of_group(0, 3, 1)[0]) == "a"
    (warning,) = warnings_of(logs)
    assert "stream s: source unavailable, keeps serving v1: FileNotFoundError" in warning
    store.publish(key_table(owner="c"))  # the directory is back, with a new v1
    assert router.reload() is False  # same name as the one serving: not re-read
    assert any("source available again" in m for m in logs.messages)
    store.publish(key_table(owner="b"))
    assert router.reload() is True and router.route(keys_of_group(0, 3, 1)[0]) == "b"


def test_a_pinned_version_never_reloads(tmp_path):
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    store.publish(key_table(owner="c"))
    router = Router.open(tmp_path, "s", version=1)
    assert router.version == 1 and router.reload() is False
    assert Router.from_store(tmp_path, "s").version == 2
    with pytest.raises(ValueError, match="pinned version never changes"):
        Router.open(tmp_path, "s", version=1, reload_interval=1)


def test_a_thread_follows_latest_until_closed(tmp_path):
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    seen = threading.Event()
    with Router.open(tmp_path, "s", reload_interval=0.02, on_change=lambda *_: seen.set()) as r:
        thread = r._thread
        assert thread is not None and thread.daemon and thread.is_alive()
        store.publish(key_table(owner="c"))
        assert seen.wait(5) and r.version == 2
    assert not thread.is_alive()
    store.publish(key_table(owner="b"))
    time.sleep(0.05)
    assert r.version == 2 and r.reload() is False  # closed: follows nothing


def test_assignment_loads_and_reloads_the_same_way(tmp_path):
    store = RoutingStore(tmp_path)

    def assignment(owner: str) -> PartitionAssignment:
        return PartitionAssignment("s", "mwf", WORKERS, {0: owner, 1: "b", 2: owner})

    store.publish(assignment("a"))
    with Assignment.open(tmp_path.as_uri(), "s") as consumers:
        assert consumers.partitions("a") == [0, 2] and consumers.consumers == ["a", "b"]
        store.publish(assignment("c"))
        assert consumers.reload() is True
        assert consumers.consumer(2) == "c" and consumers.partitions("a") == []
    with pytest.raises(ValueError, match="read it with routeplan_client.Assignment"):
        Router.open(tmp_path, "s")


def copy_store(source: Path, fs, root: str) -> None:
    """The RoutingStore files under ``source`` into an fsspec file system at ``root``."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{root}/{path.relative_to(source).as_posix()}", path.read_bytes())


def test_an_fsspec_url_reads_the_same_layout(tmp_path, logs):
    fsspec = pytest.importorskip("fsspec")
    fs, root = fsspec.filesystem("memory"), f"/routing-{uuid.uuid4().hex}"
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    copy_store(tmp_path, fs, root)
    with Router.open(f"memory://{root}", "s") as router:
        assert router.version == 1 and router.route(keys_of_group(0, 3, 1)[0]) == "a"
        assert router.reload() is False
        store.publish(key_table(owner="c"))
        copy_store(tmp_path, fs, root)
        assert router.reload() is True and router.route(keys_of_group(0, 3, 1)[0]) == "c"
        fs.pipe_file(f"{root}/s/v3.json", b"{}")
        fs.pipe_file(f"{root}/s/LATEST", b"v3.json\n")
        assert [router.reload(), router.reload()] == [False, False]
        fs.rm(f"{root}/s", recursive=True)
        assert router.reload() is False and router.version == 2
    assert [m.split(":")[0] for m in warnings_of(logs)] == ["stream s"] * 2
    assert "rejected v3.json" in warnings_of(logs)[0]
    assert "source unavailable" in warnings_of(logs)[1]
    with pytest.raises(FileNotFoundError, match="no routing table published for stream 'x'"):
        Router.open(f"memory://{root}", "x")


def test_a_scheme_without_its_fsspec_package_says_which_to_install():
    """s3fs comes with routeplan; another store's package (gcsfs for gs://) may be missing."""
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="gs:// .* gcsfs"):
            Router.open("gs://bucket/routing", "s")
    else:
        pytest.skip("gcsfs is installed")


# --------------------------------------------------------------------------------------------
# the HTTP API (a stand-in server with the API's contract: ETag = checksum, 304, 404 detail)


class Api(BaseHTTPRequestHandler):
    store: RoutingStore
    answered: list[int]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        match = re.fullmatch(r"/streams/([^/]+)/(?:latest|versions/(\d+))", self.path)
        stream = match.group(1) if match else ""
        version = int(match.group(2)) if match and match.group(2) else None
        if match and version is None:
            version = self.store.latest_version(stream)
        path = self.store.path(stream, version) if version is not None else None
        if path is None or not path.is_file():
            return self.answer(404, json.dumps({"detail": f"no stream {stream!r}"}).encode())
        body = path.read_bytes()
        try:
            etag = f'"{json.loads(body)["checksum"]}"'
        except (ValueError, KeyError):
            etag = '"garbage"'
        if self.headers.get("If-None-Match") == etag:
            return self.answer(304, b"", etag)
        return self.answer(200, body, etag)

    def answer(self, status: int, body: bytes, etag: str | None = None) -> None:
        self.answered.append(status)
        self.send_response(status)
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(root: Path) -> Iterator[tuple[str, list[int], ThreadingHTTPServer]]:
    answered: list[int] = []
    handler = type("Handler", (Api,), {"store": RoutingStore(root), "answered": answered})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answered, server
    finally:
        server.shutdown()
        server.server_close()


def test_http_unchanged_costs_a_304_and_no_parse(tmp_path, logs, monkeypatch):
    pytest.importorskip("httpx")
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    parsed = []
    parse = sources_module.table_from_document
    monkeypatch.setattr(
        sources_module, "table_from_document", lambda *a, **k: parsed.append(1) or parse(*a, **k)
    )
    with serving(tmp_path) as (url, answered, server):
        router = Router.open(url + "/", "s", timeout=2)
        assert (router.version, answered, len(parsed)) == (1, [200], 1)
        assert [router.reload(), router.reload()] == [False, False]
        assert (answered, len(parsed)) == ([200, 304, 304], 1)
        store.publish(key_table(owner="c"))
        assert router.reload() is True and router.route(keys_of_group(0, 3, 1)[0]) == "c"
        write_version(tmp_path, "v3.json", corrupt_documents(3)["checksum"])
        assert [router.reload(), router.reload()] == [False, False]
        assert answered[-3:] == [200, 200, 304]  # the bad version is downloaded once
        with Router.open(url, "s", version=1) as pinned:
            assert pinned.version == 1
        with pytest.raises(FileNotFoundError, match="HTTP 404: no stream 'x'"):
            Router.open(url, "x")
        server.shutdown()
        server.server_close()
        assert [router.reload(), router.reload()] == [False, False]
    assert router.version == 2 and router.route(keys_of_group(0, 3, 1)[0]) == "c"
    rejected, unreachable = warnings_of(logs)
    assert "stream s: rejected" in rejected and "checksum mismatch" in rejected
    assert "stream s: source unavailable, keeps serving v2: ConnectionError" in unreachable
    router.close()


# --------------------------------------------------------------------------------------------
# names and bounds


@settings(max_examples=150, deadline=None)
@given(name=stream_names())
def test_a_stream_name_is_valid_or_refused_before_any_read(tmp_path_factory, name):
    root = tmp_path_factory.getbasetemp() / "client-names"  # the same empty store every time
    root.mkdir(exist_ok=True)
    sources = [root, root.as_uri(), "memory://client-names", "http://127.0.0.1:9/routeplan"]
    for source in sources:
        for open_ in (Router.open, Assignment.open, Router.from_store):
            if is_valid_name(name):
                if str(source).startswith(("http", "memory")):
                    continue  # valid names go to the source; tested elsewhere
                with pytest.raises(FileNotFoundError, match="no routing table published"):
                    open_(source, name)
            else:
                with pytest.raises(InvalidNameError, match="invalid stream name"):
                    open_(source, name)
    assert list(root.iterdir()) == []


def test_reload_keeps_the_last_good_table_when_a_version_is_too_deep(tmp_path, logs):
    RoutingStore(tmp_path).publish(key_table())
    router = Router.open(tmp_path, "s")
    write_version(tmp_path, "v2.json", "[" * 200_000 + "]" * 200_000)
    assert [router.reload(), router.reload()] == [False, False]
    assert router.version == 1 and router.route(keys_of_group(0, 3, 1)[0]) == "a"
    (warning,) = warnings_of(logs)
    assert "rejected v2.json, keeps serving v1" in warning
    assert f"{tmp_path / 's' / 'v2.json'}: JSON nested deeper than 64 levels" in warning


def test_reload_keeps_the_last_good_table_when_a_version_is_too_large(tmp_path, logs):
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    size = store.path("s", 1).stat().st_size
    with pytest.raises(ValueError, match=f"v1.json: more than {size - 1} bytes"):
        Router.open(tmp_path, "s", max_bytes=size - 1)
    router = Router.open(tmp_path, "s", max_bytes=size)
    store.publish(key_table(owner="c"), reason="a longer document " * 10)
    assert [router.reload(), router.reload()] == [False, False]
    (warning,) = warnings_of(logs)
    assert f"v2.json: more than {size} bytes (max_bytes)" in warning and router.version == 1


def test_http_bodies_are_bounded_too(tmp_path, logs):
    pytest.importorskip("httpx")
    store = RoutingStore(tmp_path)
    store.publish(key_table())
    size = store.path("s", 1).stat().st_size
    with serving(tmp_path) as (url, _, _), Router.open(url, "s", max_bytes=size) as router:
        write_version(tmp_path, "v2.json", '{"a":' * 100 + "1" + "}" * 100)
        assert router.reload() is False
        store.publish(key_table(owner="c"), reason="a longer document " * 10)
        assert router.reload() is False and router.version == 1
    deep, large = warnings_of(logs)
    assert "JSON nested deeper than 64 levels" in deep
    assert f"more than {size} bytes (max_bytes)" in large
