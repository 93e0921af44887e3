"""What routeplan's DAGs share: Spark job tasks and the routing-table asset events.

Downstream DAGs run on a new routing table by scheduling on its asset::

    from routeplan_tasks import routing_table_asset
    with DAG("reload_router", schedule=[routing_table_asset("clicks")]): ...

(or on ``ROUTING_TABLES``, the alias every publish and rollback adds its events through). Each
event's ``extra`` holds ``stream``, ``version``, ``action`` and ``reason``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, AssetAlias, task

from jobs.common import submit_conf
from routeplan import settings, storage

REPO = Path(__file__).resolve().parents[1]
JOBS = Path(os.environ.get("ROUTEPLAN_JOBS_DIR", REPO / "jobs"))
HOME = settings.home(default=REPO / "var")  # a local folder or a URI (routeplan.storage)
ROUTING_TABLES = AssetAlias("routeplan-routing-tables")
ANNOUNCED = ("published", "rolled_back")


def spark_job(stage: str, application_args: list[str]) -> SparkSubmitOperator:
    """The task running ``jobs/<stage>.py`` with spark-submit (``$ROUTEPLAN_SPARK_CONN``).

    On a cluster the executors import routeplan (the windows job's key-group UDF) from the zip
    ``$ROUTEPLAN_PY_FILES`` names (``make setup`` builds ``dist/routeplan.zip``), shipped with the
    application as spark-submit's ``--py-files``."""
    return SparkSubmitOperator(
        task_id=stage,
        application=str(JOBS / f"{stage}.py"),
        conn_id=os.environ.get("ROUTEPLAN_SPARK_CONN", "spark_local"),
        conf=submit_conf(JOBS),
        name=f"routeplan-{stage}",
        py_files=os.environ.get("ROUTEPLAN_PY_FILES") or None,
        application_args=application_args,
    )


def routing_table_asset(stream: str) -> Asset:
    """The asset updated whenever ``stream`` gets a new routing-table version."""
    return Asset(f"x-routeplan://routing/{stream}")


@task
def check_policies(*, params=None) -> dict:
    """The run's first task: the planning policies file, and this run's streams and strategy
    against it, checked before any Spark job starts — a mistake fails here with one line naming
    the file, the stream and the field (``routeplan.planning.policy``)."""
    from airflow.sdk.exceptions import AirflowFailException

    from routeplan.errors import InputError
    from routeplan.planning.policy import load_policies, policy_from_overrides

    given = params.get("policies_path")
    path = given or settings.policies_file(HOME)
    if not storage.is_file(path):
        if given:
            raise AirflowFailException(f"policies_path {path}: no such file")
        print(f"no planning policies at {path}: every stream is planned with cg (or strategy)")
        return {}
    try:
        policies = load_policies(path)
        streams = list(params.get("streams") or ())
        if streams:
            policies.check_streams(streams)
        chosen = {s: policies.for_stream(s) for s in streams or policies.streams}
        if params.get("strategy"):
            chosen = {
                s: policy_from_overrides(p, strategy=params["strategy"], where="the Trigger form")
                for s, p in chosen.items()
            }
    except InputError as err:  # PolicyError names the file, the stream and the field
        raise AirflowFailException(str(err)) from None
    summary = {s: f"{p.kind}: {p.strategy}" for s, p in chosen.items()}
    print(f"planning policies {path}: {summary}")
    return summary


@task(outlets=[ROUTING_TABLES])
def announce(report_path: str, *, outlet_events=None) -> list[dict]:
    """One asset event per stream the job's report (a path or URI) says got a new version."""
    report = json.loads(storage.read_bytes(report_path))
    announced = []
    for outcome in report["streams"]:
        if outcome["action"] not in ANNOUNCED:
            continue
        extra = {k: outcome[k] for k in ("stream", "version", "action", "reason")}
        outlet_events[ROUTING_TABLES].add(routing_table_asset(outcome["stream"]), extra=extra)
        announced.append(extra)
    print(f"asset events: {announced or 'none (no stream got a new version)'}")
    return announced
