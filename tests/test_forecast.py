"""The forecast of every window (routeplan.streams.forecast): a decayed high quantile per unit,
and a table's score on a day."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from routeplan.planning.metrics import imbalance, peak_excess
from routeplan.streams.forecast import Score, forecast, newest_level


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
    raised = newest_level(mean, history)
    np.testing.assert_allclose(raised[:, 0], [10.0, 10.0])  # the steady unit as it was
    np.testing.assert_allclose(raised[:, 1], [4.0, 6.0])  # the new one at its newest day's
    cooled = history[::-1]  # the same unit, hot on the oldest day only: its mean stays
    np.testing.assert_allclose(newest_level(cooled.mean(axis=0), cooled), cooled.mean(axis=0))
