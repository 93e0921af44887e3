"""Streams of write-rate measurements (paper 002 §VI-B, Eq. 15)."""

from __future__ import annotations

import numpy as np


def measurement_stream(
    partitions: int,
    measurements: int,
    delta: float,
    capacity: float = 1.0,
    *,
    seed: int = 0,
    initial: np.ndarray | None = None,
    clip_to_capacity: bool = True,
) -> np.ndarray:
    """``measurements × partitions`` rates: s_j(t_1) uniform in [0, C] (or ``initial``), then
    Eq. 15, s_j(t_k) = max{0, s_j(t_{k−1}) + φ(δ)/100 · C} with φ(δ) uniform in [−δ, δ].

    ``clip_to_capacity`` also caps rates at C, as the authors' generator does
    (``make_sequence.py``), so that no partition outgrows a consumer; Eq. 15 as printed only
    floors them at 0. The same arguments give the same stream.
    """
    if partitions < 0 or measurements < 1:
        raise ValueError("need partitions >= 0 and measurements >= 1")
    if delta < 0 or capacity <= 0:
        raise ValueError("need delta >= 0 and capacity > 0")
    rng = np.random.default_rng(seed)
    rates = np.empty((measurements, partitions))
    if initial is None:
        rates[0] = rng.uniform(0.0, capacity, partitions)
    else:
        rates[0] = np.asarray(initial, dtype=float)
    steps = rng.uniform(-delta, delta, (measurements - 1, partitions)) / 100.0 * capacity
    upper = capacity if clip_to_capacity else np.inf
    for k in range(1, measurements):
        rates[k] = np.clip(rates[k - 1] + steps[k - 1], 0.0, upper)
    return rates
