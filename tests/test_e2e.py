"""The README's main job end-to-end: sample logs → routeplan_nightly via `airflow dags test`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from routeplan.schemas import validate_document

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]
TABLES = [
    "bronze/stream_events",
    "bronze/quarantine",
    "silver/key_group_load",
    "silver/key_load",
    "silver/worker_load",
    "silver/partition_load",
    "silver/window_summary",
    "gold/plans",
    "gold/validations",
    "gold/routing_tables",
    "gold/publish_log",
]


def demo(env, *args):
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts/demo.py"), "--date", "2026-11-20", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home = tmp_path_factory.mktemp("e2e")
    env = {
        **os.environ,
        "ROUTEPLAN_HOME": str(home),
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    subprocess.run(["airflow", "db", "migrate"], env=env, check=True, capture_output=True)
    return env


def test_main_job_publishes_then_rerun_changes_nothing(env, spark):
    home = Path(env["ROUTEPLAN_HOME"])

    def bronze_rows() -> int:
        return spark.read.format("delta").load(str(home / "warehouse/bronze/stream_events")).count()

    out = demo(env, "--events", "4000")
    for table in TABLES:
        assert (home / "warehouse" / table / "_delta_log").is_dir(), table
    for stream in ("clicks", "orders", "views"):
        assert (home / "routing" / stream / "LATEST").read_text().strip() == "v1.json"
        validate_document(
            "routing_table", json.loads((home / "routing" / stream / "v1.json").read_text())
        )
        assert f"{stream:<10} v1       published" in out
    ingest = json.loads((home / "reports/2026-11-20/ingest.json").read_text())
    assert ingest["rows_quarantined"] > 0
    assert ingest["rows_read"] == ingest["rows_written"] + ingest["rows_quarantined"]
    first = bronze_rows()
    assert first == ingest["rows_written"]

    out = demo(env, "--events", "4000")
    assert bronze_rows() == first
    publish = json.loads((home / "reports/2026-11-20/publish.json").read_text())
    assert {s["action"] for s in publish["streams"]} == {"unchanged"}
    assert "already does" in out
    assert not (home / "routing/clicks/v2.json").exists()

    shown = subprocess.run(
        ["routeplan", "show", "--stream", "clicks", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout)["version"] == 1
