"""The README's main job end-to-end, the way `make demo` runs it: three nights of sample logs
through routeplan_nightly (`airflow dags test`, one shared run for the module: each night is
six Spark stages, clients of the run's Spark Connect server), a regression rolled back by the
night, a rerun that changes nothing, then an operator's rollback through routeplan_rollback and
routeplan_maintenance on the same home."""

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


def airflow_home(home: Path, spark: dict[str, str]) -> dict[str, str]:
    """The environment of a home of its own, with its Airflow database migrated; its Spark
    tasks run on ``spark``'s server."""
    env = {
        **os.environ,
        **spark,
        "ROUTEPLAN_HOME": str(home),
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    subprocess.run(["airflow", "db", "migrate"], env=env, check=True, capture_output=True)
    return env


DAYS = ["2026-11-20", "2026-11-21", "2026-11-22"]


@pytest.fixture(scope="module")
def nights(tmp_path_factory, spark_connect):
    """``make demo``'s nights through the DAG, once for the module (each night is a DAG run of
    six Spark stages): the first on logs routed by hash; before the second a bad clicks table is
    published by hand, and the second night's logs follow LATEST (v1, the bad clicks table); the
    third plans clicks again from the restored table. Returns the environment and the output."""
    env = airflow_home(tmp_path_factory.mktemp("nights"), spark_connect)
    out = demo(env, "--events", "4000", "--nights", "2", "--scenario", "regression",
               day=DAYS[-1], timeout=2400)  # fmt: skip
    return env, out


def report(home: Path, day: str, stage: str) -> dict:
    return json.loads((home / "reports" / day / f"{stage}.json").read_text())


def test_main_job_publishes_every_stream_by_its_policy(nights, spark):
    env, out = nights
    home = Path(env["ROUTEPLAN_HOME"])
    for table in TABLES:
        assert (home / "warehouse" / table / "_delta_log").is_dir(), table
    kinds = {}
    for stream in ("clicks", "orders", "views"):
        doc = json.loads((home / "routing" / stream / "v1.json").read_text())
        validate_document("routing_table", doc)  # both kinds: one schema
        kinds[stream] = (doc["kind"], doc["strategy"])
        assert re.search(rf"^{DAYS[0]} +{stream} +\(logs\) +.* v1 published ", out, re.M)
    # one night, every stream by its own policy (the sample config/streams.yaml): both kinds
    assert kinds["clicks"] == ("key_routing", "cg")
    assert kinds["orders"] == ("partition_assignment", "mwf")
    assert kinds["views"][0] == "key_routing" and kinds["views"][1] in ("cg", "pkg", "milp")
    plan = report(home, DAYS[0], "plan")
    assert plan["streams"]["views"]["choice"].startswith("auto: ")
    assert f"views: {plan['streams']['views']['choice']}" in out
    first = [(uri, extra["version"], extra["action"]) for uri, extra, _ in asset_events(env)[:3]]
    assert sorted(first) == [
        (f"x-routeplan://routing/{s}", 1, "published") for s in ("clicks", "orders", "views")
    ]
    ingest = report(home, DAYS[0], "ingest")
    assert ingest["rows_quarantined"] > 0
    assert ingest["rows_read"] == ingest["rows_written"] + ingest["rows_quarantined"]
    bronze = spark.read.format("delta").load(str(home / "warehouse/bronze/stream_events"))
    assert bronze.where(f"date = '{DAYS[0]}'").count() == ingest["rows_written"]
    validate = report(home, DAYS[0], "validate")
    assert (home / "data_docs/index.html").is_file()  # Great Expectations' Data Docs
    for suite in validate["suites"]:  # each suite's result has its page in the site
        assert Path(suite["data_docs_page"].removeprefix("file://")).is_file(), suite
    for outcome in report(home, DAYS[0], "publish")["streams"]:  # each new version's picture
        assert Path(outcome["plot"]).read_bytes().startswith(b"\x89PNG"), outcome


def realized_from_landing(home: Path, day: str, stream: str, version: int) -> float:
    """The day's imbalance of ``version``'s traffic (a table planned on the forecast is judged
    on the whole day), counted from the raw landing files as ingest keeps them (valid JSON
    objects with a key and a timestamp of the day, each event_id once)."""
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
    return observed_imbalance(dict(sum(hours.values(), Counter())), table.workers)


def test_nights_follow_latest_and_a_regression_is_rolled_back_by_the_night(nights, spark):
    """The second night measures what the first published, on logs that followed it; the bad
    clicks table is rolled back by that night, and the third night plans clicks again from the
    restored table."""
    env, out = nights
    home = Path(env["ROUTEPLAN_HOME"])
    assert report(home, DAYS[0], "outcomes")["outcomes"] == []  # nothing was in force yet
    second = {o["stream"]: o for o in report(home, DAYS[1], "outcomes")["outcomes"]}
    assert set(second) == {"clicks", "orders", "views"}
    for stream in ("orders", "views"):
        assert (second[stream]["version"], second[stream]["attribution"]) == (1, "event_version")
    for o in second.values():  # each verdict is what its numbers say
        assert o["verdict"] != "unknown", o
        figures = (o["predicted"], o["realized"], o["realized_day"], o["previous_realized_day"])
        assert o["verdict"] == judge(*figures, 0.10, o["band"]), o
    for stream in ("clicks", "views"):  # the sample policies plan them on the forecast
        direct = realized_from_landing(home, DAYS[1], stream, second[stream]["version"])
        assert second[stream]["realized_imbalance"] == pytest.approx(direct, rel=1e-9)
    # views' v1 was fitted on the only day there was: no prediction shown, its realized is
    assert second["views"]["predicted"] is None and second["views"]["band"] is None
    assert re.search(rf"^{DAYS[1]} +views +v1 +imbalance +- +[0-9.]+ ", out, re.M)

    spoiled = second["clicks"]
    assert (spoiled["version"], spoiled["verdict"]) == (2, "regressed")  # the bad table
    guard = next(g for g in report(home, DAYS[1], "guard")["guard"] if g["stream"] == "clicks")
    assert guard["action"] == "rollback" and guard["reason"].startswith("regression: ")
    published = report(home, DAYS[1], "publish")["streams"]
    rolled = next(s for s in published if s["stream"] == "clicks")
    assert (rolled["action"], rolled["version"]) == ("rolled_back", guard["published_version"])
    assert "clicks" not in report(home, DAYS[1], "plan")["streams"]  # nothing new planned
    restored = json.loads(
        (home / "routing/clicks" / f"v{guard['published_version']}.json").read_text()
    )
    original = json.loads(
        (home / "routing/clicks" / f"v{guard['restore_version']}.json").read_text()
    )
    assert restored["key_group_worker"] == original["key_group_worker"]
    assert f"regression guard, {DAYS[1]} clicks: rollback: regression" in out
    # every night after the first publishes only what the gate let through: a version in
    # force within the threshold is kept, and a kept plan says the gate's reason
    for day in DAYS[1:]:
        planned = report(home, day, "plan")["streams"]
        for o in report(home, day, "publish")["streams"]:
            gate = (planned.get(o["stream"]) or {}).get("gate")
            if gate is None:  # rolled back by the guard: nothing planned
                assert o["action"] == "rolled_back", o
                continue
            assert gate["in_force"] is not None and gate["rule"] != "first", (day, o)
            if not gate["publish"]:
                assert o["action"] in ("kept", "unchanged"), (day, o)
                assert o["action"] == "unchanged" or o["reason"] == gate["reason"], (day, o)
            if gate["in_force"]["peak_excess"] <= 0.10 and gate["rule"] != "workers":
                assert o["action"] != "published", (day, o)
    # the night after plans clicks again, from the restored table
    third = report(home, DAYS[2], "plan")["streams"]["clicks"]
    assert third["current_version"] == restored["version"]
    events = [(uri, extra) for uri, extra, _ in asset_events(env)]
    assert ("x-routeplan://routing/clicks", restored["version"]) in {
        (uri, extra["version"]) for uri, extra in events
    }


def test_every_table_has_the_columns_the_reference_lists(nights, spark):
    """The tables a real run wrote have exactly the columns and types of ``jobs.columns``
    (what docs/reference/delta-tables.md lists), in their order."""
    from jobs.columns import COLUMNS

    env, _ = nights
    home = Path(env["ROUTEPLAN_HOME"])
    for name, columns in COLUMNS.items():
        path = home / "warehouse" / name.replace(".", "/")
        schema = spark.read.format("delta").load(str(path)).schema
        assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == list(columns), name


def test_a_rerun_of_a_night_changes_nothing(nights, spark):
    """The last night again on the same logs: the same bronze rows, no new version, outcome,
    rollback or asset event; publish says the table it published already does what the plan
    does, and keeps what its backtest refused again."""
    env, _ = nights
    home = Path(env["ROUTEPLAN_HOME"])

    def table(name: str):
        return spark.read.format("delta").load(str(home / "warehouse" / name))

    versions = {s: sorted((home / "routing" / s).glob("v*.json")) for s in ("clicks", "views")}
    bronze, outcomes = table("bronze/stream_events").count(), table("gold/plan_outcomes").count()
    events = len(asset_events(env))
    first = {s["stream"]: s["action"] for s in report(home, DAYS[-1], "publish")["streams"]}
    conf = json.dumps({"date": DAYS[-1]})
    subprocess.run(
        ["airflow", "dags", "test", "routeplan_nightly", "2026-11-25", "--conf", conf],
        env=env, check=True, capture_output=True, timeout=1500,
    )  # fmt: skip
    assert {s: sorted((home / "routing" / s).glob("v*.json")) for s in versions} == versions
    assert (table("bronze/stream_events").count(), table("gold/plan_outcomes").count()) == (
        bronze,
        outcomes,
    )
    again = {s["stream"]: s["action"] for s in report(home, DAYS[-1], "publish")["streams"]}
    assert again == {s: "kept" if a == "kept" else "unchanged" for s, a in first.items()}
    assert len(asset_events(env)) == events  # nothing new published: no new event
    rollbacks = table("gold/publish_log").where("stream = 'clicks' AND action = 'rolled_back'")
    assert rollbacks.count() == 1
    shown = subprocess.run(
        ["routeplan", "show", "--stream", "clicks", "--json"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(shown.stdout)["version"] == len(versions["clicks"])


def test_rollback_dag_restores_a_version_and_announces_it(nights, spark):
    """A bad table reaches producers; the operator triggers routeplan_rollback back to the
    version before it."""
    from routeplan.publishing.store import RoutingStore

    env, _ = nights
    home = Path(env["ROUTEPLAN_HOME"])
    store = RoutingStore(home / "routing")
    good = store.load("views")
    bad = replace(good, key_group_worker=(good.workers.names[0],) * good.num_key_groups)
    assert store.publish(bad, reason="a bad plan").version == good.version + 1
    conf = {"stream": "views", "version": good.version, "reason": "sends everything to one"}
    done = subprocess.run(
        ["airflow", "dags", "test", "routeplan_rollback", "--conf", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    latest = store.load("views")
    assert (latest.version, latest.parent_version, latest.restored_version) == (
        good.version + 2,
        good.version + 1,
        good.version,
    )
    assert latest.same_routing(good) and latest.reason.endswith(conf["reason"])
    uri, extra, dag = asset_events(env)[-1]
    assert (uri, extra["version"], extra["action"], dag) == (
        "x-routeplan://routing/views",
        latest.version,
        "rolled_back",
        "routeplan_rollback",
    )
    history = spark.read.format("delta").load(str(home / "warehouse/gold/routing_tables"))
    versions = {r["version"]: r for r in history.where("stream = 'views'").collect()}
    assert sorted(versions) == list(range(1, latest.version + 1))  # by hand: recorded too
    assert versions[latest.version]["restored_version"] == good.version
    assert versions[good.version + 1]["run_id"] is None


def test_maintenance_dag_compacts_and_names_the_tables(nights, spark):
    """After the nights, routeplan_maintenance compacts the tables and names them for SQL."""
    from datetime import UTC, datetime

    env, _ = nights
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
    for name, entry in report["tables"].items():  # the nights' small files compacted
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
