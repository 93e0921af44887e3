"""Planning policies (routeplan.streams.policy): the sample file, merging, and one clear message
naming the file, the line, the stream and the field for every mistake a policy file can hold."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import stream_names
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.contracts.schemas import schema_dir
from routeplan.errors import InputError
from routeplan.model.names import is_valid_name
from routeplan.model.plan import Budget
from routeplan.streams import auto
from routeplan.streams.policy import (
    DEFAULT_GOALS,
    GOALS,
    RENAMED_GOALS,
    PolicyError,
    StreamPolicy,
    WorkerSpec,
    load_policies,
    planned_metric,
    policy_from_overrides,
)

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "config" / "streams.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "streams.yaml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as caught:
        load_policies(path)
    message = str(caught.value)
    assert message.startswith(str(path)), message
    return message


# ------------------------------------------------------------------------------ the sample file


def test_sample_file_plans_the_demo_streams():
    policies = load_policies(SAMPLE)
    assert set(policies.streams) == {"clicks", "orders", "views"}
    clicks = policies.for_stream("clicks")
    assert (clicks.kind, clicks.strategy, clicks.is_auto) == ("key_routing", "cg", False)
    assert clicks.params == {
        "epsilon": 0.01,
        "virtual_workers_per_worker": 10,
        "theta_busy": 1.03,
        "theta_idle": 0.97,
    }
    assert clicks.build()["cg"].epsilon == 0.01
    orders = policies.for_stream("orders")
    assert (orders.kind, orders.strategy) == ("partition_assignment", "mwf")
    assert orders.build()["mwf"].kind == "partition_assignment"
    views = policies.for_stream("views")
    assert views.is_auto and views.candidates == ("cg", "pkg", "milp")
    assert views.strategies == ("cg", "pkg", "milp")
    assert views.budget.time_limit_s == 5 and views.budget.limits() == {}
    assert views.params_of("cg") == {"epsilon": 0.01, "virtual_workers_per_worker": 10}
    assert views.params_of("pkg") == {}
    assert set(views.build()) == {"cg", "pkg", "milp"}


def test_a_stream_not_listed_gets_the_defaults_and_check_streams_names_it():
    policies = load_policies(SAMPLE)
    other = policies.for_stream("payments")
    assert not policies.is_listed("payments")
    assert other.stream == "payments"
    assert (other.strategy, other.kind, other.imbalance_tolerance) == ("lpt", "key_routing", 0.10)
    policies.check_streams(["clicks", "views"])
    with pytest.raises(PolicyError, match=r"streams\.yaml: stream 'payments' not listed") as err:
        policies.check_streams(["clicks", "payments"])
    assert "clicks, orders, views" in str(err.value)
    assert isinstance(err.value, InputError)


# ------------------------------------------------------------------------------ merging


def test_streams_override_defaults_field_by_field(tmp_path):
    path = write(
        tmp_path,
        """
defaults:
  strategy: cg
  params: {epsilon: 0.05}
  budget: {max_moves: 10, time_limit_s: 7}
  load_metric: bytes
  thresholds: {imbalance_tolerance: 0.2}
streams:
  same: {budget: {max_migrated_load_share: 0.3}, thresholds: {hot_key_min_share: 0.01}}
  own_params: {params: {epsilon: 0.02}}
  other: {strategy: flux}
  unlimited: {strategy: pkg, budget: {max_moves: null}}
""",
    )
    policies = load_policies(path)
    same = policies.for_stream("same")
    assert same.params == {"epsilon": 0.05}  # kept the defaults' strategy: its params too
    assert same.budget == Budget(max_moves=10, max_migrated_load_share=0.3, time_limit_s=7)
    assert (same.imbalance_tolerance, same.hot_key_min_share) == (0.2, 0.01)
    assert same.load_metric == "bytes" and same.planning_window == "forecast"
    assert policies.for_stream("own_params").params == {"epsilon": 0.02}
    other = policies.for_stream("other")
    assert other.params == {} and other.budget.max_moves == 10  # flux honours max_moves
    unlimited = policies.for_stream("unlimited")
    assert unlimited.budget.limits() == {} and unlimited.budget.time_limit_s == 7
    assert policies.defaults.goals == DEFAULT_GOALS


def test_auto_without_candidates_takes_every_strategy_of_the_kind_that_honours_the_budget(
    tmp_path,
):
    path = write(tmp_path, "streams:\n  v: {strategy: auto, budget: {max_moves: 5}}\n")
    policy = load_policies(path).for_stream("v")
    assert "cg" in policy.candidates and "flux" in policy.candidates
    assert "pkg" not in policy.candidates and "mwf" not in policy.candidates
    for name in policy.candidates:
        assert policy.build()[name].honours >= {"max_moves"}


def test_inline_workers_keep_the_learnt_capacity_marker(tmp_path):
    path = write(
        tmp_path,
        """
streams:
  checkout:
    workers:
      - {worker: w0, capacity: 2}
      - {worker: w1, capacity: auto}
      - {worker: w2, state: draining}
""",
    )
    policy = load_policies(path).for_stream("checkout")
    assert policy.workers == (
        WorkerSpec("w0", 2.0),
        WorkerSpec("w1", None),
        WorkerSpec("w2", None, "draining"),
    )
    assert policy.learns_capacity
    workers = policy.to_workers({"w1": 3.0, "w2": 1.5})
    assert workers.capacities.tolist() == [2.0, 3.0, 1.5]
    assert workers.is_active.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="worker 'w2' has capacity auto"):
        policy.to_workers({"w1": 3.0})
    assert policy.to_workers({}, fallback=1.0).capacities.tolist() == [2.0, 1.0, 1.0]
    assert load_policies(SAMPLE).for_stream("clicks").to_workers() is None


def test_goals_are_the_choosers_goals():
    assert GOALS == auto.GOALS and DEFAULT_GOALS == auto.DEFAULT_GOALS
    enum = json.loads((schema_dir() / "streams.schema.json").read_text())["$defs"]["goals"]
    assert tuple(enum["items"]["enum"]) == (*GOALS, *RENAMED_GOALS)


def test_a_goal_under_its_old_name_is_read_with_a_deprecation_warning(tmp_path):
    path = write(
        tmp_path,
        "streams:\n  s:\n    strategy: auto\n    goals: [imbalance, migrations]\n",
    )
    with pytest.warns(DeprecationWarning, match="stream s: goal 'migrations' is now 'moves'"):
        policy = load_policies(path).for_stream("s")
    assert policy.goals == ("imbalance", "moves")


def test_every_property_of_the_schema_is_described():
    schema = json.loads((schema_dir() / "streams.schema.json").read_text())
    defs = schema["$defs"]

    def described(prop: dict) -> bool:
        if "description" in prop:
            return True
        ref = prop.get("$ref", "")
        return ref.startswith("#/$defs/") and "description" in defs[ref.split("/")[-1]]

    def walk(node: object, at: str) -> list[str]:
        missing = []
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                if not described(prop):
                    missing.append(f"{at}/{name}")
            for key, value in node.items():
                missing += walk(value, f"{at}/{key}")
        return missing

    assert walk(schema, "") == []


# ------------------------------------------------------------------------------ errors

ERRORS = {
    "yaml syntax with position": (
        "streams:\n  clicks: {strategy: cg\n  orders: x\n",
        [":3:9: not valid YAML", "expected ',' or '}'"],
    ),
    "schema: a field out of range": (
        "streams:\n  clicks:\n    strategy: cg\n    budget: {max_moves: -1}\n",
        [":4: stream 'clicks': budget.max_moves: -1 is less than the minimum of 0"],
    ),
    "schema: a misspelt field": (
        "streams:\n  clicks:\n    stratgy: cg\n",
        [":2: stream 'clicks':", "'stratgy' was unexpected", "allowed: budget, candidates"],
    ),
    "schema: threshold in defaults": (
        "defaults:\n  thresholds: {imbalance_tolerance: 2}\n",
        [":2: defaults: thresholds.imbalance_tolerance: 2 is greater than the maximum of 1"],
    ),
    "partition strategy on a key-routing stream": (
        "streams:\n  orders: {strategy: mwf}\n",
        [
            ":2: stream 'orders': strategy:",
            "strategy 'mwf' plans partition_assignment, but the stream's kind is key_routing",
        ],
    ),
    "key-routing strategy inherited by a partition stream": (
        "streams:\n  orders: {kind: partition_assignment}\n",
        [
            "stream 'orders': strategy: strategy 'lpt' plans key_routing, but the stream's kind "
            "is partition_assignment",
            "inherits the strategy from defaults",
        ],
    ),
    "unknown strategy": (
        "streams:\n  clicks: {strategy: cgg}\n",
        ["stream 'clicks': strategy: unknown strategy 'cgg'", "cg, chbl"],
    ),
    "unknown param": (
        "streams:\n  clicks:\n    strategy: cg\n    params: {epsilonn: 0.1}\n",
        [":4: stream 'clicks': params.epsilonn: strategy 'cg' has no parameter 'epsilonn'"],
    ),
    "param of the wrong type": (
        "streams:\n  clicks:\n    strategy: cg\n    params: {epsilon: fast}\n",
        ["stream 'clicks': params.epsilon: 'fast' is not a number"],
    ),
    "param the strategy refuses": (
        "streams:\n  clicks:\n    strategy: cg\n    params: {epsilon: -1}\n",
        ["stream 'clicks': params.epsilon: cg: epsilon must be >= 0"],
    ),
    "renamed param": (
        "streams:\n  v:\n    strategy: milp\n    params: {bound: 0.1}\n",
        ["stream 'v': params.bound: strategy 'milp' renamed bound to max_load_distance"],
    ),
    "budget limit not honoured": (
        "streams:\n  views:\n    strategy: pkg\n    budget: {max_moves: 5}\n",
        [":4: stream 'views': budget.max_moves: strategy 'pkg' cannot honour max_moves=5"],
    ),
    "budget limit under params": (
        "streams:\n  clicks:\n    params: {max_moves: 5}\n",
        [
            "stream 'clicks': params.max_moves: max_moves is a budget limit",
            "set it as budget: {max_moves: 5}",
        ],
    ),
    "old budget parameter under params": (
        "streams:\n  clicks:\n    params: {max_migrations: 5}\n",
        ["params.max_migrations: max_migrations is a budget limit", "budget: {max_moves: 5}"],
    ),
    "auto candidate that cannot honour the budget": (
        "streams:\n  views:\n    strategy: auto\n    candidates: [cg, pkg]\n"
        "    budget: {max_moves: 50}\n",
        [
            ":5: stream 'views': budget.max_moves: candidate 'pkg' cannot honour max_moves=50",
            "drop it from candidates",
        ],
    ),
    "unknown candidate": (
        "streams:\n  views:\n    strategy: auto\n    candidates: [cg, pkk]\n",
        [":4: stream 'views': candidates.1: unknown strategy 'pkk'"],
    ),
    "candidate of the other kind": (
        "streams:\n  views:\n    strategy: auto\n    candidates: [cg, mwf]\n",
        ["stream 'views': candidates.1: strategy 'mwf' plans partition_assignment"],
    ),
    "unknown goal": (
        "streams:\n  views:\n    strategy: auto\n    goals: [imbalance, speed]\n",
        [":4: stream 'views': goals.1: 'speed' is not one of"],
    ),
    "auto params not by candidate": (
        "streams:\n  views:\n    strategy: auto\n    candidates: [cg]\n    params: {epsilon: 1}\n",
        ["stream 'views': params.epsilon: for strategy auto, params are given by candidate"],
    ),
    "candidates without auto": (
        "streams:\n  clicks: {candidates: [cg]}\n",
        ["stream 'clicks': candidates: only strategy auto has candidates"],
    ),
    "bad stream name": (
        "streams:\n  ok: {}\n  a/b: {}\n",
        [":3: streams: invalid stream name 'a/b'", "not starting with '.' or '-'"],
    ),
    "duplicate worker": (
        "streams:\n  checkout:\n    workers: [{worker: w0}, {worker: w0, capacity: 2}]\n",
        [":3: stream 'checkout': workers.1.worker: worker 'w0' is listed twice"],
    ),
    "no active worker": (
        "streams:\n  checkout:\n    workers: [{worker: w0, state: draining}]\n",
        ["stream 'checkout': workers: at least one worker must be active"],
    ),
    "bad capacity": (
        "streams:\n  checkout:\n    workers: [{worker: w0, capacity: 0}]\n",
        ["stream 'checkout': workers.0.capacity:"],
    ),
    "stream listed twice": (
        "streams:\n  clicks: {}\n  clicks: {strategy: pkg}\n",
        [":3:3: not valid YAML: 'clicks' given twice"],
    ),
    "not a mapping": ("- clicks\n", ["expected a mapping with defaults and streams"]),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_each_mistake_gets_one_message_naming_file_stream_and_field(tmp_path, case):
    text, expected = ERRORS[case]
    message = refused(tmp_path, text)
    for part in expected:
        assert part in message, message
    assert "Traceback" not in message


def test_a_missing_file_is_an_input_error_naming_it(tmp_path):
    with pytest.raises(InputError, match=r"nowhere\.yaml: no such file"):
        load_policies(tmp_path / "nowhere.yaml")


def test_an_empty_file_plans_every_stream_with_the_defaults(tmp_path):
    policies = load_policies(write(tmp_path, "# nothing yet\n"))
    assert policies.streams == {}
    assert policies.for_stream("x").strategy == "lpt"


@settings(max_examples=150, deadline=None)
@given(stream_names())
def test_a_stream_name_is_accepted_iff_it_obeys_the_name_rule(name):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "streams.yaml"
        path.write_text(yaml.safe_dump({"streams": {name: {}}}))
        if is_valid_name(name):
            assert load_policies(path).for_stream(name).stream == name
        else:
            with pytest.raises(PolicyError, match="invalid stream name|not valid YAML"):
                load_policies(path)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(st.none(), st.integers(0, 1000)),
    st.one_of(st.none(), st.floats(0, 1)),
    st.sampled_from(["cg", "flux", "pkg", "kg"]),
)
def test_a_budget_loads_iff_the_strategy_honours_each_limit(max_moves, share, strategy):
    text = yaml.safe_dump(
        {
            "streams": {
                "s": {
                    "strategy": strategy,
                    "budget": {"max_moves": max_moves, "max_migrated_load_share": share},
                }
            }
        }
    )
    budget = Budget(max_moves=max_moves, max_migrated_load_share=share)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "streams.yaml"
        path.write_text(text)
        honours = {"cg": 2, "flux": 2}.get(strategy, 0)
        if not budget.limits() or honours:
            assert load_policies(path).for_stream("s").budget == budget
        else:
            with pytest.raises(PolicyError, match=f"stream 's': budget.max_.*'{strategy}'"):
                load_policies(path)


# ------------------------------------------------------------------------------ run overrides


def test_overrides_are_checked_like_the_file():
    clicks = load_policies(SAMPLE).for_stream("clicks")
    flux = policy_from_overrides(clicks, strategy="flux", budget={"max_moves": 20})
    assert (flux.strategy, flux.params, flux.budget.max_moves) == ("flux", {}, 20)
    tuned = policy_from_overrides(clicks, params={"epsilon": 0.05})
    assert tuned.params["epsilon"] == 0.05 and tuned.params["theta_busy"] == 1.03
    assert policy_from_overrides(clicks, budget=Budget(max_moves=3)).budget == Budget(max_moves=3)
    with pytest.raises(PolicyError, match="run overrides: stream 'clicks': budget.max_moves"):
        policy_from_overrides(clicks, strategy="pkg", budget={"max_moves": 5})
    with pytest.raises(PolicyError, match="run overrides: stream 'clicks': strategy: .*'mwf'"):
        policy_from_overrides(clicks, strategy="mwf")
    with pytest.raises(PolicyError, match="stream 'clicks': params.max_moves: .*budget limit"):
        policy_from_overrides(clicks, params={"max_moves": 5})
    with pytest.raises(PolicyError, match="budget.max_move: not a budget field"):
        policy_from_overrides(clicks, budget={"max_move": 5})


def test_overrides_keep_inline_workers_and_auto_candidates(tmp_path):
    path = write(
        tmp_path,
        "streams:\n  v:\n    strategy: auto\n    candidates: [cg, flux]\n"
        "    workers: [{worker: a, capacity: auto}, {worker: b}]\n",
    )
    base = load_policies(path).for_stream("v")
    again = policy_from_overrides(base, budget={"max_moves": 4})
    assert again.candidates == ("cg", "flux") and again.workers == base.workers
    assert isinstance(again, StreamPolicy) and again.budget.max_moves == 4


def test_the_regression_guard_fields_have_defaults_and_are_checked(tmp_path):
    path = tmp_path / "streams.yaml"
    path.write_text(
        "defaults: {thresholds: {regression_tolerance: 0.2}}\n"
        "streams:\n"
        "  a: {on_regression: hold, thresholds: {regression_days: 2}}\n"
        "  b: {}\n"
    )
    policies = load_policies(path)
    a, b = policies.for_stream("a"), policies.for_stream("b")
    assert (a.on_regression, a.regression_days, a.regression_tolerance) == ("hold", 2, 0.2)
    assert (b.on_regression, b.regression_days, b.regression_tolerance) == ("rollback", 1, 0.2)
    for bad, where in (
        ("on_regression: undo", "on_regression"),
        ("thresholds: {regression_days: 0}", "regression_days"),
        ("thresholds: {regression_tolerance: 2}", "regression_tolerance"),
    ):
        path.write_text(f"streams:\n  a: {{{bad}}}\n")
        with pytest.raises(PolicyError, match=f"stream 'a'.*{where}"):
            load_policies(path)


def test_rebalance_and_planning_sections_merge_key_by_key_and_are_checked(tmp_path):
    path = write(
        tmp_path,
        """
defaults:
  rebalance: {threshold: 0.2, persistence: 3}
  planning: {history_days: 14}
streams:
  tight: {rebalance: {min_gain: 0.05}, planning: {quantile: 0.9}}
""",
    )
    policies = load_policies(path)
    tight = policies.for_stream("tight")
    assert (tight.rebalance.threshold, tight.rebalance.persistence) == (0.2, 3)
    assert tight.rebalance.min_gain == 0.05 and tight.rebalance.far == 2.0
    assert (tight.forecast.history_days, tight.forecast.quantile) == (14, 0.9)
    assert tight.forecast.decay == 0.8
    assert policies.for_stream("unlisted").rebalance.min_gain == 0.02
    bad = write(tmp_path, "defaults:\n  rebalance: {persistence: 0}\n")
    with pytest.raises(PolicyError, match=r"rebalance\.persistence"):
        load_policies(bad)
    bad = write(tmp_path, "streams:\n  s: {planning: {decay: 0}}\n")
    with pytest.raises(PolicyError, match=r"stream 's'.*planning\.decay"):
        load_policies(bad)


@pytest.mark.parametrize("metric", ["messages", "bytes", "cost_ms"])
def test_planned_metric_is_bytes_for_partitions_and_the_policys_for_key_routing(metric):
    assert planned_metric("partition_assignment", metric) == "bytes"
    assert planned_metric("key_routing", metric) == metric
