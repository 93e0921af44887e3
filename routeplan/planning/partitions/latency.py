"""The latency model of paper 002 §VI-C (Eq. 16–27): fixed and rebalanced queues.

Each iteration lasts ``iteration_s`` with steady rates. A consumer of capacity C̄ reads two
queues: the *fixed* queue of partitions it kept (P_F, Eq. 17) and the *rebalanced* queue of
partitions moved to it (P_R, Eq. 16), unreadable for the first ``rebalance_s``. With no
rebalanced partition it reads the fixed queue at R_F = C̄, else at R_F = min(C̄, W_F) and the
rebalanced one at R_R = C̄ − R_F. The i-th byte of a queue written at W and read at R waits
L(i) = max{(1/R − 1/W)·i + b, 0} (Eq. 22, 27) with b = the fixed queue's last latency one
iteration earlier (Eq. 20) or ``rebalance_s``. A partition is rebalanced when it moves between
consumers (as for the Rscore, Eq. 11); a partition without a previous consumer is read at once.

Latencies are per byte, so each queue of each iteration is a segment over which latency is
linear in the byte index; quantiles are exact over all bytes (weights = bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segments:
    """One queue of one consumer in one iteration: ``weight`` bytes whose latency goes linearly
    from ``first`` to ``last`` seconds (then clipped at 0)."""

    weight: np.ndarray
    first: np.ndarray
    last: np.ndarray


def queue_segments(
    rates: np.ndarray,
    assignments: np.ndarray,
    consumer_capacity: float,
    *,
    iteration_s: float = 30.0,
    rebalance_s: float = 5.0,
    previous: np.ndarray | None = None,
) -> Segments:
    """The fixed and rebalanced queues of every consumer over ``N`` iterations.

    ``rates`` and ``assignments`` are ``N × P``; ``previous`` is the assignment before the
    first iteration (−1 or None: none).
    """
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    assignments = np.atleast_2d(np.asarray(assignments, dtype=np.int64))
    if rates.shape != assignments.shape:
        raise ValueError("rates and assignments must both be iterations × partitions")
    if consumer_capacity <= 0 or iteration_s <= 0 or not 0 <= rebalance_s < iteration_s:
        raise ValueError("need consumer_capacity > 0 and 0 <= rebalance_s < iteration_s")
    before = np.full(rates.shape[1], -1) if previous is None else np.asarray(previous)
    size = int(max(assignments.max(initial=0), before.max(initial=-1))) + 1
    carry = np.zeros(size)  # Eq. 20: the fixed queue's last latency, per consumer
    weight, first, last = [], [], []
    for rate, now in zip(rates, assignments, strict=True):
        moved = (before >= 0) & (before != now)
        w_fixed = np.bincount(now, weights=np.where(moved, 0.0, rate), minlength=size)
        w_moved = np.bincount(now, weights=np.where(moved, rate, 0.0), minlength=size)
        r_fixed = np.where(w_moved > 0, np.minimum(consumer_capacity, w_fixed), consumer_capacity)
        r_moved = np.maximum(consumer_capacity - r_fixed, consumer_capacity * 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            # m·T over the whole iteration: iteration_s · (W/R − 1)   (Eq. 19, 21, 25, 26)
            rise_fixed = iteration_s * (w_fixed / r_fixed - 1.0)
            rise_moved = iteration_s * (w_moved / r_moved - 1.0)
        fixed = w_fixed > 0
        weight += [iteration_s * w_fixed[fixed], iteration_s * w_moved[w_moved > 0]]
        first += [carry[fixed], np.full(int(np.sum(w_moved > 0)), float(rebalance_s))]
        last += [carry[fixed] + rise_fixed[fixed], rebalance_s + rise_moved[w_moved > 0]]
        carry = np.where(fixed, np.maximum(carry + rise_fixed, 0.0), 0.0)
        before = now
    return Segments(np.concatenate(weight), np.concatenate(first), np.concatenate(last))


def _share_at_most(segments: Segments, x: float) -> float:
    """Share of bytes whose latency is ≤ ``x`` (x ≥ 0)."""
    first, rise = segments.first, segments.last - segments.first
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.clip((x - first) / rise, 0.0, 1.0)  # rising: the head is below x
        down = 1.0 - np.clip((first - x) / -rise, 0.0, 1.0)  # falling: the tail is below x
    share = np.where(rise > 0, up, np.where(rise < 0, down, (first <= x).astype(float)))
    return float(np.dot(segments.weight, share) / segments.weight.sum())


def latency_summary(
    segments: Segments, quantiles: tuple[float, ...] = (50, 90, 99), delayed_only: bool = True
) -> dict[str, float]:
    """``delayed_share`` (bytes read with latency > 0, Fig. 7), ``p50``/``p90``/``p99`` (s) of
    the delayed bytes (Fig. 8 and the §VI-C 4.52 s vs 217 s are over those; with
    ``delayed_only=False`` of all bytes) and ``max``."""
    summary = {"delayed_share": 0.0, **{f"p{q:g}": 0.0 for q in quantiles}, "max": 0.0}
    if segments.weight.size == 0 or segments.weight.sum() <= 0:
        return summary
    top = float(np.maximum(segments.first, segments.last).max(initial=0.0))
    on_time = _share_at_most(segments, 0.0)
    summary["delayed_share"] = 1.0 - on_time
    summary["max"] = max(top, 0.0)
    if on_time >= 1.0:
        return summary
    for q in quantiles:
        below = on_time if delayed_only else 0.0
        target = below + (1.0 - below) * q / 100.0
        lo, hi = 0.0, top
        for _ in range(64):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if _share_at_most(segments, mid) >= target else (mid, hi)
        summary[f"p{q:g}"] = hi
    return summary


def latency_samples(segments: Segments, per_segment: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Latencies at ``per_segment`` evenly spaced bytes of every segment, with byte weights
    (for histograms)."""
    u = (np.arange(per_segment) + 0.5) / per_segment
    first, last = segments.first[:, None], segments.last[:, None]
    values = np.maximum(first + (last - first) * u[None, :], 0.0)
    weights = np.repeat(segments.weight[:, None] / per_segment, per_segment, axis=1)
    return values.ravel(), weights.ravel()
