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
number of workers at it falls with every move, so the search ends (at the latest after
``max_moves``). Among the moves of the peak worker's units the lowest new peak wins; the caller's
``fits`` says which moves the budget and other limits allow, and ``moved`` is told of each move
taken (``routeplan.planning.reassign.flux``'s mover keeps the budget this way).

Vectorised: one step prices every unit of the peak worker against every active worker at once
(windows × units × workers).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS = 1e-12


def normalised_peaks(
    loads: np.ndarray, capacity: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, float]:
    """Each worker's highest window load over its capacity and the busiest window's fair share
    ``F`` (windows × workers ``loads``), and ``F``."""
    fair = float(loads.sum(axis=1).max(initial=0.0) / capacity[active].sum())
    return loads.max(axis=0) / (capacity * max(fair, _EPS)), fair


def lower_peak(
    assign: np.ndarray,
    unit_windows: np.ndarray,
    base: np.ndarray,
    capacity: np.ndarray,
    active: np.ndarray,
    movable: np.ndarray,
    fits: Callable[[int, int], bool],
    moved: Callable[[int, int], None],
    max_moves: int | None = None,
) -> np.ndarray:
    """``assign`` (unit → worker) with units moved off the day's peak worker while that lowers
    the peak (see the module docstring). ``unit_windows``: windows × units; ``base``: windows ×
    workers of load no unit carries (e.g. hot keys routed on their own); ``movable``: the units
    that may move; ``fits(u, w)``: whether unit ``u`` may go to worker ``w``; ``moved(u, w)``:
    called after each move. Never raises the peak; returns a new array."""
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
    scale = capacity * fair
    free = np.asarray(movable, dtype=bool).copy()
    targets = np.flatnonzero(active)
    limit = assign.size if max_moves is None else max_moves
    for _ in range(limit):
        peaks = loads.max(axis=0) / scale
        source = int(np.argmax(peaks))
        top = peaks[source]
        units = np.flatnonzero((assign == source) & free)
        if units.size == 0:
            break
        shed = ((loads[:, source, None] - x[:, units]) / scale[source]).max(axis=0)  # (k,)
        taken = ((loads[:, targets, None] + x[:, None, units]) / scale[targets, None]).max(
            axis=0
        )  # (targets, k)
        new = np.maximum(taken, shed[None, :])
        new[targets == source] = np.inf
        order = np.argsort(new, axis=None, kind="stable")
        chosen = None
        for flat in order:
            t, k = divmod(int(flat), units.size)
            if not new[t, k] < top - _EPS:
                break
            if fits(int(units[k]), int(targets[t])):
                chosen = int(units[k]), int(targets[t])
                break
        if chosen is None:
            break
        unit, target = chosen
        loads[:, source] -= x[:, unit]
        loads[:, target] += x[:, unit]
        assign[unit] = target
        free[unit] = False
        moved(unit, target)
    return assign


__all__ = ["lower_peak", "normalised_peaks"]
