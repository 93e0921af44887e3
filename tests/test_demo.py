"""scripts/demo.py's choice of Spark for the nights' tasks: its own Spark Connect server only for
a local run that names none (the server itself: conftest's ``spark_connect``, test_e2e)."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import demo  # noqa: E402  (scripts/ is not a package)


@pytest.fixture
def no_server(monkeypatch):
    """Fails the test if the demo would start a server."""

    def refuse(*args, **kwargs):
        raise AssertionError("the demo started a Spark Connect server")

    monkeypatch.setattr(demo.spark_connect, "server", refuse)
    for name in ("ROUTEPLAN_SPARK_CONN", "ROUTEPLAN_SPARK_CONNECT_CONN"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("spark", "variable", "value"),
    [
        ("submit", None, None),  # a spark-submit per task, asked for
        ("connect", "ROUTEPLAN_SPARK_CONN", "spark_cluster"),  # your cluster, as it is
        ("connect", "ROUTEPLAN_SPARK_CONNECT_CONN", "my_connect"),  # your server, as it is
    ],
)
def test_the_tasks_keep_the_spark_they_were_given(no_server, tmp_path, spark, variable, value):
    if variable:
        no_server.setenv(variable, value)
    with demo.spark_for_tasks(spark, str(tmp_path)) as env:
        assert "AIRFLOW_CONN_ROUTEPLAN_SPARK_CONNECT" not in env
        assert env.get("ROUTEPLAN_SPARK_CONNECT_CONN") == (
            value if variable == "ROUTEPLAN_SPARK_CONNECT_CONN" else None
        )


def test_a_local_run_gets_a_server_its_tasks_are_pointed_at(no_server, tmp_path):
    started = []

    class Server:
        def __init__(self, log_path):
            started.append(log_path)

        def __enter__(self):
            return 15002

        def __exit__(self, *exc):
            return False

    no_server.setattr(demo.spark_connect, "server", Server)
    with demo.spark_for_tasks("connect", str(tmp_path)) as env:
        assert env["ROUTEPLAN_SPARK_CONNECT_CONN"] == demo.spark_connect.CONN_ID
        assert '"port": 15002' in env["AIRFLOW_CONN_ROUTEPLAN_SPARK_CONNECT"]
    assert started == [tmp_path / "logs" / "spark-connect.log"]
