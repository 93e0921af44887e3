"""The Trigger form in a real browser, as an operator uses it.

Headless Chromium (Debian's ``chromium`` package, driven by Playwright for Python) logs in to the
Airflow UI of the shared test server (``nightly_airflow``, also used by test_airflow_trigger), opens
routeplan_nightly, presses **Trigger**, sets only the ``date`` Param and submits the form as
shown; the run must then succeed. routeplan_maintenance's form is submitted untouched, and its run
compacts the tables the nightly run wrote. A form that Airflow's UI cannot submit at its defaults (a
required field left empty: red badge on "Run Parameters", Trigger disabled) fails here.

This run is the one full DAG run (five Spark jobs, ~4 min on 2 cores) of the real-server tests:
it also stands for test_airflow_trigger's former run — through the real scheduler to success, a
table published per stream with LATEST on it; the fixture then checks nothing outlives the server.

The form is kept as a screenshot: ``var/test-artifacts/trigger-form.png`` (or
``$ROUTEPLAN_TEST_ARTIFACTS/trigger-form.png``); its path is printed.

Needs ``/usr/bin/chromium`` (``make chromium`` installs it, as ``make test`` does) and the
``playwright`` package (the ``dev`` extra); never ``playwright install``: the browser is Debian's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from airflow_server import REPO, nightly_airflow  # noqa: F401  (the shared server fixture)

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DAG_ID = "routeplan_nightly"
DAY = "2026-11-19"  # test_airflow_trigger uses 2026-11-20: each test reads only its own day
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
UI_TIMEOUT_MS = 60_000


def artifacts_dir() -> Path:
    folder = Path(os.environ.get("ROUTEPLAN_TEST_ARTIFACTS", REPO / "var" / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def launch_chromium(playwright):
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: `make chromium` installs Debian's chromium package")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def trigger_from_the_form(
    base_url: str,
    password: str,
    screenshot: Path,
    dag_id: str = DAG_ID,
    section: str = "Run Parameters",
    fields: dict[str, str] | None = None,
) -> dict:
    """Log in, open ``dag_id``, press Trigger, wait for the form's first ``section``, fill
    ``fields`` (Param → text), submit: the created run (the ``POST .../dagRuns`` answer).
    Fails when the form cannot be submitted as shown."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(f"{base_url}/")  # → the simple auth manager's login page
            page.get_by_label("Username").fill("admin")
            page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{base_url}/")

            page.goto(f"{base_url}/dags/{dag_id}")
            page.get_by_role("button", name="Trigger Dag").click()
            form = page.get_by_role("dialog")
            form.get_by_text(section).first.wait_for()
            for name, value in (fields or {}).items():  # what the operator changes
                form.locator(f"#element_{name}").fill(value)
            unpause = form.get_by_role("checkbox", name=f"Unpause {dag_id} on trigger")
            submit = form.get_by_role("button", name="Trigger", exact=True)
            submit.wait_for()

            page.set_viewport_size({"width": 1280, "height": 5000})  # the whole form
            page.wait_for_timeout(500)  # let the form validate and re-render
            form.screenshot(path=str(screenshot))
            print(f"\nTrigger form screenshot: {screenshot}")

            if not submit.is_enabled():
                pytest.fail(
                    "the Trigger form cannot be submitted as shown: its Trigger button is "
                    "disabled (a Param the UI treats as required is empty at its default: red "
                    f"badge on 'Run Parameters'); see {screenshot}"
                )
            assert unpause.is_checked(), "a paused DAG's form offers 'Unpause on trigger', checked"
            with page.expect_response(
                lambda r: r.request.method == "POST" and r.url.endswith(f"/dags/{dag_id}/dagRuns")
            ) as posted:
                submit.click()
            response = posted.value
            assert response.ok, f"POST dagRuns -> {response.status}: {response.text()}"
            created = response.json()
            page.get_by_text("Dag Run Triggered").first.wait_for()  # the success toast
            return created
        finally:
            browser.close()


def test_trigger_form_submits_with_its_defaults_and_the_run_succeeds(nightly_airflow):  # noqa: F811
    server = nightly_airflow
    af, home = server.af, server.home
    # the defaults' inputs: <home>/landing and <home>/config/workers.json
    server.generate(DAY, home / "landing", home / "config" / "workers.json", "generate-ui.log")
    # as deployed: a new DAG is paused (the API test, if it ran first, unpaused it)
    af._ok(af.patch(f"dags/{DAG_ID}", {"is_paused": True}))

    started = time.monotonic()
    run = trigger_from_the_form(
        af.base_url, af.password(), artifacts_dir() / "trigger-form.png", fields={"date": DAY}
    )
    ui_s = time.monotonic() - started

    dag = af._ok(af.get(f"dags/{DAG_ID}/details"))
    defaults = {name: param["value"] for name, param in dag["params"].items()}
    assert run["conf"] == {**defaults, "date": DAY}, "the form must send its defaults unchanged"
    assert run["run_type"] == "manual" and run["triggered_by"] == "ui"
    assert af._ok(af.get(f"dags/{DAG_ID}"))["is_paused"] is False  # "Unpause on trigger"

    af.wait_for_run(DAG_ID, run["dag_run_id"], timeout=20 * 60)  # five Spark jobs on local[2]
    print(f"form {ui_s:.0f}s, run {time.monotonic() - started - ui_s:.0f}s")

    # empty form fields → the jobs' defaults: every stream of <home>/landing
    ingest = server.report(DAY, "ingest")
    assert Path(ingest["landing"]) == home / "landing"
    report = server.publish_report(DAY)
    assert report["run_id"] == run["dag_run_id"]
    outcomes = {o["stream"]: o for o in report["streams"]}
    assert sorted(outcomes) == ["clicks", "orders"], "empty streams: every stream in the logs"
    for stream, outcome in outcomes.items():
        assert outcome["action"] in ("published", "unchanged"), outcome
        assert server.latest_version(stream) == outcome["version"]
        table = server.table(stream, outcome["version"])
        assert table["stream"] == stream
        if outcome["action"] == "published":
            assert table["strategy"] == "cg"  # the default strategy


def test_maintenance_form_submits_with_its_defaults_and_the_run_succeeds(nightly_airflow):  # noqa: F811
    """routeplan_maintenance's Trigger form, untouched: its defaults submit, and the run
    compacts and names the tables of the server's home."""
    from datetime import UTC, datetime

    server = nightly_airflow
    af = server.af
    dag_id = "routeplan_maintenance"
    run = trigger_from_the_form(
        af.base_url,
        af.password(),
        artifacts_dir() / "maintenance-form.png",
        dag_id=dag_id,
        section="Retention (set on tables that have none)",
    )
    dag = af._ok(af.get(f"dags/{dag_id}/details"))
    assert run["conf"] == {name: param["value"] for name, param in dag["params"].items()}
    assert run["conf"] == {"log_retention": "30 days", "deleted_file_retention": "7 days"}
    af.wait_for_run(dag_id, run["dag_run_id"], timeout=10 * 60)
    day = datetime.now(UTC).date().isoformat()
    report = server.report(day, "maintain")
    assert report["run_id"] == run["dag_run_id"]
    for name, entry in report["tables"].items():
        assert entry["current_files_after"] <= entry["current_files_before"], name
        assert entry["retention"]["delta.deletedFileRetentionDuration"] == "interval 7 days"
