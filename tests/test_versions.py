"""Published versions: rollback, retention, publish races, concurrent readers, diff, CLI."""

import json
import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import zipf_snapshot

from routeplan.cli.main import main
from routeplan.contracts.schemas import validate_document
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
from routeplan.publishing.diff import diff_tables
from routeplan.publishing.store import RoutingStore, StaleLatestError

SNAPSHOT = zipf_snapshot(keys=5_000, messages=200_000, num_key_groups=256)
WORKERS = Workers.homogeneous(8)


def plan(name: str, current: RoutingTable | None = None, **params) -> RoutingTable:
    return get_strategy(name, **params).plan(SNAPSHOT, current, WORKERS, Budget()).table


@pytest.fixture(scope="module")
def kg() -> RoutingTable:
    return plan("kg")


@pytest.fixture(scope="module")
def cg(kg) -> RoutingTable:
    return plan("cg", kg)


def test_plans_carry_their_planning_loads(cg):
    doc = cg.published(1, None, "2026-11-21T00:00:00+00:00").to_document()
    validate_document("routing_table", doc)
    assert doc["planning_load"]["key_group_load"] == SNAPSHOT.key_group_load.tolist()
    assert doc["planning_load"]["hot_key_load"] == dict(sorted(SNAPSHOT.hot_key_load.items()))
    again = RoutingTable.from_document(doc).planning_snapshot()
    assert np.array_equal(again.key_group_load, SNAPSHOT.key_group_load)


def test_rollback_round_trip(tmp_path, kg, cg):
    store = RoutingStore(tmp_path)
    store.publish(kg, reason="first")
    store.publish(cg, reason="cg plan")
    restored, published = store.rollback("s", 1, "cg overloaded w3")
    assert published
    assert (restored.version, restored.parent_version, restored.restored_version) == (3, 2, 1)
    assert restored.reason == "rollback to v1: cg overloaded w3"
    assert store.latest_version("s") == 3
    latest = store.load("s")
    assert latest.same_routing(kg) and not latest.same_routing(cg)
    assert latest.reason == restored.reason  # kept in the (checksummed) document
    # what the rollback moves is exactly what the cg plan moved, backwards
    forward, back = diff_tables(store.load("s", 1), store.load("s", 2)), diff_tables(cg, latest)
    assert [(m["unit"], m["to_workers"]) for m in back["moves"]] == [
        (m["unit"], m["from_workers"]) for m in forward["moves"]
    ]
    again, published = store.rollback("s", 1, "twice")
    assert not published and again.version == 3 and store.versions("s") == [1, 2, 3]
    with pytest.raises(ValueError, match="needs a reason"):
        store.rollback("s", 2, "  ")
    with pytest.raises(FileNotFoundError, match="v9 for stream 's'"):
        store.rollback("s", 9, "no such version")


def test_retention_prunes_old_json_and_says_where_they_went(tmp_path, kg, cg):
    store = RoutingStore(tmp_path)
    for i in range(5):
        store.publish(kg if i % 2 == 0 else cg)
    assert store.prune("s", keep_versions=2) == [1, 2, 3]
    assert store.versions("s") == [4, 5] and store.latest_version("s") == 5
    assert store.prune("s", keep_versions=2) == []
    with pytest.raises(FileNotFoundError, match=r"kept: 4–5; Delta gold.routing_tables"):
        store.load("s", 2)
    with pytest.raises(ValueError):
        store.prune("s", keep_versions=0)
    assert store.publish(kg).version == 6  # numbering goes on after pruning


def test_publish_against_a_moved_latest_is_refused(tmp_path, kg, cg):
    store = RoutingStore(tmp_path)
    store.publish(kg)
    with pytest.raises(StaleLatestError, match="expected LATEST vNone, found v1"):
        store.publish(cg, expected_latest=None)
    assert store.publish(cg, expected_latest=1).version == 2


def _publish_many(root: str, worker: int, tables: list[dict], rounds: int) -> None:
    store = RoutingStore(root)
    for i in range(rounds):
        store.publish(RoutingTable.from_document(tables[(worker + i) % len(tables)]))


def _read_many(root: str, stream: str, stop, results) -> None:
    """Read LATEST until told to stop; every read must be a whole, checksummed version."""
    store, seen, last, errors = RoutingStore(root), 0, 0, []
    while not stop.is_set() or seen == 0:
        try:
            table = store.load(stream)
        except Exception as err:  # a torn read shows up here (JSON, schema or checksum)
            errors.append(repr(err))
            continue
        if table is None:
            if last:
                errors.append("LATEST vanished")
            continue
        if table.version < last:
            errors.append(f"LATEST went back from v{last} to v{table.version}")
        last = table.version
        seen += 1
    results.put((seen, errors[:5]))


def test_concurrent_readers_never_see_a_torn_version(tmp_path, kg, cg):
    """4 processes publish 4 × 40 versions while 3 read LATEST in a loop."""
    docs = [t.to_document() for t in (kg, cg, plan("pkg"))]
    ctx = multiprocessing.get_context("fork")
    stop, results = ctx.Event(), ctx.Queue()
    readers = [
        ctx.Process(target=_read_many, args=(str(tmp_path), "s", stop, results)) for _ in range(3)
    ]
    writers = [
        ctx.Process(target=_publish_many, args=(str(tmp_path), w, docs, 40)) for w in range(4)
    ]
    for p in readers + writers:
        p.start()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    stop.set()
    reads = [results.get(timeout=60) for _ in readers]
    for p in readers:
        p.join(30)
    assert all(errors == [] for _, errors in reads), reads
    assert all(seen > 0 for seen, _ in reads)
    store = RoutingStore(tmp_path)
    assert store.versions("s") == list(range(1, 161))  # no version lost or written twice
    assert store.latest_version("s") == 160
    parents = [store.read_document("s", v)["parent_version"] for v in store.versions("s")]
    assert parents == [None, *range(1, 160)]  # each publish saw the one before it


def test_cli_versions_diff_rollback(tmp_path, kg, cg, capsys):
    store = RoutingStore(tmp_path)
    store.publish(kg, now=datetime(2026, 11, 20, tzinfo=UTC), reason="first")
    store.publish(cg, reason="cg plan: 12 moves")
    routing = ["--routing", str(tmp_path)]

    versions = ["--from-version", "1", "--to-version", "2"]
    assert main(["diff", *routing, "--stream", "s", *versions]) == 0
    out = capsys.readouterr().out
    assert out.startswith("s: v1 → v2 (key_routing)") and "planning_load of v2" in out

    assert main(["diff", *routing, "--stream", "s", "--from-version", "1", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    validate_document("routing_diff", diff)
    assert (diff["from_version"], diff["to_version"]) == (1, 2)

    assert main(["rollback", *routing, "--stream", "s", "--version", "1", "--reason", "bad"]) == 0
    assert "published v3 (routes as v1, replaces v2)" in capsys.readouterr().out
    assert main(["versions", *routing, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["version"], r["latest"], r["restored_version"]) for r in rows] == [
        (1, False, None),
        (2, False, None),
        (3, True, 1),
    ]
    assert main(["rollback", *routing, "--stream", "s", "--version", "7", "--reason", "x"]) == 1
    assert "no routing table v7" in capsys.readouterr().err
    assert main(["show", *routing, "--stream", "s"]) == 0
    assert "reason: rollback to v1: bad" in capsys.readouterr().out
    assert Path(tmp_path, "s", "v3.json").is_file()


def test_cli_explain_prints_why_a_version_routes_as_it_does(tmp_path, kg, cg, capsys):
    """``routeplan explain``: LATEST by default, the night's budget from the reports; --json is
    the API's document; an unknown stream or version is exit code 1."""
    store = RoutingStore(tmp_path / "routing")
    store.publish(kg, reason="first")
    store.publish(cg, reason="cg plan")
    day = tmp_path / "reports" / "2026-11-20"
    day.mkdir(parents=True)
    (day / "publish.json").write_text(
        json.dumps(
            {"run_id": "r1", "streams": [{"stream": "s", "action": "published", "version": 2}]}
        )
    )
    (day / "plan.json").write_text(json.dumps({"streams": {"s": {"budget": {"max_moves": 5000}}}}))
    where = ["--routing", str(tmp_path / "routing"), "--reports", str(tmp_path / "reports")]

    assert main(["explain", *where, "--stream", "s", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    explained = diff_tables(kg, store.load("s"))
    assert out.startswith("s v2 (key_routing, cg: Consistent Grouping, paper 000)")
    assert f"moves against v1: {len(explained['moves'])}" in out
    assert f"budget: max_moves {len(explained['moves'])} of 5000" in out
    assert f"… {len(explained['moves']) - 3} more" in out

    assert main(["explain", *where, "--stream", "s", "--version", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    validate_document("routing_explain", first)
    assert (first["version"], first["published_by"], first["moves"]) == (1, "first", [])
    assert main(["explain", *where, "--stream", "s", "--version", "9"]) == 1
    assert "v9" in capsys.readouterr().err
    assert main(["explain", *where, "--stream", "nope"]) == 1
    assert "no routing table published for stream 'nope'" in capsys.readouterr().err
