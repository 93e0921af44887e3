"""Pictures (routeplan.plots, the CLI's --plot, the publish job's report); progress bars are in
test_progress.py."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import date

import numpy as np
import pytest
from conftest import zipf_snapshot
from matplotlib.image import imread

from routeplan.cli.main import main
from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.table import PartitionAssignment
from routeplan.model.workers import Worker, Workers
from routeplan.planning.registry import get_strategy
from routeplan.plots import pareto_png, version_png, worker_load_png, worker_loads
from routeplan.publishing.store import RoutingStore

ALL_ACTIVE = Workers((Worker("w0", 2.0), Worker("w1"), Worker("w2"), Worker("w3")))
WORKERS = Workers((*ALL_ACTIVE.items[:3], Worker("w3", 1.0, "draining")))


def png_size(data: bytes) -> tuple[int, int]:
    """(height, width) of a PNG that decodes; fails on anything else."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = imread(io.BytesIO(data), format="png")
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    return pixels.shape[0], pixels.shape[1]


@pytest.fixture(scope="module")
def key_plans():
    """A kg table and a milp plan from it that drains w3, on one Zipf snapshot."""
    snapshot = zipf_snapshot(keys=2_000, messages=50_000, num_key_groups=128, hot=0)
    kg = get_strategy("kg").plan(snapshot, None, ALL_ACTIVE, Budget()).table
    milp = get_strategy("milp").plan(snapshot, kg, WORKERS, Budget(time_limit_s=10))
    return snapshot, kg, milp


@pytest.fixture(scope="module")
def partition_plans():
    loads = PartitionLoad("topic", np.array([50.0, 40.0, 30.0, 20.0, 10.0, 60.0]))
    old = get_strategy("kafka_range", consumer_capacity=120.0, consumers=2)
    new = get_strategy("mwf", consumer_capacity=120.0)
    first = old.plan(loads, None, Workers.homogeneous(6, "c"), Budget()).table
    return loads, first, new.plan(loads, first, Workers.homogeneous(6, "c"), Budget())


def test_key_routing_loads_are_relative_to_the_fair_share(key_plans):
    snapshot, kg, plan = key_plans
    data = worker_loads(plan.table, kg, snapshot)
    assert data.workers == ("w0", "w1", "w2", "w3") and data.reference == "fair share"
    assert data.capacities == (2.0, 1.0, 1.0, 1.0) and data.draining == (False,) * 3 + (True,)
    # the highest bar is the predicted imbalance + 1; the loads sum to the active capacity
    assert data.after.max() - 1 == pytest.approx(plan.predicted["imbalance"])
    assert data.before.max() - 1 == pytest.approx(kg.predicted["imbalance"])
    capacity = np.array(data.capacities)
    assert data.after @ capacity == pytest.approx(4.0)
    assert data.before @ capacity == pytest.approx(5.0)
    assert data.after[3] == 0 < data.before[3]  # the draining worker was emptied
    assert not data.line_is_limit
    assert png_size(worker_load_png(data))[1] > png_size(worker_load_png(worker_loads(kg)))[1]


def test_partition_loads_are_relative_to_the_bin_capacity(partition_plans):
    loads, first, plan = partition_plans
    data = worker_loads(plan.table, first, loads)
    capacity = plan.predicted["bin_capacity"]
    assert data.reference == "bin capacity C" and data.line_is_limit
    assert data.after.max() * capacity == pytest.approx(plan.predicted["max_consumer_load"])
    assert data.after.sum() * capacity == pytest.approx(loads.total)
    assert data.before.sum() * capacity == pytest.approx(loads.total)
    assert set(data.workers) == set(plan.table.partition_consumer.values()) | {"c0", "c1"}
    png_size(worker_load_png(data))


def test_a_parent_that_cannot_be_drawn_is_said(key_plans, partition_plans, tmp_path):
    snapshot, kg, plan = key_plans
    store = RoutingStore(tmp_path)
    v1 = store.publish(kg)
    v2 = store.publish(plan.table)
    png, note = version_png(v2, v1)
    assert note is None
    png_size(png)
    alone, note = version_png(v2, None)
    assert note == "v1 is no longer stored" and alone != png
    v3 = store.publish(replace(partition_plans[2].table, stream="s"))
    other, note = version_png(v3, v2)  # drawn alone, and said so
    assert note == (
        "v2 cannot be compared: cannot compare a key_routing table with a partition_assignment one"
    )
    png_size(other)
    with pytest.raises(ValueError, match="records no planning load"):
        worker_loads(PartitionAssignment("p", "ffd", WORKERS, {0: "w1"}))


def test_pareto_plot_of_binpack_strategies(tmp_path, capsys):
    rates = tmp_path / "rates.csv"
    rng = np.random.default_rng(3)
    rows = [f"{i},{p},{rng.uniform(1, 60):.1f}" for i in range(3) for p in range(20)]
    rates.write_text("iteration,partition,rate\n" + "\n".join(rows) + "\n")
    out = tmp_path / "front.png"
    argv = ["binpack", "--rates", str(rates), "--consumer-capacity", "120", "--consumers", "2"]
    argv += ["--strategies", "ff,bfd,mwf,kafka_range", "--plot", str(out), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["plot"] == str(out) and out.read_bytes() == pareto_png(summary)
    png_size(out.read_bytes())


def test_cli_plots(tmp_path, key_plans, capsys, monkeypatch):
    """show --plot and plan --plot write a PNG and say where (--json: ``plot``); compare too."""
    snapshot, kg, plan = key_plans
    monkeypatch.setenv("ROUTEPLAN_HOME", str(tmp_path))
    store = RoutingStore(tmp_path / "routing")
    store.publish(kg)  # stream "s"
    published = store.publish(plan.table)
    assert main(["show", "--stream", "s", "--plot", str(tmp_path / "show.png"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plot"] == str(tmp_path / "show.png")
    assert (tmp_path / "show.png").read_bytes() == version_png(published, store.load("s", 1))[0]

    loads = tmp_path / "loads.csv"
    owners = {g: w for g, w in enumerate(kg.key_group_worker)}
    loads.write_text(
        "key_group,load,worker\n"
        + "".join(f"{g},{x},{owners[g]}\n" for g, x in enumerate(snapshot.key_group_load))
    )
    argv = ["plan", "--loads", str(loads), "--workers", "3", "--strategy", "flux"]
    assert main([*argv, "--max-moves", "5", "--plot", str(tmp_path / "plan.png")]) == 0
    assert f"plot: {tmp_path / 'plan.png'}" in capsys.readouterr().out
    png_size((tmp_path / "plan.png").read_bytes())

    argv = ["compare", "--events", "zipf:messages=2000,keys=100", "--workers", "3"]
    assert main([*argv, "--strategies", "kg,pkg", "--plot", str(tmp_path / "c.png")]) == 0
    png_size((tmp_path / "c.png").read_bytes())


def test_the_publish_report_links_each_published_version_plot(key_plans, tmp_path):
    from jobs.common import Tables
    from jobs.publish import write_plots

    _, kg, plan = key_plans
    store = RoutingStore(tmp_path / "routing")
    store.publish(kg)
    store.publish(plan.table)
    outcomes = [
        {"stream": "s", "action": "published", "version": 2},
        {"stream": "t", "action": "unchanged", "version": 4},
    ]
    write_plots(Tables(str(tmp_path)), date(2026, 11, 20), outcomes)
    expected = tmp_path / "reports" / "2026-11-20" / "s-v2.png"
    assert outcomes[0]["plot"] == str(expected) and "plot" not in outcomes[1]
    assert expected.read_bytes() == version_png(store.load("s", 2), store.load("s", 1))[0]


def test_outcomes_plot_draws_each_night_and_survives_unknown_numbers():
    from api_server import outcome_row

    from routeplan.plots import outcomes_png

    rows = [
        outcome_row("s", f"2026-11-{d}", v, verdict)
        for d, v, verdict in ((19, 1, "as_predicted"), (20, 1, "regressed"), (21, 2, "improved"))
    ]
    rows[2] = {**rows[2], "realized": None}  # a night without traffic: no point, no error
    narrow = png_size(outcomes_png(rows[:1]))
    wide = png_size(outcomes_png(rows))
    assert wide[1] >= narrow[1] > 0
