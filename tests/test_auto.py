"""``auto`` (routeplan.streams.auto): real plans of real strategies, ranked by goals in priority
order; a plan that breaks a hard goal never wins."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from conftest import zipf_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget, Plan
from routeplan.model.workers import Worker, Workers
from routeplan.planning.registry import get_strategy
from routeplan.streams.auto import GOALS, NoCandidateError, choose

KEY_ROUTING = ("sg", "pkg", "cg", "flux", "kg")
FOUR = Workers.homogeneous(4)
FIVE = Workers.homogeneous(5)


@cache
def snapshot():
    return zipf_snapshot(keys=2000, messages=50_000, num_key_groups=128, hot=20)


@cache
def current():
    """Yesterday's table: kg on four workers; today a fifth worker joins."""
    return get_strategy("kg").plan(snapshot(), None, FOUR, Budget()).table


@cache
def scale_out_plans() -> dict[str, Plan]:
    return {n: get_strategy(n).plan(snapshot(), current(), FIVE, Budget()) for n in KEY_ROUTING}


def pick(*names: str) -> dict[str, Plan]:
    plans = scale_out_plans()
    return {n: plans[n] for n in names}


def test_moves_decide_when_every_candidate_is_balanced_enough():
    plans = pick("sg", "pkg", "cg", "flux")
    tolerance = 0.2
    assert all(p.predicted["imbalance"] <= tolerance for p in plans.values())
    choice = choose(plans, goals=["imbalance", "moves"], imbalance_tolerance=tolerance)
    fewest = min(plans, key=lambda n: plans[n].predicted["moves"])
    assert choice.winner == fewest == "flux"
    assert choice.decided_by == "moves"
    assert choice.reason.startswith("flux: imbalance 0.152 within tolerance 0.20 like sg, pkg")
    assert "fewest moves (2 vs sg 121" in choice.reason


def test_with_no_tolerance_the_best_balanced_wins():
    plans = pick("sg", "pkg", "cg", "flux")
    choice = choose(plans, goals=["imbalance", "moves"], imbalance_tolerance=0.0)
    best = min(plans, key=lambda n: plans[n].predicted["imbalance"])
    assert choice.winner == best != "flux"
    assert choice.decided_by == "imbalance"
    assert choice.reason.startswith(f"{best}: lowest imbalance")


def test_a_candidate_outside_the_tolerance_loses_whatever_it_saves():
    plans = pick("kg", "flux", "cg")  # kg moves less than cg but is 0.44 imbalanced
    assert plans["kg"].predicted["imbalance"] > 0.3
    choice = choose(plans, goals=["imbalance", "moves"], imbalance_tolerance=0.2)
    assert choice.winner == "flux"
    assert "(not kg 0.436)" in choice.reason
    assert [v.strategy for v in choice.ranking] == ["flux", "cg", "kg"]


def test_memory_prefers_the_candidate_that_splits_no_hot_key():
    plans = pick("sg", "pkg", "kg")
    choice = choose(plans, goals=["memory"])
    assert choice.winner == "kg" and choice.decided_by == "memory"
    assert choice.ranking[0].values["memory"] < choice.ranking[-1].values["memory"]
    assert "least memory" in choice.reason


def test_migrated_load_and_workers_goals():
    plans = pick("sg", "cg", "flux")
    choice = choose(plans, goals=["migrated_load"])
    assert choice.winner == "flux" and choice.decided_by == "migrated_load"
    # every candidate uses the five workers: the next goal decides
    choice = choose(plans, goals=["workers", "imbalance"], imbalance_tolerance=0.0)
    assert all(v.values["workers"] == 5 for v in choice.ranking)
    assert choice.decided_by == "imbalance" and choice.winner == "sg"


def test_ties_on_every_goal_go_to_the_first_candidate():
    plan = scale_out_plans()["cg"]
    choice = choose({"b": plan, "a": plan}, goals=list(GOALS))
    assert (choice.winner, choice.decided_by) == ("b", "order")
    assert "first in candidate order before a" in choice.reason


def test_a_plan_over_the_budget_never_wins_and_is_named():
    plans = pick("sg", "pkg", "cg", "flux")
    choice = choose(
        plans, goals=["imbalance"], imbalance_tolerance=0.0, budget=Budget(max_moves=50)
    )
    assert choice.winner == "flux" and choice.decided_by == "hard goals"
    failed = {v.strategy: v.failed for v in choice.ranking}
    assert failed["sg"] == "budget: 121 moves > max_moves 50"
    assert "excluded sg (budget: 121 moves > max_moves 50)" in choice.reason


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(st.none(), st.integers(0, 140)),
    st.one_of(st.none(), st.floats(0, 1)),
    st.permutations(KEY_ROUTING),
    st.lists(st.sampled_from(GOALS), min_size=1, max_size=5, unique=True),
    st.floats(0, 0.5),
)
def test_the_winner_keeps_every_budget_limit(max_moves, share, order, goals, tolerance):
    budget = Budget(max_moves=max_moves, max_migrated_load_share=share)
    plans = pick(*order)

    def within(plan: Plan) -> bool:
        moves, moved = plan.predicted["moves"], plan.predicted["migrated_load_share"]
        return (max_moves is None or moves <= max_moves) and (share is None or moved <= share)

    if not any(within(p) for p in plans.values()):
        with pytest.raises(NoCandidateError, match="every candidate breaks a hard goal"):
            choose(plans, goals=goals, imbalance_tolerance=tolerance, budget=budget)
        return
    choice = choose(plans, goals=goals, imbalance_tolerance=tolerance, budget=budget)
    assert within(plans[choice.winner])
    assert [v.hard_ok for v in choice.ranking] == sorted(
        (v.hard_ok for v in choice.ranking), reverse=True
    )
    assert {v.strategy for v in choice.ranking if v.hard_ok} == {
        n for n, p in plans.items() if within(p)
    }


def test_a_plan_that_leaves_load_on_a_draining_worker_never_wins():
    draining = Workers((Worker("w0"), Worker("w1"), Worker("w2"), Worker("w3", state="draining")))
    drained = get_strategy("flux").plan(snapshot(), current(), draining, Budget())
    # kg planned as if w3 were still active: load stays on it
    ignoring = get_strategy("kg").plan(snapshot(), current(), FOUR, Budget())
    plans = {"kg": ignoring, "flux": drained}
    choice = choose(plans, goals=["moves"], workers=draining, current=current())
    assert choice.winner == "flux"
    assert choice.ranking[-1].failed.startswith("draining: load 0.")
    with pytest.raises(NoCandidateError, match=r"kg \(draining: load"):
        choose({"kg": ignoring}, workers=draining, current=current())


def test_under_a_budget_a_plan_may_keep_what_a_draining_worker_already_had():
    draining = Workers((Worker("w0"), Worker("w1"), Worker("w2"), Worker("w3", state="draining")))
    budget = Budget(max_moves=5)
    plans = {
        n: get_strategy(n).plan(snapshot(), current(), draining, budget) for n in ("cg", "flux")
    }
    choice = choose(plans, budget=budget, workers=draining, current=current())
    assert all(v.hard_ok for v in choice.ranking)
    # the same plans judged without a budget should have drained w3 completely
    with pytest.raises(NoCandidateError, match="draining"):
        choose(plans, workers=draining, current=current())


# ------------------------------------------------------------------------------ partitions


@cache
def partition_plans() -> tuple[dict[str, Plan], Workers]:
    loads = PartitionLoad("orders", np.random.default_rng(1).uniform(5, 60, 24))
    workers = Workers(tuple(Worker(f"c{i}", 100.0) for i in range(4)))
    before = get_strategy("kafka_range").plan(loads, None, workers, Budget()).table
    names = ("kafka_range", "wf", "ffd", "mwf")
    return {n: get_strategy(n).plan(loads, before, workers, Budget()) for n in names}, workers


def test_partition_plans_over_capacity_are_excluded_and_workers_decide():
    plans, workers = partition_plans()
    assert plans["kafka_range"].predicted["overloaded"] > 0
    assert plans["kafka_range"].predicted["moves"] == 0  # it would win on moves alone
    choice = choose(plans, goals=["moves"], workers=workers)
    assert choice.winner != "kafka_range"
    assert choice.ranking[-1].failed.startswith("capacity: ")
    choice = choose(pick_partitions("wf", "mwf"), goals=["workers"], workers=workers)
    assert choice.winner == "mwf" and choice.decided_by == "workers"
    assert "fewest workers (10 vs wf 11)" in choice.reason


def test_memory_is_skipped_for_partition_plans():
    plans = pick_partitions("ffd", "mwf")
    choice = choose(plans, goals=["memory", "moves"])
    assert all("memory" not in v.values for v in choice.ranking)
    assert choice.decided_by == "moves" and choice.winner == "mwf"


def pick_partitions(*names: str) -> dict[str, Plan]:
    plans, _ = partition_plans()
    return {n: plans[n] for n in names}


def test_bad_calls_are_refused():
    with pytest.raises(ValueError, match="no candidate plans"):
        choose({})
    with pytest.raises(ValueError, match="unknown goal 'speed'"):
        choose(pick("cg"), goals=["speed"])
    only = choose(pick("cg"))
    assert (only.winner, only.decided_by) == ("cg", "only candidate")
    record = only.to_record()
    assert record["winner"] == "cg" and record["ranking"][0]["values"]["moves"] > 0
