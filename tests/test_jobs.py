"""The Spark jobs on real Spark + Delta Lake, small data, one session for the run."""

import json
import shutil
from datetime import date, datetime
from pathlib import Path

import pytest

from jobs import ingest, plan, publish, rollback, validate, windows
from routeplan.contracts.schemas import validate_document
from routeplan.model.workers import Workers
from routeplan.planning.metrics import observed_imbalance, observed_peak_excess
from routeplan.publishing.store import RoutingStore
from routeplan.simulation.generate import GeneratorConfig, generate
from routeplan.streams.inputs import inputs_from_document
from routeplan.streams.policy import load_policies
from routeplan.streams.service import plan_stream
from routeplan_client import Router

pytestmark = pytest.mark.spark
DAY = "2026-11-20"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """Landing files in all three formats, with broken lines and duplicates."""
    home = tmp_path_factory.mktemp("home")
    summaries = {}
    for fmt, stream, gz in (
        ("jsonl", "clicks", False),
        ("csv", "orders", True),
        ("parquet", "views", False),
    ):
        summaries[stream] = generate(
            GeneratorConfig(
                landing=home / "landing",
                workers_out=home / "config" / f"{stream}.json",
                day=date(2026, 11, 20),
                streams=(stream,),
                events=6_000,
                keys=800,
                fmt=fmt,
                gzip=gz,
                malformed=0.01,
                duplicates=0.01,
                files_per_stream=2,
                seed=3,
            )
        )["streams"][stream]
    workers = [
        w
        for s in summaries
        for w in json.loads((home / "config" / f"{s}.json").read_text())["workers"]
    ]
    (home / "config" / "workers.json").write_text(json.dumps({"workers": workers}))
    # a line from the next day and a blank line: quarantined / skipped, never lost silently
    extra = home / "landing" / DAY / "late.jsonl"
    extra.write_text('{"key": "x", "ts": "2026-11-21T00:00:01Z", "stream": "clicks"}\n\n')
    (home / "generated.json").write_text(json.dumps(summaries))
    return home


def run(job, home, *extra):
    return job.main(["--home", str(home), "--interval-start", DAY, *extra])


def table(spark, home, name):
    layer, t = name.split(".")
    path = home / "warehouse" / layer / t
    assert (path / "_delta_log").is_dir(), f"{name} is not a Delta table"
    return spark.read.format("delta").load(str(path))


def test_ingest_counts_in_equal_out_plus_quarantine(spark, home):
    generated = json.loads((home / "generated.json").read_text())
    report = run(ingest, home)
    lines = sum(s["lines"] for s in generated.values()) + 1  # + the late line
    assert report["rows_read"] == lines
    assert report["rows_read"] == report["rows_written"] + report["rows_quarantined"]
    events = table(spark, home, "bronze.stream_events")
    assert events.count() == report["rows_written"]
    assert events.select("stream", "event_id").distinct().count() == events.count()
    reasons = report["quarantined_by_reason"]
    broken = sum(n for r, n in reasons.items() if not r.startswith(("duplicate", "ts outside")))
    assert broken == sum(s["malformed"] for s in generated.values())
    assert reasons["ts outside the data interval"] == 1
    assert 0 < reasons["duplicate event_id"] <= sum(s["duplicates"] for s in generated.values())
    quarantine = table(spark, home, "bronze.quarantine")
    assert quarantine.count() == report["rows_quarantined"]
    assert quarantine.where("raw IS NULL OR reason IS NULL").count() == 0
    assert {r.stream for r in events.select("stream").distinct().collect()} == {
        "clicks",
        "orders",
        "views",
    }


def test_ingest_rerun_replaces_the_interval(spark, home):
    before = table(spark, home, "bronze.stream_events").count()
    report = run(ingest, home)
    assert table(spark, home, "bronze.stream_events").count() == before == report["rows_written"]
    assert table(spark, home, "bronze.quarantine").count() == report["rows_quarantined"]


def test_ingest_streams_param_leaves_other_streams_alone(spark, home, tmp_path):
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    report = ingest.main(
        [
            "--home",
            str(tmp_path),
            "--interval-start",
            DAY,
            "--streams",
            "clicks",
            "--landing",
            str(home / "landing"),
        ]
    )
    events = spark.read.format("delta").load(str(tmp_path / "warehouse/bronze/stream_events"))
    assert report["rows_not_selected"] > 0
    assert events.count() == table(spark, home, "bronze.stream_events").count()


def test_ingest_keeps_the_valid_copy_of_a_duplicated_event(spark, tmp_path):
    folder = tmp_path / "landing" / DAY
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(
        '{"event_id": "e1", "key": "k", "ts": "not a time"}\n'
        '{"event_id": "e1", "key": "k", "ts": "2026-11-20T10:00:00Z"}\n'
        '{"event_id": "e1", "key": "k", "ts": "2026-11-20T10:00:00Z"}\n'
        '{"key": "k2", "ts": 1795168800000, "size_bytes": 12}\n'
        '{"key": "k3", "ts": 1795168800000, "size_bytes": "12"}\n'
    )
    report = ingest.main(
        ["--home", str(tmp_path), "--interval-start", DAY, "--max-quarantined-share", "1"]
    )
    assert (report["rows_written"], report["rows_quarantined"]) == (2, 3)
    assert report["quarantined_by_reason"] == {
        "unparseable ts": 1,
        "duplicate event_id": 1,
        "wrong type for size_bytes": 1,  # "12" is a string, the schema wants an integer
    }
    rows = spark.read.format("delta").load(str(tmp_path / "warehouse/bronze/stream_events"))
    kept = {r.key: r for r in rows.collect()}
    assert str(kept["k"].ts) == "2026-11-20 10:00:00"
    assert kept["k2"].stream == "default" and kept["k2"].size_bytes == 12
    assert len(kept["k2"].event_id) == 64  # derived: sha256 of the row


def test_ingest_stores_routing_version_and_migrates_an_old_table(spark, tmp_path):
    """routing_version (the routing table a producer routed the event by): an int when valid,
    null when absent, quarantined with its reason otherwise — in every format; a
    bronze.stream_events written before the column existed gains it and keeps its rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    events_path = tmp_path / "warehouse/bronze/stream_events"
    spark.createDataFrame(  # as a release before routing_version wrote it
        [("o1", datetime(2026, 11, 19, 10), date(2026, 11, 19), "clicks", "k", 1, "old.jsonl")],
        "event_id string, ts timestamp, date date, stream string, key string, size_bytes long, "
        "source_file string",
    ).selectExpr(
        "event_id",
        "ts",
        "date",
        "stream",
        "key",
        "CAST(NULL AS int) AS partition",
        "CAST(NULL AS string) AS worker",
        "size_bytes",
        "CAST(NULL AS double) AS cost_ms",
        "CAST(NULL AS string) AS upstream_stream",
        "CAST(NULL AS string) AS upstream_key",
        "source_file",
        "current_timestamp() AS ingested_at",
    ).write.format("delta").partitionBy("stream", "date").save(str(events_path))
    folder = tmp_path / "landing" / DAY
    folder.mkdir(parents=True)
    ts = "2026-11-20T10:00:00Z"
    jsonl = {"j1": 3, "j2": 2.0, "j3": None, "j4": 0, "j5": -1, "j6": "4", "j7": 1.5}
    (folder / "a.jsonl").write_text(
        "".join(
            json.dumps({"event_id": i, "key": "k", "ts": ts, "stream": "clicks"})[:-1]
            + ("}" if v is None else f', "routing_version": {json.dumps(v)}}}')
            + "\n"
            for i, v in jsonl.items()
        )
    )
    (folder / "b.csv").write_text(
        "event_id,key,ts,stream,routing_version\n"
        + "".join(
            f"{i},k,{ts},clicks,{v}\n" for i, v in (("c1", 5), ("c2", ""), ("c3", 0), ("c4", "x"))
        )
    )
    pq.write_table(
        pa.table(
            {
                "event_id": ["p1", "p2", "p3"],
                "key": ["k"] * 3,
                "ts": [ts] * 3,
                "stream": ["clicks"] * 3,
                "routing_version": pa.array([7, None, 0], pa.int64()),
            }
        ),
        folder / "c.parquet",
    )
    report = ingest.main(
        ["--home", str(tmp_path), "--interval-start", DAY, "--max-quarantined-share", "1"]
    )
    assert (report["rows_written"], report["rows_quarantined"]) == (7, 7)
    assert report["quarantined_by_reason"] == {
        "invalid routing_version": 6,
        "wrong type for routing_version": 1,  # "4" is a string, the schema wants an integer
    }
    quarantine = spark.read.format("delta").load(str(tmp_path / "warehouse/bronze/quarantine"))
    assert sorted(r.reason for r in quarantine.collect()) == [
        "invalid routing_version: -1",
        "invalid routing_version: 0",
        "invalid routing_version: 0",
        "invalid routing_version: 0",
        "invalid routing_version: 1.5",
        "invalid routing_version: x",
        "wrong type for routing_version: expected an integer, got string",
    ]
    events = spark.read.format("delta").load(str(events_path))
    assert dict(events.dtypes)["routing_version"] == "int"
    assert {r.event_id: r.routing_version for r in events.collect()} == {
        "o1": None,  # the old table's row, kept; the column was added by its migration
        "j1": 3,
        "j2": 2,  # 2.0 is an integer
        "j3": None,
        "c1": 5,
        "c2": None,  # an empty CSV field is absent
        "p1": 7,
        "p2": None,
    }


def test_ingest_without_files_says_where_it_looked(home):
    with pytest.raises(SystemExit, match="no landing files"):
        ingest.main(["--home", str(home), "--interval-start", "2026-01-01"])


def test_windows_conserve_messages_and_measure_logged_imbalance(spark, home):
    report = run(windows, home, "--window-minutes", "120", "--top-keys", "20")
    events = table(spark, home, "bronze.stream_events")
    per_stream = {r.stream: r["count"] for r in events.groupBy("stream").count().collect()}
    for name in ("silver.key_group_load", "silver.worker_load", "silver.partition_load"):
        sums = table(spark, home, name).groupBy("stream").sum("messages").collect()
        assert {r.stream: r["sum(messages)"] for r in sums} == per_stream, name
    groups = table(spark, home, "silver.key_group_load")
    assert groups.select("window_start").distinct().count() == 12
    assert groups.where("key_group < 0 OR key_group >= 1024").count() == 0
    hitters = table(spark, home, "silver.key_load")
    assert hitters.groupBy("stream", "window_start").count().agg({"count": "max"}).first()[0] == 20
    assert hitters.where("share <= 0 OR share > 1").count() == 0
    # observed imbalance: the same computation as routeplan.planning.metrics on the logged workers
    workers = json.loads((home / "config/workers.json").read_text())["workers"]
    summary = (
        table(spark, home, "silver.window_summary")
        .where("stream = 'clicks'")
        .orderBy("window_start")
        .first()
    )
    loads = {
        r.worker: float(r.messages)
        for r in table(spark, home, "silver.worker_load")
        .where(f"stream = 'clicks' AND window_start = '{summary.window_start}'")
        .collect()
    }
    clicks = Workers.from_records([w for w in workers if w["stream"] == "clicks"])
    expected = observed_imbalance(loads, clicks)
    assert summary.imbalance == pytest.approx(expected)
    # the day's peak excess in the report: every window of the logged workers
    by_window: dict = {}
    for r in table(spark, home, "silver.worker_load").where("stream = 'clicks'").collect():
        by_window.setdefault(r.window_start, {})[r.worker] = float(r.messages)
    peak = observed_peak_excess(list(by_window.values()), clicks)
    assert report["streams"]["clicks"]["peak_excess"] == pytest.approx(peak)


def test_plan_kg_reproduces_the_logs_and_cg_improves_them(spark, home):
    # on the busiest window, where the logs' observed imbalance is measured
    report = run(
        plan, home, "--strategy", "cg", "--param", "epsilon=0.02", "--planning-window", "peak"
    )
    plans = table(spark, home, "gold.plans").collect()
    assert {(p.stream, p.strategy) for p in plans} == {
        (s, k) for s in ("clicks", "orders", "views") for k in ("cg", "kg")
    }
    for p in plans:
        if p.strategy == "kg":  # the generator routed with today's key grouping
            assert p.predicted_imbalance == pytest.approx(p.observed_imbalance, rel=1e-9)
            assert not p.selected
        else:
            assert p.selected
            assert p.predicted_imbalance < p.observed_imbalance / 2
            assert json.loads(p.params)["epsilon"] == 0.02
    assert report["streams"]["clicks"]["current_version"] is None
    # the report lists every candidate with gold.plans' numbers, and the budget's unit
    clicks = report["streams"]["clicks"]
    rows = {p.strategy: p for p in plans if p.stream == "clicks"}
    assert [(c["strategy"], c["selected"]) for c in clicks["candidates"]] == [
        ("cg", True),
        ("kg", False),
    ]
    for candidate in clicks["candidates"]:
        row = rows[candidate["strategy"]]
        assert candidate["predicted"] == json.loads(row.metrics)
        assert (candidate["moves"], candidate["choice"]) == (row.moves, row.choice)
    assert (clicks["budget"], clicks["migration_cost_unit"]) == ({}, "moves")


def test_plan_on_the_forecast_records_the_gate_and_the_predicted_band(spark, home):
    """The default planning window: every window of the last days (one here) forecast per
    unit; the first version is published by the gate's first rule, with the peak excess it is
    predicted to realize and its band in the table and in gold.plans.gate."""
    report = run(plan, home, "--strategy", "cg", "--param", "epsilon=0.02")
    rows = table(spark, home, "gold.plans").where("selected").collect()
    assert {r.stream for r in rows} == {"clicks", "orders", "views"}
    for r in rows:
        gate = json.loads(r.gate)
        assert (gate["publish"], gate["rule"], gate["in_force"]) == (True, "first", None)
        doc = json.loads(r.table_document)
        assert doc["planned"]["window"] == "forecast" and doc["planned"]["history_days"] == 1
        predicted = gate["predicted"]
        assert predicted["low"] <= predicted["point"] <= predicted["high"]
        assert doc["predicted"]["peak_excess"] == pytest.approx(predicted["point"])
        assert doc["predicted"]["peak_excess_high"] == pytest.approx(predicted["high"])
        assert report["streams"][r.stream]["gate"] == gate
        assert r.window_start < r.window_end  # the whole interval: the forecast's other fields
    assert table(spark, home, "gold.plans").where("NOT selected AND gate IS NOT NULL").count() == 0


def test_validate_gate_stops_a_bad_plan(home):
    with pytest.raises(SystemExit, match="plan_metrics.*predicted_imbalance"):
        run(validate, home, "--imbalance-allowance", "-10")


def test_validate_then_publish_then_rerun(spark, home, tmp_path):
    report = run(validate, home)
    # 3 streams × (key_group_load, plan_assignment, plan_metrics, plan_backtest)
    assert all(s["success"] for s in report["suites"]) and len(report["suites"]) == 12
    published = run(publish, home)
    assert {s["action"] for s in published["streams"]} == {"published"}
    for stream in ("clicks", "orders", "views"):
        folder = home / "routing" / stream
        assert (folder / "LATEST").read_text().strip() == "v1.json"
        doc = json.loads((folder / "v1.json").read_text())
        validate_document("routing_table", doc)
        assert doc["strategy"] == "cg" and doc["version"] == 1
        assert Router.from_store(home / "routing", stream).version == 1
    assert table(spark, home, "gold.routing_tables").count() == 3

    # same interval again, by an auto policy one of whose candidates planned v1 (cg, same
    # parameters): the rerun rule keeps LATEST, and gold.plans holds the rerun's complete set —
    # every candidate with its numbers and why it lost, the baseline — as a first run would
    policies = tmp_path / "auto.yaml"
    auto = "{strategy: auto, candidates: [cg, pkg], params: {cg: {epsilon: 0.02}}}"
    policies.write_text(f"streams: {{clicks: {auto}, orders: {auto}, views: {auto}}}\n")
    rerun = run(plan, home, "--policies", str(policies))
    rows = table(spark, home, "gold.plans").where(f"interval_start = '{DAY}'").collect()
    for stream in ("clicks", "orders", "views"):
        mine = {r.strategy: r for r in rows if r.stream == stream}
        inputs = inputs_from_document(
            json.loads((home / "reports" / DAY / "plan-inputs" / f"{stream}.json").read_text())
        )
        policy = load_policies(policies).for_stream(stream)
        first = plan_stream(policy, inputs.loads, None, inputs.workers, inputs.logged)
        assert sorted(mine) == sorted(c.strategy for c in first.candidates) == ["cg", "kg", "pkg"]
        assert [s for s, r in mine.items() if r.selected] == ["cg"]
        assert "LATEST v1 was planned by cg" in mine["cg"].choice and mine["cg"].moves == 0
        assert mine["pkg"].choice.startswith("auto candidate, not chosen: LATEST v1")
        assert "baseline" in mine["kg"].choice
        for r in mine.values():
            assert json.loads(r.metrics)["imbalance"] == r.predicted_imbalance >= 0
            assert r.run_id == rerun["run_id"] and r.current_version == 1
    run(validate, home)
    again = run(publish, home)
    assert {s["action"] for s in again["streams"]} == {"unchanged"}
    assert all("already does" in s["reason"] for s in again["streams"])
    assert table(spark, home, "gold.routing_tables").count() == 3
    assert table(spark, home, "gold.publish_log").where("action = 'unchanged'").count() == 3
    # the log keeps one row per stream and attempt, each naming the attempt that wrote it
    logged = table(spark, home, "gold.publish_log").collect()
    assert published["run_id"] != again["run_id"]
    assert sorted((r.run_id, r.action) for r in logged) == sorted(
        [(published["run_id"], "published")] * 3 + [(again["run_id"], "unchanged")] * 3
    )

    # another strategy (kg; validate would refuse its backtest, test_backtest.py shows it):
    # publish run alone makes the new version whose parent is v1 — but clicks is held: it
    # keeps v1, the log and the report say why, and the night goes on; once the hold is
    # cleared it publishes
    # (on the peak window: no gate, a plan that differs is published, as an operator's
    # Trigger form can ask)
    run(plan, home, "--strategy", "kg", "--planning-window", "peak")
    store = RoutingStore(home / "routing")
    store.hold("clicks", "v1 regressed")
    third = {s["stream"]: s for s in run(publish, home)["streams"]}
    assert (third["clicks"]["action"], third["clicks"]["version"]) == ("held", 1)
    assert third["clicks"]["reason"] == "held: v1 regressed"
    assert third["clicks"]["hold"]["version"] == 1
    assert {(third[s]["action"], third[s]["version"]) for s in ("orders", "views")} == {
        ("published", 2)
    }
    held = table(spark, home, "gold.publish_log").where("action = 'held'").collect()
    assert [(r["stream"], r["version"], r["reason"]) for r in held] == [
        ("clicks", 1, "held: v1 regressed")
    ]
    assert store.latest_version("clicks") == 1 and store.clear_hold("clicks")
    fourth = {s["stream"]: s for s in run(publish, home)["streams"]}
    assert (fourth["clicks"]["action"], fourth["clicks"]["version"]) == ("published", 2)
    assert {fourth[s]["action"] for s in ("orders", "views")} == {"unchanged"}
    assert json.loads((home / "routing/clicks/v2.json").read_text())["parent_version"] == 1


def test_rollback_job_and_the_delta_history(spark, home):
    """After test_validate_then_publish_then_rerun: every stream has v1 (cg) and v2 (kg)."""
    store = RoutingStore(home / "routing")
    # an incident rollback from a terminal: JSON only, Delta records it at the next job
    store.rollback("clicks", 1, "from the terminal")
    # the job restores views' v1 from Delta once its JSON file is pruned
    assert store.prune("views", keep_versions=1) == [1]
    store.hold("views", "v2 regressed")  # a person runs the rollback: the hold is lifted
    report = home / "reports" / "rollback.json"
    outcome = rollback.main(
        ["--home", str(home), "--stream", "views", "--version", "1", "--reason", "cg was better"]
        + ["--run-id", "manual__r1", "--report", str(report)]
    )["streams"][0]
    assert (outcome["action"], outcome["version"]) == ("rolled_back", 3)
    assert outcome["hold_cleared"] == "v2 regressed" and store.held("views") is None
    assert json.loads(report.read_text())["streams"] == [outcome]
    views = store.load("views")
    assert (views.restored_version, views.parent_version) == (1, 2)
    assert views.reason == "rollback to v1: cg was better" and views.strategy == "cg"

    history = table(spark, home, "gold.routing_tables")
    rows = {(r["stream"], r["version"]): r for r in history.collect()}
    assert len(rows) == history.count() == 8  # 3 streams × v1, v2 + clicks v3 + views v3
    assert rows[("views", 3)]["run_id"] == "manual__r1"
    assert rows[("clicks", 3)]["run_id"] is None  # published outside a job
    assert rows[("clicks", 3)]["restored_version"] == 1
    assert rows[("views", 3)]["reason"] == views.reason
    rolled = table(spark, home, "gold.publish_log").where("action = 'rolled_back'").collect()
    assert [(r["stream"], r["version"]) for r in rolled] == [("views", 3)]

    # the kg plan of v1 is now stale: publish refuses it, and prunes to the newest 2 JSON files
    with pytest.raises(SystemExit, match="planned against v1 but LATEST is now v3"):
        run(publish, home, "--keep-versions", "2")
    assert store.versions("clicks") == [2, 3]
    assert table(spark, home, "gold.routing_tables").count() == 8


def test_plan_checks_strategy_and_budget_before_spark_starts(home, monkeypatch, capsys):
    """A limit the strategy does not honour fails the job in one line naming the strategy, the
    limit and the fix, before any Spark session; the DAG's empty flags are no limits; the
    deprecated parameters become budget limits, each with a warning."""

    def no_spark(name):
        raise RuntimeError("spark started")

    monkeypatch.setattr(plan, "spark_session", no_spark)
    with pytest.raises(
        SystemExit, match="^plan refused: strategy 'mwf' cannot honour max_moves=3"
    ) as err:
        run(plan, home, "--strategy", "mwf", "--max-moves", "3")
    assert "\n" not in str(err.value) and "leave the limit unset" in str(err.value)
    with pytest.raises(SystemExit, match="'cg' cannot honour max_migration_cost=5"):
        run(plan, home, "--strategy", "cg", "--max-migration-cost", "5")
    with pytest.raises(SystemExit, match="plan refused: bad parameters for strategy 'mwf'"):
        run(plan, home, "--strategy", "mwf", "--param", "epsilon=0.1")
    empty = ["--max-moves=", "--max-migrated-load-share=", "--max-migration-cost="]
    with pytest.raises(RuntimeError, match="spark started"):  # the checks passed
        run(plan, home, "--strategy", "mwf", *empty, "--migration-cost-unit", "moves")
    old = '{"max_migrations": 40, "migration_cost": "keys", "max_migration_cost": 900}'
    with pytest.raises(RuntimeError, match="spark started"):
        run(plan, home, "--strategy", "milp", "--params-json", old)
    logged = capsys.readouterr().out
    for name in ("max_migrations", "migration_cost", "max_migration_cost"):
        assert f"DeprecationWarning: {name} is deprecated" in logged
    with pytest.raises(SystemExit, match="'kg' cannot honour max_moves=40"):
        run(plan, home, "--strategy", "kg", "--params-json", '{"max_migrations": 40}')


def test_a_partition_strategy_plans_validates_and_publishes(spark, home):
    """After the rollback test: mwf beside the kafka_range baseline, from silver.partition_load;
    validated by the partition suites, published over the key-routing LATEST, read by
    consumers."""
    from routeplan.model.table import PartitionAssignment, table_from_document
    from routeplan_client import Assignment

    rates = table(spark, home, "silver.partition_load").agg({"bytes_per_s": "max"}).first()[0]
    capacity = 3 * rates
    report = run(plan, home, "--strategy", "mwf", "--param", f"consumer_capacity={capacity}")
    rows = table(spark, home, "gold.plans").collect()
    assert {(r.stream, r.strategy, r.selected) for r in rows} == {
        (s, k, k == "mwf") for s in ("clicks", "orders", "views") for k in ("mwf", "kafka_range")
    }
    for r in rows:
        doc = json.loads(r.table_document)
        assigned = table_from_document(doc)
        assert isinstance(assigned, PartitionAssignment) and "workers" not in doc
        predicted = json.loads(r.metrics)
        assert r.moves == predicted["moves"] == 0  # LATEST routes keys: nothing to move from
        if r.selected:
            assert predicted["overloaded"] == 0
            assert predicted["consumers"] >= predicted["lower_bound"] >= 1
            assert json.loads(r.params)["bin_capacity"] == pytest.approx(capacity * 25 / 30)
    assert report["streams"]["clicks"]["current_version"] == 3
    checked = run(validate, home)
    suites = {s["suite"] for s in checked["suites"]}
    assert suites == {  # LATEST routes keys: no backtest, which passes
        "routeplan.partition_assignment",
        "routeplan.partition_metrics",
        "routeplan.plan_backtest",
    }
    assert all(s["success"] for s in checked["suites"])
    published = run(publish, home)
    assert {s["action"] for s in published["streams"]} == {"published"}
    for stream in ("clicks", "orders", "views"):
        validate_document("routing_table", RoutingStore(home / "routing").read_document(stream))
    consumers = Assignment.from_store(home / "routing", "orders")
    assert consumers.table.strategy == "mwf" and consumers.consumers


def test_upstream_fields_flow_into_key_group_flow_and_albic(spark, tmp_path):
    """Paper 004: events naming their upstream event → silver.key_group_flow → albic's plan."""
    from routeplan.model.loads import LoadSnapshot
    from routeplan.model.plan import Budget
    from routeplan.planning.registry import get_strategy

    generate(
        GeneratorConfig(
            landing=tmp_path / "landing",
            workers_out=tmp_path / "config" / "workers.json",
            day=date(2026, 11, 20),
            streams=("clicks", "orders"),
            events=3_000,
            keys=400,
            files_per_stream=1,
            fmt="csv",
            upstream="clicks",
            seed=5,
        )
    )
    home = ["--home", str(tmp_path), "--interval-start", DAY]
    ingest.main(home)
    events = spark.read.format("delta").load(str(tmp_path / "warehouse/bronze/stream_events"))
    assert events.where("stream = 'clicks' AND upstream_key IS NOT NULL").count() == 0
    assert events.where("stream = 'orders' AND upstream_stream = 'clicks'").count() == 3_000
    windows.main([*home, "--window-minutes", "360"])
    flow = spark.read.format("delta").load(str(tmp_path / "warehouse/silver/key_group_flow"))
    assert flow.where("stream = 'orders'").agg({"messages": "sum"}).first()[0] == 3_000
    assert flow.where("upstream_stream <> 'clicks'").count() == 0
    # clicks is published: orders' flow from clicks is anchored on clicks' workers
    loads = json.loads((tmp_path / "config" / "workers.json").read_text())["workers"]
    workers = Workers.from_records([w for w in loads if w["stream"] == "clicks"])
    snapshot = LoadSnapshot("clicks", [1.0] * 1024)
    kg = get_strategy("kg").plan(snapshot, None, workers, Budget()).table
    RoutingStore(tmp_path / "routing").publish(kg)
    report = plan.main([*home, "--strategy", "albic", "--streams", "orders", "--max-moves", "40"])
    assert report["streams"]["orders"]["moves"] <= 40
    rows = spark.read.format("delta").load(str(tmp_path / "warehouse/gold/plans")).collect()
    chosen = next(r for r in rows if r.selected)
    metrics = json.loads(chosen.metrics)
    assert chosen.strategy == "albic" and 0 <= metrics["collocation_factor"] <= 1
    # one plan pins one pair onto one worker (Algorithm 2 lines 22–32, collocations_per_run 1)
    # unless the load distance stays above maxLD down to maxPL ≤ 0: then it is the plain MILP
    # (lines 34–37), which balances at least as well as the hash baseline
    assert metrics["pinned_pairs"] >= 1 or metrics["max_partition_load"] <= 1e-9
    assert metrics["collocated_messages"] <= metrics["flow_messages"]
    baseline = json.loads(next(r for r in rows if not r.selected).metrics)
    assert metrics["load_distance"] <= baseline["load_distance"] + 1e-9


def test_the_cli_decides_what_the_plan_job_decided_on_the_same_inputs(spark, home, tmp_path):
    """``routeplan plan --policies`` and the plan job call the same ``plan_stream``: on the
    inputs the job wrote and the same LATEST, the CLI selects the same strategy, with the same
    table and predicted numbers, for a named strategy, a partition policy and ``auto``."""
    from routeplan.cli.main import main as cli

    copy = tmp_path / "home"
    shutil.copytree(home / "warehouse", copy / "warehouse")
    shutil.copytree(home / "config", copy / "config")
    policies = copy / "config" / "streams.yaml"
    policies.write_text(
        "streams:\n"
        "  clicks: {strategy: cg, params: {epsilon: 0.02}, budget: {max_moves: 30}}\n"
        "  orders: {kind: partition_assignment, strategy: mwf, load_metric: bytes}\n"
        "  views: {strategy: auto, candidates: [cg, pkg, kg], goals: [imbalance, memory]}\n"
    )
    run(plan, copy, "--policies", str(policies))
    rows = {r.stream: r for r in table(spark, copy, "gold.plans").where("selected").collect()}
    assert set(rows) == {"clicks", "orders", "views"}
    for stream, row in rows.items():
        inputs = copy / "reports" / DAY / "plan-inputs" / f"{stream}.json"
        out = tmp_path / f"{stream}.json"
        argv = ["plan", "--policies", str(policies), "--stream", stream, "--loads", str(inputs)]
        argv += ["--routing", str(copy / "routing"), "--out", str(out), "--json"]
        assert cli(argv) == 0
        job_table = json.loads(row.table_document)
        cli_table = json.loads(out.read_text())
        assert cli_table["strategy"] == row.strategy, stream
        for field in ("key_group_worker", "hot_keys", "partition_consumer", "workers", "params"):
            assert cli_table.get(field) == job_table.get(field), (stream, field)
        assert cli_table["predicted"]["imbalance"] == pytest.approx(row.predicted_imbalance)
