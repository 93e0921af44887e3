"""DAG integrity: routeplan_nightly checks the policies and the landing files, wires six Spark
jobs then the asset announcement in order, renders its args; routeplan_rollback runs the rollback
job then announces; every task has its timeout, retries and failure alert, the nightly run its
deadline alert and timeout."""

import copy
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow
REPO = Path(__file__).resolve().parents[1]
PYTHON_TASKS = ("check_policies", "check_landing", "guard_alerts", "announce")  # not spark-submit


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
        if task.task_id in PYTHON_TASKS:  # the checks before Spark
            continue
        assert isinstance(task, SparkSubmitOperator)
        assert Path(task.application).is_file()
        assert Path(task.application).name == f"{task.task_id}.py"


def test_policies_and_landing_checked_then_seven_spark_jobs_in_order_then_announce(dag):
    assert_spark_jobs_then_announce(
        dag,
        [
            "check_policies",
            "check_landing",
            "ingest",
            "windows",
            "outcomes",
            "guard",
            "guard_alerts",
            "plan",
            "validate",
            "publish",
        ],
    )
    assert dag.params["keep_versions"] is None


def test_every_form_field_has_a_section_a_title_and_a_description(dag):
    for name in dag.params:
        param = dag.params.get_param(name)
        assert param.description, name
        assert param.schema.get("section") and param.schema.get("title"), name
    # the form shows a section's fields together, each strategy family in its own section
    order = [dag.params.get_param(n).schema["section"] for n in dag.params]
    runs = [s for i, s in enumerate(order) if i == 0 or s != order[i - 1]]
    assert len(runs) == len(set(runs))
    assert (
        dag.params.get_param("epsilon").schema["section"]
        != (dag.params.get_param("solver").schema["section"])
    )


def test_the_strategy_dropdown_says_each_strategys_name_and_paper(dag):
    from routeplan.planning.catalog import label
    from routeplan.planning.registry import strategy_names

    schema = ui_params(dag)["strategy"]["schema"]  # as the Trigger form receives it
    assert schema["values_display"] == {name: label(name) for name in strategy_names()}
    assert schema["values_display"]["cg"] == "cg — Consistent Grouping (paper 000)"
    assert schema["values_display"]["mwf"] == "mwf — Modified Worst Fit (paper 002)"


def test_strategy_parameters_are_optional_each_in_its_strategys_section(dag):
    import json

    from routeplan.planning.catalog import label

    strategy_params = dag.user_defined_macros["strategy_params"]
    names = ("epsilon", "virtual_workers_per_worker", "theta_busy", "theta_idle")
    sections = {
        "cg": names,
        "chbl": ("tokens_per_worker",),
        "milp": ("solver", "max_load_distance"),
        "albic": ("score_factor",),
    }
    for strategy, params in sections.items():
        for name in params:
            param = dag.params.get_param(name)
            assert param.schema["section"].startswith(label(strategy)), name
            assert dag.params[name] is None, name  # unset: the policy's value
            assert "null" in param.schema["type"] and "empty: the policy's value" in (
                param.description
            )
    # the form submitted as shown with a strategy sends none of them: the policy's stay
    for strategy in ("cg", "chbl", "milp", "albic", "mwf"):
        defaults = {name: dag.params[name] for name in dag.params}
        assert json.loads(strategy_params({**defaults, "strategy": strategy})) == {}


def test_every_strategy_parameter_is_in_the_form_or_set_by_policy_only(dag):
    """A registered strategy's parameter is offered in the Trigger form (in its strategy's
    section) or named, with why, as one the policy file alone sets: none is forgotten."""
    from routeplan_form import POLICY_ONLY_PARAMS, STRATEGY_PARAMS

    from routeplan.planning.registry import strategy_names, strategy_parameters

    accepted = {p for name in strategy_names() for p in strategy_parameters(name)}
    assert accepted - set(STRATEGY_PARAMS) - set(POLICY_ONLY_PARAMS) == set()
    assert set(STRATEGY_PARAMS) | set(POLICY_ONLY_PARAMS) <= accepted  # no stale name
    assert not set(STRATEGY_PARAMS) & set(POLICY_ONLY_PARAMS)
    assert set(STRATEGY_PARAMS) <= set(dag.params)


@pytest.mark.parametrize(
    ("strategy", "conf", "sent"),
    [
        ("pkg", {"d": 3, "fill": 0.9}, {"d": 3}),  # fill is dchoices'
        ("dchoices", {"fill": 0.9}, {"fill": 0.9}),
        ("ring", {"method": "doubling", "tau": 0.1, "max_rounds": 2}, None),
        ("flux", {"variant": "rounds"}, None),
        ("mwf", {"rack_weight": 0.0, "d": 4}, {"rack_weight": 0.0}),
    ],
)
def test_each_strategys_form_parameters_reach_it(dag, strategy, conf, sent):
    import json

    from routeplan.planning.registry import get_strategy

    strategy_params = dag.user_defined_macros["strategy_params"]
    defaults = {name: dag.params[name] for name in dag.params}
    got = json.loads(strategy_params({**defaults, **conf, "strategy": strategy}))
    assert got == (conf if sent is None else sent)
    get_strategy(strategy, **got)  # the strategy takes them


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
    from routeplan.planning.registry import strategy_names

    assert dag.params.get_param("strategy").schema["enum"] == [None, *strategy_names()]
    assert dag.params["strategy"] is None  # each stream's policy
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
    # chbl's ring tokens are its own Param, not cg's α
    chbl = {"strategy": "chbl", "epsilon": 0.05, "virtual_workers_per_worker": 4}
    assert json.loads(render({**chbl, "tokens_per_worker": 7})) == {
        "epsilon": 0.05,
        "tokens_per_worker": 7,
    }


def test_empty_strategy_params_are_left_to_the_strategy(dag):
    import json

    render = dag.user_defined_macros["strategy_params"]
    # max_load_distance empty: albic keeps its 0.10, milp its "no bound"
    assert "max_load_distance" not in json.loads(render({"strategy": "albic"}))
    assert "max_load_distance" not in json.loads(render({"strategy": "milp"}))
    assert (
        json.loads(render({"strategy": "albic", "max_load_distance": 0.2}))["max_load_distance"]
        == 0.2
    )
    assert dag.params["max_load_distance"] is None


def test_deprecated_budget_params_still_set_the_budget(dag):
    """A run conf with the old max_migrations / migration_cost still works: they travel in
    --params-json and the plan job's budget reader turns them into budget limits."""
    import json

    from routeplan.planning.budget import read_budget

    render = dag.user_defined_macros["strategy_params"]
    for strategy in ("cg", "milp", "kg"):
        sent = json.loads(
            render({"strategy": strategy, "max_migrations": 5, "migration_cost": "keys"})
        )
        assert {k: sent[k] for k in ("max_migrations", "migration_cost")} == {
            "max_migrations": 5,
            "migration_cost": "keys",
        }
        reading = read_budget(params=sent)
        params, budget, notes = reading.params, reading.budget, reading.notes
        assert (budget.max_moves, budget.migration_cost_unit) == (5, "distinct_keys")
        assert "max_migrations" not in params and "migration_cost" not in params
        assert len(notes) == 3  # the two parameters, and the unit's old value keys
    # unset (their default): nothing is sent
    assert (
        json.loads(render({"strategy": "cg", "max_migrations": None, "migration_cost": None})) == {}
    )
    for old, new in (("max_migrations", "max_moves"), ("migration_cost", "migration_cost_unit")):
        assert dag.params[old] is None
        description = dag.params.get_param(old).description
        assert description.startswith(f"Deprecated: use {new}"), description


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


# --------------------------------------------------------------------------- Params and the form

# Params without a default: the Trigger form asks for them (and is not submittable before)
REQUIRED = {
    "routeplan_nightly": set(),
    "routeplan_rollback": {"stream", "version", "reason"},
    "routeplan_maintenance": set(),
}
NUMERIC = ("integer", "number")


def ui_params(dag) -> dict[str, dict]:
    """The Params as the UI's Trigger form receives them: the serialized DAG's ``dump()``s
    (``GET /api/v2/dags/{dag_id}/details`` → ``params``): ``{"value", "schema", ...}``."""
    from airflow.serialization.serialized_objects import DagSerialization

    serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    return {name: param.dump() for name, param in serialized.params.items()}


def types_of(schema: dict) -> list[str]:
    kind = schema.get("type")
    return [] if kind is None else [kind] if isinstance(kind, str) else list(kind)


def ui_flags_as_missing(param: dict) -> bool:
    """The form's rule (airflow/ui FlexibleForm): a field with a ``type`` that does not allow
    ``null`` is required, and a required field whose value is null or "" gets the red badge and
    disables Trigger."""
    kinds = types_of(param["schema"])
    return bool(kinds) and "null" not in kinds and param["value"] in (None, "")


@pytest.mark.parametrize("dag_id", sorted(REQUIRED))
def test_every_param_is_valid_at_its_default(bag, dag_id):
    """The Trigger form submits as shown: Airflow accepts every default, and the UI flags none."""
    import jsonschema
    from airflow.sdk.definitions.param import ParamValidationError

    dag = bag.get_dag(dag_id)
    form = ui_params(dag)
    assert set(form) == set(dag.params.keys())
    for name in dag.params:
        param = copy.deepcopy(dag.params.get_param(name))
        if name in REQUIRED[dag_id]:
            with pytest.raises(ParamValidationError):
                param.resolve()
            assert ui_flags_as_missing(form[name]), f"{name}: the form must ask for it"
            continue
        assert param.resolve() == form[name]["value"], name  # Airflow's own validation
        jsonschema.validate(  # what the UI validates against
            form[name]["value"], form[name]["schema"], format_checker=jsonschema.FormatChecker()
        )
        assert not ui_flags_as_missing(form[name]), f"{name}: the form would refuse its default"
        kinds = types_of(form[name]["schema"])
        if "string" in kinds:  # "" means "missing" to the form: empty must be null
            assert form[name]["value"] != "" and (form[name]["value"] or "null" in kinds), name
    if not REQUIRED[dag_id]:
        params = copy.deepcopy(dag.params)
        assert params.validate() == {k: form[k]["value"] for k in form}


@pytest.mark.parametrize("dag_id", sorted(REQUIRED))
def test_every_param_is_described_and_numbers_are_bounded(bag, dag_id):
    for name, param in ui_params(bag.get_dag(dag_id)).items():
        assert (param["description"] or "").strip(), f"{dag_id}.{name} has no description"
        assert param["schema"].get("title"), f"{dag_id}.{name} has no title"
        if set(types_of(param["schema"])) & set(NUMERIC):
            schema = param["schema"]
            assert "minimum" in schema or "exclusiveMinimum" in schema, f"{dag_id}.{name}"
            assert "maximum" in schema or "exclusiveMaximum" in schema, f"{dag_id}.{name}"


def test_budget_params_say_which_strategies_honour_them(dag):
    """The form names, from the registry, the strategies that honour each budget limit."""
    import re

    from routeplan.model.plan import BUDGET_LIMITS, MIGRATION_COST_UNITS
    from routeplan.planning.registry import get_strategy, strategy_names

    for limit in BUDGET_LIMITS:
        honouring = [n for n in strategy_names() if limit in type(get_strategy(n)).honours]
        description = dag.params.get_param(limit).description
        named = re.search(r"honoured by ([\w, ]+);", description)
        assert named, description
        assert named.group(1).split(", ") == honouring
        assert dag.params[limit] is None  # no limit by default
    assert "max_moves" in dag.doc_md and "honoured by" in dag.doc_md
    unit = dag.params.get_param("migration_cost_unit")
    assert unit.schema["enum"] == list(MIGRATION_COST_UNITS)
    assert dag.params["migration_cost_unit"] == "moves"


def test_nightly_doc_tells_what_unpause_on_trigger_does(dag):
    assert "Unpause" in dag.doc_md and "scheduled" in dag.doc_md
    assert "queued" in dag.doc_md  # unchecked: the run waits for the DAG to be unpaused


def run_context(dag, conf: dict | None = None, try_number: int = 1) -> dict:
    """What templates see in a run of ``dag`` with ``conf`` for the day 2026-11-20, in the task's
    try ``try_number``."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    params = copy.deepcopy(dag.params)
    params.update(conf or {})
    return {
        "params": params.validate(),
        "run_id": "manual__2026-11-21T00:00:00+00:00",
        "data_interval_start": datetime(2026, 11, 20, tzinfo=UTC),
        "dag_run": SimpleNamespace(run_after=datetime(2026, 11, 21, tzinfo=UTC)),
        "ti": SimpleNamespace(try_number=try_number),
    }


def rendered_args(dag, conf: dict | None = None, try_number: int = 1) -> dict[str, list[str]]:
    """Each Spark task's ``application_args`` as a run with ``conf`` renders them."""
    context, env = run_context(dag, conf, try_number), dag.get_template_env()
    return {
        t.task_id: t.render_template(t.application_args, context, env)
        for t in dag.tasks
        if t.task_id not in PYTHON_TASKS
    }


def parsed_args(stage: str, argv: list[str], monkeypatch):
    """What ``jobs/<stage>.py`` makes of ``argv``: its argparse namespace (no Spark started)."""
    import importlib

    job = importlib.import_module(f"jobs.{stage}")
    make_parser = job.run_parser

    class Parsed(Exception):
        pass

    def parser(*args, **kwargs):
        made = make_parser(*args, **kwargs)
        parse = made.parse_args

        def parse_and_stop(argv=None):
            raise Parsed(parse(argv))

        made.parse_args = parse_and_stop
        return made

    monkeypatch.setattr(job, "run_parser", parser)
    with pytest.raises(Parsed) as parsed:
        job.main(argv)
    return parsed.value.args[0]


def test_defaults_render_as_empty_arguments_that_the_jobs_read_as_their_defaults(dag, monkeypatch):
    args = rendered_args(dag)
    for stage, argv in args.items():
        assert not any("None" in a for a in argv), f"{stage}: {argv}"  # Jinja's str(None)
    ingest = parsed_args("ingest", args["ingest"], monkeypatch)
    assert ingest.landing == ""  # → <home>/landing
    assert (ingest.max_bad_files, ingest.max_quarantined_share) == (5, 0.1)
    assert ingest.streams == ""  # all streams
    windows = parsed_args("windows", args["windows"], monkeypatch)
    assert windows.workers_path == ""  # → <home>/config/workers.json
    assert windows.window_minutes == 60
    plan = parsed_args("plan", args["plan"], monkeypatch)
    assert (plan.workers_path, plan.strategy) == ("", "")  # the policy's
    assert (plan.policies, plan.planning_window, plan.load_metric) == ("", "", "")
    from jobs.plan import run_overrides

    overrides = run_overrides(plan)  # empty budget arguments: no limit, the unit moves
    assert overrides.budget.limits() == {} and overrides.budget.migration_cost_unit == "moves"
    assert (overrides.strategy, overrides.params, overrides.notes) == (None, {}, ())
    publish = parsed_args("publish", args["publish"], monkeypatch)
    assert publish.keep_versions is None


@pytest.mark.parametrize(
    "dag_id", ["routeplan_nightly", "routeplan_rollback", "routeplan_maintenance"]
)
def test_every_spark_task_names_its_attempt_in_its_run_id(bag, dag_id):
    """Issue 33, item 9: a retried or cleared task (a rerun of the night in the same DAG run)
    writes with another run id than its first try, so gold.publish_log's rows, one per stream and
    attempt, say which attempt wrote them."""
    dag = bag.get_dag(dag_id)
    run_id = "manual__2026-11-21T00:00:00+00:00"
    conf = (
        {"stream": "clicks", "version": 1, "reason": "r"} if dag_id == "routeplan_rollback" else {}
    )
    first, second = rendered_args(dag, conf), rendered_args(dag, conf, try_number=2)
    assert first and set(first) == set(second)
    for task, argv in first.items():
        assert argv[argv.index("--run-id") + 1] == run_id, task
        retried = second[task]
        assert retried[retried.index("--run-id") + 1] == f"{run_id}__try2", task


def test_form_values_reach_the_jobs(dag, monkeypatch):
    conf = {
        "date": "2026-10-01",
        "streams": ["clicks", "orders"],
        "landing_path": "/data/landing",
        "workers_path": "/data/workers.json",
        "max_bad_files": 0,
        "max_quarantined_share": 0.25,
        "max_moves": 0,
        "max_migrated_load_share": 0.2,
        "max_migration_cost": 1500.5,
        "migration_cost_unit": "distinct_keys",
        "keep_versions": 3,
        "strategy": "flux",  # honours all three budget limits
        "capacity_alpha": 0.25,
        "capacity_min_messages": 50,
        "capacity_busiest_windows": 6,
        "imbalance_allowance": 0.3,
    }
    args = rendered_args(dag, conf)
    ingest = parsed_args("ingest", args["ingest"], monkeypatch)
    assert (ingest.landing, ingest.max_bad_files, ingest.max_quarantined_share) == (
        "/data/landing",
        0,
        0.25,
    )
    assert (ingest.streams, str(ingest.interval_start)) == ("clicks,orders", "2026-10-01")
    plan = parsed_args("plan", args["plan"], monkeypatch)
    assert (plan.workers_path, plan.strategy) == ("/data/workers.json", "flux")
    from jobs.plan import run_overrides

    budget = run_overrides(plan).budget
    assert (budget.max_moves, budget.max_migrated_load_share) == (0, 0.2)
    assert (budget.max_migration_cost, budget.migration_cost_unit) == (1500.5, "distinct_keys")
    windows = parsed_args("windows", args["windows"], monkeypatch)
    assert windows.workers_path == "/data/workers.json"
    assert (windows.capacity_alpha, windows.capacity_min_messages) == (0.25, 50)
    assert windows.capacity_busiest_windows == 6
    assert parsed_args("publish", args["publish"], monkeypatch).keep_versions == 3
    assert parsed_args("validate", args["validate"], monkeypatch).imbalance_allowance == 0.3


def test_the_old_imbalance_tolerance_param_still_sets_the_allowance(dag, monkeypatch):
    old = rendered_args(dag, {"imbalance_tolerance": 0.05})
    assert parsed_args("validate", old["validate"], monkeypatch).imbalance_allowance == 0.05


@pytest.mark.parametrize(
    "bad",
    [
        {"max_bad_files": -1},
        {"max_quarantined_share": 1.5},
        {"max_moves": -1},
        {"max_migrated_load_share": 1.5},
        {"max_migration_cost": -1},
        {"migration_cost_unit": "keys"},  # the old value: only the deprecated Param takes it
        {"migration_cost": "bytes"},
        {"max_migrations": -1},
        {"tokens_per_worker": 0},
        {"streams": ["a b"]},
        {"window_minutes": 0},
    ],
)
def test_out_of_range_form_values_are_refused(dag, bad):
    from airflow.sdk.definitions.param import ParamValidationError

    params = copy.deepcopy(dag.params)
    with pytest.raises(ParamValidationError):
        params.update(bad)
        params.validate()


def test_budget_from_the_form_reaches_the_plan_job_and_unhonoured_limits_fail(dag, monkeypatch):
    """What the plan job makes of a run's conf before Spark starts: the budget Params (and the
    deprecated ones, in --params-json) become its Budget; a limit the strategy does not honour
    ends the run with a message naming it."""
    import warnings

    from jobs.plan import run_overrides

    def planned(conf: dict):
        with monkeypatch.context() as patched:  # one patch of the job's parser per call
            ns = parsed_args("plan", rendered_args(dag, conf)["plan"], patched)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return run_overrides(ns)

    ns = planned({"strategy": "flux", "max_moves": 4, "max_migration_cost": 9.5})
    assert (ns.budget.max_moves, ns.budget.max_migration_cost) == (4, 9.5)
    assert ns.budget.migration_cost_unit == "moves"
    old = planned({"strategy": "flux", "max_migrations": 7, "migration_cost": "keys"})
    assert (old.budget.max_moves, old.budget.migration_cost_unit) == (7, "distinct_keys")
    assert "max_migrations" not in old.params
    assert planned({"strategy": "kg"}).budget.limits() == {}  # the defaults set no limit
    with pytest.raises(SystemExit, match="kg.*max_moves=3"):
        planned({"strategy": "kg", "max_moves": 3})
    with pytest.raises(SystemExit, match="cg.*max_migration_cost"):
        planned({"strategy": "cg", "max_migration_cost": 10})


# --------------------------------------------------------------------------- operability


@pytest.mark.parametrize("dag_id", sorted(REQUIRED))
def test_every_task_has_a_timeout_an_alert_and_retries_unless_a_rerun_repeats_its_failure(
    bag, dag_id
):
    from datetime import timedelta

    from routeplan_alerts import RunAlert
    from routeplan_tasks import NOT_RETRIED, TIMEOUTS

    dag = bag.get_dag(dag_id)
    assert dag.doc_md and dag.doc_md.strip()
    for task in dag.tasks:
        assert task.execution_timeout == TIMEOUTS[task.task_id], task.task_id
        assert timedelta(0) < task.execution_timeout <= timedelta(hours=4), task.task_id
        # (by name: Airflow's plugin manager may have loaded plugins/ again since the DAG did)
        alerts = [c for c in task.on_failure_callback if type(c).__name__ == RunAlert.__name__]
        assert [type(c).__module__ for c in alerts] == [RunAlert.__module__], task.task_id
        if task.task_id in NOT_RETRIED:
            assert task.retries == 0, task.task_id
            continue
        assert task.retries >= 1, task.task_id
        assert task.retry_delay >= timedelta(minutes=1), task.task_id
        assert task.retry_exponential_backoff > 1, task.task_id  # 2, 4 … minutes
        assert task.retry_delay < task.max_retry_delay <= timedelta(hours=1), task.task_id
    assert {t.task_id for t in dag.tasks} - set(PYTHON_TASKS) - {"validate"} <= {
        t.task_id for t in dag.tasks if t.retries
    }


def test_reading_the_day_takes_longer_than_planning_on_it(dag):
    timeout = {t.task_id: t.execution_timeout for t in dag.tasks}
    assert min(timeout["ingest"], timeout["windows"]) > max(
        timeout[s] for s in ("plan", "validate", "publish")
    )
    assert dag.get_task("validate").retries == 0  # expectations fail again on the same data


def test_the_nightly_run_has_a_deadline_alert_and_a_timeout(dag):
    from datetime import timedelta

    from airflow.sdk import DeadlineReference, SyncCallback
    from airflow.serialization.serialized_objects import DagSerialization

    [deadline] = dag.deadline
    assert deadline.reference == DeadlineReference.DAGRUN_QUEUED_AT
    assert isinstance(deadline.callback, SyncCallback)
    assert deadline.callback.path == "routeplan_alerts.RunAlert"
    assert deadline.callback.kwargs == {"event": "deadline_missed"}
    # alert first, while the run still goes on; stop it later, before the next night's run
    assert timedelta(0) < deadline.interval < dag.dagrun_timeout < timedelta(hours=24)
    # the scheduler gets both from the serialized DAG
    serialized = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    assert serialized.dagrun_timeout == dag.dagrun_timeout
    assert DagSerialization.to_dict(dag)["dag"]["deadline"], "deadline not serialized"


def test_airflow_dags_test_runs_without_the_deadline(monkeypatch):
    """Airflow 3.3.2's ``dags test`` cannot end a run of a DAG with a deadline alert: the DAG
    parsed by that command has none (``make demo`` runs it)."""
    from datetime import timedelta

    from routeplan_alerts import deadline_alerts

    assert len(deadline_alerts(timedelta(hours=1))) == 1
    monkeypatch.setattr("sys.argv", ["airflow", "dags", "test", "routeplan_nightly"])
    assert deadline_alerts(timedelta(hours=1)) == []


@pytest.mark.parametrize("dag_id", sorted(REQUIRED))
def test_spark_tasks_submit_the_one_spark_settings_file(bag, dag_id):
    from jobs.common import DELTA_CONF, spark_defaults, spark_defaults_file

    for task in bag.get_dag(dag_id).tasks:
        if task.task_id in PYTHON_TASKS:
            continue
        assert task.properties_file == str(spark_defaults_file())
        assert not set(task.conf) & set(spark_defaults())  # one place for each setting
    assert spark_defaults().items() >= DELTA_CONF.items()


def test_task_timeouts_can_be_changed_by_environment():
    from datetime import timedelta

    from routeplan_tasks import TIMEOUT_MINUTES, task_timeouts

    from routeplan.errors import UsageError

    assert task_timeouts("") == {k: timedelta(minutes=m) for k, m in TIMEOUT_MINUTES.items()}
    changed = task_timeouts("ingest=240, windows=200")
    assert (changed["ingest"], changed["windows"]) == (timedelta(hours=4), timedelta(minutes=200))
    assert changed["plan"] == timedelta(minutes=TIMEOUT_MINUTES["plan"])
    for bad, named in (("ingset=240", "ingset"), ("ingest=0", "ingest"), ("ingest=2h", "2h")):
        with pytest.raises(UsageError, match=f"ROUTEPLAN_TASK_TIMEOUTS.*{named}"):
            task_timeouts(bad)


def test_check_landing_gets_ingests_day_and_fails_at_once_without_files(dag, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException
    from routeplan_tasks import check_landing

    task = dag.get_task("check_landing")
    context = run_context(dag, {"landing_path": str(tmp_path)})
    [day] = task.render_template(task.op_args, context, dag.get_template_env())
    ingest = rendered_args(dag, {"landing_path": str(tmp_path)})["ingest"]
    assert day == ingest[ingest.index("--interval-start") + 1] == "2026-11-20"

    count = check_landing.function  # the task's body, as the worker runs it
    params = {"landing_path": str(tmp_path)}
    with pytest.raises(AirflowFailException, match=f"no landing files for {day} under {tmp_path}"):
        count(day, params=params)  # no folder for the day
    folder = tmp_path / day
    folder.mkdir()
    (folder / "_SUCCESS").write_text("")  # ingest skips these too
    (tmp_path / "2026-11-21").mkdir()
    (tmp_path / "2026-11-21" / "next.jsonl").write_text('{"ts": 1, "key": "k"}\n')
    with pytest.raises(AirflowFailException, match="no landing files"):
        count(day, params=params)
    (folder / "clicks.jsonl.gz").write_bytes(b"")  # ingest's business to read, or quarantine
    (folder / "more" / "orders.csv").parent.mkdir()
    (folder / "more" / "orders.csv").write_text("ts,key\n1,k\n")
    assert count(day, params=params) == 2


def test_an_asset_events_extra_says_strategy_prediction_and_the_routing_page(tmp_path, monkeypatch):
    """announce's extra: the report's stream, version, action and reason, plus the version's
    strategy, predicted imbalance and (a rollback) restored version from its document, and a
    link to its page in the Routing UI; the report's figures when the store has no document."""
    monkeypatch.syspath_prepend(str(REPO / "plugins"))
    from routeplan_tasks import event_extra
    from test_api_views import sample_home

    from routeplan.publishing.store import RoutingStore

    home = sample_home(tmp_path)
    store = RoutingStore(home / "routing")
    restored, _ = store.rollback("clicks", 1, "the guard said so")
    base = "http://airflow.example:8080/"
    outcome = {"stream": "clicks", "version": 3, "action": "rolled_back", "reason": "r"}
    extra = event_extra(outcome, str(home / "routing"), base)
    assert extra == {
        **outcome,
        "strategy": "cg",
        "predicted_imbalance": 0.05,
        "restored_version": 1,
        "routing_page": "http://airflow.example:8080/routeplan/ui/streams/clicks/versions/3",
    }
    gone = {
        "stream": "views",
        "version": 7,
        "action": "published",
        "reason": "r",
        "strategy": "milp",
        "predicted_imbalance": 0.2,
    }
    assert event_extra(gone, str(home / "routing"), base) == {
        **{k: gone[k] for k in ("stream", "version", "action", "reason")},
        "strategy": "milp",
        "predicted_imbalance": 0.2,
        "routing_page": "http://airflow.example:8080/routeplan/ui/streams/views/versions/7",
    }


def test_with_a_spark_connect_server_the_spark_tasks_are_its_clients(monkeypatch):
    """ROUTEPLAN_SPARK_CONNECT_CONN: the same stages and arguments, each a PySparkOperator on
    that connection running the job's main in the task (``run_job``)."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator
    from routeplan_tasks import run_job

    monkeypatch.setenv("ROUTEPLAN_SPARK_CONNECT_CONN", "a_connect_server")
    nightly = DagBag(dag_folder=str(REPO / "dags")).get_dag("routeplan_nightly")
    spark = [t for t in nightly.tasks if t.task_id not in PYTHON_TASKS]
    assert [t.task_id for t in spark] == ["ingest", "windows", "outcomes", "guard", "plan",
                                          "validate", "publish"]  # fmt: skip
    for task in spark:
        assert isinstance(task, PySparkOperator) and task.conn_id == "a_connect_server"
        assert task.python_callable is run_job
        assert task.op_kwargs["stage"] == task.task_id
        assert "--interval-start" in task.op_kwargs["argv"]
    assert nightly.get_task("validate").retries == 0  # NOT_RETRIED holds here too


def test_run_job_fails_the_task_with_the_jobs_refusal():
    from airflow.sdk.exceptions import AirflowException
    from routeplan_tasks import run_job

    with pytest.raises(AirflowException, match=r"jobs/plan.py: --params-json is not JSON"):
        run_job("plan", ["--interval-start", "2026-11-20", "--params-json", "{"])
