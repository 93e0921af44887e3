"""The nightly DAG end to end through a real Airflow (scheduler, dag-processor, API server).

The run is triggered over the REST API with non-default params, as the UI's Trigger form sends
them, and must plan only the chosen stream with the chosen strategy from the chosen inputs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from airflow_server import (
    REPO,
    airflow_standalone,
    makefile_env,
    process_group_members,
    server_processes,
)

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DAG_ID = "routeplan_nightly"
LOGICAL_DATE = "2026-11-21T00:00:00Z"  # its data interval is the day 2026-11-20
DATA_DATE = "2026-11-20"


def _run(cmd: list[str], env: dict[str, str], log_name: str) -> None:
    """Run a set-up command; on failure show the tail of its output."""
    log = os.path.join(env["AIRFLOW_HOME"], log_name)
    with open(log, "w") as out:
        rc = subprocess.run(cmd, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        with open(log) as f:
            tail = "".join(f.readlines()[-40:])
        pytest.fail(f"{' '.join(cmd)} exited with {rc}; {log}:\n{tail}")


def _routeplan_cli(env: dict[str, str]) -> list[str]:
    exe = shutil.which("routeplan", path=env["PATH"])
    if exe:
        return [exe]
    # Not installed as a console script (no `pip install -e .` yet): run it from the checkout.
    return [sys.executable, "-c", "import sys; from routeplan.cli import main; sys.exit(main())"]


def test_nightly_dag_triggered_with_params_over_the_api(tmp_path):
    home = tmp_path  # ROUTEPLAN_HOME
    env = makefile_env(home)
    os.makedirs(env["AIRFLOW_HOME"])
    landing = home / "my_landing"
    workers = home / "config" / "workers.json"

    _run(["airflow", "db", "migrate"], env, "db-migrate.log")
    generate = {
        "--landing": landing,
        "--workers-out": workers,
        "--date": DATA_DATE,
        "--events": 20000,
        "--streams": "clicks,orders",
        "--seed": 7,
    }
    args = [str(x) for flag_value in generate.items() for x in flag_value]
    _run([*_routeplan_cli(env), "generate", *args], env, "generate.log")
    assert workers.is_file(), "routeplan generate wrote no workers file"

    # Non-default params, with the JSON types the UI's Params form sends.
    conf = {
        "streams": ["clicks"],
        "strategy": "kg",
        "window_minutes": 30,
        "landing_path": str(landing),
        "workers_path": str(workers),
    }
    with airflow_standalone(env, timeout_s=240) as af:
        pgid, marker = af.pgid, af.marker
        af.wait_for_dag(DAG_ID, timeout=240)
        af.unpause(DAG_ID)
        run_id = af.trigger(DAG_ID, conf, LOGICAL_DATE)
        af.wait_for_run(DAG_ID, run_id, timeout=20 * 60)  # five Spark jobs on local[2]

        run = af.get(f"dags/{DAG_ID}/dagRuns/{run_id}").json()
        assert run["state"] == "success"
        assert run["conf"] == conf

    routing = home / "routing"
    latest = routing / "clicks" / "LATEST"
    assert latest.exists(), f"no {latest}; routing/: {sorted(p.name for p in routing.iterdir())}"
    name = os.readlink(latest) if latest.is_symlink() else latest.read_text().strip()
    assert os.path.basename(name) == "v1.json"
    table = json.loads((routing / "clicks" / "v1.json").read_text())
    assert isinstance(table, dict)
    assert table["strategy"] == "kg"
    assert table["stream"] == "clicks"
    assert not (routing / "orders").exists(), "only the chosen stream may be planned"

    # Nothing the server started outlives it: its process group, nor what left the group.
    assert process_group_members(pgid) == []
    assert server_processes(pgid, marker) == []
