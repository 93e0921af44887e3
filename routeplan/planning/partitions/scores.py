"""Metrics of partition → consumer assignments (paper 002 §IV-A, §VI-D).

``assignment[j]`` is partition ``j``'s consumer id; ``previous[j]`` its id one iteration
earlier (−1: none). Rates are bytes/s, ``capacity`` is the bin capacity C.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

# sums taken in another order differ in the last bits: a consumer at C is not over C
TOLERANCE = 1e-9


def consumer_loads(
    assignment: np.ndarray, rates: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(consumer ids, their loads, their partition counts)``, ids ascending."""
    ids, index, counts = np.unique(
        np.asarray(assignment, dtype=np.int64), return_inverse=True, return_counts=True
    )
    loads = np.bincount(index, weights=np.asarray(rates, dtype=float), minlength=ids.size)
    return ids, loads, counts


def consumers(assignment: np.ndarray) -> int:
    """Consumers (bins) used: Σ_i y_i(t) of Eq. 3."""
    return int(np.unique(np.asarray(assignment)).size)


def lower_bound(rates: np.ndarray, capacity: float) -> int:
    """⌈Σ rates / C⌉ over the partitions that fit a consumer (at least one consumer if there are
    any), plus one consumer per partition above C, which reads nothing else. ``rates``: per
    partition, or windows × partitions (every window must fit: the busiest window's bound)."""
    rates = np.asarray(rates, dtype=float)
    if rates.ndim == 2:
        return max((lower_bound(row, capacity) for row in rates), default=0)
    big = rates > capacity
    normal = rates[~big]
    bound = math.ceil(normal.sum() / capacity * (1 - TOLERANCE)) if normal.size else 0
    return int(big.sum()) + max(bound, int(normal.size > 0))


def moved(previous: np.ndarray | None, assignment: np.ndarray) -> np.ndarray:
    """Partitions rebalanced at iteration k (P_k of Table I): they had a consumer at k−1 and
    have another now; a partition without one (an arrival, Eq. 10) is not a move."""
    assignment = np.asarray(assignment)
    if previous is None:
        return np.zeros(assignment.shape, dtype=bool)
    previous = np.asarray(previous)
    return (previous >= 0) & (previous != assignment)


def rscore(
    rates: np.ndarray, capacity: float, previous: np.ndarray | None, assignment: np.ndarray
) -> float:
    """Eq. 11: Rscore(k) = (1/C) Σ_{j ∈ P_k} s_j(t_k), the rate of the rebalanced partitions
    in consumers' worth."""
    return float(np.asarray(rates, dtype=float)[moved(previous, assignment)].sum() / capacity)


def overloaded(assignment: np.ndarray, rates: np.ndarray, capacity: float) -> int:
    """Consumers above C that hold more than one partition: what no plan may contain (a single
    partition above C can only have a consumer of its own). ``rates``: per partition, or
    windows × partitions (above C in any window)."""
    windows = np.atleast_2d(np.asarray(rates, dtype=float))
    _, counts = np.unique(np.asarray(assignment, dtype=np.int64), return_counts=True)
    peak = np.max([consumer_loads(assignment, row)[1] for row in windows], axis=0)
    return int(np.sum((peak > capacity * (1 + TOLERANCE)) & (counts > 1)))


def cbs(consumers_per_iteration: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """Eq. 28, Cardinal Bin Score: each algorithm's mean relative excess of consumers over the
    fewest any algorithm of the set used in the same iteration (0 = always the fewest)."""
    names = list(consumers_per_iteration)
    z = np.array([np.asarray(consumers_per_iteration[n], dtype=float) for n in names])
    if z.ndim != 2:
        raise ValueError("every algorithm needs the same number of iterations")
    best = z.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.where(best > 0, (z - best) / best, 0.0)
    return {n: float(v) for n, v in zip(names, excess.mean(axis=1), strict=True)}


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The names whose (CBS, mean Rscore) no other point dominates (both minimised; §VI-E)."""
    front = []
    for name, (x, y) in points.items():
        dominated = any(
            (a <= x and b <= y) and (a < x or b < y)
            for other, (a, b) in points.items()
            if other != name
        )
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda n: points[n])
