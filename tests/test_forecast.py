"""The forecast of every window (routeplan.streams.forecast): a decayed high quantile per unit,
and a table's score on a day."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from routeplan.planning.metrics import imbalance, peak_excess
from routeplan.streams.forecast import (
    Score,
    day_kinds,
    forecast,
    kind_windows,
    newest_factor,
    planned_windows,
    profile,
)


def test_the_forecast_is_each_units_weighted_quantile_over_every_window_of_every_day():
    # one unit, two days of two windows: the newer day weighs 1, the older 0.5
    history = np.array([[[10.0], [20.0]], [[1.0], [2.0]]])
    # sorted: 1 (w 1), 2 (w 1), 10 (w .5), 20 (w .5): cumulative .33 .67 .83 1.0
    assert forecast(history, quantile=0.5, decay=0.5) == pytest.approx([2.0])
    assert forecast(history, quantile=0.75, decay=0.5) == pytest.approx([10.0])
    assert forecast(history, quantile=1.0, decay=0.5) == pytest.approx([20.0])
    assert forecast(history, quantile=0.0, decay=0.5) == pytest.approx([1.0])
    # without decay the days weigh alike
    assert forecast(history, quantile=0.5, decay=1.0) == pytest.approx([2.0])
    with pytest.raises(ValueError, match="days × windows × units"):
        forecast(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="quantile in"):
        forecast(history, quantile=1.5)


@given(
    arrays(
        float,
        st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4)),
        elements=st.floats(0, 1e6),
    ),  # fmt: skip
    st.floats(0, 1),
    st.floats(0.05, 1),
)
def test_a_forecast_is_one_of_the_units_own_loads_and_grows_with_the_quantile(h, q, decay):
    found = forecast(h, q, decay)
    units = h.shape[2]
    assert found.shape == (units,)
    samples = h.reshape(-1, units)
    for u in range(units):
        assert found[u] in samples[:, u]
    assert np.all(forecast(h, min(q + 0.2, 1.0), decay) >= found)


def test_a_score_is_the_peak_excess_the_day_imbalance_and_the_window_band():
    loads = np.array([[10.0, 10.0], [0.0, 14.0], [5.0, 5.0]])
    found = Score.of(loads, np.ones(2))
    assert found.peak_excess == pytest.approx(peak_excess(loads))
    assert found.day_imbalance == pytest.approx(imbalance(loads.sum(axis=0)))
    windows = sorted(imbalance(row) for row in loads)
    assert found.low == pytest.approx(np.percentile(windows, 10))
    assert found.high == pytest.approx(np.percentile(windows, 90))
    assert Score.of(np.zeros((2, 2)), np.ones(2)) == Score(0.0, 0.0, 0.0, 0.0)


def test_a_unit_whose_newest_day_carried_more_is_planned_at_that_days_level():
    history = np.zeros((7, 2, 2))
    history[:, :, 0] = 10.0  # a steady unit
    history[-1, :, 1] = [4.0, 6.0]  # a key that turned hot on the newest day
    mean = history.mean(axis=0)
    raised = mean * newest_factor(mean, history)
    np.testing.assert_allclose(raised[:, 0], [10.0, 10.0])  # the steady unit as it was
    np.testing.assert_allclose(raised[:, 1], [4.0, 6.0])  # the new one at its newest day's
    cooled = history[::-1]  # the same unit, hot on the oldest day only: its mean stays
    np.testing.assert_allclose(newest_factor(cooled.mean(axis=0), cooled), [1.0, 1.0])


WEEK = tuple(f"2026-01-{d:02d}" for d in range(5, 19))  # Monday 5 January to Sunday 18


def test_day_kinds_are_weekdays_and_weekend_days_by_date_or_one_kind_without_dates():
    assert day_kinds(WEEK[:7]).tolist() == [0, 0, 0, 0, 0, 1, 1]
    assert day_kinds(("d0", "d1")) is None
    assert day_kinds(("2026-01-10", "yesterday")) is None


def week_of(days: int, weekend_level: float, seed: int = 0) -> np.ndarray:
    """``days`` days from Monday of 4 windows × 3 units: unit 0 busy at night, unit 1 by day,
    unit 2 flat; on weekend days unit 1 at ``weekend_level`` × its weekday load (Poisson)."""
    rng = np.random.default_rng(seed)
    shape = np.array([[40.0, 5.0, 10.0], [5.0, 40.0, 10.0], [5.0, 40.0, 10.0], [40.0, 5.0, 10.0]])
    kinds = day_kinds(WEEK[:days])
    level = np.ones((days, 1, 3))
    level[kinds == 1, 0, 1] = weekend_level
    return rng.poisson(shape[None] * level * 50).astype(float)


def test_each_kind_of_day_has_its_windows_when_the_days_differ_by_kind():
    history = week_of(14, weekend_level=4.0)
    kinds = day_kinds(WEEK)
    every = profile(history)
    found, moved = kind_windows(history, 0.8, kinds, every)
    assert moved and sorted(found) == [0, 1] and found[0].shape == found[1].shape == (4, 3)
    weekday, weekend = found[0], found[1]
    np.testing.assert_allclose(
        weekday.sum(axis=0), history[kinds == 0].mean(axis=0).sum(axis=0), rtol=0.05
    )
    np.testing.assert_allclose(
        weekend.sum(axis=0), history[kinds == 1].mean(axis=0).sum(axis=0), rtol=0.05
    )
    assert weekend[:, 1].sum() > 3 * weekday[:, 1].sum()


def test_one_kind_of_day_or_days_alike_plan_on_the_every_day_profile():
    weekdays = week_of(5, weekend_level=4.0)
    every = profile(weekdays)
    assert kind_windows(weekdays, 0.8, day_kinds(WEEK[:5]), every) == ({}, False)
    assert kind_windows(weekdays, 0.8, None, every) == ({}, False)
    alike = week_of(14, weekend_level=1.0, seed=3)
    every = profile(alike)
    found, _ = kind_windows(alike, 0.8, day_kinds(WEEK), every)
    # the units' levels spread by little more than their noise: each kind near the stream's
    # level (the profile alone when they spread by no more)
    for block in found.values():
        np.testing.assert_allclose(block, every.loads, rtol=0.03)
    rng = np.random.default_rng(5)
    many = rng.poisson(np.full((14, 4, 400), 200.0)).astype(float)  # 400 units, days alike
    every = profile(many)
    found, moved = kind_windows(many, 0.8, day_kinds(WEEK), every)
    assert not moved and sorted(found) == [0, 1]


def test_a_weekend_seen_on_one_day_already_moves_the_units_whose_level_moved_beyond_noise():
    history = week_of(6, weekend_level=4.0)  # Monday to Saturday: one weekend day
    found, moved = kind_windows(history, 0.8, day_kinds(WEEK[:6]), profile(history))
    weekday, weekend = found[0], found[1]
    assert moved
    assert weekend[:, 1].sum() > 2.5 * weekday[:, 1].sum()  # the unit that moved
    assert weekend[:, 0].sum() == pytest.approx(weekday[:, 0].sum(), rel=0.1)  # the others
    too_few = week_of(2, weekend_level=4.0)[[0, 1]]  # two days, two kinds: no noise to judge
    assert kind_windows(too_few, 0.8, np.array([0, 1]), profile(too_few)) == ({}, False)


def test_planned_windows_hold_every_kind_for_every_set_of_units_alike():
    """Key groups whose weekend differs and hot keys whose does not: both get both kinds'
    windows (they describe the same windows), and the newest day, a Sunday, is no level shift
    against the weekend's windows; days alike everywhere: the profile's windows."""
    groups = week_of(14, weekend_level=4.0)
    hot = np.random.default_rng(1).poisson(np.full((14, 4, 50), 300.0)).astype(float)
    (windows, load), (hot_windows, hot_load) = planned_windows(
        [(groups, None), (hot, None)], 0.8, WEEK
    )
    assert windows.shape == (8, 3) and hot_windows.shape == (8, 50)
    weekend = groups[day_kinds(WEEK) == 1].mean(axis=0).sum(axis=0)
    np.testing.assert_allclose(windows[4:].sum(axis=0), weekend, rtol=0.05)
    np.testing.assert_allclose(load, profile(groups).loads.mean(axis=0))
    alike = np.random.default_rng(2).poisson(np.full((14, 4, 400), 200.0)).astype(float)
    (windows, _), (hot_windows, _) = planned_windows([(alike, None), (hot, None)], 0.8, WEEK)
    assert windows.shape == (4, 400) and hot_windows.shape == (4, 50)
