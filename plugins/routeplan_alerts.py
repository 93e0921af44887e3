"""routeplan's alerts: one JSON line in the log per failed task or missed deadline, also POSTed
to a webhook when the Airflow connection ``$ROUTEPLAN_ALERT_CONN`` (default
``routeplan_alerts``) exists.

``RunAlert`` is an Airflow notifier: the DAGs' tasks use it as ``on_failure_callback`` (called
once a task has failed for good, after its last retry) and the nightly run's deadline alert
(``deadline_alerts``) as its callback. The connection: type ``http``, host = the webhook's URL::

    airflow connections add routeplan_alerts --conn-type http \\
        --conn-host https://hooks.example.com/services/T000/B000/XXXX

The alert line (``routeplan alert: {...}``) holds ``event`` (``task_failed`` or
``deadline_missed``), ``dag_id``, ``run_id``, ``task_id``, ``try_number``, ``logical_date``,
``error`` (the first line of the exception, or what was missed) and ``url`` (the task's log, or
the run's page). A failed POST is logged and never fails the callback.

The regression guard's actions (``routeplan_tasks.guard_alerts``, from the guard report) are
alert lines of the same kind (``raise_alert``): ``event`` ``regression_rollback``,
``regression_hold`` or ``regression_alert``, with ``stream``, ``version`` (the version that
regressed), ``hold`` (the guard also held the stream), ``restore_version``,
``published_version`` (what a rollback published), ``reason``, ``run_id`` and
``interval_start`` (``guard_alert_fields``).
"""

from __future__ import annotations

import json
import logging
import sys
import urllib.request
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseNotifier, DeadlineAlert, DeadlineReference, SyncCallback

from routeplan import settings
from routeplan.errors import one_line

POST_TIMEOUT_SECONDS = 10
log = logging.getLogger("routeplan.alerts")


class RunAlert(BaseNotifier):
    """Logs one alert line for the failed task or the run that missed its deadline, and POSTs
    it (JSON) to the webhook of the alert connection when there is one."""

    def __init__(self, event: str = "task_failed", context: dict | None = None):
        super().__init__(context=context)
        self.event = event

    def notify(self, context: dict) -> None:
        """Log the alert of ``context`` (a task's, or a deadline's) and post it."""
        raise_alert(alert_fields(self.event, context))


def raise_alert(alert: dict[str, Any]) -> str:
    """Log ``alert`` as one ``routeplan alert: {...}`` line and POST it to the webhook (when
    the alert connection exists); the line."""
    line = json.dumps(alert, default=str)
    log.error("routeplan alert: %s", line)
    post_alert(line)
    return line


GUARD_EVENTS = {
    "rollback": "regression_rollback",
    "hold": "regression_hold",
    "alert": "regression_alert",
}


def guard_alert_fields(entry: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """The alert of one guard decision of a guard report (``entry["action"]`` set; ``hold``:
    the guard also held the stream, after a repeated regression)."""
    return {
        "event": GUARD_EVENTS.get(entry["action"], f"regression_{entry['action']}"),
        "stream": entry.get("stream"),
        "version": entry.get("version"),
        "hold": bool(entry.get("hold")),
        "restore_version": entry.get("restore_version"),
        "published_version": entry.get("published_version"),
        "reason": entry.get("reason"),
        "run_id": report.get("run_id"),
        "interval_start": report.get("interval_start"),
    }


def deadline_alerts(within: timedelta) -> list[DeadlineAlert]:
    """A DAG's ``deadline``: ``RunAlert`` (event ``deadline_missed``, run by the executor) when
    a run has not finished ``within`` after it was queued; the run goes on.

    None under ``airflow dags test``: Airflow 3.3.2's ``dag.test`` cannot end a run of a DAG
    with a deadline alert (``DagRun.update_state`` looks the alert up by its serialized form:
    "'dict' object has no attribute 'hex'"), and nobody waits on such a run."""
    if sys.argv[1:3] == ["dags", "test"]:
        return []
    return [
        DeadlineAlert(
            reference=DeadlineReference.DAGRUN_QUEUED_AT,
            interval=within,
            callback=SyncCallback(RunAlert, kwargs={"event": "deadline_missed"}),
            name="run not finished in time",
        )
    ]


def alert_fields(event: str, context: dict) -> dict[str, Any]:
    """The alert of a failed task's context (``ti``, ``exception``, ``logical_date``) or of a
    missed deadline's (``dag_run`` as the REST API shows it, ``deadline``)."""
    ti = context.get("ti")
    if ti is not None:
        return {
            "event": event,
            "dag_id": ti.dag_id,
            "run_id": ti.run_id,
            "task_id": ti.task_id,
            "try_number": ti.try_number,
            "logical_date": context.get("logical_date"),
            "error": first_line(context.get("exception")),
            "url": ti.log_url,
        }
    run = context.get("dag_run") or {}
    deadline = (context.get("deadline") or {}).get("deadline_time")
    return {
        "event": event,
        "dag_id": run.get("dag_id"),
        "run_id": run.get("dag_run_id"),
        "task_id": None,
        "try_number": None,
        "logical_date": run.get("logical_date"),
        "error": f"the run had not finished by its deadline {deadline} (state {run.get('state')})",
        "url": run_url(run.get("dag_id"), run.get("dag_run_id")),
    }


def first_line(error: object) -> str | None:
    """The exception's type and the first line of its message (at most 500 characters)."""
    if error is None:
        return None
    text = str(error).strip().splitlines()
    kind = type(error).__name__ if isinstance(error, BaseException) else None
    first = f"{kind}: {text[0]}" if kind and text else (kind or (text[0] if text else ""))
    return one_line(first, limit=500)


def run_url(dag_id: str | None, run_id: str | None) -> str | None:
    """The run's page in Airflow's UI (``[api] base_url``), as a task's ``log_url`` is built."""
    from urllib.parse import quote

    from airflow.configuration import conf

    if not dag_id or not run_id:
        return None
    base = conf.get("api", "base_url", fallback="http://localhost:8080/").rstrip("/")
    return f"{base}/dags/{dag_id}/runs/{quote(run_id)}"


def webhook_url() -> str | None:
    """The alert connection's host (the webhook's URL); None when the connection does not
    exist, or when its host is not an http(s) URL (logged, naming the connection)."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    conn_id = settings.current().alert_conn
    try:
        host = Connection.get(conn_id).host or ""
    except AirflowNotFoundException:
        return None
    except Exception as err:  # noqa: BLE001 - an alert must never fail its callback
        log.warning("connection %s cannot be read (%s); no alert posted", conn_id, one_line(err))
        return None
    if not host.startswith(("http://", "https://")):
        log.warning(
            "connection %s: host must be the webhook's http(s) URL; no alert posted", conn_id
        )
        return None
    return host


def post_alert(line: str) -> bool:
    """POST the alert (JSON) to ``webhook_url()``; True when the webhook took it. A failure is
    logged (without the URL, which often holds a token) and never raised."""
    url = webhook_url()
    if url is None:
        return False
    request = urllib.request.Request(
        url, data=line.encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT_SECONDS) as response:
            response.read()
    except (OSError, ValueError) as err:  # URLError, HTTPError, timeouts are OSErrors
        log.warning("alert not posted to the webhook: %s", one_line(err))
        return False
    return True
