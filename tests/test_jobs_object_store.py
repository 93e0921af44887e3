"""The Spark jobs and the Airflow tasks with ``--home`` in an object store (MinIO,
``tests/object_store.py``): Spark reads and writes through S3A, the driver through
``routeplan.storage`` (and the routing store's object back end), nothing on the local disk.

The ``object_store`` fixture comes before ``spark`` in every signature: it sets the AWS
variables before the session starts when this module runs first; when an earlier module started
the session, ``jobs.common.use_object_store`` gives the live session the same settings.
"""

import json
import os
from datetime import date
from pathlib import Path

import pytest

from jobs import ingest, plan, publish, rollback, validate, windows
from jobs.common import object_store_conf
from routeplan import storage
from routeplan.errors import InputError
from routeplan.files import read_workers_file
from routeplan.publishing.store import RoutingStore
from routeplan.simulation.generate import GeneratorConfig, generate
from routeplan.streams.policy import load_policies

DAY = "2026-11-20"
REPO = Path(__file__).resolve().parents[1]
SAMPLE_POLICIES = REPO / "config" / "streams.yaml"
POLICIES = "defaults:\n  strategy: cg\n  params:\n    epsilon: 0.02\n"


@pytest.fixture(scope="module")
def s3_home(object_store, tmp_path_factory) -> dict:
    """A landing day in all three formats (gzip CSV among them), a file of unknown type, a late
    line, the workers file and the policies, uploaded under ``<bucket>/home``."""
    local = tmp_path_factory.mktemp("upload")
    lines = 0
    workers = []
    for fmt, stream, gz in (
        ("jsonl", "clicks", False),
        ("csv", "orders", True),
        ("parquet", "views", False),
    ):
        summary = generate(
            GeneratorConfig(
                landing=local / "landing",
                workers_out=local / f"{stream}-workers.json",
                day=date.fromisoformat(DAY),
                streams=(stream,),
                events=1_500,
                keys=200,
                fmt=fmt,
                gzip=gz,
                malformed=0.02,
                files_per_stream=2,
                seed=5,
            )
        )["streams"][stream]
        lines += summary["lines"]
        workers += json.loads((local / f"{stream}-workers.json").read_text())["workers"]
    day = local / "landing" / DAY
    (day / "late.jsonl").write_text('{"key": "x", "ts": "2026-11-21T00:00:01Z", "stream": "s"}\n')
    (day / "notes.txt").write_text("key,ts\n")
    # names Spark would take for a glob or a URI: each object read once, by its own name
    exact = ("*.jsonl", "brace{a,b}[1].jsonl", "at:[2].jsonl")
    for i, name in enumerate(exact):
        (day / name).write_text(
            f'{{"key": "exact{i}", "ts": "2026-11-20T10:00:00Z", "stream": "clicks"}}\n'
        )
    home = object_store.uri("home")
    fs = storage.filesystem(home)[0]
    fs.put(str(day), storage.join(home, "landing", DAY), recursive=True)
    storage.write_text(
        storage.join(home, "config", "workers.json"), json.dumps({"workers": workers})
    )
    storage.write_text(storage.join(home, "config", "streams.yaml"), POLICIES)
    return {"home": home, "lines": lines + 1 + len(exact), "fs": fs, "exact": exact}


def delta_tables(fs, home: str) -> set[str]:
    """``layer.table`` of every folder under ``<home>/warehouse`` holding a Delta log object."""
    warehouse = storage.filesystem(storage.join(home, "warehouse"))[1]
    found = set()
    for key in fs.find(warehouse):
        parts = key[len(warehouse) + 1 :].split("/")
        if len(parts) > 3 and parts[2] == "_delta_log" and parts[3].endswith(".json"):
            found.add(f"{parts[0]}.{parts[1]}")
    return found


def local_uri_folders(*folders: Path) -> list[Path]:
    """Folders a URI treated as a relative path would have made (``s3a:``, ``s3:``)."""
    return [f / name for f in folders for name in ("s3a:", "s3:") if (f / name).exists()]


def test_s3a_settings_name_the_server_and_never_a_secret(object_store):
    conf = object_store_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == object_store.endpoint
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    assert not any(object_store.env["AWS_SECRET_ACCESS_KEY"] in v for v in conf.values())
    assert object_store_conf({}) == {}  # AWS itself: S3A's own defaults


@pytest.mark.spark
def test_the_nightly_stages_run_with_home_in_the_object_store(
    object_store, spark, s3_home, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # a URI taken for a relative path would land here
    home, fs = s3_home["home"], s3_home["fs"]
    args = ["--home", home, "--interval-start", DAY]

    report = ingest.main([*args, "--max-quarantined-share", "0.5"])
    assert report["rows_read"] == s3_home["lines"] + 1  # + notes.txt, quarantined whole
    assert report["rows_read"] == report["rows_written"] + report["rows_quarantined"]
    bad_file = storage.spark_uri(storage.join(home, "landing", DAY, "notes.txt"))
    assert [f["file"] for f in report["files_quarantined"]] == [bad_file]
    reasons = report["quarantined_by_reason"]
    assert reasons["ts outside the data interval"] == 1
    unknown = [r for r in reasons if r.startswith("unknown file type")]
    assert [reasons[r] for r in unknown] == [1]
    assert sum(reasons.values()) == report["rows_quarantined"]

    warehouse = storage.spark_uri(storage.join(home, "warehouse"))
    events = spark.read.format("delta").load(f"{warehouse}/bronze/stream_events")
    quarantine = spark.read.format("delta").load(f"{warehouse}/bronze/quarantine")
    assert events.count() == report["rows_written"]
    assert quarantine.count() == report["rows_quarantined"]
    assert quarantine.where("reason IS NULL").count() == 0
    sources = {r.source_file for r in events.select("source_file").distinct().collect()}
    assert sources and all(s.startswith(storage.spark_uri(home) + "/landing/") for s in sources)
    day = storage.spark_uri(storage.join(home, "landing", DAY))
    assert {f"{day}/{name}" for name in s3_home["exact"]} <= sources

    windows.main([*args, "--window-minutes", "120"])
    plan.main(args)  # the policies and workers files read from the bucket
    outcome = validate.main(args)
    assert outcome["suites"] and all(s["success"] for s in outcome["suites"])
    plans = spark.read.format("delta").load(f"{warehouse}/gold/plans").collect()
    assert {(p.stream, p.strategy) for p in plans if p.selected} == {
        (s, "cg") for s in ("clicks", "orders", "views")
    }
    assert {json.loads(p.params)["epsilon"] for p in plans if p.selected} == {0.02}

    published = publish.main(args)
    assert {s["action"] for s in published["streams"]} == {"published"}
    store = RoutingStore(storage.join(home, "routing"))
    assert store.streams() == ["clicks", "orders", "views"]
    assert store.load("clicks").version == 1
    report_uri = storage.join(home, "reports", "rollbacks", "r1.json")
    rolled = rollback.main(
        ["--home", home, "--stream", "clicks", "--version", "1", "--reason", "test"]
        + ["--report", report_uri]
    )
    assert rolled["streams"][0]["action"] == "unchanged"  # LATEST v1 already routes as v1
    assert json.loads(storage.read_bytes(report_uri)) == rolled
    history = spark.read.format("delta").load(f"{warehouse}/gold/routing_tables")
    assert {(r.stream, r.version) for r in history.collect()} == {
        (s, 1) for s in ("clicks", "orders", "views")
    }

    assert delta_tables(fs, home) >= {
        "bronze.stream_events",
        "bronze.quarantine",
        "silver.key_group_load",
        "silver.worker_load",
        "silver.window_summary",
        "gold.plans",
        "gold.validations",
        "gold.routing_tables",
        "gold.publish_log",
    }
    reports = storage.join(home, "reports", DAY)
    stages = ("ingest", "plan", "publish", "validate", "windows")
    plots = [f"{stream}-v1.png" for stream in ("clicks", "orders", "views")]  # each new version's
    inputs = [f"plan-inputs/{stream}.json" for stream in ("clicks", "orders", "views")]
    assert storage.list_files(reports) == sorted(
        storage.join(reports, name) for name in [*(f"{s}.json" for s in stages), *plots, *inputs]
    )
    # validate built the Data Docs locally and uploaded them into the home
    assert storage.is_file(storage.join(home, "data_docs", "index.html"))
    written = json.loads(storage.read_bytes(storage.join(reports, "ingest.json")))
    assert written["rows_quarantined"] == report["rows_quarantined"]

    assert sorted(os.listdir(tmp_path)) == []
    assert local_uri_folders(tmp_path, REPO, REPO / "jobs") == []


def test_the_library_reads_the_workers_and_policies_files_from_the_bucket(object_store):
    config = object_store.uri("library", "config")
    workers = [{"stream": "s", "worker": "w0", "capacity": 2}, {"stream": "s", "worker": "w1"}]
    storage.write_text(storage.join(config, "workers.json"), json.dumps({"workers": workers}))
    found = read_workers_file(storage.join(config, "workers.json"))["s"]
    assert [(w.name, w.capacity) for w in found.items] == [("w0", 2), ("w1", 1)]  # auto: 1
    storage.write_text(storage.join(config, "streams.yaml"), SAMPLE_POLICIES.read_text())
    policies = load_policies(storage.join(config, "streams.yaml"))
    assert policies.for_stream("orders").strategy == "mwf"
    for missing in ("workers.json", "streams.yaml"):
        location = storage.join(config, "nothing", missing)
        reader = read_workers_file if missing.endswith(".json") else load_policies
        with pytest.raises(InputError, match=f"^{location}: no such file$"):
            reader(location)
    storage.write_text(storage.join(config, "broken.yaml"), "streams:\n  x: {strategy: nope}\n")
    with pytest.raises(InputError, match=r"broken\.yaml:2: stream 'x'"):
        load_policies(storage.join(config, "broken.yaml"))


@pytest.mark.airflow
def test_the_airflow_tasks_read_policies_and_reports_from_the_bucket(object_store, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "plugins"))  # as Airflow's plugins folder
    import routeplan_tasks
    from airflow.sdk.exceptions import AirflowFailException

    home = object_store.uri("tasks")
    monkeypatch.setattr(routeplan_tasks, "HOME", home)
    check = routeplan_tasks.check_policies.function
    assert check(params={}) == {}  # no file in the bucket: every stream on cg
    storage.write_text(storage.join(home, "config", "streams.yaml"), SAMPLE_POLICIES.read_text())
    assert check(params={})["orders"] == "partition_assignment: mwf"
    with pytest.raises(AirflowFailException, match="missing.yaml: no such file"):
        check(params={"policies_path": storage.join(home, "missing.yaml")})

    report = storage.join(home, "reports", DAY, "publish.json")
    outcomes = [
        {"stream": "clicks", "action": "published", "version": 2, "reason": "better"},
        {"stream": "views", "action": "unchanged", "version": 1, "reason": "same"},
    ]
    storage.write_text(report, json.dumps({"streams": outcomes}))
    added = []

    class Events:
        def add(self, asset, extra):
            added.append((asset.uri, extra))

    announced = routeplan_tasks.announce.function(
        report, outlet_events={routeplan_tasks.ROUTING_TABLES: Events()}
    )
    (extra,) = announced  # no document in the bucket's store: the report's figures
    assert {k: extra[k] for k in outcomes[0]} == outcomes[0]
    assert extra["routing_page"].endswith("/routeplan/ui/streams/clicks/versions/2")
    assert added == [("x-routeplan://routing/clicks", extra)]
