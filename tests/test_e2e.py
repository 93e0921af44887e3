"""The README's main job end-to-end: sample logs → routeplan_nightly via `airflow dags test`,
then an operator's rollback through routeplan_rollback; both announce asset events."""

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from routeplan.contracts.schemas import validate_document
from routeplan.streams.outcomes import judge

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
TABLES = [
    "bronze/stream_events",
    "bronze/quarantine",
    "silver/key_group_load",
    "silver/key_load",
    "silver/worker_load",
    "silver/version_load",
    "silver/partition_load",
    "silver/window_summary",
    "gold/plans",
    "gold/validations",
    "gold/routing_tables",
    "gold/publish_log",
    "gold/plan_outcomes",
]


def demo(env, *args, day: str = "2026-11-20", timeout: int = 1500):
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts/demo.py"), "--date", day, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


ASSET_EVENTS = """
import json
from sqlalchemy import select
from airflow.models.asset import AssetEvent, AssetModel
from airflow.utils.session import create_session
with create_session() as session:
    rows = session.execute(
        select(AssetModel.uri, AssetEvent.extra, AssetEvent.source_dag_id)
        .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
        .order_by(AssetEvent.id)
    ).all()
print(json.dumps([[uri, extra, dag] for uri, extra, dag in rows]))
"""


def asset_events(env) -> list[tuple[str, dict, str]]:
    """Every asset event in the Airflow metadata DB: (uri, extra, source DAG)."""
    done = subprocess.run(
        [sys.executable, "-c", ASSET_EVENTS], env=env, capture_output=True, text=True, check=True
    )
    return [tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])]


def airflow_home(home: Path) -> dict[str, str]:
    """The environment of a home of its own, with its Airflow database migrated."""
    env = {
        **os.environ,
        "ROUTEPLAN_HOME": str(home),
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    subprocess.run(["airflow", "db", "migrate"], env=env, check=True, capture_output=True)
    return env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return airflow_home(tmp_path_factory.mktemp("e2e"))


def test_main_job_publishes_then_rerun_changes_nothing(env, spark):
    home = Path(env["ROUTEPLAN_HOME"])

    def bronze_rows() -> int:
        return spark.read.format("delta").load(str(home / "warehouse/bronze/stream_events")).count()

    out = demo(env, "--events", "4000", "--nights", "1")
    for table in TABLES:
        assert (home / "warehouse" / table / "_delta_log").is_dir(), table
    kinds = {}
    for stream in ("clicks", "orders", "views"):
        assert (home / "routing" / stream / "LATEST").read_text().strip() == "v1.json"
        doc = json.loads((home / "routing" / stream / "v1.json").read_text())
        validate_document("routing_table", doc)  # both kinds: one schema
        kinds[stream] = (doc["kind"], doc["strategy"])
        assert re.search(rf"^2026-11-20 +{stream} +\(logs\) +.* v1 published ", out, re.M)
    # one night, every stream by its own policy (the sample config/streams.yaml): both kinds
    assert kinds["clicks"] == ("key_routing", "cg")
    assert kinds["orders"] == ("partition_assignment", "mwf")
    assert kinds["views"][0] == "key_routing" and kinds["views"][1] in ("cg", "pkg", "milp")
    plan = json.loads((home / "reports/2026-11-20/plan.json").read_text())
    assert plan["streams"]["views"]["choice"].startswith("auto: ")
    assert f"views: {plan['streams']['views']['choice']}" in out
    events = asset_events(env)
    assert sorted((uri, extra["version"], extra["action"]) for uri, extra, _ in events) == [
        (f"x-routeplan://routing/{s}", 1, "published") for s in ("clicks", "orders", "views")
    ]
    ingest = json.loads((home / "reports/2026-11-20/ingest.json").read_text())
    assert ingest["rows_quarantined"] > 0
    assert ingest["rows_read"] == ingest["rows_written"] + ingest["rows_quarantined"]
    first = bronze_rows()
    assert first == ingest["rows_written"]
    validate = json.loads((home / "reports/2026-11-20/validate.json").read_text())
    assert (home / "data_docs/index.html").is_file()  # Great Expectations' Data Docs
    for suite in validate["suites"]:  # each suite's result has its page in the site
        assert Path(suite["data_docs_page"].removeprefix("file://")).is_file(), suite
    published = json.loads((home / "reports/2026-11-20/publish.json").read_text())
    for outcome in published["streams"]:  # each new version's worker-load picture
        assert Path(outcome["plot"]).read_bytes().startswith(b"\x89PNG"), outcome

    out = demo(env, "--events", "4000", "--nights", "1")
    assert bronze_rows() == first
    publish = json.loads((home / "reports/2026-11-20/publish.json").read_text())
    assert {s["action"] for s in publish["streams"]} == {"unchanged"}
    assert "already does" in out
    assert not (home / "routing/clicks/v2.json").exists()
    assert len(asset_events(env)) == 3  # nothing new published: no new event

    shown = subprocess.run(
        ["routeplan", "show", "--stream", "clicks", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout)["version"] == 1


def test_rollback_dag_restores_a_version_and_announces_it(env, spark):
    """A bad v2 reaches producers; the operator triggers routeplan_rollback back to v1."""
    from routeplan.publishing.store import RoutingStore

    home = Path(env["ROUTEPLAN_HOME"])
    store = RoutingStore(home / "routing")
    v1 = store.load("clicks", 1)
    bad = replace(v1, key_group_worker=(v1.workers.names[0],) * v1.num_key_groups)
    assert store.publish(bad, reason="a bad plan").version == 2
    conf = {"stream": "clicks", "version": 1, "reason": "v2 sends everything to one worker"}
    done = subprocess.run(
        ["airflow", "dags", "test", "routeplan_rollback", "--conf", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    latest = store.load("clicks")
    assert (latest.version, latest.parent_version, latest.restored_version) == (3, 2, 1)
    assert latest.same_routing(v1) and latest.reason.endswith(conf["reason"])
    uri, extra, dag = asset_events(env)[-1]
    assert (uri, extra["version"], extra["action"], dag) == (
        "x-routeplan://routing/clicks",
        3,
        "rolled_back",
        "routeplan_rollback",
    )
    history = spark.read.format("delta").load(str(home / "warehouse/gold/routing_tables"))
    versions = {r["version"]: r for r in history.where("stream = 'clicks'").collect()}
    assert sorted(versions) == [1, 2, 3]  # v2 came from outside a job: recorded with it
    assert versions[3]["restored_version"] == 1 and versions[2]["run_id"] is None


def test_maintenance_dag_compacts_and_names_the_tables(env, spark):
    """After two nights, routeplan_maintenance compacts the tables and names them for SQL."""
    from datetime import UTC, datetime

    home = Path(env["ROUTEPLAN_HOME"])
    done = subprocess.run(
        ["airflow", "dags", "test", "routeplan_maintenance"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    day = datetime.now(UTC).date().isoformat()
    report = json.loads((home / "reports" / day / "maintain.json").read_text())
    assert set(report["tables"]) >= {"bronze.stream_events", "gold.routing_tables"}
    for name, entry in report["tables"].items():  # two nights' small files compacted
        assert entry["current_files_after"] <= entry["current_files_before"], name
        if entry["files_compacted"]:
            assert entry["current_files_after"] < entry["current_files_before"], name
        assert entry["retention"]["delta.deletedFileRetentionDuration"] == "interval 7 days"
    # the catalog file names every table at its location: any session can query by name
    # (this test session may name them at another test's home: those names go first)
    text = (home / "catalog/tables.sql").read_text()
    statements = [line.rstrip(";") for line in text.splitlines() if line.startswith("CREATE")]
    assert "CREATE TABLE IF NOT EXISTS bronze.stream_events USING delta LOCATION" in text
    for statement in statements:
        if statement.startswith("CREATE TABLE"):
            spark.sql(f"DROP TABLE IF EXISTS {statement.split()[5]}")  # external: files stay
        spark.sql(statement)
    counted = spark.sql("SELECT count(*) AS n FROM bronze.stream_events").first()["n"]
    assert (
        counted
        == spark.read.format("delta").load(str(home / "warehouse/bronze/stream_events")).count()
    )


def realized_from_landing(home: Path, day: str, stream: str, version: int) -> float:
    """The busiest hour's imbalance of ``version``'s traffic, counted from the raw landing
    files as ingest keeps them (valid JSON objects with a key and a timestamp of the day, each
    event_id once)."""
    from collections import Counter

    from routeplan.planning.metrics import observed_imbalance
    from routeplan.publishing.store import RoutingStore

    table = RoutingStore(home / "routing").load(stream, version)
    seen, hours = set(), {}
    for path in sorted((home / "landing" / day).glob(f"{stream}*")):
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # the dirt ingest quarantines
            valid = isinstance(event, dict) and isinstance(event.get("key"), str)
            valid = valid and str(event.get("ts", "")).startswith(day)
            valid = valid and isinstance(event.get("partition", 0), int)
            valid = valid and (event.get("size_bytes") or 0) >= 0
            if not valid or event.get("event_id") in seen:
                continue
            seen.add(event.get("event_id"))
            if event.get("routing_version") == version:
                hours.setdefault(event["ts"][:13], Counter())[event["worker"]] += 1
    peak = max(sorted(hours), key=lambda h: sum(hours[h].values()))
    return observed_imbalance(dict(hours[peak]), table.workers)


@pytest.fixture(scope="module")
def nights_env(tmp_path_factory):
    """A home of its own for the nights that follow each other."""
    return airflow_home(tmp_path_factory.mktemp("nights"))


def test_nights_follow_latest_and_a_regression_is_rolled_back_by_the_night(nights_env, spark):
    """make demo's nights through the DAG: the first on logs routed by hash, the next on logs
    following LATEST; a bad table published by hand is rolled back by the night whose logs
    followed it, and the night after plans again from the restored table; a rerun of a night
    adds no outcome and no version."""
    env, home = nights_env, Path(nights_env["ROUTEPLAN_HOME"])
    days = ["2026-11-21", "2026-11-22", "2026-11-23", "2026-11-24"]
    nights = ("--events", "4000", "--scenario", "regression")  # four DAG runs
    out = demo(env, *nights, day=days[-1], timeout=3600)

    def report(day: str, stage: str) -> dict:
        return json.loads((home / "reports" / day / f"{stage}.json").read_text())

    assert report(days[0], "outcomes")["outcomes"] == []  # nothing was in force yet
    second = {o["stream"]: o for o in report(days[1], "outcomes")["outcomes"]}
    assert set(second) == {"clicks", "orders", "views"}
    for stream, o in second.items():
        assert (o["version"], o["attribution"]) == (1, "event_version"), stream
        assert o["verdict"] != "unknown", o
    for stream in ("clicks", "views"):  # the sample policies plan them on the busiest hour
        direct = realized_from_landing(home, days[1], stream, 1)
        assert second[stream]["realized_imbalance"] == pytest.approx(direct, rel=1e-9)
    for o in second.values():  # each verdict is what its numbers say
        figures = (o["predicted"], o["realized"], o["realized_day"], o["previous_realized_day"])
        assert o["verdict"] == judge(*figures, 0.10), o
    assert re.search(rf"^{days[1]} +clicks +v1 +imbalance +[0-9.]+ +[0-9.]+ ", out, re.M)

    bad = report(days[2], "outcomes")
    spoiled = next(o for o in bad["outcomes"] if o["stream"] == "clicks")
    assert spoiled["verdict"] == "regressed"
    guard = next(g for g in bad["guard"] if g["stream"] == "clicks")
    assert guard["action"] == "rollback" and guard["reason"].startswith("regression: ")
    rolled = next(s for s in report(days[2], "publish")["streams"] if s["stream"] == "clicks")
    assert (rolled["action"], rolled["version"]) == ("rolled_back", guard["published_version"])
    assert "clicks" not in report(days[2], "plan")["streams"]  # nothing new planned that night
    restored = json.loads(
        (home / "routing/clicks" / f"v{guard['published_version']}.json").read_text()
    )
    original = json.loads(
        (home / "routing/clicks" / f"v{guard['restore_version']}.json").read_text()
    )
    assert restored["key_group_worker"] == original["key_group_worker"]
    assert f"regression guard, {days[2]} clicks: rollback: regression" in out
    # the night after plans clicks again, from the restored table
    assert report(days[3], "plan")["streams"]["clicks"]["current_version"] == restored["version"]
    events = [(uri, extra) for uri, extra, _ in asset_events(env)]
    assert ("x-routeplan://routing/clicks", restored["version"]) in {
        (uri, extra["version"]) for uri, extra in events
    }

    versions = sorted((home / "routing/clicks").glob("v*.json"))
    outcomes_before = spark.read.format("delta").load(str(home / "warehouse/gold/plan_outcomes"))
    counted = outcomes_before.count()
    logical = "2026-11-25"  # the last night again, on the same logs
    conf = json.dumps({"date": days[-1]})
    subprocess.run(
        ["airflow", "dags", "test", "routeplan_nightly", logical, "--conf", conf],
        env=env, check=True, capture_output=True, timeout=1500,
    )  # fmt: skip
    assert sorted((home / "routing/clicks").glob("v*.json")) == versions
    again = spark.read.format("delta").load(str(home / "warehouse/gold/plan_outcomes"))
    assert again.count() == counted
    rollbacks = spark.read.format("delta").load(str(home / "warehouse/gold/publish_log"))
    assert rollbacks.where("stream = 'clicks' AND action = 'rolled_back'").count() == 1
