"""A published plan's outcome (``routeplan.streams.outcomes``): the measures of each kind and the
verdicts (the regression guard's decisions: test_loop_state.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.metrics import observed_imbalance
from routeplan.planning.registry import get_strategy
from routeplan.streams.outcomes import (
    in_sample,
    judge,
    measures,
    outcome,
    predicted_measures,
    prediction,
    unknown_workers,
)

WORKERS = Workers.homogeneous(4)


@pytest.fixture(scope="module")
def table(skewed_module):
    plan = get_strategy("cg").plan(skewed_module, None, WORKERS, Budget())
    return replace(plan.table, version=2, parent_version=1)


@pytest.fixture(scope="module")
def skewed_module():
    from conftest import zipf_snapshot

    return zipf_snapshot(keys=2000, messages=40_000, num_key_groups=128)


def test_key_routing_is_measured_by_the_one_imbalance_definition(table):
    loads = {"w0": 10.0, "w1": 30.0, "w2": 20.0, "w3": 20.0}
    assert measures(table, loads).imbalance == observed_imbalance(loads, WORKERS)
    assert measures(table, loads).headline("key_routing") == pytest.approx(0.5)
    assert predicted_measures(table).imbalance == table.predicted["imbalance"]
    assert unknown_workers(table, {"w0": 1.0, "x": 2.0, "y": 0.0}) == ["x"]


def test_partitions_are_measured_against_the_bin_capacity():
    rates = np.array([0.6, 0.6, 0.6, 0.6, 0.3, 0.3])
    plan = get_strategy("mwf", consumer_capacity=1.0).plan(
        PartitionLoad("orders", rates), None, Workers.homogeneous(6), Budget()
    )
    table = plan.table
    capacity = table.params["bin_capacity"]
    predicted = predicted_measures(table)
    assert predicted.overloaded == 0 and predicted.overload == 0.0
    assert predicted.consumers == plan.predicted["consumers"]
    assert predicted.lower_bound == int(np.ceil(rates.sum() / capacity))
    # a consumer reading two partitions carries twice C for 10 s: half of the rate is above C
    counts = Counter(table.partition_consumer.values())
    shared = next(c for c, n in counts.items() if n > 1)
    seen = measures(table, {shared: 20 * capacity, "idle": 0.0}, seconds=10)
    assert (seen.consumers, seen.overloaded, seen.overload) == (1, 1, pytest.approx(0.5))
    assert seen.headline("partition_assignment") == pytest.approx(0.5)
    # a partition above C alone on its consumer is nobody's overload: no plan does better
    alone = get_strategy("mwf", consumer_capacity=1.0).plan(
        PartitionLoad("orders", np.array([3.0, 0.2, 0.2])), None, Workers.homogeneous(3), Budget()
    )
    single = next(c for c, n in Counter(alone.table.partition_consumer.values()).items() if n == 1)
    assert measures(alone.table, {single: 3.0}).overload == 0.0


def test_the_lower_bound_gives_a_partition_above_c_one_consumer_as_the_planner_does():
    """Paper 002: a partition above C needs a consumer of its own, not ⌈rate / C⌉ of them — the
    bound is the planner's (``scores.lower_bound``), never more consumers than partitions."""
    rates = np.array([3.0, 2.5, 0.2, 0.2])
    plan = get_strategy("mwf", consumer_capacity=1.0).plan(
        PartitionLoad("orders", rates), None, Workers.homogeneous(4), Budget()
    )
    table, capacity = plan.table, plan.table.params["bin_capacity"]
    assert 0.4 <= capacity < 2.5  # two partitions above C, the other two fit one consumer
    assert predicted_measures(table).lower_bound == plan.predicted["lower_bound"] == 3
    # the logs give consumers' loads: a consumer's rate is split over its partitions as planned
    loads = Counter()
    for partition, consumer in table.partition_consumer.items():
        loads[consumer] += 2 * rates[partition]  # twice the planned rates
    realized = measures(table, dict(loads))
    assert realized.lower_bound == 2 + int(np.ceil(0.8 / capacity * (1 - 1e-9)))
    assert realized.lower_bound <= len(rates)


@pytest.mark.parametrize(
    ("predicted", "realized", "day", "day_before", "verdict"),
    [
        (0.1, 0.5, 0.5, 0.3, "regressed"),
        (0.1, 0.15, 0.15, 0.9, "as_predicted"),
        (0.1, 0.4, 0.4, 0.9, "improved"),
        (0.1, 0.4, 0.4, 0.45, "off_prediction"),
        (0.1, 0.15, 0.15, None, "as_predicted"),
        (None, 0.4, 0.4, None, "off_prediction"),
        (0.1, None, None, 0.3, "unknown"),
        # one bad hour is not a regression: the day as a whole is weighed
        (0.1, 0.9, 0.32, 0.3, "off_prediction"),
        (0.1, 0.12, 0.6, 0.3, "regressed"),
    ],
)
def test_verdicts(predicted, realized, day, day_before, verdict):
    assert judge(predicted, realized, day, day_before, 0.10) == verdict


@pytest.mark.parametrize(
    ("band", "day", "verdict"),
    [
        ("inside", 0.5, "as_predicted"),  # the band decides, not the window's point
        ("above", 0.45, "off_prediction"),
        ("below", 0.5, "off_prediction"),
        ("inside", 0.9, "regressed"),  # a worse day is still a regression
        ("above", 0.1, "improved"),
    ],
)
def test_a_version_planned_on_the_forecast_is_judged_by_its_band(band, day, verdict):
    assert judge(0.1, 0.11, day, 0.5, 0.10, band) == verdict


def test_an_outcome_carries_the_predicted_band_and_where_the_realized_fell(table):
    banded = replace(
        table,
        predicted={
            **table.predicted,
            "peak_excess": 0.2,
            "peak_excess_low": 0.1,
            "peak_excess_high": 0.3,
        },
    )
    found = outcome("s", "2026-01-02", 1, banded, "event_version", 10.0, None, None, None, 0.1,
                    peak=(0.35, None))  # fmt: skip
    assert (found.predicted_peak_excess, found.predicted_low, found.predicted_high) == (
        0.2,
        0.1,
        0.3,
    )
    assert found.band == "above"
    assert outcome("s", "2026-01-02", 1, table, "event_version", 10.0, None, None, None, 0.1,
                   peak=(0.35, None)).band is None  # fmt: skip


def test_a_version_fitted_on_its_own_day_shows_no_prediction_and_is_judged_by_the_day_before(
    table,
):
    banded = {"peak_excess": 0.2, "peak_excess_low": 0.1, "peak_excess_high": 0.3}
    fitted = replace(table, predicted={**table.predicted, **banded, "out_of_sample": 0.0})
    unseen = replace(fitted, predicted={**fitted.predicted, "out_of_sample": 1.0})
    assert in_sample(fitted) and not in_sample(unseen) and not in_sample(table)
    assert prediction(fitted, "imbalance") is None
    assert prediction(unseen, "peak_excess") == 0.2
    args = ("event_version", 10.0, None, None, None, 0.1)
    found = outcome("s", "2026-01-02", 1, fitted, *args, peak=(0.25, None))
    assert (found.predicted, found.band, found.predicted_peak_excess) == (None, None, None)
    assert found.verdict != "as_predicted"
    assert outcome("s", "2026-01-02", 1, unseen, *args, peak=(0.25, None)).band == "inside"


def test_an_outcome_without_traffic_or_table_says_so(table):
    quiet = outcome("s", "2026-11-21", 2, table, "event_version", 0, None, None, None, 0.1)
    assert quiet.verdict == "no_traffic" and quiet.realized is None
    gone = outcome("s", "2026-11-21", 9, None, "published_before", 50, None, None, None, 0.1)
    assert gone.verdict == "unknown" and "v9 is not in the routing store" in gone.note
    seen = measures(table, {"w0": 10.0, "w1": 10.0, "w2": 10.0, "w3": 10.0})
    before = measures(table, {"w0": 40.0, "w1": 0.0, "w2": 0.0, "w3": 0.0})
    done = outcome(
        "s", "2026-11-21", 2, table, "event_version", 40, seen, seen, before, 0.1, (), before
    )
    assert done.realized == done.realized_day == 0.0
    assert done.previous_realized == done.previous_realized_day == pytest.approx(3.0)
    assert done.error == pytest.approx(-done.predicted)
    assert done.verdict in ("as_predicted", "improved")


def test_a_version_that_routed_part_of_the_day_is_not_compared_with_the_whole_day_before(table):
    """Defect 5: with partial stamping one version's share was compared with the whole previous
    day; below MIN_ATTRIBUTED_SHARE there is no regressed or improved verdict, and the share is
    reported."""
    bad = measures(table, {"w0": 40.0})
    before = measures(table, {"w0": 10.0, "w1": 10.0, "w2": 10.0, "w3": 10.0})
    args = ("s", "2026-11-21", 2, table, "event_version", 40, bad, bad, before, 0.1, (), before)
    assert outcome(*args, attributed_share=0.9).verdict == "regressed"
    partial = outcome(*args, attributed_share=0.3)
    assert partial.verdict == "off_prediction" and partial.attributed_share == 0.3
    assert "v2 routed 30% of the day's messages" in partial.note


def test_the_days_peak_excess_is_measured_with_the_versions_own_workers(table):
    from routeplan.planning.metrics import peak_excess
    from routeplan.streams.outcomes import day_peak_excess

    windows = {0: {"w0": 10.0, "w1": 10.0, "w2": 10.0, "w3": 10.0}, 1: {"w0": 14.0, "w1": 2.0}}
    expected = peak_excess(np.array([[10.0, 10.0, 10.0, 10.0], [14.0, 2.0, 0.0, 0.0]]))
    assert day_peak_excess(table, windows) == pytest.approx(expected) == pytest.approx(0.4)
    assert day_peak_excess(table, {0: {"x": 1.0}}) is None  # a worker it never had
    assert day_peak_excess(table, {}) is None
    seen = measures(table, windows[0])
    done = outcome(
        "s", "2026-11-21", 2, table, "event_version", 40, seen, seen, seen, 0.1, (), seen,
        peak=(0.4, 0.1),
    )  # fmt: skip
    assert (done.realized_peak_excess, done.previous_peak_excess) == (0.4, 0.1)
