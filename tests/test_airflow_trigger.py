"""Triggering routeplan_nightly over Airflow's own REST API (a real scheduler, dag-processor and
API server: the ``nightly_airflow`` server that tests/test_browser.py shares): which run confs
Airflow accepts and stores, which it refuses.

(routeplan's own HTTP API mounted in Airflow as a plugin is tests/test_airflow_plugin_api.py.)

A run triggered over the REST API with non-default params, with the JSON types the UI's Trigger
form sends, is stored with exactly that conf; out-of-range params are refused before a run
exists; a paused DAG's run stays queued (what "Unpause on trigger" unchecked means).

The one full DAG run of the suite's real-server tests is the browser test's: it asserts what this
test asserted when it ran the five Spark jobs itself (a run through the real scheduler succeeds,
publishes a table per planned stream, LATEST moves, nothing outlives the server). That the
non-default params reach the jobs is tests/test_dag.py's (rendered arguments, parsed by the jobs'
own argument parsers) and test_jobs' (each job honours them) — without a second five-job run.
"""

from __future__ import annotations

import time

import pytest
from airflow_server import nightly_airflow  # noqa: F401  (the shared server fixture)

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DAG_ID = "routeplan_nightly"
LOGICAL_DATE = "2026-11-21T00:00:00Z"  # its data interval is the day 2026-11-20
QUEUED_CHECK_S = 10  # a few scheduler loops


def test_nightly_dag_triggered_with_params_over_the_api(nightly_airflow):  # noqa: F811
    af, home = nightly_airflow.af, nightly_airflow.home
    af._ok(af.patch(f"dags/{DAG_ID}", {"is_paused": True}))  # as deployed: paused

    # Non-default params, with the JSON types the UI's Params form sends.
    conf = {
        "streams": ["clicks"],
        "strategy": "flux",
        "window_minutes": 30,
        "landing_path": str(home / "my_landing"),
        "workers_path": str(home / "my_config" / "workers.json"),
        "max_bad_files": 0,
        "max_quarantined_share": 0.25,
        "max_moves": 0,
        "max_migrated_load_share": 0.5,
        "migration_cost_unit": "distinct_keys",
        "max_migrations": 0,  # deprecated, still accepted for one release
        "keep_versions": 3,
    }
    run_id = af.trigger(DAG_ID, conf, LOGICAL_DATE)
    try:
        run = af._ok(af.get(f"dags/{DAG_ID}/dagRuns/{run_id}"))
        assert run["conf"] == conf
        assert run["data_interval_start"].startswith("2026-11-20")
        # the DAG is paused: the run waits, no task starts
        time.sleep(QUEUED_CHECK_S)
        run = af._ok(af.get(f"dags/{DAG_ID}/dagRuns/{run_id}"))
        assert run["state"] == "queued", run
        assert all(ti["state"] is None for ti in af.task_instances(DAG_ID, run_id))
    finally:  # never run it: the browser test's run is the suite's full run
        af.request("DELETE", f"dags/{DAG_ID}/dagRuns/{run_id}").raise_for_status()

    # Out-of-range or mistyped params are refused before a run exists.
    for bad in (
        {"max_bad_files": -1},
        {"max_quarantined_share": 2},
        {"streams": ["no spaces"]},
        {"strategy": "nope"},
        {"window_minutes": "60"},
        {"migration_cost_unit": "keys"},
    ):
        resp = af.post(f"dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": {**conf, **bad}})
        assert resp.status_code == 400, (bad, resp.status_code, resp.text)
    runs = af._ok(af.get(f"dags/{DAG_ID}/dagRuns"))["dag_runs"]
    assert not [r for r in runs if r["conf"] and r["conf"].get("strategy") == "flux"], runs
