"""The Trigger form in a real browser, as an operator uses it.

Headless Chromium (Debian's ``chromium`` package, driven by Playwright for Python) logs in to the
Airflow UI of the shared test server (``nightly_airflow``, also used by test_airflow_trigger), opens
routeplan_nightly, presses **Trigger**, sets only the ``date`` Param and submits the form as
shown; the run must then succeed. routeplan_maintenance's form is submitted untouched, and the
scheduler starts its Spark job (test_e2e runs a whole maintenance with the same defaults). A form
that Airflow's UI cannot submit at its defaults (a required field left empty: red badge on "Run
Parameters", Trigger disabled) fails here.

This run is the one full DAG run (five Spark jobs, ~4 min on 2 cores) of the real-server tests:
it also stands for test_airflow_trigger's former run — through the real scheduler to success, a
table published per stream with LATEST on it; the fixture then checks nothing outlives the server.

The form is kept as a screenshot: ``var/test-artifacts/trigger-form.png`` (or
``$ROUTEPLAN_TEST_ARTIFACTS/trigger-form.png``); its path is printed. The screenshots the
documentation shows (``DOC_IMAGES``) are copied to ``docs/images/`` too: each run refreshes them.

After that run, on the same server and without another nightly run, the Routing pages
(``routeplan.api.ui``) are used as an operator and a viewer would: reached from Airflow's
navigation, their numbers compared with the API's JSON, a key-routing and a partition version
explained, one Roll back (a short routeplan_rollback run), the run's "Plans of this run" tab,
the viewer's refused rollback and ``/routeplan/docs`` with every other host blocked; each page is
a screenshot ``routing-*.png`` beside the form's.

Needs ``/usr/bin/chromium`` (``make chromium`` installs it, as ``make test`` does) and the
``playwright`` package (the ``dev`` extra); never ``playwright install``: the browser is Debian's.
"""

from __future__ import annotations

import os
import shutil
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


# the screenshots docs/*.md show: copied from the artifacts folder into docs/images/
DOC_IMAGES = (
    "trigger-form.png",
    "routing-streams.png",
    "routing-stream.png",
    "routing-explain-clicks.png",
    "routing-rollback-confirm.png",
)


def artifacts_dir() -> Path:
    folder = Path(os.environ.get("ROUTEPLAN_TEST_ARTIFACTS", REPO / "var" / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def refresh_doc_images(folder: Path) -> None:
    """Copy the screenshots in ``DOC_IMAGES`` that ``folder`` holds to ``docs/images/``."""
    for name in DOC_IMAGES:
        if (folder / name).is_file():
            shutil.copyfile(folder / name, REPO / "docs" / "images" / name)


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
            with (
                page.expect_response(
                    lambda r: (
                        r.request.method == "POST" and r.url.endswith(f"/dags/{dag_id}/dagRuns")
                    )
                ) as posted,
                page.expect_response(
                    lambda r: r.request.method == "PATCH" and r.url.endswith(f"/dags/{dag_id}")
                ) as unpaused,
            ):
                submit.click()
            response = posted.value
            assert response.ok, f"POST dagRuns -> {response.status}: {response.text()}"
            # the form unpauses the DAG in a request of its own, at the same time
            answer = unpaused.value
            assert answer.ok, f"PATCH dags/{dag_id} (unpause) -> {answer.status}: {answer.text()}"
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
    refresh_doc_images(artifacts_dir())

    dag = af._ok(af.get(f"dags/{DAG_ID}/details"))
    defaults = {name: param["value"] for name, param in dag["params"].items()}
    assert run["conf"] == {**defaults, "date": DAY}, "the form must send its defaults unchanged"
    assert run["run_type"] == "manual" and run["triggered_by"] == "ui"
    deadline = time.monotonic() + 30  # "Unpause on trigger": the UI's PATCH may land after the run
    while af._ok(af.get(f"dags/{DAG_ID}"))["is_paused"] and time.monotonic() < deadline:
        time.sleep(1)
    assert af._ok(af.get(f"dags/{DAG_ID}"))["is_paused"] is False

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


def publish_second_versions(routing: Path) -> dict[str, int]:
    """Versions with moves to explain and roll back, without a second nightly run: a by-hand v2
    of the night's key-routing ``clicks`` (its heaviest key group moved off the busiest worker),
    and a partition stream ``payments`` (v1: two partitions on c0, over the bin capacity; v2: one
    moved to c1). The nightly run plans every stream with cg: it makes no partition assignment.
    Their LATEST versions."""
    from routeplan.model.table import PartitionAssignment
    from routeplan.model.workers import Workers
    from routeplan.planning.metrics import worker_load_by_name
    from routeplan.publishing.store import RoutingStore

    store = RoutingStore(routing)
    clicks = store.load("clicks")
    loads = worker_load_by_name(clicks, clicks.planning_snapshot())
    busiest = max(loads, key=loads.get)
    idlest = min((w for w in loads if w != busiest), key=loads.get)
    groups = clicks.planning_snapshot().key_group_load
    owners = list(clicks.key_group_worker)
    heaviest = max((g for g, w in enumerate(owners) if w == busiest), key=lambda g: groups[g])
    owners[heaviest] = idlest
    moved_keys = type(clicks)(**{**clicks.__dict__, "key_group_worker": tuple(owners)})
    reason = "by hand (tests/test_browser.py): one unit moved"

    def payments(assign: dict[int, str]) -> PartitionAssignment:
        return PartitionAssignment(
            "payments",
            "mwf",
            Workers.homogeneous(2, prefix="c"),
            assign,
            params={"bin_capacity": 4.0, "consumer_capacity": 4.0},
            planning_load={"partition_load": [3.0, 2.0, 1.0]},
            predicted={"imbalance": 0.0, "consumers": 2.0},
        )

    store.publish(payments({0: "c0", 1: "c0", 2: "c1"}), reason=reason)
    return {
        "clicks": store.publish(moved_keys, reason=reason).version,
        "payments": store.publish(payments({0: "c0", 1: "c1", 2: "c1"}), reason=reason).version,
    }


def log_in(page, base_url: str, user: str, password: str) -> None:
    page.goto(f"{base_url}/")  # → the simple auth manager's login page
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/")


def field_values(frame, stream: str) -> dict[str, str]:
    """The Streams table's ``data-field`` → ``data-value`` of ``stream``'s row."""
    cells = frame.locator(f'tr[data-stream="{stream}"] [data-field]')
    return {
        cells.nth(i).get_attribute("data-field"): cells.nth(i).get_attribute("data-value")
        for i in range(cells.count())
    }


def routing_pages(
    af, shots: Path, run_id: str, versions: dict[str, int], expect_run_report: bool = True
) -> None:
    """The Routing pages in Airflow's UI, as an operator (admin) and a viewer use them."""
    import re
    from urllib.parse import quote

    from playwright.sync_api import expect, sync_playwright

    base = af.base_url
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            outside: list[str] = []

            def block(route):  # every request to another host is blocked, and noted
                outside.append(route.request.url)
                route.abort()

            context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/]).*"), block)
            page = context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            log_in(page, base, "admin", af.password("admin"))

            # Airflow's navigation leads to the Routing page (an iframe of /routeplan/ui/)
            page.get_by_role("link", name="Routing").first.click()
            page.wait_for_url(re.compile(r"/plugin/routing"))
            frame = page.frame_locator('iframe[title="Routing"]')
            frame.locator('tr[data-stream="clicks"]').wait_for()
            page.screenshot(path=str(shots / "routing-streams.png"), full_page=True)
            listed = af._ok(af.get("/routeplan/streams"))["streams"]
            assert {s["stream"] for s in listed} >= set(versions)
            for entry in listed:  # the page's numbers are the API's, for every stream
                stream = entry["stream"]
                cells = field_values(frame, stream)
                latest = af._ok(af.get(f"/routeplan/streams/{stream}/latest"))
                outcomes = af._ok(af.get(f"/routeplan/streams/{stream}/outcomes"))
                assert int(cells["latest_version"]) == latest["version"]
                assert latest["version"] == versions.get(stream, latest["version"])
                assert cells["strategy"] == latest["strategy"]
                predicted = latest["predicted"]  # a first version's is fitted: none shown
                if predicted.get("out_of_sample") == 0.0:
                    assert not cells["predicted_imbalance"]
                else:
                    assert float(cells["predicted_imbalance"]) == pytest.approx(
                        predicted.get("imbalance")
                    )
                last = outcomes[-1] if outcomes else {}
                assert cells["verdict"] == last.get("verdict", "")
                realized = last.get("realized_imbalance")
                assert (cells["realized_imbalance"] or None) == (
                    None if realized is None else str(realized)
                )

            # a stream, then a version explained: a key-routing and a partition stream
            frame.get_by_role("link", name="clicks", exact=True).click()
            frame.locator("#versions").wait_for()
            page.screenshot(path=str(shots / "routing-stream.png"), full_page=True)
            for stream, unit in (("clicks", "key_group:"), ("payments", "partition:")):
                page.goto(f"{base}/routeplan/ui/streams/{stream}/versions/{versions[stream]}")
                moves = page.locator("#moves tr[data-unit]")
                expect(moves).to_have_count(1)
                assert moves.first.get_attribute("data-unit").startswith(unit)
                assert "%" in moves.first.inner_text()  # its share of the load
                page.screenshot(path=str(shots / f"routing-explain-{stream}.png"), full_page=True)

            # roll clicks back to the night's version with the button; wait for the new one
            before = versions["clicks"]
            target = before - 1
            page.goto(f"{base}/routeplan/ui/streams/clicks/versions/{target}")
            page.locator("#rollback-link").click()
            expect(page.locator("#what-changes")).to_contain_text(
                f"routes as v{target}, replacing LATEST v{before}: 1 move (1 key group"
            )
            page.screenshot(path=str(shots / "routing-rollback-confirm.png"), full_page=True)
            page.locator("#confirm").click()
            page.locator("#run-link").wait_for()
            expect(page.locator("#new-version")).to_have_text(f"v{before + 1}", timeout=10 * 60_000)
            page.screenshot(path=str(shots / "routing-rollback-done.png"), full_page=True)
            restored = af._ok(af.get("/routeplan/streams/clicks/latest"))
            assert (restored["version"], restored["restored_version"]) == (before + 1, target)

            # the nightly run's "Plans of this run" tab (an iframe of /routeplan/ui/runs/…)
            page.goto(f"{base}/dags/routeplan_nightly/runs/{quote(run_id)}/plugin/routeplan-run")
            tab = page.frame_locator('iframe[title="Plans of this run"]')
            expect(tab.locator("h1")).to_have_text("Plans of this run")
            expect(tab.locator("body")).to_contain_text(run_id)
            page.screenshot(path=str(shots / "routing-run.png"), full_page=True)
            page.goto(f"{base}/routeplan/ui/runs/routeplan_nightly/{quote(run_id)}")
            if expect_run_report:
                expect(page.locator("#run-streams")).to_contain_text("clicks")

            # the OpenAPI page renders with every other host blocked
            page.goto(f"{base}/routeplan/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text(
                "routeplan routing tables"
            )
            page.screenshot(path=str(shots / "routing-docs.png"))
            assert outside == [], f"requests to other hosts: {outside}"
            context.close()

            # a viewer may read, but not roll back: no working button, and Airflow says 403
            viewer = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = viewer.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            log_in(page, base, "viewer", af.password("viewer"))
            page.goto(f"{base}/routeplan/ui/streams/clicks/rollback?version={target}")
            expect(page.locator("#not-allowed")).to_be_visible()
            expect(page.locator("#confirm")).to_be_disabled()
            status = page.evaluate(
                """async () => (await fetch("/api/v2/dags/routeplan_rollback/dagRuns", {
                    method: "POST", credentials: "same-origin",
                    headers: {"Content-Type": "application/json"},
                    body: JSON.stringify({logical_date: null,
                                          conf: {stream: "clicks", version: 1, reason: "x"}})
                })).status"""
            )
            assert status == 403
            page.screenshot(path=str(shots / "routing-rollback-viewer.png"), full_page=True)
            viewer.close()
        finally:
            browser.close()


def test_routing_pages_in_airflows_navigation_explain_and_roll_back(nightly_airflow):  # noqa: F811
    """After the nightly run above: the Routing page reached from Airflow's navigation shows
    the API's numbers for every stream; a key-routing and a partition version are explained
    move by move; Roll back triggers routeplan_rollback as the logged-in user and the new
    version appears; a viewer gets no working Roll back (403 from Airflow's API); /docs renders
    with every other host blocked. Screenshots: var/test-artifacts/routing-*.png."""
    server = nightly_airflow
    report = server.publish_report(DAY)  # the trigger test's night
    assert any(o["stream"] == "clicks" and o["action"] == "published" for o in report["streams"])
    versions = publish_second_versions(server.home / "routing")
    started = time.monotonic()
    routing_pages(server.af, artifacts_dir(), report["run_id"], versions)
    print(f"routing pages {time.monotonic() - started:.0f}s")
    refresh_doc_images(artifacts_dir())


def test_maintenance_form_submits_with_its_defaults_and_the_scheduler_runs_it(nightly_airflow):  # noqa: F811
    """routeplan_maintenance's Trigger form, untouched: its defaults submit as the DAG's Params,
    and the scheduler starts the run's Spark job. (That the job then compacts and names every
    table with these defaults is tests/test_e2e.py's maintenance test: a whole maintenance run
    here would cost CI several more minutes for the same check.)"""

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
    deadline, states = time.monotonic() + 300, {}
    while time.monotonic() < deadline:
        states = {t["task_id"]: t["state"] for t in af.task_instances(dag_id, run["dag_run_id"])}
        if states.get("maintain") in ("running", "success"):
            break
        assert "failed" not in states.values(), states
        time.sleep(2)
    assert states.get("maintain") in ("running", "success"), states
