"""The routing store on object storage (a real MinIO server, ``tests/object_store.py``) keeps the
local store's promises: versions written once, LATEST moved by a conditional write so racing
publishers never lose an update and it never goes backwards; the same store logic (publish,
rollback, prune, doctor) over both back ends; the Router and the HTTP API read an ``s3://`` root.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from routeplan import storage
from routeplan.cli.main import main
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import (
    BrokenLatestError,
    HeldError,
    RoutingStore,
    StaleLatestError,
)
from routeplan_client import Router

WORKERS = Workers.homogeneous(4)


def table(stream: str = "s", shift: int = 0, groups: int = 16) -> RoutingTable:
    return RoutingTable(stream, "kg", WORKERS, tuple(f"w{(g + shift) % 4}" for g in range(groups)))


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path) -> str:
    """A fresh, empty store root on either back end."""
    if request.param == "local":
        return str(tmp_path / "routing")
    return request.getfixturevalue("object_store").uri(f"routing-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def s3_root(object_store) -> str:
    return object_store.uri(f"routing-{uuid.uuid4().hex[:8]}")


def write(root: str, *names: str, text: str) -> None:
    """A file written behind the store's back (as a broken publisher or an operator might)."""
    storage.write_text(storage.join(root, *names), text)


# --------------------------------------------------------------------------------------------
# one store, two back ends


def test_publish_load_and_list_the_same_on_both_back_ends(root):
    store = RoutingStore(root)
    assert (store.streams(), store.stream_folders(), store.load("s")) == ([], [], None)
    first = store.publish(table("s"))
    second = store.publish(table("s", 1), reason="shifted")
    store.publish(table("t"))
    assert (first.version, second.version, second.parent_version) == (1, 2, 1)
    assert store.streams() == ["s", "t"] and store.stream_folders() == ["s", "t"]
    assert store.versions("s") == [1, 2]
    assert store.latest_version("s") == store.checked_latest("s") == 2
    assert store.load("s") == second and store.load("s", 1) == first
    assert store.read_document("s")["reason"] == "shifted"
    assert json.loads(store.read_bytes("s", 1)) == store.read_document("s", 1)
    size = len(store.read_bytes("s", 1))
    with pytest.raises(ValueError, match=rf"s/v1\.json: more than {size - 1} bytes"):
        RoutingStore(root, max_bytes=size - 1).read_document("s", 1)
    assert len(RoutingStore(root, max_bytes=size - 1).read_bytes("s", 1)) == size  # limit + 1
    with pytest.raises(FileNotFoundError, match=r"no routing table v7 .*versions kept: 1–2"):
        store.read_document("s", 7)
    with pytest.raises(StaleLatestError, match="expected LATEST v1, found v2"):
        store.publish(table("s", 2), expected_latest=1)
    assert store.versions("s") == [1, 2]  # a refused publish writes nothing


def test_rollback_and_prune_on_both_back_ends(root):
    store = RoutingStore(root)
    for shift in range(4):
        store.publish(table("s", shift))
    restored, published = store.rollback("s", 2, "v4 misroutes")
    assert published and (restored.version, restored.parent_version) == (5, 4)
    assert restored.restored_version == 2 and store.load("s").same_routing(store.load("s", 2))
    assert store.rollback("s", 2, "again") == (store.load("s"), False)
    assert store.prune("s", 2) == [1, 2, 3]
    assert store.versions("s") == [4, 5] and store.load("s").version == 5
    with pytest.raises(FileNotFoundError, match="JSON versions kept: 4–5"):
        store.read_document("s", 1)


def test_doctor_reports_and_repairs_on_both_back_ends(root):
    store = RoutingStore(root)
    for shift in range(3):
        store.publish(table("s", shift))
    orphan = table("s", 9).published(4, 3, "2026-11-23T00:00:00+00:00").to_document()
    write(root, "s", "v4.json", text=json.dumps(orphan))
    write(root, "s", "v5.json", text="{truncated")
    report = store.doctor("s")
    assert (report.latest, report.latest_version, report.orphan_versions) == ("ok", 3, (4,))
    assert [v for v, _ in report.corrupt_versions] == [5] and not report.clean

    write(root, "s", "LATEST", text="")  # an empty object: no range to read
    assert store.doctor("s").latest == "garbage"
    write(root, "s", "LATEST", text="garbage")
    with pytest.raises(BrokenLatestError, match="doctor --stream s --fix"):
        store.publish(table("s"))
    fixed = store.doctor("s", fix=True)
    assert fixed.fixed == ("LATEST now names v4 (it did not name a version file)",)
    assert (fixed.latest, fixed.latest_version) == ("ok", 4)
    assert store.publish(table("s", 5)).version == 6  # numbered above every file
    assert store.doctor("t").to_dict()["clean"] and store.stream_folders() == ["s"]


def test_doctor_fix_sets_orphans_aside_on_both_back_ends(root):
    """Versions LATEST's history never named go to ``s/unpublished/``, whole; on object storage
    one newer than LATEST stays (its publisher may be about to move LATEST to it) until a newer
    publish passes it."""
    store = RoutingStore(root)
    store.publish(table("s", 0))
    store.publish(table("s", 1))
    stamp = "2026-11-23T00:00:00+00:00"
    write(root, "s", "v3.json", text=json.dumps(table("s", 7).published(3, 2, stamp).to_document()))
    store.publish(table("s", 2))  # v4, built on v2 as v3 was
    write(root, "s", "v5.json", text=json.dumps(table("s", 8).published(5, 4, stamp).to_document()))
    assert store.doctor("s").orphan_versions == (3, 5)
    fixed = store.doctor("s", fix=True)
    moved = "moved v{} (never published) to unpublished/v{}.json"
    if storage.is_remote(root):
        assert fixed.fixed == (
            moved.format(3, 3),
            "left v5: newer than LATEST, a publish in flight?",
        )
        assert (store.versions("s"), store.unpublished("s")) == ([1, 2, 4, 5], [3])
        assert store.publish(table("s", 3)).version == 6  # v5 is below LATEST now
        assert store.doctor("s", fix=True).fixed == (moved.format(5, 5),)
    else:
        assert fixed.fixed == (moved.format(3, 3), moved.format(5, 5))
        assert store.publish(table("s", 3)).version == 6  # no number given twice
    assert (store.versions("s"), store.unpublished("s")) == ([1, 2, 4, 6], [3, 5])
    aside = storage.read_bytes(storage.join(root, "s", "unpublished", "v3.json"))
    assert json.loads(aside)["version"] == 3
    assert store.doctor("s").clean and store.doctor("s").orphan_versions == ()


def test_doctor_on_object_storage_leaves_a_latest_that_moved_meanwhile(s3_root):
    """``--fix`` moves a broken LATEST by a conditional write: a publisher that repaired it
    first wins, and the doctor reports the state it finds."""
    store = RoutingStore(s3_root)
    store.publish(table("s"))
    write(s3_root, "s", "LATEST", text="garbage")
    files = store._files
    move = files.move_latest

    def publish_first(stream: str, text: str, tag: str | None) -> bool:
        write(s3_root, "s", "LATEST", text="v1.json\n")  # someone else repaired it just now
        return move(stream, text, tag)

    files.move_latest = publish_first
    report = store.doctor("s", fix=True)
    assert report.fixed == () and report.clean and report.latest_version == 1


# --------------------------------------------------------------------------------------------
# the object back end's promises


def test_a_version_is_written_once(root):
    store = RoutingStore(root)
    store.publish(table("s"))
    before = store.read_bytes("s", 1)
    with pytest.raises(FileExistsError):
        store._files.create("s", "v1.json", "overwritten\n")
    assert store.read_bytes("s", 1) == before and store.load("s").version == 1


def test_latest_moves_only_from_the_etag_it_had(s3_root):
    store = RoutingStore(s3_root)
    files = store._files
    assert files.read_latest("s") is None
    assert files.move_latest("s", "v1.json\n", None)  # If-None-Match: *
    assert not files.move_latest("s", "v2.json\n", None)  # there is one now
    text, tag = files.read_latest("s")
    assert text == "v1.json\n" and tag
    assert files.move_latest("s", "v2.json\n", tag)  # If-Match: the ETag it had
    assert not files.move_latest("s", "v3.json\n", tag)  # moved since: refused
    assert files.read_latest("s")[0] == "v2.json\n"


def test_with_expected_latest_the_publisher_that_loses_the_race_is_stale(s3_root):
    """Two publishers read LATEST v1 and write their versions before either moves it: one moves
    it, the other gets StaleLatestError and leaves its version as a harmless orphan."""
    RoutingStore(s3_root).publish(table("s"))
    both_written = threading.Barrier(2, timeout=30)
    stores = [RoutingStore(s3_root), RoutingStore(s3_root)]
    for store in stores:
        create = store._files.create

        def create_then_wait(stream, name, text, create=create):
            create(stream, name, text)
            both_written.wait()

        store._files.create = create_then_wait
    outcomes: list[object] = [None, None]

    def publish(i: int) -> None:
        try:
            outcomes[i] = stores[i].publish(table("s", i + 1), expected_latest=1)
        except StaleLatestError as err:
            outcomes[i] = err

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    stale = [o for o in outcomes if isinstance(o, StaleLatestError)]
    won = [o for o in outcomes if isinstance(o, RoutingTable)]
    assert len(stale) == 1 and len(won) == 1, outcomes
    store = RoutingStore(s3_root)
    assert store.latest_version("s") == won[0].version and store.load("s") == won[0]
    report = store.doctor("s")
    assert report.clean and report.valid_versions == (1, 2, 3)
    assert report.orphan_versions == ((3,) if won[0].version == 2 else (2,))  # never LATEST


PUBLISHER = """
import sys
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import RoutingStore

store, name, count = RoutingStore(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()  # both processes start publishing together
for i in range(count):
    owners = tuple(f"w{(g + i) % 4}" for g in range(16))
    published = store.publish(RoutingTable("s", "kg", Workers.homogeneous(4), owners), reason=name)
    print(published.version, flush=True)
"""


@pytest.mark.parametrize("racers", ["threads", "processes"])
def test_racing_publishers_never_lose_an_update(s3_root, racers):
    """Two publishers, 20 publishes each, same stream, no expected_latest: every publish gets its
    own version, every published table is readable as published, a reader polling LATEST never
    sees it go backwards, and LATEST ends at the newest version."""
    per_publisher, store = 20, RoutingStore(s3_root)
    seen: list[int] = []
    torn: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        reader = RoutingStore(s3_root)
        while not stop.is_set():
            try:
                version = reader.latest_version("s")
                if version is not None:
                    seen.append(version)
                    reader.load("s", version)  # whole: JSON, schema, checksum
            except Exception as err:
                torn.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    published: dict[str, list[int]] = {}
    try:
        if racers == "threads":
            published = race_in_threads(s3_root, per_publisher)
        else:
            published = race_in_processes(s3_root, per_publisher)
    finally:
        stop.set()
        reader.join(60)
    versions = [v for name in published for v in published[name]]
    assert all(len(published[name]) == per_publisher for name in ("a", "b")), published
    assert len(set(versions)) == len(versions) == 2 * per_publisher
    for name, mine in published.items():
        for version in mine:
            assert store.read_document("s", version)["reason"] == name
    chain = sorted(versions)  # each publish built on the one before it: no update was lost
    assert [store.read_document("s", v)["parent_version"] for v in chain] == [None, *chain[:-1]]
    assert not torn and seen and seen == sorted(seen), (torn, seen)
    assert set(seen) <= set(versions)  # LATEST never named a losing attempt's version
    assert store.latest_version("s") == max(versions) == max(store.versions("s"))
    report = store.doctor("s")  # losers' attempts left orphans only, nothing broken
    assert report.clean and set(versions) <= set(report.valid_versions)


def race_in_threads(root: str, count: int) -> dict[str, list[int]]:
    published: dict[str, list[int]] = {"a": [], "b": []}
    errors: list[BaseException] = []
    start = threading.Barrier(2, timeout=30)

    def publisher(name: str) -> None:
        store = RoutingStore(root)
        start.wait()
        try:
            for i in range(count):
                published[name].append(store.publish(table("s", i), reason=name).version)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=publisher, args=(name,)) for name in published]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return published


def race_in_processes(root: str, count: int) -> dict[str, list[int]]:
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", PUBLISHER, root, name, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    }
    for proc in procs.values():
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    published = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        published[name] = [int(line) for line in out.split()]
    return published


# --------------------------------------------------------------------------------------------
# readers of an s3:// root: the Router, the HTTP API, the CLI; s3a:// names the same store


def test_router_serves_and_follows_latest_from_s3(s3_root):
    store = RoutingStore(s3_root)
    store.publish(table("s"))
    with Router.open(s3_root, "s") as router:
        assert router.version == 1 and router.route("k") in WORKERS.names
        assert router.reload() is False
        store.publish(table("s", 1))
        assert router.reload() is True and router.version == 2
        assert router.table.document == store.read_document("s")
        write(s3_root, "s", "v3.json", text="{}")
        write(s3_root, "s", "LATEST", text="v3.json\n")
        assert router.reload() is False and router.version == 2  # a bad version never serves
    size = len(store.read_bytes("s", 2))
    with pytest.raises(ValueError, match=f"v2.json: more than {size - 1} bytes"):
        Router.open(s3_root, "s", version=2, max_bytes=size - 1)
    with pytest.raises(FileNotFoundError, match=f"no routing table published .* in {s3_root}"):
        Router.open(s3_root, "x")


def etag(published: RoutingTable) -> str:
    return f'"{published.to_document()["checksum"]}"'


def test_the_http_api_serves_an_s3_root(s3_root):
    from fastapi.testclient import TestClient

    from routeplan.api.app import create_app

    store = RoutingStore(s3_root)
    with TestClient(create_app(s3_root)) as api:
        assert api.get("/healthz").json()["detail"] == "nothing published yet"
        first = store.publish(table("s"))
        assert api.get("/healthz").json() == {"status": "ok", "streams": 1, "broken": 0}
        resp = api.get("/streams/s/latest")
        assert resp.status_code == 200 and resp.headers["etag"] == etag(first)
        assert resp.json()["version"] == 1
        unchanged = api.get("/streams/s/latest", headers={"If-None-Match": etag(first)})
        assert unchanged.status_code == 304
        second = store.publish(table("s", 1))
        resp = api.get("/streams/s/latest")
        assert resp.json()["version"] == 2 and resp.headers["etag"] == etag(second)
        assert api.get("/streams/s/versions").json()["versions"] == [1, 2]
        write(s3_root, "s", "v1.json", text="truncated")  # replaced: the cache notices
        resp = api.get("/streams/s/versions/1")
        assert resp.status_code == 500 and "s/v1.json" in resp.json()["detail"]
        assert s3_root not in resp.text
        assert api.get("/streams/x/latest").status_code == 404


def test_s3a_names_the_same_store(s3_root):
    s3a_root = "s3a" + s3_root[len("s3") :]
    RoutingStore(s3a_root).publish(table("s"))
    store = RoutingStore(s3_root)
    assert RoutingStore(s3a_root).root == store.root == s3_root
    assert store.load("s") == RoutingStore(s3a_root).load("s")
    with Router.open(s3a_root, "s") as router:
        assert router.version == 1


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def test_the_cli_takes_an_s3_routing_root(s3_root):
    store = RoutingStore(s3_root)
    store.publish(table("s"))
    store.publish(table("s", 1))
    code, out = run_cli("versions", "--routing", s3_root, "--json")
    assert code == 0 and [row["version"] for row in json.loads(out)] == [1, 2]
    code, out = run_cli("rollback", "--routing", s3_root, "--stream", "s", "--version", "1",
                        "--reason", "test")  # fmt: skip
    assert code == 0 and store.latest_version("s") == 3
    code, out = run_cli("show", "--routing", s3_root, "--stream", "s", "--json")
    assert code == 0 and json.loads(out)["restored_version"] == 1
    write(s3_root, "s", "LATEST", text="garbage")
    code, out = run_cli("doctor", "--routing", s3_root, "--fix")
    assert code == 0 and "LATEST now names v3" in out and store.checked_latest("s") == 3


def test_other_fsspec_schemes_are_read_but_not_published(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    RoutingStore(tmp_path).publish(table("s"))
    fs, root = fsspec.filesystem("memory"), f"/routing-{uuid.uuid4().hex}"
    for path in sorted(Path(tmp_path).rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            fs.pipe_file(f"{root}/{path.relative_to(tmp_path).as_posix()}", path.read_bytes())
    store = RoutingStore(f"memory://{root}")
    assert store.streams() == ["s"] and store.load("s").version == 1
    with pytest.raises(NotImplementedError, match="conditional writes"):
        store.publish(table("s", 1))


def test_a_hold_refuses_new_routing_until_a_restore_or_clear_on_both_back_ends(root):
    store = RoutingStore(root)
    store.publish(table("s"))
    store.publish(table("s", 1))
    assert store.held("s") is None and store.holds() == {}
    hold = store.hold("s", "v2 regressed", now=datetime(2026, 11, 22, 3, tzinfo=UTC))
    assert hold == {
        "reason": "v2 regressed",
        "created_at": "2026-11-22T03:00:00+00:00",
        "version": 2,
        "by": "person",
    }
    assert store.held("s") == hold and store.holds() == {"s": hold}
    assert json.loads(storage.read_bytes(storage.join(root, "s", "HOLD"))) == hold
    with pytest.raises(HeldError, match=r"stream 's' is held at v2 \(v2 regressed\)") as refused:
        store.publish(table("s", 2))
    assert refused.value.reason == "v2 regressed"
    assert store.versions("s") == [1, 2] and store.latest_version("s") == 2  # nothing written
    assert store.doctor("s").hold == hold and store.doctor("s").clean  # listed, no problem
    assert store.doctor("s").to_dict()["hold"] == hold
    restored, published = store.rollback("s", 1, "guard hold: back to v1")
    assert published and restored.version == 3 and store.held("s") is None  # restore lifts it
    store.hold("s", "again")
    assert store.rollback("s", 1, "keep v3") == (store.load("s"), False)
    assert store.held("s") is None  # a restore that publishes nothing lifts it too
    guard = store.hold("s", "v3 regressed twice", by="guard")
    assert store.held("s")["by"] == "guard"
    # the guard's own rollback never lifts a hold (a person's or its own)
    assert store.restore(store.load("s", 2), "guard", lift_hold=False)[1]
    assert store.held("s") == guard
    store.hold("s", "once more")
    assert store.clear_hold("s") and not store.clear_hold("s")
    assert store.publish(table("s", 1)).version == 5
    with pytest.raises(ValueError, match="a hold needs a reason"):
        store.hold("s", "  ")


def test_a_garbage_hold_still_holds(root):
    store = RoutingStore(root)
    store.publish(table("s"))
    write(root, "s", "HOLD", text="{not json")
    assert "unreadable" in store.held("s")["reason"]
    with pytest.raises(HeldError, match="unreadable"):
        store.publish(table("s", 1))
    assert store.clear_hold("s") and store.publish(table("s", 1)).version == 2


def test_outcomes_reports_are_read_from_object_storage(object_store, capsys):
    from routeplan.streams.outcome_reports import read_outcomes

    reports = object_store.uri(f"reports-{uuid.uuid4().hex[:8]}")
    row = {
        "stream": "s",
        "version": 2,
        "interval_start": "2026-11-21",
        "measure": "imbalance",
        "verdict": "regressed",
        "realized": 0.4,
    }
    guard = {"stream": "s", "version": 2, "action": "hold", "reason": "worse"}
    report = {"run_id": "r", "outcomes": [row], "guard": [guard]}
    write(reports, "2026-11-21", "outcomes.json", text=json.dumps(report))
    write(reports, "2026-11-22", "outcomes.json", text="{broken")
    write(reports, "not-a-day", "outcomes.json", text="{broken")
    found = read_outcomes(reports)
    assert [(r["stream"], r["verdict"], r["guard"]["action"]) for r in found.records] == [
        ("s", "regressed", "hold")
    ]
    assert len(found.warnings) == 1 and "2026-11-22/outcomes.json" in found.warnings[0]
    assert main(["outcomes", "--reports", reports, "--stream", "s"]) == 0
    out = capsys.readouterr().out
    assert "v2" in out and "guard: hold: worse" in out


def test_the_loop_state_is_written_per_night_and_read_back_on_both_back_ends(root):
    store = RoutingStore(root)
    store.publish(table("s"))
    assert store.loop_nights("s") == []
    store.write_loop_state("s", "2026-11-21", {"stream": "s", "night": "2026-11-21"})
    store.write_loop_state("s", "2026-11-20", {"stream": "s", "night": "2026-11-20"})
    store.write_loop_state("s", "2026-11-21", {"stream": "s", "night": "2026-11-21", "n": 2})
    assert store.loop_nights("s") == ["2026-11-20", "2026-11-21"]  # a rerun replaced its night
    assert store.read_loop_state("s", "2026-11-21")["n"] == 2
    assert store.versions("s") == [1] and store.doctor("s").clean  # not versions, no problem
    for night in ("../x", "2026-13-01", "2026-11-21/../../y"):
        with pytest.raises(ValueError, match="a loop state's night is a date"):
            store.write_loop_state("s", night, {})
    with pytest.raises(FileNotFoundError):
        store.read_loop_state("s", "2026-11-22")
