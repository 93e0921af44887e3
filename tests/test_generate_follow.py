"""``routeplan generate --follow`` and ``--scenario``: logs written by producers following the
routing store's LATEST (the producer client itself), days that continue each other, and the
named events of a day."""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from routeplan.cli.main import main
from routeplan.files import read_workers_file
from routeplan.model.capacity import estimate_capacities
from routeplan.model.hashing import key_group, key_groups
from routeplan.model.loads import LoadSnapshot, PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.registry import get_strategy
from routeplan.publishing.store import RoutingStore
from routeplan.simulation.scenarios import REROUTE_SEED, SLOWDOWN
from routeplan_client import Router

DAY = date(2026, 3, 1)
NEXT = DAY + timedelta(days=1)


def generate(tmp: Path, day: date, *extra: str, streams: str = "a", events: int = 20_000) -> int:
    return main(
        [
            *("generate", "--landing", str(tmp / "landing"), "--workers-out", str(tmp / "w.json")),
            *("--routing", str(tmp / "routing"), "--date", day.isoformat(), "--streams", streams),
            *("--events", str(events), "--keys", "2000", "--files", "3", "--no-progress"),
            *extra,
        ]
    )


def events(tmp: Path, day: date, stream: str = "a", fmt: str = "jsonl") -> pd.DataFrame:
    """A stream's events of the day, in the order producers sent them (file by file)."""
    paths = sorted((tmp / "landing" / day.isoformat()).glob(f"{stream}-*.{fmt}"))
    assert paths
    read = {
        "jsonl": lambda p: pd.read_json(p, lines=True, dtype={"worker": str}),
        "csv": pd.read_csv,
        "parquet": pd.read_parquet,
    }[fmt.split(".")[0]]
    return pd.concat([read(p) for p in paths], ignore_index=True)


def planned_from_logs(tmp: Path, day: date, stream: str = "a", strategy: str = "cg"):
    """A table planned on the day's logs (the loads the windows job would aggregate)."""
    counts = events(tmp, day, stream)["key"].value_counts()
    groups = key_groups(counts.index.tolist(), 1024)
    snapshot = LoadSnapshot(
        stream,
        np.bincount(groups, weights=counts.to_numpy(float), minlength=1024),
        hot_key_load=counts.head(30).astype(float).to_dict(),
    )
    workers = read_workers_file(tmp / "w.json")[stream]
    return get_strategy(strategy).plan(snapshot, None, workers, Budget()).table


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    """Day 1 by hash key grouping, a cg table planned on it and published, day 2 following it
    (stream ``a``; stream ``b`` has no table)."""
    tmp = tmp_path_factory.mktemp("follow")
    assert generate(tmp, DAY, streams="a,b") == 0
    table = RoutingStore(tmp / "routing").publish(planned_from_logs(tmp, DAY))
    assert table.hot_keys, "the plan splits some hot keys"
    assert generate(tmp, NEXT, "--follow", streams="a,b") == 0
    return tmp, table


def test_every_event_goes_where_the_client_routes_it(followed):
    tmp, table = followed
    rows = events(tmp, NEXT)
    assert (rows["routing_version"] == table.version).all()
    # one producer, its messages in time order, through Router.route one by one
    router = Router.from_store(tmp / "routing", "a")
    assert rows["worker"].tolist() == [router.route(k) for k in rows["key"]]
    plain = ~rows["key"].isin(list(table.hot_keys))
    assert plain.sum() > 0.5 * len(rows)
    assert all(
        w == table.key_group_worker[key_group(k, table.num_key_groups, table.hash_seed)]
        for k, w in zip(rows["key"][plain], rows["worker"][plain], strict=True)
    )
    split = rows[~plain]
    assert not split.empty
    for key, workers in split.groupby("key")["worker"]:
        assert set(workers) <= {w for w, _ in table.hot_keys[key]}
    assert set(rows["worker"]) <= set(table.workers.names)
    assert set(read_workers_file(tmp / "w.json")["a"].names) >= set(rows["worker"])


def test_a_stream_without_a_table_is_routed_by_key_grouping_as_without_follow(followed, tmp_path):
    tmp, _ = followed
    assert generate(tmp_path, NEXT, streams="a,b") == 0
    for path in sorted((tmp_path / "landing" / NEXT.isoformat()).glob("b-*")):
        assert path.read_bytes() == (tmp / "landing" / NEXT.isoformat() / path.name).read_bytes()
    assert "routing_version" not in events(tmp, NEXT, "b")
    # following changes where the events go, never which events there are
    before, after = events(tmp_path, NEXT), events(tmp, NEXT)
    columns = ["event_id", "ts", "key", "partition", "size_bytes"]
    assert before[columns].equals(after[columns])


def test_a_split_key_spreads_over_its_workers_by_capacity(tmp_path):
    """Alone on its workers, a split key's messages follow the router's local-load rule: shares
    in proportion to the capacities, which the planner's weights are."""
    assert generate(tmp_path, DAY, "--drift", "0") == 0
    top = events(tmp_path, DAY)["key"].value_counts().index[0]
    workers = Workers((Worker("w0"), Worker("w1", 3.0), Worker("w2", 1.0)))
    table = RoutingTable(
        "a", "test", workers, ("w0",) * 64, hot_keys={top: (("w1", 0.75), ("w2", 0.25))}
    )
    RoutingStore(tmp_path / "routing").publish(table)
    assert generate(tmp_path, NEXT, "--follow", "--drift", "0") == 0
    rows = events(tmp_path, NEXT)
    shares = rows.loc[rows["key"] == top, "worker"].value_counts(normalize=True)
    assert (rows["key"] == top).sum() > 500
    assert shares["w1"] == pytest.approx(0.75, abs=0.01)
    assert shares["w2"] == pytest.approx(0.25, abs=0.01)
    assert set(rows.loc[rows["key"] != top, "worker"]) == {"w0"}


def test_partitions_go_to_the_consumers_of_the_assignment(tmp_path, capsys):
    loads = PartitionLoad("p", np.linspace(50.0, 5.0, 16))
    plan = get_strategy("mwf", consumer_capacity=120.0).plan(
        loads, None, Workers.homogeneous(4), Budget()
    )
    store = RoutingStore(tmp_path / "routing")
    store.publish(plan.table)
    published = store.publish(plan.table)  # v2: the version LATEST names is stamped
    assert generate(tmp_path, DAY, "--follow", streams="p") == 0
    rows = events(tmp_path, DAY, "p")
    assigned = published.partition_consumer
    assert len(set(rows["worker"])) > 1
    assert (rows["worker"] == rows["partition"].map(assigned)).all()
    assert (rows["routing_version"] == 2).all()
    # an assignment that leaves some of the events' partitions unread is a usage error
    assert generate(tmp_path, DAY, "--follow", "--partitions", "20", streams="p") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "assigns no consumer to partition 16" in err


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_routing_version_is_written_in_every_format(tmp_path, fmt):
    table = get_strategy("kg").plan(
        LoadSnapshot("a", np.ones(1024)), None, Workers.homogeneous(3), Budget()
    )
    RoutingStore(tmp_path / "routing").publish(table.table)
    extra = ("--gzip",) if fmt == "csv" else ()
    assert generate(tmp_path, DAY, "--follow", "--format", fmt, *extra, events=300) == 0
    rows = events(tmp_path, DAY, fmt=f"{fmt}.gz" if extra else fmt)
    assert rows["routing_version"].tolist() == [1] * 300
    assert pd.api.types.is_integer_dtype(rows["routing_version"])
    assert set(rows["worker"]) <= {"w0", "w1", "w2"}


def test_consecutive_days_continue_each_other(tmp_path):
    def top(folder: Path, day: date, n: int = 20) -> set[str]:
        return set(events(folder, day)["key"].value_counts().index[:n])

    for day in (DAY, NEXT):
        assert generate(tmp_path / "x", day, "--drift", "0.01", events=60_000) == 0
    assert generate(tmp_path / "y", NEXT, "--drift", "0.01", "--seed", "7", events=60_000) == 0
    kept = len(top(tmp_path / "x", DAY) & top(tmp_path / "x", NEXT)) / 20
    fresh = len(top(tmp_path / "x", DAY) & top(tmp_path / "y", NEXT)) / 20
    assert kept >= 0.5 > 0.2 >= fresh  # mostly the same keys, not a fresh draw
    # the last hour of a day and the first of the next rank keys alike at the default drift
    assert generate(tmp_path / "z", DAY, events=60_000) == 0
    assert generate(tmp_path / "z", NEXT, events=60_000) == 0
    first = events(tmp_path / "z", DAY)
    second = events(tmp_path / "z", NEXT)
    last_hour = first[first["ts"] >= f"{DAY.isoformat()}T23"]["key"].value_counts().index[:10]
    first_hour = second[second["ts"] < f"{NEXT.isoformat()}T01"]["key"].value_counts().index[:10]
    assert len(set(last_hour) & set(first_hour)) >= 6


def test_the_same_arguments_write_the_same_files(followed, tmp_path):
    tmp, table = followed
    RoutingStore(tmp_path / "routing").publish(table)
    extra = ("--follow", "--scenario", "hot-key", "--scenario", "remove-worker:w2")
    for _ in range(2):  # twice into the same landing, as a rerun of the night would
        assert generate(tmp_path, NEXT, *extra, streams="a,b") == 0
        files = {
            p.name: p.read_bytes() for p in (tmp_path / "landing" / NEXT.isoformat()).iterdir()
        }
        files["w.json"] = (tmp_path / "w.json").read_bytes()
        if _ == 0:
            first = files
    assert files == first
    # another run elsewhere, after other days were generated, writes the same again
    other = tmp_path / "other"
    RoutingStore(other / "routing").publish(table)
    assert generate(other, DAY, streams="a,b") == 0
    assert generate(other, NEXT, *extra, streams="a,b") == 0
    for name, content in first.items():
        path = other / "w.json" if name == "w.json" else other / "landing" / NEXT.isoformat() / name
        assert path.read_bytes() == content


def test_a_slow_worker_costs_more_and_is_learnt_slower(tmp_path):
    assert generate(tmp_path / "x", DAY) == 0
    assert generate(tmp_path / "y", DAY, "--scenario", "slow-worker:w3") == 0
    normal, slow = events(tmp_path / "x", DAY), events(tmp_path / "y", DAY)
    assert normal["worker"].equals(slow["worker"])
    on = slow["worker"] == "w3"
    assert on.sum() > 1000
    assert np.allclose(slow["cost_ms"][on], SLOWDOWN * normal["cost_ms"][on], atol=0.01)
    assert slow["cost_ms"][~on].equals(normal["cost_ms"][~on])
    capacity = {w.name: w.capacity for w in read_workers_file(tmp_path / "y" / "w.json")["a"].items}
    assert capacity["w3"] == 1 / SLOWDOWN and capacity["w4"] == 1
    by_worker = slow.groupby("worker")["cost_ms"].agg(["count", "sum"])
    learnt = estimate_capacities(
        by_worker.index, by_worker["count"], by_worker["sum"], np.full(len(by_worker), 86400.0)
    ).capacities()
    assert learnt["w4"] / learnt["w3"] == pytest.approx(SLOWDOWN, rel=0.1)


def test_a_new_hot_key_takes_a_tenth_of_the_messages(tmp_path, capsys):
    assert generate(tmp_path, DAY) == 0
    assert generate(tmp_path, NEXT, "--scenario", "hot-key", "--json") == 0
    summary = json.loads(capsys.readouterr().out.split("\n", 2)[-1])
    (hot,) = summary["streams"]["a"]["new_hot_keys"]
    yesterday = events(tmp_path, DAY)["key"].value_counts()
    assert hot not in set(yesterday.index[:100])
    today = events(tmp_path, NEXT)["key"].value_counts(normalize=True)
    assert hot in set(today.index[:5])  # a Zipf top key may still be hotter
    assert today[hot] == pytest.approx(0.1, abs=0.01)
    assert summary["config"]["scenarios"] == ["hot-key"]


def test_a_removed_worker_is_named_nowhere(followed, tmp_path):
    tmp, table = followed
    RoutingStore(tmp_path / "routing").publish(table)
    gone = Counter(events(tmp, NEXT)["worker"]).most_common(1)[0][0]  # the busiest one
    assert generate(tmp_path, NEXT, "--follow", "--scenario", f"remove-worker:{gone}") == 0
    rows, before = events(tmp_path, NEXT), events(tmp, NEXT)
    assert gone not in set(rows["worker"])
    assert gone not in read_workers_file(tmp_path / "w.json")["a"].names
    moved = before["worker"] == gone
    assert moved.sum() > 0
    # what the router did not send to the removed worker is unchanged; what it did goes to a
    # survivor of the table by the key's hash
    assert rows["worker"][~moved].equals(before["worker"][~moved])
    survivors = [w for w in table.workers.names if w != gone]
    expected = [survivors[key_group(k, len(survivors), REROUTE_SEED)] for k in rows["key"][moved]]
    assert rows["worker"][moved].tolist() == expected
    # without a table, hash key grouping spreads the key groups over the remaining workers
    assert generate(tmp_path / "kg", NEXT, "--scenario", "remove-worker:w0") == 0
    rows = events(tmp_path / "kg", NEXT)
    remaining = [f"w{i}" for i in range(1, 8)]
    assert (rows["worker"] == [remaining[key_group(k, 1024) % 7] for k in rows["key"]]).all()


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("nope", "unknown scenario 'nope'; known: slow-worker, hot-key, remove-worker"),
        ("slow-worker", "scenario slow-worker needs a worker: slow-worker:W"),
        ("hot-key:2", "hot-key"),
        ("remove-worker:w99", "stream 'a' has no worker 'w99'"),
        ("slow-worker:x", "stream 'a' has no worker 'x'"),
    ],
)
def test_a_bad_scenario_is_a_usage_error(tmp_path, capsys, scenario, message):
    assert generate(tmp_path, DAY, "--scenario", scenario, events=10) == 2
    err = capsys.readouterr().err
    assert err.startswith("routeplan generate: error: ") and err.count("\n") == 1
    assert message in err
    assert not (tmp_path / "landing").exists()
