"""The backtest before publishing (jobs/backtest.py): the day's windows routed through the
selected plan and through LATEST in the plan job, and validate's gate on the regression.

The reference computation routes every landing event of the day in pandas: its key's group
(``routeplan.model.hashing.key_group``) to the group's worker, a split key's load divided among
its workers by the table's weights. ``routeplan.simulation.replay`` is no second reference: it
replays *online schemes* (kg, pkg, cg… deciding message by message from the loads they saw), not
a published table, so it cannot route a day through LATEST or a candidate; and producers
(``routeplan_client.Router``) send a split key's message to the least-loaded of its
workers, of which the weights are the intended shares — the backtest, like the plan's predicted
imbalance (``routeplan.planning.metrics.hot_key_split``), uses the weights.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jobs import ingest, plan, publish, validate, windows
from jobs.backtest import backtest_of
from routeplan.model.hashing import key_groups
from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
from routeplan.planning.metrics import imbalance
from routeplan.publishing.store import RoutingStore
from routeplan.simulation.generate import GeneratorConfig, generate

pytestmark = pytest.mark.spark
DAY = "2026-11-20"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A small day of two streams, ingested and windowed by the hour."""
    home = tmp_path_factory.mktemp("backtest")
    generate(
        GeneratorConfig(
            landing=home / "landing",
            workers_out=home / "config" / "workers.json",
            day=date(2026, 11, 20),
            streams=("clicks", "orders"),
            events=6_000,
            keys=800,
            files_per_stream=2,
            seed=11,
        )
    )
    run(ingest, home)
    run(windows, home, "--window-minutes", "60")
    return home


def run(job, home, *extra):
    return job.main(["--home", str(home), "--interval-start", DAY, *extra])


def plans(spark, home) -> dict:
    """``gold.plans``' selected row per stream."""
    rows = spark.read.format("delta").load(str(home / "warehouse/gold/plans")).collect()
    return {r.stream: r for r in rows if r.selected}


def landing_events(home: Path, stream: str) -> pd.DataFrame:
    frames = [pd.read_json(p, lines=True) for p in sorted((home / "landing" / DAY).glob("*"))]
    events = pd.concat(frames)
    events = events[events["stream"] == stream].copy()
    ts = pd.to_datetime(events["ts"], utc=True)
    events["window"] = ts.dt.floor("60min").dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return events


def reference(events: pd.DataFrame, table, metric: str) -> dict[str, float]:
    """Window start → the table's headline measure, every event routed by the table in pandas:
    the imbalance, or for partitions the share of the rate above C on consumers that read more
    than one partition."""
    if isinstance(table, PartitionAssignment):
        rates = events.assign(
            consumer=events["partition"].map(dict(table.partition_consumer))
        ).dropna(subset=["consumer"])
        capacity = float(table.params["bin_capacity"])
        shared = pd.Series(list(table.partition_consumer.values())).value_counts() > 1
        out = {}
        for window, rows in rates.groupby("window"):
            load = rows.groupby("consumer")["size_bytes"].sum() / 3600.0
            excess = np.maximum(load - capacity, 0.0) * shared.reindex(load.index, fill_value=False)
            out[window] = float(excess.sum() / load.sum())
        return out
    column = {"messages": None, "bytes": "size_bytes", "cost_ms": "cost_ms"}[metric]
    load = np.ones(len(events)) if column is None else events[column].fillna(0.0).to_numpy()
    groups = key_groups(events["key"].tolist(), table.num_key_groups, table.hash_seed)
    owner = np.asarray(table.key_group_worker)[groups]
    parts = []
    columns = (events["key"], owner, load, events["window"])
    for key, worker, value, window in zip(*columns, strict=True):
        targets = table.hot_keys.get(key)
        if targets is None:
            parts.append((window, worker, float(value)))
        else:
            total = sum(w for _, w in targets)
            parts += [(window, w, float(value) * x / total) for w, x in targets]
    frame = pd.DataFrame(parts, columns=["window", "worker", "load"])
    names = table.workers.names
    out = {}
    for window, rows in frame.groupby("window"):
        by_worker = rows.groupby("worker")["load"].sum()
        vector = np.array([by_worker.get(n, 0.0) for n in names])
        out[window] = imbalance(vector, table.workers.capacities, table.workers.is_active)
    return out


def assert_matches_reference(home, row, latest, metric: str) -> None:
    found = backtest_of(row.backtest)
    candidate = table_from_document(json.loads(row.table_document))
    events = landing_events(home, row.stream)
    expected = {
        "candidate": reference(events, candidate, metric),
        "latest": reference(events, latest, metric),
    }
    assert found is not None and found.latest_version == latest.version
    assert [w for w, _, _ in found.windows] == sorted(expected["candidate"])
    assert len(found.windows) == 24
    for window, c, x in found.windows:
        assert c == pytest.approx(expected["candidate"][window], abs=1e-9, rel=1e-9), window
        assert x == pytest.approx(expected["latest"][window], abs=1e-9, rel=1e-9), window
    assert row.backtest_regression == pytest.approx(
        np.mean(list(expected["candidate"].values())) - np.mean(list(expected["latest"].values())),
        abs=1e-9,
    )


def test_a_stream_without_latest_has_no_backtest_and_passes(spark, home):
    run(plan, home, "--strategy", "cg")
    selected = plans(spark, home)
    assert set(selected) == {"clicks", "orders"}
    for row in selected.values():
        assert row.backtest is None and row.backtest_regression is None
    report = run(validate, home)
    backtests = [s for s in report["suites"] if s["suite"] == "routeplan.plan_backtest"]
    assert sorted((s["stream"], s["success"]) for s in backtests) == [
        ("clicks", True),
        ("orders", True),
    ]
    assert all(s["success"] for s in report["suites"])
    published = run(publish, home)
    assert {s["action"] for s in published["streams"]} == {"published"}


def test_the_backtest_on_spark_equals_routing_the_landing_events(spark, home):
    """After the first test: LATEST is cg v1 (it splits hot keys); pkg (which splits too, by
    other weights) is the candidate, both routed by bytes."""
    latest = RoutingStore(home / "routing").load("clicks")
    assert isinstance(latest, RoutingTable) and latest.strategy == "cg" and latest.hot_keys
    report = run(plan, home, "--strategy", "pkg", "--streams", "clicks", "--load-metric", "bytes")
    row = plans(spark, home)["clicks"]
    assert row.strategy == "pkg" and json.loads(row.table_document)["hot_keys"]
    assert_matches_reference(home, row, latest, "bytes")
    found = backtest_of(row.backtest)
    assert found.tolerance == 0.10  # the policy's regression_tolerance (the defaults')
    assert report["streams"]["clicks"]["backtest_regression"] == row.backtest_regression
    unselected = spark.read.format("delta").load(str(home / "warehouse/gold/plans"))
    assert unselected.where("NOT selected AND backtest IS NOT NULL").count() == 0
    # --streams clicks left orders' rows alone
    assert plans(spark, home)["orders"].strategy == "cg"


def test_a_rerun_keeps_latest_with_a_zero_regression(spark, home):
    run(plan, home, "--strategy", "cg")
    for stream, row in plans(spark, home).items():
        found = backtest_of(row.backtest)
        assert row.strategy == "cg" and row.backtest_regression == 0.0, stream
        assert all(c == x for _, c, x in found.windows) and len(found.windows) == 24
    report = run(validate, home)
    assert all(s["success"] for s in report["suites"])


def test_validate_refuses_a_worse_candidate_and_names_the_windows(spark, home):
    """kg against the cg LATEST: the generator's workers are unequal and kg ignores capacities,
    so kg balances the day far worse than cg; the plan's own suite passes (kg's predicted
    imbalance is the logged one), the backtest suite does not: the candidate is refused, LATEST
    stays (publish says why), and the night is not failed for the other streams."""
    latest = RoutingStore(home / "routing").load("clicks")
    # on the peak window, where kg's prediction is the logged imbalance (and no gate)
    run(plan, home, "--strategy", "kg", "--streams", "clicks", "--planning-window", "peak")
    row = plans(spark, home)["clicks"]
    assert_matches_reference(home, row, latest, "messages")
    found = backtest_of(row.backtest)
    assert found.regression > found.tolerance
    report = run(validate, home)  # the candidate is refused; the night goes on
    assert set(report["refused"]) == {"clicks"}
    message = report["refused"]["clicks"]
    assert "backtest against LATEST v1" in message
    for window, c, x in found.windows:  # every window's start and figures, for an operator
        assert f"{window} {c:.4f} / {x:.4f}" in message
    published = {s["stream"]: s for s in run(publish, home, "--streams", "clicks")["streams"]}
    assert (published["clicks"]["action"], published["clicks"]["version"]) == ("kept", 1)
    assert "backtest" in published["clicks"]["reason"]
    assert RoutingStore(home / "routing").latest_version("clicks") == 1
    validations = spark.read.format("delta").load(str(home / "warehouse/gold/validations"))
    failed = validations.where("suite = 'routeplan.plan_backtest' AND NOT success").collect()
    assert [r.stream for r in failed] == ["clicks"]
    assert "2026-11-20T00:00:00Z" in failed[0].failures


def test_a_partition_assignment_is_backtested_against_a_partition_latest(spark, home):
    """A LATEST of another kind gives no backtest; a partition LATEST does (rates summed per
    consumer), and the figures equal the events' bytes/s routed by each assignment."""
    rates = spark.read.format("delta").load(str(home / "warehouse/silver/partition_load"))
    capacity = 3 * rates.agg({"bytes_per_s": "max"}).first()[0]
    mwf = ["--streams", "orders", "--param", f"consumer_capacity={capacity}"]
    run(plan, home, "--strategy", "mwf", *mwf)
    assert plans(spark, home)["orders"].backtest is None  # LATEST routes keys
    run(validate, home, "--streams", "orders")
    run(publish, home, "--streams", "orders")
    latest = RoutingStore(home / "routing").load("orders")
    assert isinstance(latest, PartitionAssignment)
    run(plan, home, "--strategy", "bfd", *mwf)
    row = plans(spark, home)["orders"]
    assert row.strategy == "bfd"
    assert_matches_reference(home, row, latest, "bytes")
