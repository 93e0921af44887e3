"""The planning load of the next day, forecast from several days of windows, and its score.

A plan fitted on one busy hour fits that hour's noise: with a few events per key group per
hour, the hour after looks different, and a plan that balances the peak hour can unbalance the
others. The forecast plans on every unit (key group, hot key, partition) at once, from the
windows of the last ``history_days`` days:

    forecast[u] = weighted quantile q of { load[d, t, u] : day d, window t },
                  weight of day d = decay ** (age of day d in days)

a decayed high quantile per unit — never a smoothing of worker totals, which depend on the
routing that was in force. ``q`` = 0.75 plans for a busy window of each unit, not its mean
(chosen by ``bench/closed_loop.py``: 0.5 re-plans stationary traffic, 0.9 overweights the
small, noisy units), and ``decay`` = 0.8 halves a day's say in about three days (Kubernetes'
VPA recommends from a decaying histogram the same way).

The planners that can take several windows (``milp``, ``cg``, the bin packers) also get the
day's shape, ``window_profile``: per window of the day (the same time of every day), each unit's
decayed mean over the days that have it — the expected load of the window, so a plan keeps every
hour within its share, not only the sum of each unit's busy hours — shrunk towards the stream's
common shape as far as the day-to-day spread explains a unit's departure from it (``shrunk``),
and scaled to the unit's forecast (``at_forecast_level``). A bin packer fills consumers up to a
capacity, so partitions get the window's decayed quantile instead.

The score of a table on a day is what the nightly gate compares (``routeplan.streams.gate``):
its peak excess over the day's windows (``routeplan.planning.metrics.peak_excess``) and the band
of its per-window imbalance (p10, p90). Scored on a day it was not fitted on, it is an
out-of-sample prediction of the next day.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from routeplan.planning.metrics import imbalance, peak_excess

DEFAULT_HISTORY_DAYS = 7
DEFAULT_QUANTILE = 0.75
DEFAULT_DECAY = 0.8


@dataclass(frozen=True)
class ForecastRules:
    """How a stream's planning load is forecast (policy section ``planning``)."""

    history_days: int = DEFAULT_HISTORY_DAYS  # days of windows the forecast reads
    quantile: float = DEFAULT_QUANTILE
    decay: float = DEFAULT_DECAY


def forecast(
    history: np.ndarray, quantile: float = DEFAULT_QUANTILE, decay: float = DEFAULT_DECAY
) -> np.ndarray:
    """The forecast load of every unit from ``history`` (days × windows × units, oldest day
    first): each unit's weighted ``quantile`` over all windows of all days, a day weighing
    ``decay ** age`` (the newest day 1). A window a day does not have is NaN in every unit and
    weighs nothing. Exact at the sample points (the lower of two values on a tie of weights),
    total and non-negative for non-negative input."""
    loads = np.asarray(history, dtype=float)
    if loads.ndim != 3 or loads.shape[0] == 0 or loads.shape[1] == 0:
        raise ValueError(f"history must be days × windows × units, got shape {loads.shape}")
    if not 0.0 <= quantile <= 1.0 or not 0.0 < decay <= 1.0:
        raise ValueError(f"quantile in [0, 1] and decay in (0, 1] ({quantile}, {decay})")
    days, windows, units = loads.shape
    weights = np.repeat(decay ** np.arange(days - 1, -1, -1, dtype=float), windows)
    samples = loads.reshape(days * windows, units)
    present = ~np.isnan(samples).all(axis=1)
    if not present.any():
        raise ValueError("history has no window")
    weights, samples = weights[present], np.nan_to_num(samples[present])
    order = np.argsort(samples, axis=0, kind="stable")
    ranked = np.take_along_axis(samples, order, axis=0)
    cumulative = np.cumsum(weights[order], axis=0) / weights.sum()
    index = np.argmax(cumulative >= quantile - 1e-12, axis=0)
    return ranked[index, np.arange(units)]


def window_profile(
    history: np.ndarray, decay: float = DEFAULT_DECAY, quantile: float | None = None
) -> np.ndarray:
    """The load of every unit in every window of a day, windows × units, from ``history``
    (days × windows × units, oldest first): over the days that have window ``t`` (weight
    ``decay ** age``), its decayed mean — what a balance is planned on, ``shrunk`` towards the
    stream's common shape as far as the day-to-day spread explains it — or, with ``quantile``,
    its decayed quantile (``forecast`` of that window alone: what a capacity is planned on).
    The windows no day has are left out."""
    loads = np.asarray(history, dtype=float)
    if loads.ndim != 3 or loads.shape[0] == 0:
        raise ValueError(f"history must be days × windows × units, got shape {loads.shape}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"decay in (0, 1], got {decay}")
    present = ~np.isnan(loads).all(axis=2)  # days × windows
    weight = decay ** np.arange(loads.shape[0] - 1, -1, -1, dtype=float)[:, None] * present
    kept = weight.sum(axis=0) > 0
    if not kept.any():
        raise ValueError("history has no window")
    if quantile is not None:
        return np.stack([forecast(loads[:, [t]], quantile, decay) for t in np.flatnonzero(kept)])
    weight, values = weight[:, kept], np.nan_to_num(loads[:, kept])
    share = weight / weight.sum(axis=0)
    mean = np.einsum("dt,dtu->tu", share, values)
    spread = np.einsum("dt,dtu->tu", share, (values - mean) ** 2)
    samples = 1.0 / (share**2).sum(axis=0)  # the effective number of days of each window
    noise = np.where(samples[:, None] > 1, spread / np.maximum(samples[:, None] - 1, 1), np.inf)
    return shrunk(mean, noise)


def shrunk(mean: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``mean`` (windows × units) shrunk per unit towards the stream's common shape, by how much
    of the unit's departure from that shape noise explains (James–Stein): with ``r`` the rank-1
    profile (the stream's share of each window × the unit's total),
    ``r + λ_u (mean − r)``, ``λ_u = max(0, 1 − Σ_t noise[t, u] / Σ_t (mean − r)²[t, u])``.
    ``noise`` is the variance of each mean (inf: unknown, e.g. one day — the shape alone). So
    a unit whose hours differ from the stream's only by chance is planned on the stream's shape,
    and the worst-window search does not chase noise."""
    total = mean.sum()
    if total <= 0:
        return mean
    rank1 = np.outer(mean.sum(axis=1) / total, mean.sum(axis=0))
    departure = ((mean - rank1) ** 2).sum(axis=0)
    explained = np.divide(
        noise.sum(axis=0), departure, out=np.ones_like(departure), where=departure > 0
    )
    keep = np.clip(1.0 - explained, 0.0, 1.0)
    return rank1 + keep * (mean - rank1)


def at_forecast_level(profile: np.ndarray, level: np.ndarray) -> np.ndarray:
    """``profile`` (windows × units) scaled per unit so that its mean over the windows is the
    unit's forecast ``level``: the shape of each unit's day at the load its plan balances (a
    unit without load in the profile keeps none)."""
    mean = profile.mean(axis=0)
    return profile * np.divide(level, mean, out=np.zeros_like(mean), where=mean > 0)


@dataclass(frozen=True)
class Score:
    """A table's numbers on one day: peak excess, day imbalance, per-window imbalance band."""

    peak_excess: float
    day_imbalance: float
    low: float  # p10 of the per-window imbalance
    high: float  # p90

    @classmethod
    def of(
        cls, window_loads: np.ndarray, capacity: np.ndarray, active: np.ndarray | None = None
    ) -> Score:
        """The score of worker loads ``window_loads`` (windows × workers)."""
        loads = np.atleast_2d(np.asarray(window_loads, dtype=float))
        per_window = [imbalance(row, capacity, active) for row in loads if row.sum() > 0]
        low, high = np.percentile(per_window, [10, 90]) if per_window else (0.0, 0.0)
        return cls(
            peak_excess=peak_excess(loads, capacity, active),
            day_imbalance=imbalance(loads.sum(axis=0), capacity, active),
            low=float(low),
            high=float(high),
        )
