"""The closed loop on real Spark + Delta, job by job: a night plans and publishes, the next
day's logs are produced by producers following LATEST (``routeplan generate --follow``), and the
outcomes job measures what the version did (``gold.plan_outcomes``) and guards against a
regression (rollback, alert) — once per regression, whatever the reruns."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from jobs import ingest, outcomes, plan, publish, validate, windows
from routeplan.cli.main import main as cli
from routeplan.model.table import RoutingTable
from routeplan.planning.metrics import observed_imbalance
from routeplan.publishing.store import RoutingStore
from routeplan.streams.outcomes import judge

pytestmark = pytest.mark.spark
D1, D2, D3, D4, D5, D6, D7 = (f"2026-11-{day}" for day in range(20, 27))
POLICIES = """\
defaults: {thresholds: {regression_tolerance: 0.10}}
streams:
  clicks: {strategy: cg, params: {epsilon: 0.02}, planning_window: interval}
  orders: {kind: partition_assignment, strategy: mwf, load_metric: bytes}
"""


def generate(home: Path, day: str, *extra: str) -> None:
    argv = ["generate", "--landing", str(home / "landing"), "--date", day]
    argv += [
        "--workers-out",
        str(home / "config" / "workers.json"),
        "--routing",
        str(home / "routing"),
    ]
    argv += ["--streams", "clicks,orders", "--events", "5000", "--keys", "800", "--seed", "7"]
    argv += ["--drift", "0.01"]  # popularity moves slowly from day to day: yesterday's plan fits
    assert cli([*argv, "--no-progress", "--json", *extra]) == 0


def night(home: Path, day: str, publishing: bool = True) -> dict:
    """One night's jobs; the outcomes job's report."""
    common = ["--home", str(home), "--interval-start", day]
    ingest.main(common)
    windows.main(common)
    report = outcomes.main(common)
    if publishing:
        plan.main(common)
        validate.main(common)
        publish.main(common)
    return report


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """Night 1 on logs routed by hash, night 2 on logs following its v1."""
    home = tmp_path_factory.mktemp("loop")
    (home / "config").mkdir()
    (home / "config" / "streams.yaml").write_text(POLICIES)
    generate(home, D1)
    first = night(home, D1)
    generate(home, D2, "--follow")
    second = night(home, D2)
    return home, first, second


def rows(spark, home: Path, table: str, where: str = "true"):
    layer, name = table.split(".")
    return (
        spark.read.format("delta")
        .load(str(home / "warehouse" / layer / name))
        .where(where)
        .collect()
    )


def test_the_first_night_has_nothing_to_measure_and_the_second_measures_v1(spark, loop):
    home, first, second = loop
    assert first["outcomes"] == [] and first["guard"] == []
    found = {(o["stream"], o["version"]): o for o in second["outcomes"]}
    assert set(found) == {("clicks", 1), ("orders", 1)}
    for o in found.values():
        assert o["attribution"] == "event_version" and o["messages"] > 0
        expected = judge(
            o["predicted"], o["realized"], o["realized_day"], o["previous_realized_day"], 0.10
        )
        assert o["verdict"] == expected, o
    clicks = found[("clicks", 1)]
    # the plan made clicks better over the day than the hash routing of the day before
    assert clicks["realized_day"] < clicks["previous_realized_day"]
    assert clicks["verdict"] in ("as_predicted", "improved")
    assert clicks["error"] == pytest.approx(clicks["realized"] - clicks["predicted"])
    assert found[("orders", 1)]["measure"] == "overload"
    stored = rows(spark, home, "gold.plan_outcomes", f"interval_start = '{D2}'")
    assert {(r.stream, r.version, r.verdict) for r in stored} == {
        (o["stream"], o["version"], o["verdict"]) for o in found.values()
    }


def test_realized_equals_a_direct_computation_from_the_landing_files(loop):
    """clicks is planned on the whole day (planning_window: interval), so its realized numbers
    are the whole day's: v1's messages per worker, counted from the raw files."""
    home, _, second = loop
    table = RoutingStore(home / "routing").load("clicks", 1)
    workers: Counter = Counter()
    for path in sorted((home / "landing" / D2).glob("clicks*")):
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # the dirt ingest quarantines
            if isinstance(event, dict) and event.get("routing_version") == 1:
                workers[event["worker"]] += 1
    assert workers, "no clicks event routed by v1 in the landing files"
    expected = observed_imbalance(dict(workers), table.workers)
    clicks = next(o for o in second["outcomes"] if o["stream"] == "clicks")
    assert clicks["realized_imbalance"] == pytest.approx(expected, rel=1e-6)
    assert clicks["realized_imbalance_day"] == pytest.approx(expected, rel=1e-6)


def publish_bad_table(store: RoutingStore) -> tuple[RoutingTable, RoutingTable]:
    """LATEST of clicks and a bad table (every key group on one worker) published after it."""
    latest = store.load("clicks")
    everything_on_one = RoutingTable(
        stream="clicks",
        strategy="kg",
        workers=latest.workers,
        key_group_worker=tuple(latest.workers.names[0] for _ in latest.key_group_worker),
        hash_seed=latest.hash_seed,
        predicted={"imbalance": 0.0},
        reason="a deliberately bad table",
    )
    return latest, store.publish(everything_on_one)


def test_a_bad_table_is_rolled_back_by_the_night_itself_once(spark, loop):
    home, _, _ = loop
    store = RoutingStore(home / "routing")
    latest, bad = publish_bad_table(store)
    generate(home, D3, "--follow")
    report = night(home, D3, publishing=False)
    clicks = next(o for o in report["outcomes"] if o["stream"] == "clicks")
    assert (clicks["version"], clicks["verdict"]) == (bad.version, "regressed")
    action = next(g for g in report["guard"] if g["stream"] == "clicks")
    assert (action["action"], action["restore_version"]) == ("rollback", latest.version)
    restored = store.load("clicks")
    assert restored.version == action["published_version"] == bad.version + 1
    assert restored.key_group_worker == latest.key_group_worker
    assert restored.reason and "regression" in restored.reason
    logged = rows(spark, home, "gold.publish_log", "stream = 'clicks' AND action = 'rolled_back'")
    assert len(logged) == 1 and f"regression: v{bad.version}'s realized" in logged[0].reason
    # the night plans nothing new for clicks; orders is planned as usual
    common = ["--home", str(home), "--interval-start", D3]
    planned = plan.main(common)
    assert "clicks" not in planned["streams"] and "orders" in planned["streams"]
    # a rerun of the night acts no second time and adds no outcome row
    again = outcomes.main(common)
    assert next(g for g in again["guard"] if g["stream"] == "clicks")["action"] is None
    assert store.load("clicks").version == restored.version
    assert len(rows(spark, home, "gold.plan_outcomes", f"interval_start = '{D3}'")) == len(
        report["outcomes"]
    )


def test_hold_and_alert_leave_latest_alone(spark, loop):
    """After the rollback night: a day under the restored table, then a bad table again — a
    stream whose policy says hold keeps it as LATEST and is held (publish reports it, nothing
    new is published); after a day under a good table again, one that says alert only alerts."""
    home, _, _ = loop
    store = RoutingStore(home / "routing")
    policies = home / "config" / "streams.yaml"
    common = ["--home", str(home)]
    generate(home, D4, "--follow")  # a day under the restored table
    assert night(home, D4, publishing=False)["outcomes"]

    policies.write_text(POLICIES.replace("clicks: {", "clicks: {on_regression: hold, "))
    _, bad = publish_bad_table(store)
    generate(home, D5, "--follow")
    report = night(home, D5, publishing=False)
    action = next(g for g in report["guard"] if g["stream"] == "clicks")
    assert action["action"] == "hold" and action["restore_version"] is None
    assert store.load("clicks").version == bad.version  # LATEST left alone
    assert store.held("clicks")["reason"] == action["reason"]
    published = publish.main([*common, "--interval-start", D5])  # nothing planned: the hold
    clicks = next(s for s in published["streams"] if s["stream"] == "clicks")
    assert (clicks["action"], clicks["version"]) == ("held", bad.version)
    assert len(rows(spark, home, "gold.publish_log", "stream = 'clicks' AND action = 'held'")) == 1

    good = store.restore(store.load("clicks", bad.version - 1), "a person rolls back")[0]
    assert store.held("clicks") is None  # a rollback lifts the hold
    generate(home, D6, "--follow")
    night(home, D6, publishing=False)
    policies.write_text(POLICIES.replace("clicks: {", "clicks: {on_regression: alert, "))
    _, worse = publish_bad_table(store)
    generate(home, D7, "--follow")
    report = night(home, D7, publishing=False)
    action = next(g for g in report["guard"] if g["stream"] == "clicks")
    assert (action["action"], action["version"]) == ("alert", worse.version)
    assert store.load("clicks").version == worse.version > good.version
    assert store.held("clicks") is None
    alerted = rows(spark, home, "gold.publish_log", "stream = 'clicks' AND action = 'alerted'")
    assert len(alerted) == 1 and f"v{worse.version}'s realized" in alerted[0].reason
