"""``make cluster-demo`` on small data: PostgreSQL, MinIO, a Spark standalone master with two
workers and Airflow's four components, all started by scripts/cluster.py; routeplan_nightly
triggered through the REST API, then checked from the outside — the Spark master's and workers'
JSON, the object store, the routing store through ``Router.open("s3://…")`` and the HTTP API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import cluster as topology  # noqa: E402  (scripts/cluster.py)

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]
DAY = date(2026, 11, 20)
TABLES = (
    "bronze/stream_events",
    "bronze/quarantine",
    "silver/key_group_load",
    "gold/plans",
    "gold/routing_tables",
)
COUNT_ROWS = """
import json, sys
from jobs.common import spark_session
spark = spark_session("count")
home = sys.argv[1]
print(json.dumps({t: spark.read.format("delta").load(f"{home}/warehouse/{t}").count()
                  for t in sys.argv[2:]}))
"""


@pytest.fixture(scope="module")
def cluster():
    # not under pytest's private temporary folder: PostgreSQL runs as the user postgres when
    # the tests run as root, and must reach its data directory
    root = Path(tempfile.mkdtemp(prefix="routeplan-cluster-"))
    root.chmod(0o755)
    try:
        with topology.Cluster(topology.Paths(root), topology.Ports.free()) as running:
            yield running
    finally:
        shutil.rmtree(root, ignore_errors=True)


def s3(cluster):
    """The object store as the library sees it (fsspec), with the cluster's credentials."""
    from routeplan import storage

    with topology.patched_environ(cluster.env()):
        return storage.filesystem(topology.library_home())[0]


def row_counts(cluster) -> dict[str, int]:
    """Rows of each Delta table in the object store, read by a local Spark session over S3A."""
    env = {**os.environ, **cluster.env(), "ROUTEPLAN_SPARK_MASTER": "local[1]"}
    done = subprocess.run(
        [sys.executable, "-c", COUNT_ROWS, topology.HOME, *TABLES],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def publish_report(cluster) -> dict:
    from routeplan import settings, storage

    with topology.patched_environ(cluster.env()):
        reports = settings.reports_root(topology.library_home())
        return json.loads(storage.read_bytes(storage.join(reports, str(DAY), "publish.json")))


def ui_json(port: int, attempts: int = 5) -> dict:
    """A Spark UI's ``/json/``; its Jetty on a loaded 2-core machine now and then closes a
    connection without an answer: asked again, a second apart."""
    for attempt in range(attempts):
        try:
            return httpx.get(f"http://127.0.0.1:{port}/json/", timeout=10).json()
        except httpx.TransportError:
            if attempt == attempts - 1:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def test_nightly_on_the_cluster(cluster):
    cluster.routeplan("generate", "--date", str(DAY), "--events", "3000", "--malformed", "0.01")
    cluster.nightly(DAY)
    first = publish_report(cluster)
    assert {s["action"] for s in first["streams"]} == {"published"}

    # Spark: the jobs ran as applications of the standalone master, with an executor on each worker
    master = ui_json(cluster.ports.spark_master_ui)
    apps = {app["id"]: app["name"] for app in master["completedapps"]}
    assert {"routeplan-ingest", "routeplan-windows", "routeplan-publish"} <= set(apps.values())
    windows = {i for i, name in apps.items() if name == "routeplan-windows"}
    for n, port in enumerate(cluster.ports.spark_worker_ui, 1):
        worker = ui_json(port)
        ran = {e["appid"] for e in worker["finishedexecutors"]}
        assert windows & ran, f"worker {n} ran no executor of the windows job (its key-group UDF)"
        for app in windows & ran:  # its logs stay in the worker's work directory
            assert list((cluster.paths.worker_dir(n) / app).glob("*/stderr"))

    # the Delta tables are in the object store (listed through it) and nowhere on the local disk
    fs = s3(cluster)
    for table in TABLES:
        assert fs.ls(f"{topology.BUCKET}/home/warehouse/{table}/_delta_log"), table
    store = cluster.paths.object_store  # MinIO keeps its objects on its own disk, nothing else
    assert not [p for p in cluster.paths.root.rglob("_delta_log") if store not in p.parents]
    assert not Path(REPO, "s3a:").exists() and not Path(REPO, "s3:").exists()

    # producers read LATEST from the object store, directly and through the HTTP API
    from routeplan_client import Router

    routing = f"{topology.library_home()}/routing"
    api = cluster.airflow()  # routeplan's routes inside Airflow need a logged-in user
    with topology.patched_environ(cluster.env()):
        for outcome in first["streams"]:
            router = Router.open(routing, outcome["stream"])
            assert router.version == outcome["version"]
            served = api.get(f"/routeplan/streams/{outcome['stream']}/latest")
            assert served.status_code == 200, served.text
            assert served.json()["version"] == outcome["version"]
    api.close()
    anonymous = httpx.get(f"{api.base_url}/routeplan/streams/{outcome['stream']}/latest")
    assert anonymous.status_code == 401
    rows = row_counts(cluster)
    assert rows["bronze/stream_events"] > 0 and rows["bronze/quarantine"] > 0
    # a rerun of a night (no row, no version added) is tested on the local topology
    # (tests/test_e2e.py) and the store's conditional writes on MinIO (tests/test_store_object.py):
    # a second night on the cluster took as long as the first, for CI time it cannot spare
