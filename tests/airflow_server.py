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

The REST client and the process-group helpers live in ``scripts/airflow_api.py`` (shared with
``make cluster-demo``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from airflow_api import (  # noqa: E402  (scripts/ is not a package)
    HEALTHY,
    MARKER_VAR,
    AirflowClient,
    AirflowServerError,
    free_port,
    process_group_members,
    server_processes,
    stop_process_group,
    tail,
)

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
    # as scripts/airflow-standalone: SQLite's write lock waited for 30 s, not its default 5 s
    env.setdefault(
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
        f"sqlite:///{airflow_home.resolve()}/airflow.db?timeout=30",
    )
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
                f"log {client.log_path}:\n{tail(client.log_path)}"
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
                f"log {client.log_path}:\n{tail(client.log_path)}"
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

    def __init__(self, home: Path, spark: Mapping[str, str] | None = None):
        self.home = home
        self.env = {**makefile_env(home), **(spark or {})}  # e.g. a Spark Connect server's
        # an admin and a viewer (who may read but not trigger: the Routing page's Roll back)
        self.env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] = "admin:admin,viewer:viewer"
        Path(self.env["AIRFLOW_HOME"]).mkdir(parents=True, exist_ok=True)
        self._stack = contextlib.ExitStack()
        self.af: AirflowClient | None = None
        self.pgid: int | None = None
        self.marker: str | None = None

    def start(self) -> None:
        run_logged(["airflow", "db", "migrate"], self.env, "db-migrate.log")
        self.af = self._stack.enter_context(airflow_standalone(self.env, timeout_s=240))
        self.pgid, self.marker = self.af.pgid, self.af.marker
        for dag_id in ("routeplan_nightly", "routeplan_rollback", "routeplan_maintenance"):
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
        server = NightlyAirflow(  # its Spark tasks: clients of the run's Spark Connect server
            tmp_path_factory.mktemp("nightly_airflow"), request.getfixturevalue("spark_connect")
        )
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
