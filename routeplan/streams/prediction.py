"""What a table in force tomorrow is expected to realize: a point and a p10–p90 band of the
headline measure (peak excess, or a partition assignment's peak overload) and, for key
routing, the day imbalance.

A table published tonight is predicted at its out-of-sample score (``predict``: a score on a
day it was not fitted on; a table fitted on its own day is flagged ``out_of_sample`` false and
shown as no prediction); a table kept, at the mean of its days since it came into force with
Student's band (``predict_kept``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.model.table import Table
from routeplan.streams.forecast import Score
from routeplan.streams.gate import t90

# the headline measure the gate, the prediction and outcomes use, by kind
MEASURES = {"key_routing": "peak_excess", "partition_assignment": "peak_overload"}
NEW_BAND = 0.03  # half width of the band of a table with one day of evidence: max(0.03, 50 %)


@dataclass(frozen=True)
class Prediction:
    """What the version in force tomorrow is expected to realize: ``point`` and the p10–p90
    band of ``measure`` over the windows of a day, ``out_of_sample`` when the point is a score
    on a day the table was not fitted on."""

    point: float
    low: float
    high: float
    out_of_sample: bool
    measure: str = MEASURES["key_routing"]
    imbalance: float | None = None  # the day imbalance, scored as the point is (key routing)
    imbalance_low: float | None = None
    imbalance_high: float | None = None

    def verdict(self, realized: float) -> str:
        """``inside``, ``above`` or ``below`` the band."""
        if realized > self.high:
            return "above"
        return "below" if realized < self.low else "inside"

    def document(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "point": self.point,
            "low": self.low,
            "high": self.high,
            "out_of_sample": self.out_of_sample,
            "imbalance": self.imbalance,
            "imbalance_low": self.imbalance_low,
            "imbalance_high": self.imbalance_high,
        }

    def predicted(self) -> dict[str, float]:
        """What a table published on this prediction records in ``predicted``: the measure's
        point and band (``peak_excess``, ``peak_excess_low``, ``peak_excess_high``), for key
        routing the day ``imbalance`` with its band, and ``out_of_sample`` (1 or 0: 0 says
        the numbers are fitted on the day the plan was made from, not a prediction)."""
        found = {
            self.measure: self.point,
            f"{self.measure}_low": self.low,
            f"{self.measure}_high": self.high,
            "out_of_sample": float(self.out_of_sample),
        }
        if self.imbalance is not None:
            found["imbalance"] = self.imbalance
            found["imbalance_low"] = float(self.imbalance_low or 0.0)
            found["imbalance_high"] = float(self.imbalance_high or 0.0)
        return found

    @classmethod
    def recorded(cls, table: Table) -> Prediction | None:
        """The prediction ``table`` was published with (``predicted``), or None when it has
        none (published before predictions were recorded)."""
        measure = MEASURES.get(table.kind, MEASURES["key_routing"])
        found = table.predicted
        if not {measure, f"{measure}_low", f"{measure}_high", "out_of_sample"} <= set(found):
            return None
        imbalance = found.get("imbalance") if "imbalance_low" in found else None
        return cls(
            float(found[measure]),
            float(found[f"{measure}_low"]),
            float(found[f"{measure}_high"]),
            bool(found["out_of_sample"]),
            measure,
            None if imbalance is None else float(imbalance),
            found.get("imbalance_low"),
            found.get("imbalance_high"),
        )


def headlines(scores: list[Score]) -> np.ndarray:
    """The headline measure of each score."""
    return np.array([s.peak_excess for s in scores])


def predict(
    scores: list[Score],
    point: float,
    out_of_sample: bool,
    kind: str,
    imbalance: float | None = None,
    replaced: list[Score] | None = None,
) -> Prediction:
    """The band around ``point`` (one day's score), never below 0: tomorrow's score less that
    day's varies by √2 × σ, σ the standard deviation of the table's daily ``scores`` over the
    history — or of the daily scores of the table it ``replaced``, when those spread more (a
    new table's days are mostly those it was fitted on: they understate how days differ) — so
    the band is ± t90(n − 1) √2 s (at least 0.01; Student's t, as σ is estimated from the n
    days' s); with fewer than three days — too few to estimate σ — it is
    ± max(``NEW_BAND``, half the point). ``kind``: the table's, which names the measure. For
    key routing ``imbalance`` (the day imbalance scored as ``point`` is) gets its band the same
    way from the daily scores' day imbalance."""
    evidence = [days for days in (scores, replaced or []) if len(days) >= 3]

    def band(value: float, measure: str) -> tuple[float, float]:
        if not evidence:
            half = max(NEW_BAND, 0.5 * value)
        else:
            spread = max(
                t90(len(days) - 1) * float(np.std([getattr(s, measure) for s in days], ddof=1))
                for days in evidence
            )
            half = max(np.sqrt(2.0) * spread, 0.01)
        return max(value - half, 0.0), value + half

    low, high = band(point, "peak_excess")
    day = (None, None, None)
    if imbalance is not None and kind == "key_routing":
        day = (imbalance, *band(imbalance, "day_imbalance"))
    return Prediction(point, low, high, out_of_sample, MEASURES[kind], *day)


def predict_kept(
    scores: list[Score], unseen: list[Score], out_of_sample: bool, kind: str
) -> Prediction:
    """What a table kept in force realizes tomorrow, from its daily ``scores`` over the
    history and those of the days it was not fitted on (``unseen``, the days since it came
    into force): with three of those or more, their mean with the predictive band of one more
    day, ± t90(m − 1) · s · √(1 + 1/n) (s the standard deviation of m days' scores; Student's,
    as σ is estimated from m days), s from the unseen days or from every day of the history,
    whichever spreads more — a few days since it came into force often understate how days
    differ, as a new table's do; else ``predict`` on the newest day's score."""
    n = len(unseen)
    if n < 3:
        newest = scores[-1]
        return predict(scores, newest.peak_excess, out_of_sample, kind, newest.day_imbalance)

    def band(measure: str) -> tuple[float, float, float]:
        point = float(np.mean([getattr(s, measure) for s in unseen]))
        half = max(
            t90(len(days) - 1) * float(np.std([getattr(s, measure) for s in days], ddof=1))
            for days in (unseen, scores)
            if len(days) >= 3
        )
        half = max(half * np.sqrt(1 + 1 / n), 0.01)
        return point, max(point - half, 0.0), point + half

    point, low, high = band("peak_excess")
    day = band("day_imbalance") if kind == "key_routing" else (None, None, None)
    return Prediction(point, low, high, out_of_sample, MEASURES[kind], *day)


__all__ = ["MEASURES", "Prediction", "headlines", "predict", "predict_kept"]
