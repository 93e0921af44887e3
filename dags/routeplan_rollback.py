"""routeplan_rollback: publish a new version of a stream's table that routes as an older one.

Triggered by hand (UI Trigger form or ``airflow dags trigger routeplan_rollback --conf``). The
Spark job restores the version from the JSON store or, when pruned there, from Delta
``gold.routing_tables``; ``announce`` then adds the stream's routing-table asset event. In an
incident without Airflow, ``routeplan rollback --stream S --version N --reason …`` does the same
on the JSON store (Delta records it at the next publish).

Like the nightly DAG's tasks, both retry twice (a rerun publishes nothing twice: a table LATEST
already routes as is left alone), stop after ``routeplan_tasks.TIMEOUTS`` and, failed for good,
log and post an alert (``routeplan_alerts``).

Its three Params have no default on purpose: the Trigger form shows them as required (red, its
Trigger button disabled) until the operator has named the stream, the version and the reason.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Param
from routeplan_tasks import ATTEMPT_RUN_ID, HOME, announce, spark_job, task_defaults

from routeplan.contracts.schemas import load_schema

# a stream name as schemas/name.schema.json has it (the rule of routeplan.model.names)
NAME = load_schema("name")

with DAG(
    dag_id="routeplan_rollback",
    description="Republish an older routing-table version of one stream as a new version",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args=task_defaults(),
    tags=["routeplan"],
    doc_md=__doc__,
    params={
        "stream": Param(
            type="string",
            minLength=NAME["minLength"],
            maxLength=NAME["maxLength"],
            pattern=NAME["pattern"],
            title="Stream",
            description="The stream whose routing table to roll back",
        ),
        "version": Param(
            type="integer",
            minimum=1,
            maximum=1_000_000_000,
            title="Version to restore",
            description="The version to restore (routeplan versions --stream S lists them)",
        ),
        "reason": Param(
            type="string",
            minLength=1,
            title="Reason",
            description="Why (kept in the new version)",
        ),
    },
) as dag:
    report = f"{HOME}/reports/rollbacks/{{{{ run_id | replace(':', '-') }}}}.json"
    rollback = spark_job(
        "rollback",
        [
            "--home",
            HOME,
            "--stream",
            "{{ params.stream }}",
            "--version",
            "{{ params.version }}",
            "--reason",
            "{{ params.reason }}",
            "--run-id",
            ATTEMPT_RUN_ID,
            "--report",
            report,
        ],
    )
    rollback >> announce(report)
