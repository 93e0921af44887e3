"""A real S3-compatible object store for tests: MinIO (``make minio`` builds it from its Go module
into ``.tools/bin/minio``) on a free loopback port, its data in a temporary folder, stopped by
its process group.

    def test_x(object_store):          # the fixture (registered in conftest.py)
        object_store.env               # AWS_* variables for the library (fsspec) and Spark (S3A)
        object_store.uri("home")       # "s3://<bucket>/home"
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from airflow_api import free_port  # noqa: E402  (scripts/ is not a package)

MINIO = Path(os.environ.get("ROUTEPLAN_MINIO", REPO / ".tools" / "bin" / "minio"))
USER, PASSWORD = "routeplan-test", "routeplan-test-secret"


@dataclass(frozen=True)
class ObjectStore:
    endpoint: str  # http://127.0.0.1:<port>
    bucket: str
    env: dict[str, str]  # AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_REGION

    def uri(self, *parts: str) -> str:
        """``s3://<bucket>/<parts…>``."""
        return "/".join([f"s3://{self.bucket}", *parts])


@pytest.fixture(scope="session")
def object_store(tmp_path_factory) -> Iterator[ObjectStore]:
    """One MinIO server for the test session, with a bucket; the AWS variables set in
    ``os.environ`` while it runs (the library and Spark read them from there)."""
    if not MINIO.is_file():
        pytest.fail(f"no MinIO server at {MINIO}: run `make minio` (it builds it with Go)")
    data = tmp_path_factory.mktemp("minio")
    port, console = free_port(), free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = (data.parent / "minio.log").open("w")
    proc = subprocess.Popen(
        [str(MINIO), "server", str(data), "--address", f"127.0.0.1:{port}"]
        + ["--console-address", f"127.0.0.1:{console}", "--quiet"],
        env={**os.environ, "MINIO_ROOT_USER": USER, "MINIO_ROOT_PASSWORD": PASSWORD},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    env = {
        "AWS_ACCESS_KEY_ID": USER,
        "AWS_SECRET_ACCESS_KEY": PASSWORD,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
    }
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        _wait_ready(endpoint, proc)
        store = ObjectStore(endpoint, f"test-{uuid.uuid4().hex[:8]}", env)
        from routeplan import storage

        storage.filesystem(store.uri())[0].mkdir(store.bucket)
        yield store
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _wait_ready(endpoint: str, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MinIO exited ({proc.returncode}) before it was ready")
        try:
            with urllib.request.urlopen(f"{endpoint}/minio/health/ready", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"MinIO not ready on {endpoint} after {timeout_s:.0f}s")
