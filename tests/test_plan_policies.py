"""How a run takes each stream's policy: the plan job's overrides (no Spark started) and the
DAG's first task, ``check_policies``, which refuses a bad file or run before any Spark job; and
what the plan job's report says of a solver's plan."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from jobs.common import stream_policies
from jobs.plan import run_overrides, solver_quality
from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy
from routeplan.simulation.instances import varies_instance
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import load_policies

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "config" / "streams.yaml"


def run_options(**given) -> RunOverrides:
    """The plan job's overrides from its namespace as its parser leaves it, with ``given`` flags
    set."""
    ns = argparse.Namespace(
        policies="",
        strategy="",
        param=[],
        params_json="{}",
        planning_window="",
        load_metric="",
        hot_key_min_share=0.001,
        max_moves="",
        max_migrated_load_share="",
        max_migration_cost="",
        migration_cost_unit="",
    )
    for key, value in given.items():
        setattr(ns, key, value)
    return run_overrides(ns)


def test_each_stream_gets_its_own_policy_and_unlisted_ones_the_defaults():
    policies = load_policies(SAMPLE)
    ns = run_options()
    clicks, orders = policy_for(ns, policies, "clicks"), policy_for(ns, policies, "orders")
    assert (clicks.kind, clicks.strategy) == ("key_routing", "cg")
    assert (orders.kind, orders.strategy, orders.load_metric) == (
        "partition_assignment",
        "mwf",
        "bytes",
    )
    other = policy_for(ns, policies, "payments")
    assert (other.stream, other.strategy) == ("payments", policies.defaults.strategy)


def test_run_overrides_replace_the_policy_for_that_run_only():
    policies = load_policies(SAMPLE)
    ns = run_options(strategy="flux", max_moves=3, planning_window="interval")
    clicks = policy_for(ns, policies, "clicks")
    assert (clicks.strategy, clicks.budget.max_moves, clicks.planning_window) == (
        "flux",
        3,
        "interval",
    )
    assert clicks.params == {}  # cg's parameters are not flux's
    assert policies.for_stream("clicks").strategy == "cg"  # the file's policy is untouched
    # a budget alone keeps the stream's strategy and parameters
    kept = policy_for(run_options(max_moves=5), policies, "clicks")
    assert (kept.strategy, kept.budget.max_moves, kept.params["epsilon"]) == ("cg", 5, 0.01)


def test_a_strategy_of_another_kind_fails_naming_the_stream_and_both_kinds():
    policies = load_policies(SAMPLE)
    with pytest.raises(ValueError, match=r"'orders'.*key_routing.*partition_assignment"):
        policy_for(run_options(strategy="cg"), policies, "orders")


def test_without_a_policy_file_every_stream_gets_the_command_line_strategy(tmp_path):
    ns = run_options()
    assert stream_policies(argparse.Namespace(policies=""), tmp_path) is None
    policy = policy_for(ns, None, "clicks")
    expected = ("key_routing", "cg", "forecast")
    assert (policy.kind, policy.strategy, policy.planning_window) == expected
    mwf = policy_for(run_options(strategy="mwf"), None, "orders")
    assert (mwf.kind, mwf.strategy) == ("partition_assignment", "mwf")
    with pytest.raises(SystemExit, match="not found"):
        stream_policies(argparse.Namespace(policies=str(tmp_path / "nope.yaml")), tmp_path)


def test_parameters_without_a_strategy_are_refused():
    with pytest.raises(SystemExit, match="without a strategy: epsilon"):
        run_options(params_json='{"epsilon": 0.1}')


@pytest.mark.airflow
def test_check_policies_is_the_runs_first_word_on_a_bad_file_or_run(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "plugins"))  # as Airflow's plugins folder
    import routeplan_tasks
    from airflow.sdk.exceptions import AirflowFailException

    check = routeplan_tasks.check_policies.function
    monkeypatch.setattr(routeplan_tasks, "HOME", str(tmp_path))
    assert check(params={}) == {}  # no file: every stream on cg, said in the log
    config = tmp_path / "config"
    config.mkdir()
    shutil.copyfile(SAMPLE, config / "streams.yaml")
    summary = check(params={})
    assert summary["orders"] == "partition_assignment: mwf"
    assert summary["views"] == "key_routing: auto"
    with pytest.raises(AirflowFailException, match=r"streams.yaml.*'clickz' not listed"):
        check(params={"streams": ["clickz"]})
    with pytest.raises(AirflowFailException, match=r"'orders'.*partition_assignment"):
        check(params={"strategy": "cg"})  # every listed stream: orders is partitions
    assert check(params={"strategy": "cg", "streams": ["clicks"]}) == {"clicks": "key_routing: cg"}
    broken = tmp_path / "broken.yaml"
    broken.write_text("streams:\n  orders: {kind: partition_assignment, strategy: cg}\n")
    with pytest.raises(AirflowFailException, match=r"broken.yaml:2: stream 'orders': strategy"):
        check(params={"policies_path": str(broken)})
    with pytest.raises(AirflowFailException, match="no such file"):
        check(params={"policies_path": str(tmp_path / "missing.yaml")})


def test_the_report_gives_a_solvers_bound_and_gap_and_nothing_for_others():
    snapshot, current, workers = varies_instance(workers=4, per_worker=5)
    budget = Budget(max_moves=2, time_limit_s=1)
    for name in ("milp", "albic"):
        predicted = dict(get_strategy(name).plan(snapshot, current, workers, budget).predicted)
        quality = solver_quality(predicted)
        assert quality is not None and set(quality) == {
            "load_distance",
            "load_distance_bound",
            "mip_gap",
        }
        assert quality["load_distance_bound"] <= quality["load_distance"] + 1e-9
    cg = get_strategy("cg").plan(snapshot, current, workers, Budget()).predicted
    assert solver_quality(dict(cg)) is None
