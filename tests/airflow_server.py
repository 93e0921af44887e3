"""Run the real ``airflow standalone`` for end-to-end tests and talk to its REST API (v2).

Usage::

    env = makefile_env(tmp_path)                       # the Makefile's environment
    with airflow_standalone(env, free_port(), timeout_s=180) as af:
        af.wait_for_dag("my_dag", timeout=120)
        af.unpause("my_dag")
        run_id = af.trigger("my_dag", {"x": 1}, "2026-11-21T00:00:00Z")
        af.wait_for_run("my_dag", run_id, timeout=600)
    assert not server_processes(af.pgid, af.marker)    # its process group + escapees

Tests that only need *a* running server with routeplan's DAGs share one through the
``nightly_airflow`` fixture (import it into the test module): it is started for the first such
test and stopped after the last one, so e.g. the trigger test (tests/test_airflow_trigger.py) and
the browser test cost one ``airflow standalone`` start, not two. Tests that build Airflow's app in
a child Python (tests/test_airflow_plugin_api.py) take their environment from ``airflow_env``.

Everything runs in its own process group (session); leaving the ``with`` block sends SIGTERM
to the whole group, then SIGKILL after a grace period, so no scheduler, dag-processor,
triggerer, api-server, task or spark-submit process outlives the test.

API details (checked against the installed apache-airflow 3.3 source):
- ``POST /auth/token`` with JSON ``{"username", "password"}`` -> 201 ``{"access_token"}``
  (simple auth manager; the password is in ``$AIRFLOW_HOME/simple_auth_manager_passwords.json
  .generated``, written by ``airflow standalone`` on its first start).
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
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
HEALTHY = "healthy"
LOG_TAIL_LINES = 120
MARKER_VAR = "ROUTEPLAN_AIRFLOW_SERVER_ID"  # set in the server's env, inherited by descendants


class AirflowServerError(RuntimeError):
    """The server did not start, a DAG did not load, or a run did not succeed."""


# --------------------------------------------------------------------------- environment


def makefile_env(routeplan_home: Path | str, *, repo: Path = REPO) -> dict[str, str]:
    """The environment ``make`` exports (see the Makefile), for a given data root."""
    home = Path(routeplan_home)
    venv_bin = repo / ".venv" / "bin"
    if not venv_bin.is_dir():  # e.g. a venv elsewhere: use the running interpreter's
        venv_bin = Path(sys.executable).parent
    # Not the caller's Airflow/routeplan settings (e.g. another AIRFLOW_HOME or database).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "ROUTEPLAN_"))}
    env.update(
        ROUTEPLAN_HOME=str(home),
        ROUTEPLAN_JARS=str(repo / ".jars"),
        AIRFLOW_HOME=str(home / "airflow"),
        AIRFLOW__CORE__DAGS_FOLDER=str(repo / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(repo / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__PARALLELISM="4",
        AIRFLOW_CONN_SPARK_LOCAL='{"conn_type": "spark", "host": "local[2]"}',
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=str(venv_bin / "python"),
        PATH=f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def airflow_env(
    airflow_home: Path | str, routeplan_home: Path | str | None = None, **extra: str
) -> dict[str, str]:
    """``makefile_env`` with Airflow's state in ``airflow_home`` (e.g. one migrated database that
    several tests share) and routeplan's data in ``routeplan_home`` (default: ``airflow_home``),
    a fixed API JWT secret (``airflow standalone`` makes its own; an app built in process needs
    one), plus ``extra``."""
    env = makefile_env(routeplan_home if routeplan_home is not None else airflow_home)
    env.update(
        AIRFLOW_HOME=str(airflow_home),
        AIRFLOW__API_AUTH__JWT_SECRET="routeplan-test-secret",
        **extra,
    )
    return env


def run_checked(cmd: list[str], env: Mapping[str, str], cwd: Path, timeout_s: float = 300) -> None:
    """Run ``cmd``; fail the test with the end of its output unless it exits 0."""
    done = subprocess.run(
        cmd, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout_s
    )
    assert done.returncode == 0, f"{cmd}:\n{(done.stdout + done.stderr)[-4000:]}"


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


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
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
                    f"server log {self.log_path}:\n{_tail(self.log_path, 30)}"
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

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 600.0) -> dict:
        """Poll until the run succeeds (return it) or fails (raise with failed tasks' logs)."""
        deadline = time.monotonic() + timeout
        next_check = time.monotonic() + 10
        sick_since: float | None = None
        while True:
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
                        f"log {self.log_path}:\n{_tail(self.log_path)}"
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


# --------------------------------------------------------------------------- the server


@contextlib.contextmanager
def airflow_standalone(
    env: Mapping[str, str],
    port: int | None = None,
    timeout_s: float = 180.0,
    *,
    grace_s: float = 30.0,
    scheduled_runs: bool = False,
) -> Iterator[AirflowClient]:
    """Start ``airflow standalone`` with ``env`` and yield a client once the scheduler is healthy.

    ``env`` must contain ``AIRFLOW_HOME`` (and the DAGs folder etc., see ``makefile_env``).
    The API server listens on 127.0.0.1:``port`` (a free port if None). The component log is
    ``$AIRFLOW_HOME/standalone-<port>.log``. The scheduler creates no scheduled runs unless
    ``scheduled_runs`` (``[scheduler] use_job_schedule``); triggered runs still run. On exit
    the process group is stopped (SIGTERM, SIGKILL after ``grace_s``) and an error is raised if
    anything survived.
    """
    env = dict(env)
    if "AIRFLOW_HOME" not in env:
        raise ValueError("env must set AIRFLOW_HOME")
    port = port or free_port()
    airflow_home = Path(env["AIRFLOW_HOME"])
    airflow_home.mkdir(parents=True, exist_ok=True)
    base_url = f"http://127.0.0.1:{port}"
    env.setdefault("AIRFLOW__CORE__PARALLELISM", "4")
    marker = env[MARKER_VAR] = uuid.uuid4().hex
    if not scheduled_runs:
        # Only runs the test triggers: unpausing a scheduled DAG would otherwise make the
        # scheduler create the latest scheduled run too (with default params), and one whose
        # logical_date equals a manual run's crashes the scheduler (UNIQUE dag_id, logical_date).
        env["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] = "False"
    env["AIRFLOW__API__HOST"] = "127.0.0.1"
    env["AIRFLOW__API__PORT"] = str(port)
    # Task processes reach the Execution API at [api] base_url, default http://localhost:8080:
    # without this they would talk to whatever listens on 8080 (or nothing).
    env["AIRFLOW__API__BASE_URL"] = base_url
    env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] = f"{base_url}/execution/"
    # The scheduler's and the triggerer's log servers default to fixed ports 8793/8794.
    env.setdefault("AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT", str(free_port()))
    env.setdefault("AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT", str(free_port()))
    airflow = shutil.which("airflow", path=env.get("PATH"))
    if airflow is None:  # standalone starts its parts as `airflow ...`: must be on PATH
        raise AirflowServerError(f"`airflow` is not on the PATH given: {env.get('PATH')}")
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", port)) == 0:
            raise AirflowServerError(f"port {port} is already in use")

    log_path = airflow_home / f"standalone-{port}.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [airflow, "standalone"],
            env=env,
            cwd=airflow_home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # setsid: own process group, not hit by the terminal's ^C
        )
    dags_folder = env.get("AIRFLOW__CORE__DAGS_FOLDER", str(airflow_home / "dags"))
    client = AirflowClient(base_url, airflow_home, log_path, dags_folder, proc, marker)
    try:
        _wait_healthy(client, proc, timeout_s)
        yield client
    except BaseException:
        client.close()
        left = stop_process_group(proc, grace_s, marker)
        if left:
            print(f"airflow processes left running: {left}", file=sys.stderr)
        raise
    client.close()
    left = stop_process_group(proc, grace_s, marker)
    if left:
        raise AirflowServerError(f"airflow processes survived SIGKILL: {left}")


def _wait_healthy(client: AirflowClient, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        if proc.poll() is not None:
            raise AirflowServerError(
                f"airflow standalone exited with {proc.returncode}; "
                f"log {client.log_path}:\n{_tail(client.log_path)}"
            )
        try:
            last = client.health()
            if (last.get("scheduler") or {}).get("status") == HEALTHY:
                return
        except (httpx.HTTPError, ValueError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise AirflowServerError(
                f"scheduler not healthy after {timeout_s:.0f}s (last: {last}); "
                f"log {client.log_path}:\n{_tail(client.log_path)}"
            )
        time.sleep(1.0)


# --------------------------------------------------------------------------- shared server


def run_logged(cmd: list[str], env: Mapping[str, str], log_name: str) -> None:
    """Run a set-up command with its output in ``$AIRFLOW_HOME/<log_name>``; fail the test with
    the tail of that output if it fails."""
    log = Path(env["AIRFLOW_HOME"], log_name)
    with open(log, "w") as out:
        rc = subprocess.run(
            [str(c) for c in cmd], env=dict(env), cwd=REPO, stdout=out, stderr=subprocess.STDOUT
        ).returncode
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        pytest.fail(f"{' '.join(map(str, cmd))} exited with {rc}; {log}:\n{tail}")


def routeplan_cli(env: Mapping[str, str]) -> list[str]:
    """The ``routeplan`` command (the console script, else the module from the checkout)."""
    exe = shutil.which("routeplan", path=env["PATH"])
    if exe:
        return [exe]
    return [
        sys.executable,
        "-c",
        "import sys; from routeplan.cli.main import main; sys.exit(main())",
    ]


class NightlyAirflow:
    """One running ``airflow standalone`` with routeplan's DAGs over a fresh ROUTEPLAN_HOME.

    ``af`` is its API client, ``home`` its ROUTEPLAN_HOME, ``env`` the Makefile's environment
    for it. Tests sharing it must not depend on each other's runs: each uses its own day.
    """

    def __init__(self, home: Path):
        self.home = home
        self.env = makefile_env(home)
        Path(self.env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
        self._stack = contextlib.ExitStack()
        self.af: AirflowClient | None = None
        self.pgid: int | None = None
        self.marker: str | None = None

    def start(self) -> None:
        run_logged(["airflow", "db", "migrate"], self.env, "db-migrate.log")
        self.af = self._stack.enter_context(airflow_standalone(self.env, timeout_s=240))
        self.pgid, self.marker = self.af.pgid, self.af.marker
        for dag_id in ("routeplan_nightly", "routeplan_rollback"):
            self.af.wait_for_dag(dag_id, timeout=240)

    def stop(self) -> None:
        """Stop the server (raises if a process survived SIGKILL)."""
        self._stack.close()

    def generate(self, day: str, landing: Path, workers_out: Path, log_name: str) -> None:
        """``routeplan generate``'s sample logs for ``day`` (streams clicks, orders)."""
        args = {
            "--landing": landing,
            "--workers-out": workers_out,
            "--date": day,
            "--events": 20000,
            "--streams": "clicks,orders",
            "--seed": 7,
        }
        flags = [str(x) for pair in args.items() for x in pair]
        run_logged([*routeplan_cli(self.env), "generate", *flags], self.env, log_name)
        if not workers_out.is_file():
            pytest.fail(f"routeplan generate wrote no workers file {workers_out}")

    def report(self, day: str, stage: str) -> dict:
        """The report ``jobs/<stage>.py`` wrote for ``day`` (``reports/<day>/<stage>.json``)."""
        return json.loads((self.home / "reports" / day / f"{stage}.json").read_text())

    def publish_report(self, day: str) -> dict:
        """The publish job's report of ``day``: ``{"streams": [{"stream", "version", ...}]}``."""
        return self.report(day, "publish")

    def latest_version(self, stream: str) -> int:
        """The version ``routing/<stream>/LATEST`` points at."""
        latest = self.home / "routing" / stream / "LATEST"
        name = os.readlink(latest) if latest.is_symlink() else latest.read_text().strip()
        return int(os.path.basename(name).removeprefix("v").removesuffix(".json"))

    def table(self, stream: str, version: int) -> dict:
        return json.loads((self.home / "routing" / stream / f"v{version}.json").read_text())


_SHARED: dict[str, Any] = {}  # "server": the running NightlyAirflow; "error": why it did not start
FIXTURE = "nightly_airflow"


def _stop_shared() -> None:
    server = _SHARED.pop("server", None)
    if server is not None:
        server.stop()


@pytest.fixture
def nightly_airflow(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[NightlyAirflow]:
    """The ``airflow standalone`` the tests using this fixture share (started on first use).

    It is stopped as soon as no test left in the session uses it (so it does not run beside the
    rest of the suite), or at the end of the session. Not a session-scoped fixture: a fixture
    imported into several test modules is a separate fixture in each.
    """
    if "error" in _SHARED:
        pytest.fail(f"the shared Airflow server did not start: {_SHARED['error']}")
    if "server" not in _SHARED:
        server = NightlyAirflow(tmp_path_factory.mktemp("nightly_airflow"))
        try:
            server.start()
        except BaseException as exc:
            _SHARED["error"] = f"{type(exc).__name__}: {str(exc)[:2000]}"
            server.stop()
            raise
        _SHARED["server"] = server
        request.config.add_cleanup(_stop_shared)
    yield _SHARED["server"]
    items = request.session.items
    later = items[items.index(request.node) + 1 :] if request.node in items else []
    if not any(FIXTURE in getattr(item, "fixturenames", ()) for item in later):
        server = _SHARED["server"]
        _stop_shared()
        # nothing the server started outlives it: its process group, nor what left the group
        assert process_group_members(server.pgid) == []
        assert server_processes(server.pgid, server.marker) == []
