"""DAG integrity: routeplan_nightly wires five Spark jobs then the asset announcement in order,
renders its args; routeplan_rollback runs the rollback job then announces."""

import copy
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    return bag


@pytest.fixture(scope="module")
def dag(bag):
    return bag.get_dag("routeplan_nightly")


def assert_spark_jobs_then_announce(dag, jobs: list[str]) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from routeplan_tasks import ROUTING_TABLES

    order = [*jobs, "announce"]
    assert [t.task_id for t in dag.topological_sort()] == order
    for upstream, downstream in zip(order, order[1:], strict=False):
        assert dag.get_task(downstream).upstream_task_ids == {upstream}
    for task in dag.tasks:
        if task.task_id == "announce":
            assert list(task.outlets) == [ROUTING_TABLES]
            continue
        assert isinstance(task, SparkSubmitOperator)
        assert Path(task.application).is_file()
        assert Path(task.application).name == f"{task.task_id}.py"


def test_five_spark_jobs_in_order_then_announce(dag):
    assert_spark_jobs_then_announce(dag, ["ingest", "windows", "plan", "validate", "publish"])
    assert dag.params["keep_versions"] is None


def test_rollback_dag_needs_stream_version_and_reason(bag):
    from airflow.sdk.definitions.param import ParamValidationError

    rollback = bag.get_dag("routeplan_rollback")
    assert_spark_jobs_then_announce(rollback, ["rollback"])
    assert rollback.schedule is None or rollback.timetable.summary in ("None", None)

    def resolved(conf: dict) -> dict:
        params = copy.deepcopy(rollback.params)
        params.update(conf)
        return params.validate()

    good = {"stream": "clicks", "version": 2, "reason": "bad plan"}
    assert resolved(good) == good
    for bad in ({"version": 0}, {"reason": ""}, {"stream": "a b"}):
        with pytest.raises(ParamValidationError):
            resolved({**good, **bad})
    with pytest.raises(ParamValidationError):
        resolved({})  # no defaults: the form asks for all three


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
