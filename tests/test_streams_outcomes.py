"""A published plan's outcome (``routeplan.streams.outcomes``): the measures of each kind, the
verdicts, and the regression guard's decision."""

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
from routeplan.streams.outcomes import guard as decide
from routeplan.streams.outcomes import (
    judge,
    measures,
    outcome,
    predicted_measures,
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


def regressed(table, day="2026-11-21", verdict="regressed"):
    """An outcome of ``table`` on ``day`` with ``verdict`` (all load on w0 after two workers)."""
    realized = measures(table, {"w0": 40.0})
    before = measures(table, {"w0": 10.0, "w1": 10.0})
    found = outcome(
        "s", day, table.version, table, "event_version", 10, realized, None, before, 0.1
    )
    return replace(found, verdict=verdict)


def test_the_guard_acts_once_per_regression_by_the_policy(table):
    predecessor = replace(table, version=1, parent_version=None)
    history = [regressed(table)]
    decision = decide("rollback", 1, 0.1, history, table, predecessor, acted_before=False)
    assert (decision.action, decision.restore_version) == ("rollback", 1)
    assert decision.reason.startswith("regression: v2's realized imbalance over 2026-11-21")
    assert decide("hold", 1, 0.1, history, table, predecessor, False).action == "hold"
    assert decide("alert", 1, 0.1, history, table, predecessor, False).restore_version is None
    assert decide("rollback", 1, 0.1, history, table, predecessor, True).action is None


def test_the_guard_waits_for_regression_days_and_never_acts_without_traffic(table):
    predecessor = replace(table, version=1)
    one = [regressed(table, "2026-11-20", "as_predicted"), regressed(table)]
    assert decide("rollback", 2, 0.1, one, table, predecessor, False).action is None
    two = [regressed(table, "2026-11-20"), regressed(table, "2026-11-21", "no_traffic")]
    assert decide("rollback", 1, 0.1, two, table, predecessor, False).action is None
    quiet_between = [regressed(table, "2026-11-19"), two[1], regressed(table)]
    assert decide("rollback", 2, 0.1, quiet_between, table, predecessor, False).action == "rollback"


def test_the_guard_acts_only_if_the_predecessor_did_better_on_the_same_traffic(table):
    predecessor = replace(table, version=1, parent_version=None)
    history = [regressed(table)]

    def replayed(ours, theirs):
        return decide("rollback", 1, 0.1, history, table, predecessor, False, (ours, theirs))

    drifted = replayed(0.22, 0.26)  # v1 would have done worse on that day: the traffic changed
    assert drifted.action is None
    assert "v1 would not have done better on the same traffic by more than 0.10" in drifted.reason
    assert "v2 0.2200, v1 0.2600" in drifted.reason
    assert replayed(0.30, 0.21).action is None  # within the tolerance of 0.1
    confirmed = replayed(0.40, 0.21)
    assert (confirmed.action, confirmed.restore_version) == ("rollback", 1)
    assert confirmed.reason.startswith("regression: v2's realized imbalance")
    assert confirmed.reason.endswith("v2 0.4000, v1 0.2100; back to v1's routing")


def test_the_guard_does_not_compare_across_a_change_of_workers(table):
    other = replace(table, version=1, workers=Workers.homogeneous(5))
    decision = decide("rollback", 1, 0.1, [regressed(table)], table, other, False)
    assert decision.action is None and "workers differ" in decision.reason
    assert decide("rollback", 1, 0.1, [regressed(table)], table, None, False).action is None
