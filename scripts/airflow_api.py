"""Talk to a running Airflow 3 (REST API v2) and stop what a server started, by process group.

Used by ``scripts/cluster.py`` (``make cluster-demo``: Airflow's components on PostgreSQL) and by
the tests that start ``airflow standalone`` (``tests/airflow_server.py``).

API details (checked against the installed apache-airflow 3.3 source):
- ``POST /auth/token`` with JSON ``{"username", "password"}`` -> 201 ``{"access_token"}``
  (simple auth manager; the password is in ``$AIRFLOW_HOME/simple_auth_manager_passwords.json
  .generated``, written by the API server on its first start).
- ``PATCH /api/v2/dags/{dag_id}`` with ``{"is_paused": false}``.
- ``POST /api/v2/dags/{dag_id}/dagRuns``: ``logical_date`` is required but may be null.
- ``GET /api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}``
  (``Accept: application/json``) -> ``{"content": [{"event", "timestamp", ...} | str],
  "continuation_token"}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

HEALTHY = "healthy"
LOG_TAIL_LINES = 120
MARKER_VAR = "ROUTEPLAN_AIRFLOW_SERVER_ID"  # set in the server's env, inherited by descendants


class AirflowServerError(RuntimeError):
    """The server did not start, a DAG did not load, or a run did not succeed."""


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- processes


def _scan_proc(match) -> list[str]:
    """Live (non-zombie) processes for which ``match(pid_dir, pgrp)`` holds: ``"pid cmdline"``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
            state, _ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
            if state in ("Z", "X") or not match(entry, int(pgrp)):
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue  # exited while we looked, or not ours to read
        found.append(f"{entry.name} {cmd.strip()}")
    return found


def process_group_members(pgid: int) -> list[str]:
    """Live (non-zombie) processes in process group ``pgid``, as ``"pid cmdline"`` strings."""
    if not Path("/proc").is_dir():  # not Linux: all we can tell is whether the group exists
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [f"process group {pgid}"]
    return _scan_proc(lambda _entry, pgrp: pgrp == pgid)


def marked_processes(marker: str) -> list[str]:
    """Live processes whose environment has ``MARKER_VAR=marker``: everything the server started,
    including what left its process group (BashOperator runs its command with setsid)."""
    needle = f"{MARKER_VAR}={marker}".encode()
    if not Path("/proc").is_dir():
        return []
    return _scan_proc(lambda entry, _pgrp: needle in (entry / "environ").read_bytes().split(b"\0"))


def server_processes(pgid: int, marker: str | None = None) -> list[str]:
    """Processes of one server still alive: its process group plus marked escapees."""
    found = process_group_members(pgid)
    if marker:
        found += [p for p in marked_processes(marker) if p not in found]
    return found


def stop_process_group(
    proc: subprocess.Popen, grace_s: float = 30.0, marker: str | None = None
) -> list[str]:
    """SIGTERM the whole group led by ``proc``, wait, SIGKILL what is left; return survivors.

    With ``marker``, processes that left the group but carry the marker are included.
    """
    pgid = proc.pid  # started with start_new_session=True: the leader's pid is the pgid

    def wait_empty(deadline: float) -> list[str]:
        while True:
            proc.poll()  # reap the leader, else it stays a zombie member of the group
            left = server_processes(pgid, marker)
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.2)

    left: list[str] = []
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        if sig == signal.SIGKILL:  # escapees only get KILL: their parents had TERM + grace
            for line in left:
                with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                    os.kill(int(line.split()[0]), sig)
        left = wait_empty(time.monotonic() + wait_s)
        if not left:
            return []
    return left


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(cannot read {path}: {exc})"


# --------------------------------------------------------------------------- API client


class AirflowClient:
    """A thin client for the v2 REST API of one running ``airflow standalone``.

    Paths given to ``get``/``post``/``patch`` are relative to ``/api/v2/`` unless they start
    with ``/`` (e.g. ``"/auth/token"``). They return the ``httpx.Response`` unchecked.
    """

    def __init__(
        self,
        base_url: str,
        airflow_home: Path,
        log_path: Path,
        dags_folder: str,
        proc: subprocess.Popen | None = None,
        marker: str | None = None,
    ):
        self.proc = proc
        self.marker = marker
        self.pgid = proc.pid if proc else None
        self.base_url = base_url
        self.dags_folder = dags_folder
        self.airflow_home = airflow_home
        self.log_path = log_path
        self.http = httpx.Client(base_url=base_url, timeout=60.0)
        self._token: str | None = None

    # -- plumbing

    def close(self) -> None:
        self.http.close()

    def password(self, user: str = "admin") -> str:
        path = self.airflow_home / "simple_auth_manager_passwords.json.generated"
        try:
            return json.loads(path.read_text())[user]
        except (OSError, ValueError, KeyError) as exc:
            raise AirflowServerError(f"no password for {user!r} in {path}: {exc}") from exc

    def token(self) -> str:
        """A fresh JWT from ``POST /auth/token`` (simple auth manager, user ``admin``)."""
        resp = self.http.post(
            "/auth/token", json={"username": "admin", "password": self.password("admin")}
        )
        if resp.status_code != 201:
            raise AirflowServerError(f"POST /auth/token -> {resp.status_code}: {resp.text}")
        self._token = resp.json()["access_token"]
        return self._token

    def request(
        self, method: str, path: str, *, headers: Mapping[str, str] | None = None, **kw: Any
    ) -> httpx.Response:
        url = path if path.startswith("/") else f"/api/v2/{path}"
        if self._token is None:
            self.token()
        resp = self.http.request(method, url, headers=self._headers(headers), **kw)
        if resp.status_code == 401:  # token expired: log in again, once
            self.token()
            resp = self.http.request(method, url, headers=self._headers(headers), **kw)
        return resp

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}", **(extra or {})}

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.request("GET", path, params=params or None)

    def post(self, path: str, json: Any) -> httpx.Response:
        return self.request("POST", path, json=json)

    def patch(self, path: str, json: Any) -> httpx.Response:
        return self.request("PATCH", path, json=json)

    def _ok(self, resp: httpx.Response) -> Any:
        if resp.is_success:
            return resp.json()
        raise AirflowServerError(
            f"{resp.request.method} {resp.request.url.path} -> {resp.status_code}: {resp.text}"
        )

    # -- server

    def health(self) -> dict:
        return self.http.get("/api/v2/monitor/health").json()

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def server_problem(self) -> str | None:
        """Why the server cannot run tasks (standalone exited, scheduler not healthy), or None."""
        if self.exited():
            return f"airflow standalone exited with {self.proc.returncode}"
        try:
            health = self.health()
        except (httpx.HTTPError, ValueError) as exc:
            return f"health check failed: {exc!r}"
        if (health.get("scheduler") or {}).get("status") != HEALTHY:
            return f"the scheduler is not healthy: {health}"
        return None

    def import_errors(self) -> list[dict]:
        return self._ok(self.get("importErrors", limit=100))["import_errors"]

    @staticmethod
    def format_import_errors(errors: list[dict]) -> str:
        return "\n\n".join(f"--- {e['filename']}\n{e['stack_trace']}" for e in errors)

    # -- DAGs and runs

    def unpause(self, dag_id: str) -> dict:
        dag = self._ok(self.patch(f"dags/{dag_id}", {"is_paused": False}))
        if dag["is_paused"]:
            raise AirflowServerError(f"DAG {dag_id} is still paused: {dag}")
        return dag

    def wait_for_dag(self, dag_id: str, timeout: float = 120.0) -> dict:
        """Wait until the dag-processor has parsed ``dag_id``; raise on import errors.

        While the DAG is unknown, import errors in the folder may belong to its file, but may
        also be another file's: they are reported once they have persisted for a while.
        """
        deadline = time.monotonic() + timeout
        errors_since: float | None = None
        errors: list[dict] = []
        while True:
            resp = self.get(f"dags/{dag_id}")
            if resp.status_code == 200:
                dag = resp.json()
                if not dag["has_import_errors"]:
                    return dag
                mine = [e for e in self.import_errors() if e["filename"] == dag["relative_fileloc"]]
                raise AirflowServerError(
                    f"DAG {dag_id} has import errors:\n{self.format_import_errors(mine)}"
                )
            if resp.status_code != 404:
                self._ok(resp)
            errors = self.import_errors()
            now = time.monotonic()
            errors_since = (errors_since or now) if errors else None
            if errors and (now - errors_since > 15 or now >= deadline):
                raise AirflowServerError(
                    f"DAG {dag_id} not loaded; import errors:\n{self.format_import_errors(errors)}"
                )
            if now >= deadline:
                raise AirflowServerError(
                    f"DAG {dag_id} not parsed within {timeout:.0f}s (no import errors); "
                    f"dags folder: {self.dags_folder}; "
                    f"server log {self.log_path}:\n{tail(self.log_path, 30)}"
                )
            time.sleep(1.0)

    def trigger(
        self,
        dag_id: str,
        conf: Mapping[str, Any] | None = None,
        logical_date: str | datetime | None = None,
    ) -> str:
        """Create a manual run (like the UI's Trigger form); return its ``dag_run_id``."""
        if isinstance(logical_date, datetime):
            if logical_date.tzinfo is None:
                raise ValueError("logical_date must be timezone-aware")
            logical_date = logical_date.isoformat()
        body = {"logical_date": logical_date, "conf": dict(conf or {})}
        return self._ok(self.post(f"dags/{dag_id}/dagRuns", body))["dag_run_id"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        path = f"dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        return list(self._ok(self.get(path, limit=100))["task_instances"])

    def task_log(self, ti: dict, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of a task instance's log (its latest try)."""
        if not ti.get("try_number"):
            return "(the task never ran: no log)"
        path = (
            f"/api/v2/dags/{ti['dag_id']}/dagRuns/{ti['dag_run_id']}/taskInstances/"
            f"{ti['task_id']}/logs/{ti['try_number']}"
        )
        resp = self.request(
            "GET",
            path,
            params={"map_index": ti.get("map_index", -1), "full_content": True},
            headers={"Accept": "application/json"},
        )
        if not resp.is_success:
            return f"(log unavailable: {resp.status_code} {resp.text[:300]})"
        out: list[str] = []
        for item in resp.json().get("content", []):
            out.extend(_format_log_item(item))
        return "\n".join(out[-lines:])

    def wait_for_run(
        self,
        dag_id: str,
        run_id: str,
        timeout: float = 600.0,
        progress: Callable[[str], None] | None = None,
    ) -> dict:
        """Poll until the run succeeds (return it) or fails (raise with failed tasks' logs).
        With ``progress``, each task's new state is told as ``"<task>: <state>"``."""
        deadline = time.monotonic() + timeout
        next_check = time.monotonic() + 10
        sick_since: float | None = None
        states: dict[str, str] = {}
        while True:
            if progress is not None:
                for ti in self.task_instances(dag_id, run_id):
                    if ti["state"] and states.get(ti["task_id"]) != ti["state"]:
                        states[ti["task_id"]] = ti["state"]
                        progress(f"{ti['task_id']}: {ti['state']}")
            run = self._ok(self.get(f"dags/{dag_id}/dagRuns/{run_id}"))
            if run["state"] == "success":
                return run
            if run["state"] == "failed":
                tis = self.task_instances(dag_id, run_id)
                parts = [f"run {dag_id}/{run_id} failed; tasks: {_states(tis)}"]
                for ti in (ti for ti in tis if ti["state"] == "failed"):
                    name = ti["task_id"] + (f"[{ti['map_index']}]" if ti["map_index"] >= 0 else "")
                    parts.append(
                        f"===== {name} (try {ti['try_number']}) log tail:\n{self.task_log(ti)}"
                    )
                raise AirflowServerError("\n".join(parts))
            logical = run.get("logical_date")
            if logical and _parse_time(logical) > _now() + timedelta(seconds=timeout):
                raise AirflowServerError(  # the scheduler runs nothing before its logical date
                    f"run {dag_id}/{run_id} has logical_date {logical}, later than now + timeout"
                )
            if time.monotonic() >= deadline:
                tis = self.task_instances(dag_id, run_id)
                raise AirflowServerError(
                    f"run {dag_id}/{run_id} still {run['state']} after {timeout:.0f}s; "
                    f"tasks: {_states(tis)}; server log {self.log_path}"
                )
            if time.monotonic() >= next_check:  # a dead scheduler would leave the run hanging
                next_check = time.monotonic() + 10
                problem = self.server_problem()
                # a busy machine can delay heartbeats: only a lasting problem counts
                sick_since = (sick_since or time.monotonic()) if problem else None
                if problem and (self.exited() or time.monotonic() - sick_since > 90):
                    raise AirflowServerError(
                        f"run {dag_id}/{run_id} cannot finish: {problem}; "
                        f"log {self.log_path}:\n{tail(self.log_path)}"
                    )
            time.sleep(2.0)


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _states(tis: list[dict]) -> str:
    return ", ".join(f"{ti['task_id']}={ti['state']}" for ti in tis) or "(none)"


def _format_log_item(item: Any) -> list[str]:
    """Render one structured log message (or raw line) of the logs endpoint as text lines."""
    if isinstance(item, str):
        return item.splitlines()
    ts = str(item.get("timestamp") or "")[:23]
    level = str(item.get("level") or "").upper()
    head = " ".join(p for p in (ts, level, str(item.get("event", ""))) if p)
    lines = head.splitlines() or [""]
    for key in ("error_detail",):  # structured exceptions: render like a traceback
        for exc in item.get(key) or []:
            lines.append("Traceback (most recent call last):")
            for fr in exc.get("frames") or []:
                lines.append(
                    f'  File "{fr.get("filename")}", line {fr.get("lineno")}, in {fr.get("name")}'
                )
            lines.append(f"{exc.get('exc_type')}: {exc.get('exc_value')}")
    return lines
