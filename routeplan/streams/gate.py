"""Publish only what pays: the nightly gate between a new plan and the version in force.

Re-planning every night publishes whatever the gain: on stationary traffic a plan fitted on
yesterday's noise moves hundreds of key groups for nothing. The gate keeps the version in force
unless replacing it pays, with hysteresis, as Cruise Control (act only outside a balance
threshold), Pulsar's AvgShedder (act only after a gap persists) and KIP-441 (an assignment that
is balanced is not altered) do. Its inputs are ``routeplan.streams.forecast.Score``s on the same
day's windows:

* ``in_force`` — the version in force, on a day it was not fitted on;
* ``held_out`` — a candidate fitted on the days before, scored on this day: out-of-sample
  evidence that re-planning helps (None when there is no earlier day);
* ``refit`` — the candidate to publish, fitted on the days up to this one (in sample here).

Rules, in order (``GateRules``; the headline is the peak excess):

0. a rerun of the night that planned the version in force (same loads, workers and
   parameters: ``routeplan.streams.service.rerun_of``) → its table again, which publishes
   nothing: the night's decision was taken when it first ran, against the version in force
   then, and a task may run twice;
1. no version in force → publish (the first version);
2. the workers changed (added, drained, removed, or a capacity beyond the tolerance) → publish;
3. the version in force within ``threshold`` → keep it (``nights_over`` back to 0);
4. over the threshold on fewer than ``persistence`` nights in a row, and not far over (below
   ``far`` × the threshold) → keep it, counting the night;
5. the held-out candidate beats the version in force by ``min_gain`` (absolute, and
   ``min_relative_gain`` of the version in force's measure, and the day-to-day noise of one
   day's comparison: ``day_noise``) → publish the refit; far over the threshold, the refit
   beating it by as much on the day is enough (a new hot key cannot wait for a second night
   of evidence);
6. otherwise keep it, and say the gain that was missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from routeplan.streams.forecast import Score


@dataclass(frozen=True)
class GateRules:
    """The gate's thresholds (policy section ``rebalance``)."""

    threshold: float = 0.10  # peak excess the version in force may have (Cruise Control: 1.10)
    min_gain: float = 0.02  # absolute gain in peak excess a new version must bring …
    min_relative_gain: float = 0.10  # … and relative to the version in force's peak excess
    persistence: int = 2  # nights over the threshold before re-planning (AvgShedder: 8 checks)
    far: float = 2.0  # × threshold: one night is enough


@dataclass(frozen=True)
class GateDecision:
    """Publish the refit or keep the version in force; why; the nights over the threshold in a
    row after this night; which rule decided (``RULES``)."""

    publish: bool
    reason: str
    nights_over: int
    rule: str = ""


# the rules in the order they are tried (the module docstring)
RULES = ("rerun", "first", "workers", "within", "waiting", "held_out", "far", "no_gain")


# Student's t percentiles by degrees of freedom 1 … 10, and the normal's (from 30 on): σ
# estimated from n days is itself uncertain, so a band or a test from few days is wider
_T = {
    0.90: ((3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372), 1.2816),
    0.95: ((6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812), 1.6449),
}


def student_t(df: int, level: float) -> float:
    """Student's t distribution's ``level`` percentile (0.90 or 0.95) with ``df`` ≥ 1 degrees
    of freedom: the table's to 10, the normal's from 30, interpolated in 1/df between."""
    if df < 1:
        raise ValueError("Student's t needs at least one degree of freedom")
    table, normal = _T[level]
    if df <= len(table):
        return table[df - 1]
    if df >= 30:
        return normal
    share = (1 / df - 1 / 30) / (1 / len(table) - 1 / 30)
    return normal + share * (table[-1] - normal)


def t90(df: int) -> float:
    """Student's t 90th percentile (the p10–p90 band's half width in standard errors)."""
    return student_t(df, 0.90)


def day_noise(headlines: Sequence[float]) -> float:
    """The gain a plan shows over another on one day by chance: two tables' scores on a day
    each vary from day to day by σ (estimated by s, the standard deviation of the version in
    force's daily ``headlines`` on the days before the one judged: a change on that day is
    what is tested, not noise), so their difference by √2 σ, and a gain is
    real at 95 % above t95(n − 1) √2 s (one-sided: a gate checks every night, and a new
    version costs moves). Fewer than three days: 0 (too few to estimate σ; the other rules
    stand). Stationary traffic at a few events per key group and window moves no key for a
    lucky day."""
    n = len(headlines)
    if n < 3:
        return 0.0
    spread = float(np.std(np.asarray(headlines, dtype=float), ddof=1))
    return student_t(n - 1, 0.95) * float(np.sqrt(2.0)) * spread


def pays(gain: float, base: float, rules: GateRules, noise: float = 0.0) -> bool:
    """Whether a ``gain`` over a measure of ``base`` is worth a new version: at least
    ``min_gain``, ``min_relative_gain`` of ``base`` and the ``noise`` of a one-day comparison."""
    return gain >= max(rules.min_gain, rules.min_relative_gain * max(base, 0.0), noise)


def gate(
    in_force: Score | None,
    held_out: Score | None,
    refit: Score,
    nights_over: int,
    rules: GateRules = GateRules(),
    workers_changed: str | None = None,
    version: int | None = None,
    noise: float = 0.0,
    rerun: str | None = None,
) -> GateDecision:
    """The night's decision (see the module docstring); ``workers_changed`` says how the
    workers changed (None: they did not), ``version`` names the version in force, ``noise``
    the gain one day's comparison shows by chance (``day_noise``), which a gain must pass,
    ``rerun`` why this run repeats the one that planned the version in force (None: it does
    not)."""
    name = f"v{version}" if version is not None else "the version in force"
    if rerun is not None:
        return GateDecision(True, rerun, 0, "rerun")
    if in_force is None:
        return GateDecision(True, "first version", 0, "first")
    if workers_changed:
        return GateDecision(
            True, f"the workers changed ({workers_changed}): re-planned", 0, "workers"
        )
    current = in_force.peak_excess
    if current <= rules.threshold:
        return GateDecision(
            False,
            f"{name} within threshold: peak excess {current:.4f} ≤ {rules.threshold}",
            0,
            "within",
        )
    over = nights_over + 1
    far = current >= rules.far * rules.threshold
    if over < rules.persistence and not far:
        return GateDecision(
            False,
            f"{name} over threshold ({current:.4f} > {rules.threshold}) on {over} of the "
            f"{rules.persistence} nights in a row the gate waits for",
            over,
            "waiting",
        )
    if held_out is not None and pays(current - held_out.peak_excess, current, rules, noise):
        return GateDecision(
            True,
            f"{name}'s peak excess {current:.4f} > {rules.threshold}; a plan fitted on the days "
            f"before scores {held_out.peak_excess:.4f} on this day (out of sample)",
            0,
            "held_out",
        )
    if far and pays(current - refit.peak_excess, current, rules, noise):
        return GateDecision(
            True,
            f"{name} far over threshold ({current:.4f} ≥ {rules.far} × {rules.threshold}); "
            f"the plan scores {refit.peak_excess:.4f} on the day",
            0,
            "far",
        )
    best = min(refit.peak_excess, held_out.peak_excess if held_out else refit.peak_excess)
    chance = f", and {noise:.4f}, the day-to-day noise" if noise > rules.min_gain else ""
    return GateDecision(
        False,
        f"{name} over threshold ({current:.4f}), but no plan gains {rules.min_gain} "
        f"(and {rules.min_relative_gain:.0%}{chance}) on it: best {best:.4f}",
        over,
        "no_gain",
    )
