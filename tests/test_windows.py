"""Planning on every window of the day: the worst-window search (``routeplan.planning.windows``),
the window profile of the forecast, and the planners that take several windows — milp and cg
(key routing), the bin packers and binpack_milp (partitions)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot, PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.metrics import peak_excess
from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions.exact import binpack_milp
from routeplan.planning.partitions.packing import pack
from routeplan.planning.registry import get_strategy
from routeplan.planning.windows import lower_peak
from routeplan.streams.forecast import forecast, profile, window_profile
from routeplan.streams.history import window_loads


def shifted_peaks(units: int, seed: int, windows: int = 24) -> np.ndarray:
    """windows × units: every unit follows a daily cycle peaking at its own hour."""
    rng = np.random.default_rng(seed)
    phase = rng.integers(0, windows, units)
    size = rng.pareto(1.5, units) + 1.0
    hours = np.arange(windows)[:, None]
    return size * (1.0 + 0.9 * np.cos(2 * np.pi * (hours - phase) / windows))


def worker_windows(assign: np.ndarray, unit_windows: np.ndarray, workers: int) -> np.ndarray:
    return np.stack([unit_windows[:, assign == w].sum(axis=1) for w in range(workers)], axis=1)


@settings(max_examples=60, deadline=None)
@given(
    units=st.integers(1, 30),
    workers=st.integers(2, 6),
    windows=st.integers(1, 5),
    seed=st.integers(0, 10_000),
    forbidden=st.integers(0, 5),
)
def test_the_worst_window_search_never_raises_the_peak_and_keeps_its_limits(
    units, workers, windows, seed, forbidden
):
    rng = np.random.default_rng(seed)
    x = rng.exponential(1.0, (windows, units)) * (rng.random(units) < 0.8)
    assign = rng.integers(0, workers, units)
    capacity = rng.uniform(0.5, 2.0, workers)
    active = np.ones(workers, bool)
    active[0] = workers > 2 and seed % 2 == 0  # sometimes a draining worker
    movable = rng.random(units) < 0.7
    moves: list[tuple[int, int]] = []
    result = lower_peak(
        assign, x, np.zeros((windows, workers)), capacity, active, movable,
        lambda step: all(w != forbidden for _, w in step), lambda u, w: moves.append((u, w)),
    )  # fmt: skip
    before = peak_excess(worker_windows(assign, x, workers), capacity, active)
    after = peak_excess(worker_windows(result, x, workers), capacity, active)
    assert after <= before + 1e-9
    changed = np.flatnonzero(result != assign)
    assert set(changed) == {u for u, _ in moves}  # every move was reported, once
    assert len(moves) == len(set(u for u, _ in moves))
    assert np.all(movable[changed])
    assert all(active[w] and w != forbidden for _, w in moves)
    if moves:
        assert after < before


def test_the_worst_window_search_spreads_units_that_peak_together():
    x = np.array([[4.0, 4.0, 0.0, 0.0], [0.0, 0.0, 4.0, 4.0]])  # two pairs, peaking apart
    assign = np.array([0, 0, 1, 1])  # each pair on one worker, the third idle: peak excess 2
    result = lower_peak(
        assign, x, np.zeros((2, 3)), np.ones(3), np.ones(3, bool), np.ones(4, bool),
        lambda step: True, lambda u, w: None,
    )  # fmt: skip
    assert peak_excess(worker_windows(assign, x, 3)) == pytest.approx(2.0)
    assert peak_excess(worker_windows(result, x, 3)) == pytest.approx(0.5)  # 4 of 8/3 each
    assert np.count_nonzero(result != assign) == 2
    assert worker_windows(result, x, 3).max() == 4.0  # no worker has both of a pair


def test_units_of_one_size_that_peak_together_are_swapped_apart():
    x = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # a morning pair, an evening pair
    assign = np.array([0, 0, 1, 1])  # no single move helps: the receiver would peak as high
    steps: list[tuple[int, int]] = []
    result = lower_peak(
        assign, x, np.zeros((2, 2)), np.ones(2), np.ones(2, bool), np.ones(4, bool),
        lambda step: True, lambda u, w: steps.append((u, w)),
    )  # fmt: skip
    assert peak_excess(worker_windows(assign, x, 2)) == pytest.approx(1.0)
    assert peak_excess(worker_windows(result, x, 2)) == pytest.approx(0.0)
    assert len(steps) == 2 and {result[0], result[1]} == {0, 1}
    refused = lower_peak(
        assign, x, np.zeros((2, 2)), np.ones(2), np.ones(2, bool), np.ones(4, bool),
        lambda step: len(step) == 1, lambda u, w: None,
    )  # fmt: skip
    assert np.array_equal(refused, assign)  # the budget allows single moves only


def test_a_step_that_gains_less_than_min_gain_is_not_taken():
    x = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    args = (np.zeros((2, 2)), np.ones(2), np.ones(2, bool), np.ones(4, bool))
    kept = lower_peak(
        np.array([0, 0, 1, 1]), x, *args, lambda s: True, lambda u, w: None, min_gain=1.5
    )
    assert np.array_equal(kept, [0, 0, 1, 1])  # the swap takes 1.0 off the peak: not enough


def test_the_window_profile_keeps_a_units_own_hours_unless_held_out_days_say_shrinking_helps():
    rng = np.random.default_rng(0)
    shape = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # 3 windows × 2 units, peaks apart
    steady = np.stack([shape * 100 + rng.normal(0, 1, shape.shape) for _ in range(5)])
    kept = profile(steady, decay=1.0)
    assert kept.shrinkage < 0.05 and kept.held_out_days == 5  # the days agree: own hours
    np.testing.assert_allclose(kept.loads, steady.mean(axis=0), atol=1.0)
    hours = np.arange(24)[:, None]
    smooth = 50 + 40 * np.cos(2 * np.pi * (hours - np.array([[3, 15]])) / 24)  # peaks apart
    one_day = profile(smooth[None], decay=1.0)  # windows held out: smooth hours are real
    assert one_day.shrinkage < 0.05 and one_day.held_out_days == 0
    np.testing.assert_allclose(one_day.loads, smooth, rtol=0.05)
    flat = profile(rng.poisson(np.full((1, 24, 40), 4.0)).astype(float), decay=1.0)
    assert flat.shrinkage > 0.8  # one day of noise around one shape: the shape
    noisy = np.stack([rng.poisson(np.full((3, 2), 3.0)) for _ in range(8)]).astype(float)
    found = profile(noisy, decay=1.0)  # every unit flat: its departures are chance
    assert found.shrinkage > 0.5
    common = np.outer(found.loads.sum(axis=1), found.loads.sum(axis=0)) / found.loads.sum()
    mean = noisy.mean(axis=0)
    assert np.abs(found.loads - common).sum() < np.abs(mean - common).sum()  # chance, shrunk
    np.testing.assert_allclose(found.loads.sum(axis=0), mean.sum(axis=0))  # each total kept


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 6), st.floats(0.3, 1.0))
def test_the_chosen_shrinkage_never_predicts_held_out_days_worse_than_none(seed, days, decay):
    rng = np.random.default_rng(seed)
    history = rng.gamma(2.0, 1.0, (days, 4, 5)) * rng.integers(1, 50, (1, 1, 5))
    chosen = profile(history, decay)
    assert 0.0 <= chosen.shrinkage <= 1.0 and chosen.held_out_days in (0, days)

    def held_out_error(keep: float) -> float:  # leave-one-day-out, as profile() scores
        error = 0.0
        for h in range(days):
            others = np.delete(history, h, axis=0)
            weight = decay ** np.delete(np.arange(days - 1, -1, -1.0), h)
            mean = np.einsum("d,dtu->tu", weight / weight.sum(), others)
            common = np.outer(mean.sum(axis=1), mean.sum(axis=0)) / mean.sum()
            error += ((common + keep * (mean - common) - history[h]) ** 2).sum()
        return error

    assert held_out_error(1.0 - chosen.shrinkage) <= held_out_error(1.0) + 1e-6
    assert held_out_error(1.0 - chosen.shrinkage) <= held_out_error(0.0) + 1e-6


def test_the_window_profile_with_a_quantile_is_each_windows_own_forecast():
    history = np.array(
        [
            [[1.0, 0.0], [np.nan, np.nan], [2.0, 2.0]],
            [[3.0, 4.0], [np.nan, np.nan], [4.0, 2.0]],
        ]
    )  # 2 days × 3 windows × 2 units; window 1 on no day
    high = window_profile(history, decay=0.5, quantile=0.9)
    assert high.shape == (2, 2)  # the window no day has is left out
    np.testing.assert_allclose(high[1], forecast(history[:, [2]], 0.9, 0.5))
    np.testing.assert_allclose(high[0], forecast(history[:, [0]], 0.9, 0.5))


def test_loads_refuse_windows_of_another_shape():
    with pytest.raises(ValueError, match="windows must be windows × 3 units"):
        LoadSnapshot("s", np.ones(3), key_group_windows=np.ones((2, 4)))
    with pytest.raises(ValueError, match="finite and >= 0"):
        PartitionLoad("s", np.ones(2), partition_windows=np.array([[1.0, -1.0]]))


WORKERS = Workers(tuple(Worker(f"w{i}", 1.0) for i in range(6)))


@pytest.mark.parametrize("strategy", ["lpt", "milp", "cg"])
def test_key_routing_planners_given_the_days_windows_lower_its_peak_excess(strategy):
    windows = shifted_peaks(120, seed=3)
    one = LoadSnapshot("s", np.quantile(windows, 0.75, axis=0))
    budget = Budget(time_limit_s=1.0)
    plain = get_strategy(strategy).plan(one, None, WORKERS, budget)
    daily = get_strategy(strategy).plan(
        replace(one, key_group_windows=windows), None, WORKERS, budget
    )
    peak = {
        name: peak_excess(window_loads(p.table, windows))
        for name, p in [("one", plain), ("day", daily)]
    }
    assert peak["day"] < 0.5 * peak["one"]
    assert peak["day"] < 0.1


def test_milp_keeps_its_max_load_distance_when_it_lowers_the_worst_window():
    windows = shifted_peaks(80, seed=5)
    loads = LoadSnapshot("s", np.quantile(windows, 0.75, axis=0), key_group_windows=windows)
    capped = get_strategy("milp", max_load_distance=0.02).plan(
        loads, None, WORKERS, Budget(time_limit_s=1.0)
    )
    assert capped.predicted["load_distance"] <= 0.02 + 1e-6
    assert "window_moves" not in capped.predicted  # the window moves broke the cap: not taken


@settings(max_examples=40, deadline=None)
@given(rates=st.lists(st.floats(0.0, 12.0), min_size=1, max_size=25), seed=st.integers(0, 99))
def test_one_window_packs_as_the_rates_alone(rates, seed):
    rates = np.array(rates)
    previous = np.random.default_rng(seed).integers(-1, 4, rates.size)
    for name in ("ff", "bfd", "wf", "mwf", "mbfp"):
        alone = pack(name, rates, 10.0, previous).assignment
        np.testing.assert_array_equal(pack(name, rates[None, :], 10.0, previous).assignment, alone)


@pytest.mark.parametrize("name", ["ffd", "bfd", "mwf", "mbfp", "binpack_milp"])
def test_packers_given_the_days_windows_fit_every_window_with_fewer_consumers(name):
    windows = shifted_peaks(40, seed=7)
    capacity = 3.0 * float(windows.max())
    on_peaks = pack(name, heuristics.peak(windows), capacity, time_limit_s=2.0).assignment
    packed = pack(name, windows, capacity, time_limit_s=2.0).assignment
    for consumer in np.unique(packed):
        members = np.flatnonzero(packed == consumer)
        assert members.size == 1 or windows[:, members].sum(axis=1).max() <= capacity * (1 + 1e-9)
    assert np.unique(packed).size < np.unique(on_peaks).size


def test_binpack_milp_bounds_consumers_by_the_busiest_window():
    windows = np.array([[6.0, 6.0, 0.0, 0.0], [0.0, 0.0, 6.0, 6.0]])
    result = binpack_milp(windows, 10.0, time_limit_s=2.0)
    assert np.unique(result.assignment).size == 2  # one per window's pair would be 4 on peaks


def test_a_packers_plan_on_the_days_windows_is_judged_on_them():
    windows = shifted_peaks(40, seed=9)
    forecast_rates = np.quantile(windows, 0.75, axis=0)
    capacity = float(windows.max()) * 30 / 25  # the bin capacity C is 25/30 of it
    consumers = Workers(tuple(Worker(f"c{i}", capacity) for i in range(40)))
    mwf = get_strategy("mwf")
    daily = mwf.plan(PartitionLoad("s", forecast_rates, windows), None, consumers, Budget())
    alone = mwf.plan(PartitionLoad("s", forecast_rates), None, consumers, Budget())
    assert daily.predicted["overloaded"] == 0  # in every window, as it was packed
    assert daily.predicted["lower_bound"] <= daily.predicted["consumers"]
    assert daily.predicted["consumers"] < alone.predicted["consumers"]  # hours that differ share
    judged = finish_plan(alone.table, PartitionLoad("s", forecast_rates, windows), None)
    assert alone.predicted["overloaded"] == 0 < judged.predicted["overloaded"]  # one load hid it
