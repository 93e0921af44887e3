"""DAG integrity: routeplan_nightly parses, wires five Spark jobs in order, renders its args."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag.get_dag("routeplan_nightly")


def test_five_spark_jobs_in_order(dag):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    order = ["ingest", "windows", "plan", "validate", "publish"]
    assert [t.task_id for t in dag.topological_sort()] == order
    for upstream, downstream in zip(order, order[1:], strict=False):
        assert dag.get_task(downstream).upstream_task_ids == {upstream}
    for task in dag.tasks:
        assert isinstance(task, SparkSubmitOperator)
        assert Path(task.application).is_file()
        assert Path(task.application).name == f"{task.task_id}.py"


def test_params_offer_every_registered_strategy(dag):
    from routeplan.strategies import strategy_names

    assert dag.params.get_param("strategy").schema["enum"] == strategy_names()
    assert dag.params["strategy"] == "cg"
    assert dag.params["window_minutes"] == 60
    assert dag.schedule is not None or dag.timetable.summary


def test_interval_day_prefers_param_then_interval_then_yesterday(dag):
    from datetime import UTC, datetime
    from types import SimpleNamespace

    day = dag.user_defined_macros["interval_day"]
    run = SimpleNamespace(run_after=datetime(2026, 11, 21, 3, tzinfo=UTC))
    assert day({"date": "2026-10-01"}, None, run) == "2026-10-01"
    assert day({"date": None}, datetime(2026, 11, 19, tzinfo=UTC), run) == "2026-11-19"
    assert day({"date": None}, None, run) == "2026-11-20"


def test_strategy_params_pass_only_what_the_strategy_accepts(dag):
    import json

    render = dag.user_defined_macros["strategy_params"]
    params = {
        "strategy": "cg",
        "epsilon": 0.05,
        "virtual_workers_per_worker": 4,
        "theta_busy": 1.1,
        "theta_idle": 0.9,
    }
    assert json.loads(render(params)) == {k: v for k, v in params.items() if k != "strategy"}
    assert json.loads(render({**params, "strategy": "kg"})) == {}


def test_consumer_capacity_goes_to_partition_strategies_only(dag):
    import json

    render = dag.user_defined_macros["strategy_params"]
    params = {
        "strategy": "mwf",
        "epsilon": 0.05,
        "virtual_workers_per_worker": 4,
        "theta_busy": 1.1,
        "theta_idle": 0.9,
        "consumer_capacity": 2_000_000,
    }
    assert json.loads(render(params)) == {"consumer_capacity": 2_000_000}
    assert "consumer_capacity" not in json.loads(render({**params, "strategy": "cg"}))
    assert dag.params["consumer_capacity"] is None
