"""The night's rebalancing (routeplan.streams.rebalance): plan on the forecast, score out of
sample, the gate, move pruning and the predicted band."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.registry import get_strategy
from routeplan.streams.forecast import ForecastRules
from routeplan.streams.gate import GateRules
from routeplan.streams.history import History, day_score
from routeplan.streams.policy import StreamPolicy
from routeplan.streams.rebalance import (
    daily_scores,
    fitted_before,
    forecast_loads,
    nights_over,
    plan_night,
    prune,
    routing_change,
    with_selected,
    workers_change,
)

GROUPS, WINDOWS = 256, 6
WORKERS = Workers.homogeneous(4)
POLICY = StreamPolicy("s", forecast=ForecastRules(history_days=7))


def traffic(days: int, seed: int = 1, volume: float = 2e6, hot: float = 0.0) -> History:
    """Days of one popularity law over the key groups (multinomial counts per window); with
    ``hot`` a key group carries that share of the last day's windows on top."""
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, GROUPS + 1) ** 0.6
    weight /= weight.sum()
    units = np.stack(
        [
            np.stack([rng.multinomial(int(volume / WINDOWS), weight) for _ in range(WINDOWS)])
            for _ in range(days)
        ]
    ).astype(float)
    if hot:
        units[-1, :, 7] += hot * units[-1].sum(axis=1)
    return History(tuple(f"d{d}" for d in range(days)), units)


def base(history: History) -> LoadSnapshot:
    return LoadSnapshot("s", np.nan_to_num(history.units[-1]).sum(axis=0))


def first_version(history: History) -> RoutingTable:
    night = plan_night(POLICY, history, base(history), None, WORKERS)
    assert night.decision.publish and night.decision.rule == "first"
    table = night.plan.selected.plan.table
    assert isinstance(table, RoutingTable)
    return replace(table, version=1)


def test_stationary_traffic_keeps_the_first_version_night_after_night():
    days = traffic(8)
    v1 = first_version(days.first(2))
    for last in range(3, 9):
        history = days.first(last)
        night = plan_night(POLICY, history, base(history), v1, WORKERS)
        assert not night.decision.publish, night.decision.reason
        assert night.decision.rule in ("within", "waiting", "no_gain")
        # the prediction is the mean of the version in force's days, out of sample
        assert night.prediction.out_of_sample
        scores = daily_scores(v1, history, WORKERS)
        assert night.prediction.point == pytest.approx(np.mean([s.peak_excess for s in scores]))
        assert night.prediction.low <= night.prediction.point <= night.prediction.high


def test_a_new_hot_key_far_over_the_threshold_is_re_planned_the_same_night():
    calm = traffic(4, seed=3)
    v1 = first_version(calm)
    stormy = traffic(5, seed=3, hot=0.3)
    night = plan_night(POLICY, stormy, base(stormy), v1, WORKERS)
    assert night.decision.publish and night.decision.rule == "far"
    assert night.refit.peak_excess < night.in_force.peak_excess - 0.02
    assert not night.prediction.out_of_sample  # published on the day's own score


def test_a_rerun_of_the_night_that_published_latest_keeps_it_and_its_prediction():
    """The same night again, LATEST now what it published: the gate's rerun rule, the same
    table (publishing it changes nothing) and the prediction it was published with — not a
    new decision against a different version in force."""
    calm = traffic(4, seed=3)
    v1 = first_version(calm)
    stormy = traffic(5, seed=3, hot=0.3)
    night = plan_night(POLICY, stormy, base(stormy), v1, WORKERS)
    assert night.decision.publish
    table = night.plan.selected.plan.table
    v2 = replace(table, version=2, predicted={**table.predicted, **night.prediction.predicted()})
    again = plan_night(POLICY, stormy, base(stormy), v2, WORKERS)
    assert (again.decision.publish, again.decision.rule) == (True, "rerun")
    assert again.plan.selected.plan.table.same_routing(v2)
    assert again.prediction == night.prediction
    assert not again.pruned_moves


def test_a_drained_worker_re_plans_and_says_what_changed():
    days = traffic(3)
    v1 = first_version(days)
    drained = Workers((Worker("w0", state="draining"), *WORKERS.items[1:]))
    night = plan_night(POLICY, days, base(days), v1, drained)
    assert night.decision.publish and night.decision.rule == "workers"
    assert "w0 draining" in night.decision.reason
    table = night.plan.selected.plan.table
    assert "w0" not in table.key_group_worker


def test_workers_change_names_added_removed_drained_and_capacities_beyond_the_tolerance():
    new = Workers((Worker("w0", 1.2), Worker("w1", state="draining"), Worker("w9")))
    said = workers_change(Workers.homogeneous(3), new, 0.05)
    assert said == "w9 added, w2 removed, w0 capacity 1 → 1.2, w1 draining"
    assert workers_change(WORKERS, Workers((Worker("w0", 1.04), *WORKERS.items[1:])), 0.05) is None


def test_nights_over_counts_the_days_before_the_newest_in_a_row_over_the_threshold():
    days = traffic(5, seed=4)
    v1 = first_version(days.first(1))
    scores = [day_score(v1, days, d, WORKERS).peak_excess for d in range(5)]
    threshold = float(np.median(scores[:4]))
    expected = 0
    for value in scores[3::-1]:
        if value <= threshold:
            break
        expected += 1
    assert nights_over(daily_scores(v1, days, WORKERS), threshold) == expected
    assert nights_over(daily_scores(v1, days, WORKERS), 10.0) == 0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.3))
def test_pruning_never_adds_a_move_and_keeps_the_plan_within_its_bound(seed, threshold):
    days = traffic(3, seed=seed, volume=2e5)
    rng = np.random.default_rng(seed)
    names = np.array(WORKERS.names)
    current = RoutingTable("s", "kg", WORKERS, tuple(rng.choice(names, GROUPS)))
    history = days
    loads = forecast_loads(history, base(history), 0.75, 0.8)
    plan = plan_night(POLICY, history, base(history), None, WORKERS).plan.selected.plan
    full = finish_plan(plan.table, loads, current)
    rules = GateRules(threshold=threshold)
    pruned, given_back = prune(full, current, loads, history, WORKERS, rules)
    before = {m.unit for m in full.moves}
    after = {m.unit for m in pruned.moves}
    assert after <= before and len(before) - len(after) == given_back
    stacked = History(("all",), np.nan_to_num(history.units).reshape(1, -1, GROUPS))
    score = lambda t: day_score(t, stacked, 0, WORKERS).peak_excess  # noqa: E731
    full_score, pruned_score, base_score = score(full.table), score(pruned.table), score(current)
    assert pruned_score <= full_score + rules.min_gain + 1e-9
    if given_back:
        assert base_score - pruned_score >= rules.min_gain - 1e-9  # it still pays
    if full_score <= threshold:
        assert pruned_score <= threshold + 1e-9


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000))
def test_pruning_against_a_table_that_split_a_key_the_plan_keeps_whole_stays_in_its_bound(seed):
    """The version in force splits a hot key the plan keeps in its group: a move given back
    carries the key with its group (the pruned table's routing), so the bound holds."""
    days = traffic(3, seed=seed, volume=2e5)
    loads_of = LoadSnapshot("s", np.ones(GROUPS))
    key = "hot"
    group = loads_of.hot_key_group(key)
    hot = 0.6 * np.nan_to_num(days.units[:, :, group])  # most of its group's load
    history = History(days.days, days.units, {key: hot})
    rng = np.random.default_rng(seed)
    names = np.array(WORKERS.names)
    current = RoutingTable(
        "s", "kg", WORKERS, tuple(rng.choice(names, GROUPS)), {key: (("w0", 1.0), ("w1", 1.0))}
    )
    loads = forecast_loads(history, base(history), 0.75, 0.8)
    planned = plan_night(POLICY, history, base(history), None, WORKERS).plan.selected.plan
    whole = replace(planned.table, hot_keys={})
    full = finish_plan(whole, loads, current)
    rules = GateRules(threshold=0.0)
    pruned, _ = prune(full, current, loads, history, WORKERS, rules)
    stacked = History(
        ("all",), np.nan_to_num(history.units).reshape(1, -1, GROUPS), {key: hot.reshape(1, -1)}
    )
    score = lambda t: day_score(t, stacked, 0, WORKERS).peak_excess  # noqa: E731
    assert score(pruned.table) <= score(full.table) + rules.min_gain + 1e-9


def test_a_partition_assignment_changes_only_when_a_consumer_it_reads_with_stops():

    packed = PartitionAssignment(
        "s", "mwf", Workers((Worker("w0"), Worker("c1"))), {0: "w0", 1: "c1"}
    )
    assert routing_change(packed, Workers.homogeneous(3), 0.05) is None  # w1, w2: unused
    drained = Workers((Worker("w0", state="draining"), Worker("w1")))
    assert routing_change(packed, drained, 0.05) == "w0 draining"


def test_validate_bounds_a_forecast_plan_by_what_runs_without_it_on_the_same_loads():
    days = traffic(3)
    first = plan_night(POLICY, days, base(days), None, WORKERS)
    kg = first.plan.candidate("kg").plan.predicted["imbalance"]
    assert first.reference_imbalance == pytest.approx(kg)  # no LATEST: the hash routing's
    assert first.document()["reference_imbalance"] == pytest.approx(kg)
    v1 = first_version(days)
    later = plan_night(POLICY, days, base(days), v1, WORKERS)
    assert later.reference_imbalance == pytest.approx(later.plan.current_imbalance)
    # a plan that trades the mean for the worst window, published on out-of-sample evidence:
    # its own fitted imbalance is the bound; on any other rule LATEST's stays
    plan = later.plan.selected.plan
    fitted = later.plan.current_imbalance + 0.2
    worse = replace(
        plan, table=replace(plan.table, predicted={**plan.predicted, "imbalance": fitted})
    )
    traded = replace(later, plan=with_selected(later.plan, worse, "traded"))
    proven = replace(traded, decision=replace(later.decision, rule="held_out"))
    assert proven.reference_imbalance == pytest.approx(fitted)
    assert traded.reference_imbalance == pytest.approx(later.plan.current_imbalance)


def test_a_version_is_out_of_sample_on_a_day_only_if_it_was_published_before_it_ended():

    v1 = RoutingTable("s", "kg", WORKERS, ("w0",) * GROUPS).published(
        1, None, "2026-11-21T02:00:00+00:00"
    )
    assert fitted_before(v1, "2026-11-21")  # published in the night after 11-20: 11-21 unseen
    assert not fitted_before(v1, "2026-11-20")  # the day it was planned from
    assert fitted_before(v1, "night 3")  # no date: assumed unseen


def test_a_removed_worker_re_plans_and_pruning_keeps_the_moves_off_it():
    days = traffic(3, seed=6, volume=2e5)
    v1 = first_version(days)
    three = Workers(WORKERS.items[:3])  # w3 is gone
    night = plan_night(POLICY, days, base(days), v1, three)
    assert night.decision.rule == "workers" and "w3 removed" in night.decision.reason
    table = night.plan.selected.plan.table
    assert "w3" not in table.key_group_worker  # no move back to a worker the plan lacks


def test_the_forecast_loads_carry_the_days_window_profile_and_the_night_holds_every_window():
    rng = np.random.default_rng(4)
    phase = rng.integers(0, 24, GROUPS)
    hours = np.arange(24)[:, None]
    shape = 1.0 + 0.9 * np.cos(2 * np.pi * (hours - phase) / 24)  # each group its own peak hour
    units = np.stack([rng.poisson(400.0 * shape / shape.mean()) for _ in range(4)]).astype(float)
    history = History(tuple(f"d{d}" for d in range(4)), units)
    loads = forecast_loads(history, base(history), 0.75, 0.8)
    assert loads.key_group_windows is not None and loads.key_group_windows.shape == (24, GROUPS)
    milp = replace(POLICY, strategy="milp", budget=Budget(time_limit_s=2.0))
    night = plan_night(milp, history, base(history), None, WORKERS)
    one_load = replace(loads, key_group_windows=None)  # the same forecast, one load per group
    plain = get_strategy("milp").plan(one_load, None, WORKERS, Budget(time_limit_s=2.0))
    held = day_score(night.plan.selected.plan.table, history, 3, WORKERS).peak_excess
    assert held < day_score(plain.table, history, 3, WORKERS).peak_excess
    assert held < 0.10
