"""The worst window of the day: a local search that lowers a plan's peak excess over several
windows.

A plan fitted on one load vector (a busy hour, or each unit's forecast) can leave one worker at
its peak in a window where its units peak together. ``lower_peak`` takes the plan's assignment
(unit → worker) and the units' loads in every window of the day, and moves units one at a time
off the worker that carries the day's peak, to the active worker where the move lowers it most:

    peak(A) = max_{t,w} L_A[t,w] / (c_w · F),   F = max_t Σ_w L_A[t,w] / Σ_{active} c

(``routeplan.planning.metrics.peak_excess`` + 1; ``F``, the busiest window's fair share, does
not depend on the assignment). A move of unit ``u`` from ``s`` to ``w`` is taken when the higher
of the two workers' new peaks, ``max_t (L[t,s] − X[t,u]) / (c_s F)`` and
``max_t (L[t,w] + X[t,u]) / (c_w F)``, is below the current peak: the peak never rises, and the
number of workers at it falls with every step, so the search ends (at the latest after
``max_steps``). Among the moves of the peak worker's units the lowest new peak wins; when no move
lowers it — units of equal size, as Consistent Grouping's virtual workers are — the best
**swap** of one of them with a unit of one of the ``SWAP_WORKERS`` least loaded workers does
(``max_t (L[t,s] − X[t,u] + X[t,v]) / (c_s F)`` and ``max_t (L[t,w] + X[t,u] − X[t,v]) / (c_w F)``
below the peak). A unit moves at most once. The caller's ``fits`` says whether a step's moves
may be made together (the budget, other limits), and ``moved`` is told of each move taken
(``routeplan.planning.reassign.flux``'s mover keeps the budget this way).

Vectorised: one step prices every unit of the peak worker against every active worker at once
(windows × units × workers), and a swap against every unit of the least loaded workers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS = 1e-12
SWAP_WORKERS = 8  # a swap takes its partner from the workers with the lowest peaks
MIN_GAIN = 0.02  # a step takes at least 2 % of the busiest window's fair share off the peak


def normalised_peaks(
    loads: np.ndarray, capacity: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, float]:
    """Each worker's highest window load over its capacity and the busiest window's fair share
    ``F`` (windows × workers ``loads``), and ``F``."""
    fair = float(loads.sum(axis=1).max(initial=0.0) / capacity[active].sum())
    return loads.max(axis=0) / (capacity * max(fair, _EPS)), fair


def residual_windows(
    windows: np.ndarray, planned: np.ndarray, residual: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The key groups' windows (windows × groups) without the hot keys routed on their own —
    each group's windows times its ``residual`` share of its ``planned`` load — and the
    stream's shape: each window's load over the planned total (what a hot key routed on its own
    is assumed to follow)."""
    kept = np.divide(residual, planned, out=np.zeros_like(planned), where=planned > 0)
    return windows * kept, windows.sum(axis=1) / max(float(planned.sum()), _EPS)


Step = tuple[tuple[int, int], ...]  # the (unit, worker) moves one step makes


def lower_peak(
    assign: np.ndarray,
    unit_windows: np.ndarray,
    base: np.ndarray,
    capacity: np.ndarray,
    active: np.ndarray,
    movable: np.ndarray,
    fits: Callable[[Step], bool],
    moved: Callable[[int, int], None],
    max_steps: int | None = None,
    min_gain: float = MIN_GAIN,
) -> np.ndarray:
    """``assign`` (unit → worker) with units moved off the day's peak worker while that lowers
    the peak (see the module docstring). ``unit_windows``: windows × units; ``base``: windows ×
    workers of load no unit carries (e.g. hot keys routed on their own); ``movable``: the units
    that may move; ``fits(step)``: whether the moves of a step may be made together (budget,
    other limits); ``moved(u, w)``: called after each move; ``min_gain``: what a step must take
    off the peak (in units of the busiest window's fair share). Never raises the peak; returns a
    new array."""
    assign = np.asarray(assign, dtype=np.int64).copy()
    x = np.asarray(unit_windows, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    active = np.asarray(active, dtype=bool)
    n = capacity.size
    if x.ndim != 2 or x.shape[1] != assign.size or np.shape(base) != (x.shape[0], n):
        raise ValueError("unit_windows must be windows × units and base windows × workers")
    loads = np.asarray(base, dtype=float).copy()
    for w in range(n):
        loads[:, w] += x[:, assign == w].sum(axis=1)
    _, fair = normalised_peaks(loads, capacity, active)
    if fair <= 0 or not active.any():
        return assign
    free = np.asarray(movable, bool).copy()
    search = _Search(x, loads, capacity * fair, active, assign, free, max(min_gain, _EPS))
    for _ in range(assign.size if max_steps is None else max_steps):
        step = search.step(fits)
        if step is None:
            break
        for unit, target in step:
            search.apply(unit, target)
            moved(unit, target)
    return search.assign


class _Search:
    """The state of ``lower_peak``: loads (windows × workers), the assignment, the units still
    free to move."""

    def __init__(self, x, loads, scale, active, assign, free, gain) -> None:  # noqa: ANN001
        self.x, self.loads, self.scale, self.active = x, loads, scale, active
        self.assign, self.free, self.gain = assign, free, gain

    def apply(self, unit: int, target: int) -> None:
        self.loads[:, self.assign[unit]] -= self.x[:, unit]
        self.loads[:, target] += self.x[:, unit]
        self.assign[unit] = target
        self.free[unit] = False

    def step(self, fits: Callable[[Step], bool]) -> Step | None:
        """The best move of a unit off the peak worker, else the best swap of one with a unit
        of another worker, that lowers the peak and fits; None when there is none."""
        peaks = self.loads.max(axis=0) / self.scale
        source = int(np.argmax(peaks))
        units = np.flatnonzero((self.assign == source) & self.free)
        if units.size == 0:
            return None
        top, x, loads, scale = peaks[source], self.x, self.loads, self.scale
        shed = loads[:, source, None] - x[:, units]  # windows × k
        targets = np.flatnonzero(self.active & (np.arange(scale.size) != source))
        taken = ((loads[:, targets, None] + x[:, None, units]) / scale[targets, None]).max(axis=0)
        new = np.maximum(taken, (shed.max(axis=0) / scale[source])[None, :])  # targets × k
        for t, k in _improving(new, top - self.gain):
            step = ((int(units[k]), int(targets[t])),)
            if fits(step):
                return step
        if not self.active[source]:
            return None  # nothing goes back to a draining worker
        near = targets[np.argsort(peaks[targets], kind="stable")[:SWAP_WORKERS]]
        others = np.flatnonzero(self.free & np.isin(self.assign, near))
        if others.size == 0:
            return None
        gap = x[:, None, others] - x[:, units, None]  # windows × k × m: what the source gains
        home = self.assign[others]
        there = (loads[:, home][:, None, :] - gap) / scale[home]
        here = (shed[:, :, None] + x[:, None, others]) / scale[source]
        new = np.maximum(here.max(axis=0), there.max(axis=0))  # k × m
        for k, m in _improving(new, top - self.gain):
            step = ((int(units[k]), int(home[m])), (int(others[m]), source))
            if fits(step):
                return step
        return None


def _improving(new: np.ndarray, below: float):  # noqa: ANN202
    """Indices of ``new`` below ``below``, lowest first."""
    for flat in np.argsort(new, axis=None, kind="stable"):
        index = np.unravel_index(int(flat), new.shape)
        if not new[index] < below:
            return
        yield tuple(int(i) for i in index)


__all__ = ["Step", "lower_peak", "normalised_peaks", "residual_windows"]
