"""routeplan_nightly: ingest → windows → plan → validate → publish → announce.

Nightly for the previous UTC day, or on demand from the UI's Trigger form (Params below).
Every stage is a SparkSubmitOperator: the same jobs run on ``local[2]`` here and on a cluster by
changing the connection (``$ROUTEPLAN_SPARK_CONN``, default ``spark_local``). ``announce`` adds
an asset event per stream that got a new routing table (``routeplan_tasks.routing_table_asset``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from airflow.sdk import DAG, CronDataIntervalTimetable, Param
from routeplan_tasks import HOME, announce, spark_job

from routeplan.strategies import strategy_names, strategy_parameters

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
        "keep_versions": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            description="JSON routing-table versions kept per stream; empty: all (Delta "
            "gold.routing_tables keeps every version)",
        ),
    },
) as dag:
    day = "{{ interval_day(params, data_interval_start, dag_run) }}"
    common = [
        "--home",
        HOME,
        "--interval-start",
        day,
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
        "publish": ["--keep-versions", "{{ params.keep_versions }}"],
    }
    previous = None
    for stage, extra in stage_args.items():
        task = spark_job(stage, common + extra)
        if previous is not None:
            previous >> task
        previous = task
    previous >> announce(f"{HOME}/reports/{day}/publish.json")
