"""A Spark Connect server on this machine: one warm Spark for every task of the nightly runs.

    python scripts/spark_connect.py            # serve until Ctrl-C, on a free port it prints
    python scripts/spark_connect.py --port 15002

Each spark-submit task starts a JVM and a Spark session of its own (~10 s) and runs its queries
cold; a night is six of them. A Spark Connect server (Spark's own
``org.apache.spark.sql.connect.service.SparkConnectServer``, started with spark-submit as Spark's
``sbin/start-connect-server.sh`` does) keeps one session warm, and the tasks run the same jobs as
its clients (``ROUTEPLAN_SPARK_CONNECT_CONN``, ``plugins/routeplan_tasks.spark_job``). ``make
demo`` runs its nights on one (``scripts/demo.py``); the cluster keeps spark-submit.

The server gets what a spark-submit task gets: ``config/spark-defaults.conf`` (Delta Lake's
extension and catalog among them), the jars on its class path, the jobs' log4j settings and the
object store's S3A settings (``jobs.common.submit_conf``). Its Python workers (the windows job's
key-group UDF) run this interpreter with the checkout on their path. It is stopped by process
group when the ``server`` block ends.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from airflow_api import free_port, stop_process_group  # noqa: E402  (scripts/, beside this)

from jobs.common import spark_defaults_file, submit_conf  # noqa: E402
from routeplan import settings, storage  # noqa: E402

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
CONN_ID = "routeplan_spark_connect"  # the Airflow connection airflow_env names
READY_SECONDS = 180


def command(port: int) -> list[str]:
    """The spark-submit that starts the server on 127.0.0.1:``port``."""
    conf = {
        **submit_conf(),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
    }
    args = ["spark-submit", "--class", SERVER_CLASS, "--name", "routeplan-spark-connect"]
    args += ["--master", settings.current().spark_master]
    args += ["--properties-file", str(spark_defaults_file())]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


def airflow_env(port: int) -> dict[str, str]:
    """The environment that points Airflow's Spark tasks at the server on ``port`` (and a
    plain PySpark client: ``SPARK_REMOTE``, which ``jobs.common.spark_session`` follows too)."""
    conn = {"conn_type": "spark_connect", "host": "127.0.0.1", "port": port}
    return {
        f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(conn),
        "ROUTEPLAN_SPARK_CONNECT_CONN": CONN_ID,
        "SPARK_REMOTE": f"sc://127.0.0.1:{port}",
    }


@contextmanager
def server(log_path: Path, port: int | None = None) -> Iterator[int]:
    """A server for the block's duration, its output in ``log_path``; yields its port once it
    accepts connections. A server that exits or stays silent for ``READY_SECONDS`` raises an
    error quoting its log's end."""
    port = port or free_port()
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            command(port),
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with all its children
        )
    try:
        wait_ready(proc, port, log_path)
        yield port
    finally:
        stop_process_group(proc)  # SIGTERM to its group, SIGKILL after 30 s


def wait_ready(proc: subprocess.Popen, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-2000:]
    state = f"exited ({proc.returncode})" if proc.poll() is not None else "not listening"
    raise RuntimeError(f"Spark Connect server {state} on port {port}; {log_path} ends:\n{tail}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=None, help="default: a free one")
    home = settings.home()
    logs = REPO / "var" if storage.is_remote(home) else Path(home)
    parser.add_argument("--log", type=Path, default=logs / "logs" / "spark-connect.log")
    args = parser.parse_args()
    # Ctrl-C or SIGTERM ends the block, which stops the server (also where the shell that
    # started this in the background left SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with server(args.log, args.port) as port:
        print(f"Spark Connect on sc://127.0.0.1:{port} (log: {args.log}); for Airflow:")
        for key, value in airflow_env(port).items():
            print(f"  export {key}='{value}'", flush=True)
        with suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
