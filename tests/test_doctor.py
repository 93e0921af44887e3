"""``RoutingStore.doctor`` and ``routeplan doctor``: a store's state after faults (garbage
LATEST, killed publishers, corrupt files) and the repairs ``--fix`` may make."""

from __future__ import annotations

import fcntl
import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from routeplan.cli.main import main
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import BrokenLatestError, DoctorReport, RoutingStore

WORKERS = Workers.homogeneous(4)


def table(stream: str = "s", shift: int = 0, groups: int = 64) -> RoutingTable:
    return RoutingTable(stream, "kg", WORKERS, tuple(f"w{(g + shift) % 4}" for g in range(groups)))


def published(root: Path, count: int, stream: str = "s") -> RoutingStore:
    store = RoutingStore(root)
    for i in range(count):
        store.publish(table(stream, i))
    return store


def orphan(store: RoutingStore, stream: str, version: int) -> None:
    """``v<version>.json`` written as publish writes it, LATEST never moved (a killed publish)."""
    parent = version - 1 if version > 1 else None
    doc = table(stream, version).published(version, parent, "2026-11-21T00:00:00+00:00")
    store.path(stream, version).write_text(json.dumps(doc.to_document()))


def doctor(root: Path, *args: str) -> tuple[int, str]:
    """``routeplan doctor --routing root *args``: exit code and stdout."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["doctor", "--routing", str(root), *args])
    return code, out.getvalue()


def test_a_healthy_store_is_clean(tmp_path):
    store = published(tmp_path, 3)
    report = store.doctor("s")
    assert isinstance(report, DoctorReport)
    assert (report.latest, report.latest_version, report.clean) == ("ok", 3, True)
    assert report.valid_versions == (1, 2, 3) and report.problems == ()
    assert doctor(tmp_path, "--stream", "s") == (0, "s: ok, LATEST v3 (versions 1–3)\n")
    assert store.doctor("nothing").latest == "missing" and store.doctor("nothing").clean


def test_a_garbage_latest_refuses_publishes_until_doctor_fixes_it(tmp_path):
    store = published(tmp_path, 3)
    latest = tmp_path / "s" / "LATEST"
    latest.write_text("\x00garbage\x00" * 1000)
    with pytest.raises(BrokenLatestError) as refused:
        store.publish(table("s", 9))
    message = str(refused.value)
    assert "\n" not in message and "run `routeplan doctor --stream s --fix`" in message
    assert store.versions("s") == [1, 2, 3]  # nothing written

    report = store.doctor("s")  # without --fix: reports, changes nothing
    assert (report.latest, report.clean) == ("garbage", False)
    assert report.problems[0].startswith("LATEST: does not name a version file")
    code, out = doctor(tmp_path, "--stream", "s")
    assert code == 1 and "LATEST: does not name a version file" in out and "--fix" in out
    assert latest.read_text().startswith("\x00garbage")

    code, out = doctor(tmp_path, "--stream", "s", "--fix")
    assert code == 0, out
    assert "fixed: LATEST now names v3 (it did not name a version file)" in out
    assert latest.read_text() == "v3.json\n"
    assert store.publish(table("s", 9)).version == 4


def test_latest_naming_a_missing_or_corrupt_version_points_at_the_newest_valid_one(tmp_path):
    store = published(tmp_path, 3)
    (tmp_path / "s" / "LATEST").write_text("v7.json\n")
    report = store.doctor("s")
    assert (report.latest, report.latest_version) == ("missing_version", 7)
    with pytest.raises(BrokenLatestError, match="names v7, not stored"):
        store.publish(table("s", 9))
    fixed = store.doctor("s", fix=True)
    assert (fixed.latest, fixed.latest_version, fixed.clean) == ("ok", 3, True)
    assert fixed.fixed == ("LATEST now names v3 (it named v7, not stored)",)

    path = store.path("s", 3)
    doc = json.loads(path.read_text())
    doc["key_group_worker"][0] = "w3" if doc["key_group_worker"][0] != "w3" else "w2"
    path.write_text(json.dumps(doc))  # v3: checksum mismatch
    report = store.doctor("s")
    assert (report.latest, report.valid_versions) == ("invalid_version", (1, 2))
    ((version, why),) = report.corrupt_versions
    assert version == 3 and "checksum mismatch" in why
    fixed = store.doctor("s", fix=True)
    assert (fixed.latest, fixed.latest_version) == ("ok", 2)
    assert not fixed.clean  # v3 stays corrupt: doctor never deletes a version
    assert fixed.problems == (f"v3 is corrupt: {why}",)
    assert doctor(tmp_path, "--stream", "s", "--fix")[0] == 1
    assert store.load("s").version == 2


def test_orphans_are_moved_aside_by_fix_never_promoted_over_a_valid_latest(tmp_path):
    store = published(tmp_path, 2)
    orphan(store, "s", 3)
    orphan(store, "s", 4)
    report = store.doctor("s")
    assert (report.latest, report.latest_version) == ("ok", 2)
    assert report.orphan_versions == (3, 4) and report.clean and report.fixed == ()
    code, out = doctor(tmp_path)
    assert code == 0 and "orphan versions 3–4: LATEST never named them" in out
    code, out = doctor(tmp_path, "--fix", "--json")
    assert code == 0
    (doc,) = json.loads(out)
    assert doc["orphan_versions"] == [] and doc["latest_version"] == 2 and doc["clean"]
    assert doc["fixed"] == [
        "moved v3 (never published) to unpublished/v3.json",
        "moved v4 (never published) to unpublished/v4.json",
    ]
    assert store.versions("s") == [1, 2] and store.unpublished("s") == [3, 4]
    assert store.load("s").version == 2
    assert store.publish(table("s", 9)).version == 5  # numbered above the orphans set aside


def test_temp_files_are_removed_and_other_files_left_alone(tmp_path):
    store = published(tmp_path, 1)
    for name in (".tmp-abc", ".tmp-x1y2"):
        (tmp_path / "s" / name).write_text('{"half a vers')
    (tmp_path / "s" / "notes.txt").write_text("mine")
    report = store.doctor("s")
    assert report.temp_files == (".tmp-abc", ".tmp-x1y2") and not report.clean
    fixed = store.doctor("s", fix=True)
    assert fixed.clean and fixed.temp_files == ()
    assert fixed.fixed == ("removed temp file .tmp-abc", "removed temp file .tmp-x1y2")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        ".lock",
        "LATEST",
        "notes.txt",
        "v1.json",
    ]


def test_doctor_without_a_stream_checks_every_stream_folder(tmp_path):
    store = published(tmp_path, 2, "a")
    published(tmp_path, 1, "b")
    (tmp_path / "b" / "LATEST").write_text("nonsense")
    (tmp_path / "c").mkdir()  # a first publish killed after its version file: no LATEST
    orphan(store, "c", 1)
    (tmp_path / "not a stream").mkdir()
    code, out = doctor(tmp_path, "--json")
    assert code == 1
    reports = {r["stream"]: r for r in json.loads(out)}
    assert set(reports) == {"a", "b", "c"}
    assert (reports["a"]["latest"], reports["b"]["latest"]) == ("ok", "garbage")
    assert (reports["c"]["latest"], reports["c"]["orphan_versions"]) == ("missing", [1])
    code, out = doctor(tmp_path, "--fix")
    assert code == 0, out
    assert [store.latest_version(s) for s in "abc"] == [2, 1, 1]


def test_doctor_waits_for_the_publish_lock(tmp_path):
    published(tmp_path, 1)
    (tmp_path / "s" / "LATEST").write_text("garbage")
    done = threading.Event()
    with open(tmp_path / "s" / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a publish in progress
        worker = threading.Thread(
            target=lambda: RoutingStore(tmp_path).doctor("s", fix=True) and done.set()
        )
        worker.start()
        assert not done.wait(0.3)
        assert (tmp_path / "s" / "LATEST").read_text() == "garbage"
        fcntl.flock(lock, fcntl.LOCK_UN)
    worker.join(10)
    assert done.is_set() and (tmp_path / "s" / "LATEST").read_text() == "v1.json\n"


PUBLISHER = """
import os, sys, time
from routeplan.model.workers import Workers
from routeplan.model.table import RoutingTable
from routeplan.publishing.store import RoutingStore

fsync = os.fsync
os.fsync = lambda fd: (time.sleep(0.004), fsync(fd))[1]  # a slow disk: kills land mid-write
store, workers, i = RoutingStore(sys.argv[1]), Workers.homogeneous(4), 0
while True:
    owners = tuple(f"w{(g + i) % 4}" for g in range(64))
    store.publish(RoutingTable("s", "kg", workers, owners), reason=f"round {i}")
    print(i, flush=True)
    i += 1
"""


def test_doctor_fix_after_publishers_killed_mid_publish(tmp_path):
    """SIGKILL a publishing process at seeded random moments until the kills have left both temp
    files and orphan versions: ``doctor --fix`` leaves a clean store (LATEST untouched), then
    again after a garbage LATEST, and the next publish numbers above every file."""
    rng, store, folder = random.Random(20261121), RoutingStore(tmp_path), tmp_path / "s"
    seen = {"temp files": 0, "orphans": 0}
    for kill in range(40):
        proc = subprocess.Popen(
            [sys.executable, "-c", PUBLISHER, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() != ""  # imported, publishing
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        proc.stdout.close()
        killed = store.doctor("s")  # a kill never tears LATEST or a version file
        assert killed.latest == "ok" and killed.corrupt_versions == (), killed
        seen["temp files"] += bool(killed.temp_files)
        seen["orphans"] += bool(killed.orphan_versions)
        if kill >= 5 and all(seen.values()):
            break
    assert all(seen.values()), seen

    latest = store.latest_version("s")
    code, out = doctor(tmp_path, "--stream", "s", "--fix")
    assert code == 0, out
    assert store.latest_version("s") == latest  # orphans are never promoted over it
    assert not list(folder.glob(".tmp-*"))
    assert store.unpublished("s") and store.doctor("s").orphan_versions == ()

    (folder / ".tmp-killed").write_text('{"stream": "s", "vers')  # as a kill inside a write
    (folder / "LATEST").write_text("v")  # and a LATEST someone truncated
    files = sorted(int(p.stem[1:]) for p in folder.glob("v*.json"))
    code, out = doctor(tmp_path, "--stream", "s", "--fix")
    assert code == 0, out
    report = store.doctor("s")
    assert report.clean and report.problems == () and report.temp_files == ()
    assert not list(folder.glob(".tmp-*"))
    assert report.latest == "ok" and report.latest_version == max(files)
    for version in store.versions("s"):  # every file whole: JSON, schema, checksum
        assert store.load("s", version).version == version
    assert store.publish(table("s", 1)).version == max(files + store.unpublished("s")) + 1
    assert store.doctor("s").clean


def test_a_cli_rollback_on_a_garbage_latest_fails_naming_doctor(tmp_path, capsys):
    published(tmp_path, 2)
    (tmp_path / "s" / "LATEST").write_text("not a version")
    code = main(
        ["rollback", "--routing", str(tmp_path), "--stream", "s", "--version", "1", "--reason", "x"]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "routeplan doctor --stream s --fix" in err and "Traceback" not in err


class Killed(BaseException):
    """A SIGKILL at one step of a publish: nothing after it runs (no except, no finally)."""


def publish_killed_before_latest_moves(store: RoutingStore, routing: RoutingTable) -> int:
    """Publish ``routing`` with the process killed after its version file is linked into place,
    before LATEST is renamed to it; the version written."""
    written = max(store.versions(routing.stream), default=0) + 1
    files = store._files  # the store's real file layer: only the LATEST move is cut off

    def killed(*args: object, **kwargs: object) -> bool:
        raise Killed

    files.move_latest, real = killed, files.move_latest
    try:
        with pytest.raises(Killed):
            store.publish(routing)
    finally:
        files.move_latest = real
    assert store.versions(routing.stream)[-1] == written
    return written


def test_a_version_never_published_stays_an_orphan_after_newer_versions(tmp_path):
    """A kill between the hard link and the rename leaves v3 looking published; v4 is built on
    the same LATEST (v2). However many versions follow, doctor lists v3 and ``--fix`` moves it
    to ``s/unpublished/``, never a version LATEST named, rolled back from or restored."""
    store = published(tmp_path, 2)
    assert publish_killed_before_latest_moves(store, table("s", 7)) == 3
    assert store.latest_version("s") == 2
    assert store.publish(table("s", 6)).parent_version == 2  # v4, beside v3
    store.rollback("s", 1, "v4 was bad")  # v5: restores v1, rolled back from v4
    assert publish_killed_before_latest_moves(store, table("s", 9)) == 6
    store.publish(table("s", 10))  # v7, on v5
    store.publish(table("s", 11))  # v8
    assert [store.load("s", v).parent_version for v in (3, 4, 6, 7)] == [2, 2, 5, 5]

    report = store.doctor("s")
    assert report.latest_version == 8 and report.orphan_versions == (3, 6) and report.clean
    code, out = doctor(tmp_path, "--stream", "s")
    assert code == 0 and "orphan versions 3, 6: LATEST never named them" in out

    code, out = doctor(tmp_path, "--stream", "s", "--fix")
    assert code == 0, out
    assert "fixed: moved v3 (never published) to unpublished/v3.json" in out
    assert "fixed: moved v6 (never published) to unpublished/v6.json" in out
    assert store.versions("s") == [1, 2, 4, 5, 7, 8] and store.unpublished("s") == [3, 6]
    moved = tmp_path / "s" / "unpublished" / "v3.json"
    assert json.loads(moved.read_text())["version"] == 3  # set aside whole, never deleted
    after = store.doctor("s")
    assert after.orphan_versions == () and after.clean and after.latest_version == 8
    assert store.doctor("s", fix=True).fixed == ()  # nothing left to move
    assert store.publish(table("s", 12)).version == 9


def test_below_a_corrupt_version_in_latests_history_nothing_is_judged_or_moved(tmp_path):
    """LATEST's history passes through v3, now corrupt: v2 (published) and v1 cannot be told
    from orphans, so they are listed as unknown and left in place; v5, above it, is judged."""
    store = published(tmp_path, 4)
    orphan(store, "s", 5)
    store.publish(table("s", 9))  # v6, on v4
    (tmp_path / "s" / "v3.json").write_text("{torn")
    report = store.doctor("s")
    assert (report.orphan_versions, report.unknown_versions) == ((5,), (1, 2))
    assert report.history_break == 3 and not report.clean  # v3 is corrupt
    code, out = doctor(tmp_path, "--stream", "s", "--fix")
    assert code == 1
    assert "versions 1–2: below v3, which cannot be read" in out
    assert store.versions("s") == [1, 2, 3, 4, 6] and store.unpublished("s") == [5]


def test_a_store_that_does_not_exist_is_an_error_not_silence(tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    for args in ([], ["--fix"], ["--json"]):
        assert main(["doctor", "--routing", str(missing), *args]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"routeplan doctor: error: no routing store at {missing}: the folder does not exist\n"
        )
    assert not missing.exists()  # looking never creates it
    missing.mkdir()
    assert doctor(missing) == (0, f"{missing}: no stream folders (nothing published yet)\n")
