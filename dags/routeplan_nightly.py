"""routeplan_nightly: ingest → windows → plan → validate → publish, one Spark job per task.

Nightly for the previous UTC day, or on demand from the UI's Trigger form (Params below).
Every task is a SparkSubmitOperator: the same jobs run on ``local[2]`` here and on a cluster by
changing the connection (``$ROUTEPLAN_SPARK_CONN``, default ``spark_local``).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, CronDataIntervalTimetable, Param

from routeplan.strategies import strategy_names, strategy_parameters

REPO = Path(__file__).resolve().parents[1]
JOBS = Path(os.environ.get("ROUTEPLAN_JOBS_DIR", REPO / "jobs"))
HOME = os.environ.get("ROUTEPLAN_HOME", str(REPO / "var"))
JARS = Path(os.environ.get("ROUTEPLAN_JARS", REPO / ".jars"))
SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={JOBS / 'log4j2.properties'}",
}
# strategy parameters offered in the Trigger form; each strategy gets those it accepts
STRATEGY_PARAMS = (
    "epsilon",
    "virtual_workers_per_worker",
    "theta_busy",
    "theta_idle",
    "consumer_capacity",
    "max_migrations",
    "migration_cost",
    "solver",
    "score_factor",
    "max_load_distance",
)


def interval_day(params: dict, data_interval_start, dag_run) -> str:
    """The day to process: the ``date`` Param, else the run's data interval, else yesterday."""
    if params.get("date"):
        return params["date"]
    if data_interval_start is not None:
        return data_interval_start.date().isoformat()
    return (dag_run.run_after - timedelta(days=1)).date().isoformat()


def strategy_params(params: dict) -> str:
    """JSON of the form's strategy parameters that the chosen strategy accepts."""
    accepted = strategy_parameters(params["strategy"])
    return json.dumps({k: params[k] for k in STRATEGY_PARAMS if k in accepted})


with DAG(
    dag_id="routeplan_nightly",
    description="Plan and publish routing tables from yesterday's stream logs",
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    user_defined_macros={
        "interval_day": interval_day,
        "strategy_params": strategy_params,
    },
    render_template_as_native_obj=False,
    tags=["routeplan"],
    params={
        "date": Param(
            None,
            type=["null", "string"],
            format="date",
            description="Day (UTC) to process; empty: the run's data interval",
        ),
        "streams": Param(
            [],
            type="array",
            items={"type": "string"},
            description="Streams to plan; empty: every stream in the logs",
        ),
        "strategy": Param("cg", enum=strategy_names(), description="Planning strategy"),
        "window_minutes": Param(
            60,
            type="integer",
            minimum=1,
            maximum=1440,
            description="Tumbling window size (must divide a day)",
        ),
        "landing_path": Param(
            "", type="string", description="Landing directory; empty: $ROUTEPLAN_HOME/landing"
        ),
        "workers_path": Param(
            "",
            type="string",
            description="Workers file; empty: $ROUTEPLAN_HOME/config/workers.json",
        ),
        "planning_window": Param(
            "peak",
            enum=["peak", "interval"],
            description="Plan for the peak window or the whole interval",
        ),
        "load_metric": Param("messages", enum=["messages", "bytes", "cost_ms"]),
        "epsilon": Param(0.01, type="number", minimum=0, description="PoRC ε (cg)"),
        "virtual_workers_per_worker": Param(10, type="integer", minimum=1, description="cg α"),
        "theta_busy": Param(1.03, type="number", minimum=1, description="cg busy threshold"),
        "theta_idle": Param(0.97, type="number", maximum=1, description="cg idle threshold"),
        "consumer_capacity": Param(
            None,
            type=["null", "number"],
            exclusiveMinimum=0,
            description="Consumer capacity C̄ in bytes/s for the partition strategies (mwf, bfd, "
            "…, paper 002); empty: the workers' capacity",
        ),
        "max_moves": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            description="Most key groups / hot keys a plan may move",
        ),
        "max_migrations": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            description="milp, flux, albic: most key groups moved per plan (paper 004 §5)",
        ),
        "migration_cost": Param(
            "moves",
            enum=["moves", "keys", "load"],
            description="milp, flux, albic: what a moved key group costs (keys: its state size)",
        ),
        "solver": Param("highs", enum=["highs", "cbc"], description="milp, albic: MILP solver"),
        "score_factor": Param(
            1.5, type="number", exclusiveMinimum=0, description="albic sF (§4.3.2)"
        ),
        "max_load_distance": Param(
            0.10, type="number", minimum=0, description="albic maxLD, share of the mean load"
        ),
        "imbalance_tolerance": Param(
            0.0,
            type="number",
            minimum=0,
            description="Allowed predicted imbalance above the logged one",
        ),
    },
) as dag:
    common = [
        "--home",
        HOME,
        "--interval-start",
        "{{ interval_day(params, data_interval_start, dag_run) }}",
        "--streams",
        "{{ params.streams | join(',') }}",
        "--run-id",
        "{{ run_id }}",
    ]
    workers = [
        "--workers-path",
        "{{ params.workers_path }}",  # empty: the job's default
    ]
    stage_args = {
        "ingest": ["--landing", "{{ params.landing_path }}"],
        "windows": ["--window-minutes", "{{ params.window_minutes }}", *workers],
        "plan": [
            "--strategy",
            "{{ params.strategy }}",
            "--planning-window",
            "{{ params.planning_window }}",
            "--load-metric",
            "{{ params.load_metric }}",
            "--params-json",
            "{{ strategy_params(params) }}",
            "--max-moves",
            "{{ params.max_moves }}",
            *workers,
        ],
        "validate": ["--imbalance-tolerance", "{{ params.imbalance_tolerance }}"],
        "publish": [],
    }
    previous = None
    for stage, extra in stage_args.items():
        task = SparkSubmitOperator(
            task_id=stage,
            application=str(JOBS / f"{stage}.py"),
            conn_id=os.environ.get("ROUTEPLAN_SPARK_CONN", "spark_local"),
            jars=",".join(sorted(str(p) for p in JARS.glob("*.jar"))),
            conf=SPARK_CONF,
            name=f"routeplan-{stage}",
            application_args=common + extra,
        )
        if previous is not None:
            previous >> task
        previous = task
