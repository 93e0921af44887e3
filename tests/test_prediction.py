"""What a table in force tomorrow is predicted to realize (routeplan.streams.prediction): the
point, Student's band, and what a published table records."""

from __future__ import annotations

import numpy as np
import pytest

from routeplan.streams.forecast import Score
from routeplan.streams.gate import t90
from routeplan.streams.prediction import Prediction, predict, predict_kept


def scores(peaks: list[float], days: list[float] | None = None) -> list[Score]:
    """Daily scores with these peak excesses (and day imbalances: a tenth of them)."""
    days = days or [p / 10 for p in peaks]
    return [Score(p, d, 0.0, p) for p, d in zip(peaks, days, strict=True)]


CALM = scores([0.10, 0.11, 0.10, 0.12, 0.11, 0.10])
NOISY = scores([0.05, 0.20, 0.08, 0.25, 0.12, 0.02])


def test_a_prediction_says_where_the_realized_fell_and_its_band_widens_with_the_spread():
    p = Prediction(0.1, 0.05, 0.15, True)
    assert [p.verdict(x) for x in (0.01, 0.1, 0.2)] == ["below", "inside", "above"]
    assert p.document()["measure"] == "peak_excess"
    calm, noisy = predict(CALM, 0.1, True, "key_routing"), predict(NOISY, 0.1, True, "key_routing")
    assert noisy.high - noisy.low > calm.high - calm.low
    spread = t90(len(NOISY) - 1) * np.std([s.peak_excess for s in NOISY], ddof=1)
    assert noisy.high == pytest.approx(0.1 + np.sqrt(2) * spread)
    young = predict(CALM[:2], 0.2, True, "key_routing")
    assert (young.low, young.high) == pytest.approx((0.1, 0.3))  # ± half the point
    # a new table's days are mostly its own sample: the one it replaces says how days differ
    replacing = predict(CALM, 0.1, True, "key_routing", 0.05, NOISY)
    assert (replacing.low, replacing.high) == pytest.approx((noisy.low, noisy.high))
    assert replacing.imbalance == 0.05 and replacing.imbalance_low <= 0.05
    assert replacing.predicted()["out_of_sample"] == 1.0
    assert replacing.predicted()["imbalance_high"] >= 0.05
    assert predict(CALM, 0.1, False, "partition_assignment").measure == "peak_overload"


def test_a_kept_table_is_predicted_at_the_mean_of_its_days_with_students_band():
    kept = predict_kept(NOISY, NOISY, True, "key_routing")
    values = np.array([s.peak_excess for s in NOISY])
    assert kept.point == pytest.approx(values.mean())
    half = max(t90(len(values) - 1) * values.std(ddof=1) * np.sqrt(1 + 1 / len(values)), 0.01)
    assert (kept.low, kept.high) == pytest.approx(
        (max(values.mean() - half, 0), values.mean() + half)
    )
    assert kept.imbalance == pytest.approx(np.mean([s.day_imbalance for s in NOISY]))
    assert t90(1) > t90(5) > t90(12) > t90(40) == pytest.approx(1.2816)  # fewer days, wider
    young = predict_kept(NOISY, NOISY[-2:], True, "key_routing")  # two days: the newest
    assert young.point == pytest.approx(NOISY[-1].peak_excess)


def test_a_kept_tables_band_takes_the_historys_spread_when_its_days_in_force_agree():
    agree = scores([0.10, 0.1001, 0.1002])
    history = [*NOISY, *agree]
    pooled = predict_kept(history, agree, True, "key_routing")
    every = np.array([s.peak_excess for s in history])
    half = t90(len(every) - 1) * every.std(ddof=1) * np.sqrt(1 + 1 / 3)
    assert pooled.point == pytest.approx(0.1001)
    assert pooled.high - pooled.point == pytest.approx(half)
    alone = predict_kept(agree, agree, True, "key_routing")  # no wider history: the floor
    assert alone.high - alone.point == pytest.approx(0.01)


def test_a_published_table_records_its_prediction_and_reads_it_back():
    from routeplan.model.table import RoutingTable
    from routeplan.model.workers import Workers

    made = predict(NOISY, 0.12, True, "key_routing", 0.03, CALM)
    table = RoutingTable(
        "s", "lpt", Workers.homogeneous(2), ("w0", "w1"), predicted=made.predicted()
    )
    assert Prediction.recorded(table) == made
    assert (
        Prediction.recorded(RoutingTable("s", "lpt", Workers.homogeneous(2), ("w0", "w1"))) is None
    )
