"""Shared fixtures: a Zipf load snapshot, one Spark + Delta session for the whole run (the jobs'
``spark_session``, so tests run with the jobs' settings), one Spark Connect server for the tests
whose tasks run as its clients, generators of hostile stream names."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from routeplan.model.hashing import key_groups
from routeplan.model.loads import LoadSnapshot

# the repo's Airflow folders, as `make` exports them, also for a bare `pytest`
REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(REPO / "dags"))
os.environ.setdefault("AIRFLOW__CORE__PLUGINS_FOLDER", str(REPO / "plugins"))


def zipf_snapshot(
    stream: str = "s",
    keys: int = 20_000,
    messages: int = 500_000,
    exponent: float = 1.1,
    num_key_groups: int = 1024,
    hot: int = 50,
    seed: int = 0,
) -> LoadSnapshot:
    """Aggregated loads of a Zipf stream, as the windows job would give them."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, keys + 1) ** exponent
    counts = rng.multinomial(messages, p / p.sum()).astype(float)
    names = [f"k{i}" for i in range(keys)]
    groups = key_groups(names, num_key_groups)
    top = np.argsort(-counts)[:hot]
    return LoadSnapshot(
        stream=stream,
        key_group_load=np.bincount(groups, weights=counts, minlength=num_key_groups),
        hot_key_load={names[i]: counts[i] for i in top},
        distinct_keys=np.bincount(groups, weights=counts > 0, minlength=num_key_groups),
    )


@pytest.fixture
def skewed() -> LoadSnapshot:
    return zipf_snapshot()


@pytest.fixture(scope="session")
def spark():
    """One local Spark session with Delta Lake for the whole test run."""
    import logging

    from jobs.common import spark_session

    # py4j logs at INFO while it is garbage-collected after pytest closed its streams
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = spark_session("tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """One real Kafka 4 broker (KRaft) for the run: tests/kafka_broker.py starts it from the
    Maven artefacts ``make clients`` fetched, on first use; each test makes its own topics."""
    from kafka_broker import KafkaBroker

    kafka = KafkaBroker(tmp_path_factory.mktemp("kafka")).start()
    yield kafka
    kafka.stop()


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory) -> dict[str, str]:
    """One Spark Connect server for the whole run (``scripts/spark_connect.py``), started on
    first use: the environment that makes Airflow's Spark tasks its clients."""
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    import spark_connect as connect

    log = tmp_path_factory.mktemp("spark-connect") / "server.log"
    with connect.server(log) as port:
        yield connect.airflow_env(port)


def stream_names():
    """Any string, biased towards the edges of the name rule (``routeplan.model.names``): dot names,
    separators, NUL, newlines, flags, non-ASCII, and lengths around 128 and 255."""
    from hypothesis import strategies as st

    edges = st.sampled_from(
        [
            "", ".", "..", "...", "../x", "a/b", "a\\b", "/etc", "-x", ".hidden", "x\n", "a\0b",
            "é", " ", "a b", "x" * 128, "x" * 129, "y" * 255, "z" * 256, "z" * 300, "v1.json",
            "LATEST", ".lock", "s", "--",
        ]
    )  # fmt: skip
    valid = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}", fullmatch=True)
    return st.one_of(edges, valid, st.text(), st.text(alphabet="./\\-_aZ9 \0\n", max_size=12))


from object_store import object_store  # noqa: E402, F401 - a MinIO server for S3 tests
