"""The planning load of the next day, forecast from several days of windows, and its score.

A plan fitted on one busy hour fits that hour's noise: with a few events per key group per
hour, the hour after looks different, and a plan that balances the peak hour can unbalance the
others. The forecast plans on every unit (key group, hot key, partition) at once, from the
windows of the last ``history_days`` days:

    forecast[u] = weighted quantile q of { load[d, t, u] : day d, window t },
                  weight of day d = decay ** (age of day d in days)

a decayed high quantile per unit — never a smoothing of worker totals, which depend on the
routing that was in force — and ``decay`` = 0.8 halves a day's say in about three days
(Kubernetes' VPA recommends from a decaying histogram the same way). A partition assignment is
planned on it: a bin packer fills consumers up to a capacity, so partitions get the decayed
quantile ``q`` (0.75: a busy window of each partition), over the day and per window.

Key routing balances **expected** loads instead: each unit's ``profile``, its decayed mean in
every window of the day (the same time of every day), so a plan keeps every hour within its
share — and a small, noisy key group is not weighed up against the big ones, as a high quantile
per unit would. Real keys have their own hours (a destination's flights, a region's traffic):
the profile keeps each unit's own, and pulls them towards the stream's common shape only as far
as leave-one-day-out cross-validation on the stream's own history says it predicts a held-out
day better (``profile``: the best shrinkage in closed form, reported by the night). One day of
history is no reason to assume every key peaks when the stream does: it is planned on its own
hours. Weekdays and weekend days move keys' levels their own ways: when the history has both
and the units' levels differ between them beyond chance, a plan holds each kind's windows
(``kind_windows``, ``planned_windows``).

The score of a table on a day is what the nightly gate compares (``routeplan.streams.gate``):
its peak excess over the day's windows (``routeplan.planning.metrics.peak_excess``) and the band
of its per-window imbalance (p10, p90). Scored on a day it was not fitted on, it is an
out-of-sample prediction of the next day.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

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


@dataclass(frozen=True)
class Profile:
    """The load of every unit in every window of a day (``loads``, windows × units) and how far
    it was pulled towards the stream's common shape: ``shrinkage`` 0 keeps each unit's own
    hours, 1 gives every unit the stream's shape; ``held_out_days`` is how many days the
    choice was scored on (0: too few days to judge, no shrinkage)."""

    loads: np.ndarray
    shrinkage: float = 0.0
    held_out_days: int = 0


def window_profile(
    history: np.ndarray, decay: float = DEFAULT_DECAY, quantile: float | None = None
) -> np.ndarray:
    """The load of every unit in every window of a day, windows × units, from ``history``
    (days × windows × units, oldest first): over the days that have window ``t`` (weight
    ``decay ** age``), its decayed mean shrunk as far as held-out days say it helps
    (``profile``) — what a balance is planned on — or, with ``quantile``, its decayed quantile
    (``forecast`` of that window alone: what a capacity is planned on). The windows no day has
    are left out."""
    if quantile is None:
        return profile(history, decay).loads
    loads, present = _checked(history, decay)
    kept = present.any(axis=0)
    return np.stack([forecast(loads[:, [t]], quantile, decay) for t in np.flatnonzero(kept)])


def profile(history: np.ndarray, decay: float = DEFAULT_DECAY) -> Profile:
    """Each unit's decayed mean in every window of the day (the windows some day has), pulled
    towards the stream's common shape by the shrinkage held-out days choose.

    With ``m`` the decayed means and ``r`` the rank-1 common shape (each window's share of the
    stream × the unit's total), a profile ``r + κ (m − r)`` keeps a share ``κ`` of each unit's
    own hours. Leave-one-day-out: for every day ``h``, ``m_h`` and ``r_h`` fitted on the other
    days and ``a_h`` day ``h``'s loads; the squared error ``Σ_h Σ_{t,u} (r_h + κ (m_h − r_h) −
    a_h)²`` is a parabola in ``κ``, least at

        κ* = clip(Σ_h ⟨m_h − r_h, a_h − r_h⟩ / Σ_h ‖m_h − r_h‖², 0, 1)

    (squared errors in load: a big unit's hours weigh more than a small, noisy unit's). With one
    day, windows are held out instead (``_within_day``): each window predicted from its
    neighbours — real hours are smooth, noise is not — so one day is no reason to assume every
    unit peaks when the stream does, nor to plan on its noise."""
    loads, present = _checked(history, decay)
    kept = present.any(axis=0)
    values = np.nan_to_num(loads[:, kept])
    present = present[:, kept]
    ages = decay ** np.arange(loads.shape[0] - 1, -1, -1, dtype=float)
    mean = _decayed_mean(values, ages[:, None] * present)
    days = [h for h in range(values.shape[0]) if present[h].any()]
    num = den = 0.0
    for h in days if len(days) > 1 else ():
        weight = ages[:, None] * present
        weight[h] = 0.0
        both = present[h] & (weight.sum(axis=0) > 0)
        if not both.any():
            continue
        fitted = _decayed_mean(values[:, both], weight[:, both])
        common = _common_shape(fitted)
        own, actual = fitted - common, values[h][both] - common
        num += float((own * actual).sum())
        den += float((own**2).sum())
    common = _common_shape(mean)
    if len(days) == 1:
        num, den = _within_day(mean, common)
    keep = 1.0 if den <= 0 else float(np.clip(num / den, 0.0, 1.0))
    held = len(days) if len(days) > 1 and den > 0 else 0
    return Profile(common + keep * (mean - common), 1.0 - keep, held)


def _within_day(day: np.ndarray, common: np.ndarray) -> tuple[float, float]:
    """The terms of κ* on one day (windows × units) with its ``common`` shape: every window
    held out in turn and predicted by the mean of its neighbours (one at either end), own
    hours ``n`` against the common shape's ``c`` — ``Σ ⟨n − c, a − r⟩`` and ``Σ ‖n − c‖²``.
    Fewer than three windows: nothing to judge by (0, 0: own hours)."""
    if day.shape[0] < 3:
        return 0.0, 0.0

    def neighbours(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        out[1:-1] = (x[:-2] + x[2:]) / 2
        out[0], out[-1] = x[1], x[-2]
        return out

    own = neighbours(day) - neighbours(common)
    return float((own * (day - common)).sum()), float((own**2).sum())


WEEKEND = (5, 6)  # Saturday and Sunday (date.weekday()): the days of the other kind


def day_kinds(days: Sequence[str]) -> np.ndarray | None:
    """Each day's kind, 0 a weekday and 1 a weekend day (``WEEKEND``), from its ISO date; None
    when some day is not named by a date (one kind of day)."""
    try:
        return np.array([int(date.fromisoformat(d).weekday() in WEEKEND) for d in days])
    except (TypeError, ValueError):
        return None


def planned_windows(
    histories: Sequence[tuple[np.ndarray, Profile | None]], decay: float, days: Sequence[str]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each set of units of the same days (key groups, hot keys: ``history``, days ×
    windows × units, with its ``profile`` when the caller has it), the windows a plan must hold
    and each unit's load (its profile's mean).

    The windows are every kind of day's (``kind_windows``), stacked, when the units of some set
    move their level between kinds, and the profile otherwise — for every set alike, so that
    they describe the same windows. Both are at the newest day's level where that day was a
    level shift (``newest_factor``, against the windows of its own kind of day: a weekend is no
    level shift after weekdays)."""
    kinds = day_kinds(days)
    fits = [(history, fitted or profile(history, decay)) for history, fitted in histories]
    found = [kind_windows(history, decay, kinds, fitted) for history, fitted in fits]
    held = any(moved for _, moved in found) and len({tuple(b) for b, _ in found}) == 1
    planned = []
    for (history, fitted), (blocks, _) in zip(fits, found, strict=True):
        if held and kinds is not None:
            windows = np.concatenate(list(blocks.values()))
            newest = blocks.get(int(kinds[-1]), fitted.loads)
        else:
            windows = newest = fitted.loads
        factor = newest_factor(newest, history)
        planned.append((windows * factor, (fitted.loads * factor).mean(axis=0)))
    return planned


def kind_windows(
    history: np.ndarray, decay: float, kinds: np.ndarray | None, fitted: Profile
) -> tuple[dict[int, np.ndarray], bool]:
    """``fitted`` (``profile`` of ``history``, every day) at each kind of day's level, by kind,
    and whether some unit's level moved between the kinds (else each kind is ``fitted`` at the
    stream's level of that kind: a scale, which a balance does not see). No kinds to tell apart
    (one kind, or fewer days than kinds + 1: no noise to judge by): ``({}, False)``.

    A weekend moves every key's level its own way (a business key quiet, a leisure key
    busier); a profile of the last days' mean is neither a weekday nor a weekend day, and a
    plan of it holds neither. Each unit's level on kind ``k`` is ``f = T_k / T`` (its decayed
    mean day total on the days of kind ``k``, against every day's), shrunk towards the
    stream's own ``f̄`` as empirical Bayes says (Efron–Morris): ``f̄ + B (f − f̄)``,
    ``B = τ² / (τ² + σ²)``, ``σ²`` the noise of the unit's ``f`` (a day total's variance taken
    as φ × its mean, as a count's, φ pooled over the units' days within a kind; over the
    effective days and ``T²``) and ``τ²`` how far the units' ``f`` spread beyond their noise
    (0 unless by more than twice the spread's standard error, √(2/n) σ̄², over n units). A day
    a unit carried no load (a hot key not among the day's top keys) is no evidence of its
    level."""
    if kinds is None or len(set(kinds.tolist())) < 2:
        return {}, False
    loads, present = _checked(history, decay)
    kept = present.any(axis=0)
    values, present = np.nan_to_num(loads[:, kept]), present[:, kept]
    counted = present.sum(axis=1)
    # each day's total per unit, a day missing windows scaled up to all of them; a unit's day
    # counts where it carried load (a hot key not among a day's top keys tells nothing then)
    daily = values.sum(axis=1) * (kept.sum() / np.maximum(counted, 1))[:, None]
    seen = (counted > 0)[:, None] & (daily > 0)
    ages = (decay ** np.arange(loads.shape[0] - 1, -1, -1, dtype=float))[:, None] * seen
    present_kinds = sorted(set(kinds[counted > 0].tolist()))
    every, _ = _weighted(daily, ages)
    spread, freedom = np.zeros_like(every), np.zeros_like(every)
    for kind in present_kinds:
        mask = seen & (kinds == kind)[:, None]
        mine, n = _weighted(daily, mask.astype(float))
        spread += (mask * (daily - mine) ** 2).sum(axis=0)
        freedom += np.maximum(n - 1, 0)
    if (freedom * every).sum() <= 0:
        return {}, False
    # a day total's variance, φ × its mean as a count's (φ pooled over the units: one unit's
    # own few days would make its noise, and so its shrinkage, a matter of luck)
    dispersion = spread.sum() / (freedom * every).sum()
    found, moved = {}, False
    for kind in present_kinds:
        weight = ages * (kinds == kind)[:, None]
        mine, total = _weighted(daily, weight)
        live = (every > 0) & (total > 0)
        if not live.any():  # no unit carried load on this kind's days
            found[int(kind)] = fitted.loads
            continue
        stream = float(mine[live].sum() / every[live].sum())
        level = mine[live] / every[live]
        days = total[live] ** 2 / (weight[:, live] ** 2).sum(axis=0)  # effective days
        noise = dispersion / (days * every[live])
        signal = float(np.mean((level - stream) ** 2) - noise.mean())
        if signal < 2.0 * np.sqrt(2.0 / level.size) * noise.mean():  # within chance (2 SE)
            signal = 0.0
        moved = moved or signal > 0
        shrunk = np.full_like(every, stream)
        shrunk[live] = stream + signal / (signal + noise + 1e-300) * (level - stream)
        found[int(kind)] = fitted.loads * shrunk
    return found, moved


def _weighted(daily: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's ``weight``-ed mean of ``daily`` (days × units; 0 without weight) and its
    total weight."""
    total = weight.sum(axis=0)
    mean = np.divide((weight * daily).sum(axis=0), total, out=np.zeros_like(total), where=total > 0)
    return mean, total


JUMP = 1.5  # a unit's newest day above JUMP × its profile's level is a level shift, not noise


def newest_factor(profile: np.ndarray, history: np.ndarray) -> np.ndarray:
    """Each unit's factor on ``profile`` (windows × units, from ``history``, days × windows ×
    units): its newest day's level over the profile's where that day carried more than
    ``JUMP`` times the profile, else 1 — a decayed mean lags a key that just turned hot (one day
    of 5 % among seven days of none is planned at a quarter of it), while a unit a little above
    its mean on one day is noise, not weighed up; a unit that cooled keeps its mean until the
    days agree."""
    loads = np.asarray(history, dtype=float)
    newest = loads[-1]
    present = ~np.isnan(newest).all(axis=1)
    ones = np.ones(profile.shape[1])
    if not present.any() or newest.shape[0] != profile.shape[0]:
        return ones
    last = np.nan_to_num(newest[present]).sum(axis=0)
    mine = profile[present].sum(axis=0)
    raise_to = np.divide(last, mine, out=ones.copy(), where=mine > 0)
    return np.where(raise_to > JUMP, raise_to, 1.0)


def _checked(history: np.ndarray, decay: float) -> tuple[np.ndarray, np.ndarray]:
    loads = np.asarray(history, dtype=float)
    if loads.ndim != 3 or loads.shape[0] == 0:
        raise ValueError(f"history must be days × windows × units, got shape {loads.shape}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"decay in (0, 1], got {decay}")
    present = ~np.isnan(loads).all(axis=2)  # days × windows
    if not present.any():
        raise ValueError("history has no window")
    return loads, present


def _decayed_mean(values: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per window the ``weight``-ed mean of ``values`` (days × windows × units) over the days."""
    total = weight.sum(axis=0)
    share = np.divide(weight, total, out=np.zeros_like(weight), where=total > 0)
    return np.einsum("dt,dtu->tu", share, values)


def _common_shape(mean: np.ndarray) -> np.ndarray:
    """The rank-1 profile of ``mean`` (windows × units): each window's share of the stream ×
    each unit's total."""
    total = mean.sum()
    if total <= 0:
        return np.zeros_like(mean)
    return np.outer(mean.sum(axis=1) / total, mean.sum(axis=0))


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
