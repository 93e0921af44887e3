"""routeplan's alerts (plugins/routeplan_alerts.py): one JSON line per failed task or missed
deadline, POSTed to the webhook of the alert connection when it exists — here a real HTTP server
on this machine."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow
REPO = Path(__file__).resolve().parents[1]

LOGICAL_DATE = datetime(2026, 11, 21, tzinfo=UTC)
RUN_ID = "scheduled__2026-11-21T00:00:00+00:00"


@pytest.fixture(autouse=True)
def plugins_folder(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "plugins"))  # as Airflow's plugins folder


@pytest.fixture(scope="module")
def nightly():
    """The nightly DAG, parsed before a test starts (parsing sets up Airflow's logging, which
    would otherwise replace the handler a test reads log lines from)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags" / "routeplan_nightly.py"))
    return bag.dags["routeplan_nightly"]


@pytest.fixture
def webhook():
    """A local HTTP server: ``(url, received)`` — every POST's JSON body in ``received``; a path
    ending in ``/fail`` answers 500."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(
                {"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)}
            )
            self.send_response(500 if self.path.endswith("/fail") else 204)
            self.end_headers()

        def log_message(self, *args):  # no request lines on stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", received
    server.shutdown()
    server.server_close()


def use_connection(monkeypatch, url: str, conn_id: str = "routeplan_alerts") -> None:
    """The alert connection, as a deployment defines it (here through Airflow's environment
    secrets backend): type http, host = the webhook's URL."""
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "http", "host": url})
    )


def failed_task_context(dag, task_id: str = "ingest", try_number: int = 3) -> dict:
    """What Airflow's task runner gives ``on_failure_callback``: the runtime task instance of a
    task of ``dag``, the exception, the logical date."""
    from airflow.exceptions import AirflowException
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

    ti = RuntimeTaskInstance.model_construct(
        task=dag.get_task(task_id),
        dag_id=dag.dag_id,
        task_id=task_id,
        run_id=RUN_ID,
        try_number=try_number,
        map_index=-1,
    )
    error = AirflowException(
        "Cannot execute: spark-submit … ingest.py. Error code is: 1.\nlog tail"
    )
    return {"ti": ti, "task_instance": ti, "exception": error, "logical_date": LOGICAL_DATE}


def alert_lines(caplog) -> list[dict]:
    prefix = "routeplan alert: "
    return [
        json.loads(r.getMessage().removeprefix(prefix))
        for r in caplog.records
        if r.getMessage().startswith(prefix)
    ]


def test_a_failed_task_is_one_log_line_and_one_post(nightly, webhook, monkeypatch, caplog):
    from routeplan_alerts import RunAlert

    url, received = webhook
    use_connection(monkeypatch, f"{url}/hooks/routeplan")
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    RunAlert()(failed_task_context(nightly))  # as Airflow calls a notifier
    [alert] = alert_lines(caplog)
    assert alert == {
        "event": "task_failed",
        "dag_id": "routeplan_nightly",
        "run_id": RUN_ID,
        "task_id": "ingest",
        "try_number": 3,
        "logical_date": str(LOGICAL_DATE),
        "error": "AirflowException: Cannot execute: spark-submit … ingest.py. Error code is: 1.",
        "url": alert["url"],
    }
    assert "/dags/routeplan_nightly/runs/" in alert["url"] and "/tasks/ingest" in alert["url"]
    assert "try_number=3" in alert["url"]  # the log of the try that failed
    assert received == [
        {"path": "/hooks/routeplan", "type": "application/json", "body": alert},
    ]


def test_without_the_connection_only_the_line_is_logged(nightly, webhook, monkeypatch, caplog):
    from routeplan_alerts import RunAlert

    url, received = webhook
    use_connection(monkeypatch, url, conn_id="other_alerts")  # not the one the alert reads
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    RunAlert()(failed_task_context(nightly, "validate", try_number=1))
    [alert] = alert_lines(caplog)
    assert (alert["task_id"], alert["try_number"]) == ("validate", 1)
    assert received == []
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == []


def test_the_connection_id_comes_from_the_environment(nightly, webhook, monkeypatch, caplog):
    from routeplan_alerts import RunAlert

    url, received = webhook
    use_connection(monkeypatch, url, conn_id="ops_webhook")
    monkeypatch.setenv("ROUTEPLAN_ALERT_CONN", "ops_webhook")
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    RunAlert()(failed_task_context(nightly))
    assert [r["body"] for r in received] == alert_lines(caplog)


def test_a_failed_post_is_logged_and_never_raised(nightly, webhook, monkeypatch, caplog):
    from routeplan_alerts import RunAlert

    url, received = webhook
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    for target in (f"{url}/fail", "http://127.0.0.1:9/closed-port", "hooks.example.com/no-scheme"):
        use_connection(monkeypatch, target)
        caplog.clear()
        RunAlert()(
            failed_task_context(nightly)
        )  # returns: the task's own failure stays what it was
        assert len(alert_lines(caplog)) == 1
        [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert "no alert posted" in warning or "not posted" in warning, warning
        assert target not in warning  # a webhook URL often holds a token
    assert len(received) == 1  # the server answered 500 once; nothing else reached it


def test_a_missed_deadline_runs_through_airflows_callback_runner(
    nightly, webhook, monkeypatch, caplog
):
    """The nightly DAG's deadline callback as the executor runs it (Airflow's
    ``execute_callback``), with the context the scheduler builds when the deadline passes."""
    import structlog
    from airflow.api_fastapi.core_api.datamodels.dag_run import DAGRunResponse
    from airflow.sdk.execution_time.callback_supervisor import execute_callback

    url, received = webhook
    use_connection(monkeypatch, url)
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    [deadline] = nightly.deadline
    run = {
        "dag_run_id": RUN_ID,
        "dag_id": nightly.dag_id,
        "logical_date": LOGICAL_DATE.isoformat(),
        "queued_at": LOGICAL_DATE.isoformat(),
        "state": "running",
    }
    fields = set(DAGRunResponse.model_fields)
    assert set(run) <= fields  # the names the REST API (and the deadline's context) use
    context = {"dag_run": run, "deadline": {"id": "d1", "deadline_time": "2026-11-22T06:00:00Z"}}
    ok, error = execute_callback(
        deadline.callback.path,
        {**deadline.callback.kwargs, "context": context},
        "routeplan_nightly.py",
        str(REPO / "dags"),
        structlog.get_logger(),
    )
    assert (ok, error) == (True, None)
    [alert] = alert_lines(caplog)
    assert alert["event"] == "deadline_missed"
    assert (alert["dag_id"], alert["run_id"], alert["task_id"]) == (nightly.dag_id, RUN_ID, None)
    assert "2026-11-22T06:00:00Z" in alert["error"]
    assert alert["url"].endswith(
        "/dags/routeplan_nightly/runs/scheduled__2026-11-21T00%3A00%3A00%2B00%3A00"
    )
    assert [r["body"] for r in received] == [alert]


def test_the_guards_actions_are_alert_lines_and_posts(
    nightly, webhook, monkeypatch, caplog, tmp_path
):
    """``guard_alerts`` on a guard report: one alert per guard decision with an action, in the
    notifier's format, each posted; a decision without action, or one an earlier run of the
    night took and alerted (``again``), is no alert."""
    import routeplan_tasks

    url, received = webhook
    use_connection(monkeypatch, f"{url}/hooks/routeplan")
    caplog.set_level(logging.INFO, logger="routeplan.alerts")
    guard = [
        {
            "stream": "clicks",
            "version": 4,
            "action": "rollback",
            "restore_version": 3,
            "reason": "regression: v4's realized imbalance 0.4 …",
            "published_version": 5,
        },
        {
            "stream": "orders",
            "version": 2,
            "action": "hold",
            "hold": True,
            "restore_version": None,
            "reason": "regression: v2's realized overload 0.2 …",
            "published_version": None,
        },
        {
            "stream": "views",
            "version": 7,
            "action": "alert",
            "restore_version": None,
            "reason": "regression: v7 …",
            "published_version": None,
        },
        {
            "stream": "quiet",
            "version": 1,
            "action": None,
            "restore_version": None,
            "reason": "v1: as_predicted",
            "published_version": None,
        },
        {
            "stream": "again",
            "version": 3,
            "action": "rollback",
            "restore_version": 2,
            "reason": "regression: v3 …",
            "published_version": 4,
            "again": True,
        },
    ]
    report = tmp_path / "guard.json"
    report.write_text(
        json.dumps(
            {"stage": "guard", "run_id": RUN_ID, "interval_start": "2026-11-21", "guard": guard}
        )
    )
    alerts = routeplan_tasks.guard_alerts.function(str(report))
    assert [(a["event"], a["stream"]) for a in alerts] == [
        ("regression_rollback", "clicks"),
        ("regression_hold", "orders"),
        ("regression_alert", "views"),
    ]
    assert alerts[0] == {
        "event": "regression_rollback",
        "stream": "clicks",
        "version": 4,
        "hold": False,
        "restore_version": 3,
        "published_version": 5,
        "reason": "regression: v4's realized imbalance 0.4 …",
        "run_id": RUN_ID,
        "interval_start": "2026-11-21",
    }
    assert alert_lines(caplog) == alerts
    assert [r["body"] for r in received] == alerts
    assert {r["path"] for r in received} == {"/hooks/routeplan"}

    report.write_text(json.dumps({"stage": "guard", "guard": guard[3:]}))
    assert routeplan_tasks.guard_alerts.function(str(report)) == []
    assert len(received) == 3
