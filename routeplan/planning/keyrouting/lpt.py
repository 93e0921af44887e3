"""``lpt`` Longest Processing Time first on every window of the day: the worst window, planned.

Graham's LPT (1969) places jobs heaviest first, each on the least loaded machine. With the day's
windows (``LoadSnapshot.key_group_windows``, the nightly forecast's profile) a unit's load is a
vector over the windows, and "least loaded" becomes *the worker whose worst window rises least*:

    w(u) = argmin_w  max_t (L[t, w] + x[t, u]) / c_w      (ties: the lower day load L·1 / c_w)

over the active workers, units taken by decreasing day load ``Σ_t x[t, u]`` — the greedy of
vector scheduling (min-max load over the window dimension: paper 004's balance objective,
§4.3, with one load constraint per window). Without windows it is plain LPT of the units'
loads, the baseline every balancer must beat (Graham's bound: within 4/3 − 1/(3n) of the best
makespan). Then ``routeplan.planning.windows.lower_peak`` moves and swaps key groups off the
worker at the day's peak while that lowers it (the peak never rises).

Units are the key groups, each whole with the keys in it, and the **hot keys too heavy for one
worker**: a hot key whose load in some window passes ``split_share`` of that window's fair
share is split into ``d = ⌈max_t x[t, k] / (split_share · F_t)⌉`` equal pieces (at most one per
active worker), placed like units on distinct workers (PKG's and Consistent Grouping's split
keys, papers 003 and 000); the table lists it with one equal weight per worker. A hot key
routed on its own is planned on its own hours (``LoadSnapshot.hot_key_profile``).

Against the version in force (``current``) a unit stays on its worker while that worker's new
worst window is within ``keep_within`` (in fair shares of the busiest window) of the best, the
search takes only steps that gain as much, and a plan gaining less moves nothing: a plan is
judged by its worst window, not by which of two equal workers is called ``w3``. The gate
(``routeplan.streams.rebalance``) then gives back the moves that do not pay. No budget limit is
honoured: under a budget, use ``cg`` or ``milp``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.registry import register
from routeplan.planning.windows import lower_peak, normalised_peaks

_EPS = 1e-12


def place_lpt(
    unit_windows: np.ndarray,
    capacity: np.ndarray,
    active: np.ndarray,
    apart: np.ndarray | None = None,
    home: np.ndarray | None = None,
    keep_within: float = 0.0,
) -> np.ndarray:
    """Each unit's worker by LPT on the windows (see the module docstring): ``unit_windows``
    windows × units, ``capacity`` and ``active`` per worker; ``apart[u]`` ≥ 0 names a group of
    units that must land on distinct workers (the pieces of one split key; −1: none). A unit
    stays on its ``home`` worker (−1: none) when that worker's new peak is within
    ``keep_within`` (in busiest-window fair shares) of the best, and always without load.
    Total, deterministic: ties go to the lower day load, then the lower worker index; an
    inactive worker gets nothing. Needs one active worker."""
    x = np.atleast_2d(np.asarray(unit_windows, dtype=float))
    capacity = np.asarray(capacity, dtype=float)
    active = np.asarray(active, dtype=bool)
    if not active.any():
        raise ValueError("LPT needs an active worker")
    units = x.shape[1]
    apart = np.full(units, -1) if apart is None else np.asarray(apart)
    home = np.full(units, -1) if home is None else np.asarray(home)
    slack = keep_within * float(x.sum(axis=1).max(initial=0.0)) / capacity[active].sum()
    loads = np.zeros((x.shape[0], capacity.size))
    assign = np.full(units, -1, dtype=np.int64)
    taken: dict[int, set[int]] = {}
    for u in np.argsort(-x.sum(axis=0), kind="stable"):
        peak = ((loads + x[:, [u]]) / capacity).max(axis=0)
        day = (loads.sum(axis=0) + x[:, u].sum()) / capacity
        score = np.where(active, peak, np.inf)
        if apart[u] >= 0:
            for w in taken.get(int(apart[u]), ()):
                score[w] = np.inf
        best = np.flatnonzero(score <= score.min() * (1 + 1e-9) + _EPS)
        w = int(best[np.argmin(day[best])])
        if home[u] >= 0 and (score[home[u]] <= score[w] + slack or not x[:, u].any()):
            w = int(home[u])
        assign[u] = w
        loads[:, w] += x[:, u]
        if apart[u] >= 0:
            taken.setdefault(int(apart[u]), set()).add(w)
    return assign


def worst_window(x: np.ndarray, assign: np.ndarray, workers: Workers) -> float:
    """The highest window load of any worker over its capacity, in fair shares of the busiest
    window (``windows.normalised_peaks``), when units ``x`` (windows × units) go to
    ``assign``."""
    loads = np.zeros((x.shape[0], len(workers)))
    np.add.at(loads.T, assign, x.T)
    return float(normalised_peaks(loads, workers.capacities, workers.is_active)[0].max())


def units_of(
    loads: LoadSnapshot, windows: np.ndarray, hot: dict[str, np.ndarray], most: float,
    workers: Workers,
) -> tuple[np.ndarray, np.ndarray, list[str]]:  # fmt: skip
    """What LPT places (windows × units): the key groups without the hot keys split, then each
    split key's equal pieces; ``apart`` numbering the pieces by key (−1 for a group); the split
    keys, sorted. A hot key gets ``⌈max_t x[t, k] / (most · F_t)⌉`` pieces, ``F_t`` the
    window's fair share, at most one per active worker (a key in one piece stays in its
    group)."""
    active = workers.is_active
    fair = windows.sum(axis=1) / max(float(workers.capacities[active].sum()), _EPS)
    pieces = {
        k: min(math.ceil(float((x / np.maximum(most * fair, _EPS)).max())), int(active.sum()))
        for k, x in sorted(hot.items())
    }
    split = sorted(k for k, d in pieces.items() if d > 1)
    groups = windows.copy()
    for key in split:
        g = loads.hot_key_group(key)
        groups[:, g] = np.maximum(groups[:, g] - hot[key], 0.0)
    columns = [groups] + [np.repeat(hot[k][:, None] / pieces[k], pieces[k], axis=1)
                          for k in split]  # fmt: skip
    apart = np.concatenate(
        [np.full(groups.shape[1], -1)] + [np.full(pieces[k], i) for i, k in enumerate(split)]
    )
    return np.concatenate(columns, axis=1), apart, split


def homes(
    current: RoutingTable, workers: Workers, split: list[str], apart: np.ndarray
) -> np.ndarray:
    """Each unit's worker in ``current`` (index in ``workers``; −1: none or not active): the
    key groups', then each split key's pieces' (``apart`` numbers them by key in ``split``
    order), as many as the key had workers."""
    index, active = workers.index(), workers.is_active
    home = np.full(apart.size, -1)
    for g, name in enumerate(current.key_group_worker):
        w = index.get(name, -1)
        home[g] = w if w >= 0 and active[w] else -1
    for i, key in enumerate(split):
        had = [index.get(w, -1) for w, _ in current.hot_keys.get(key, ())]
        had = [w for w in had if w >= 0 and active[w]]
        for piece, w in zip(np.flatnonzero(apart == i), had, strict=False):
            home[piece] = w
    return home


@register("lpt")
@dataclass(frozen=True)
class LongestFirst:
    """LPT on the day's windows (plain LPT without them); hot keys heavier than
    ``split_share`` of a window's fair share are split into equal pieces."""

    split_share: float = 0.5
    keep_within: float = 0.02

    kind: ClassVar[str] = "key_routing"
    honours: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        if not 0.0 < self.split_share <= 1.0:
            raise ValueError(f"split_share must be in (0, 1], got {self.split_share}")
        if self.keep_within < 0.0:
            raise ValueError(f"keep_within must be >= 0, got {self.keep_within}")

    def _gains(self, x: np.ndarray, assign: np.ndarray, home: np.ndarray, workers: Workers) -> bool:
        """Whether ``assign`` lowers the worst window of ``home`` by more than keep_within."""
        return worst_window(x, assign, workers) < worst_window(x, home, workers) - self.keep_within

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        active, capacity = workers.is_active, workers.capacities
        windows = loads.key_group_windows
        if windows is None:
            windows = loads.key_group_load[None, :]
            hot = {k: np.array([v]) for k, v in loads.hot_key_load.items()}
        else:
            hot = {k: loads.hot_key_profile(k) for k in loads.hot_key_load}
        x, apart, split = units_of(loads, windows, hot, self.split_share, workers)
        n = loads.num_key_groups
        sticky = isinstance(current, RoutingTable) and current.num_key_groups == n
        home = homes(current, workers, split, apart) if sticky else None
        keep = self.keep_within if sticky else 0.0
        assign = place_lpt(x, capacity, active, apart, home, keep)
        if windows.shape[0] > 1:  # moves and swaps of key groups off the peak worker
            base = np.zeros((x.shape[0], capacity.size))
            for u in range(n, x.shape[1]):
                base[:, assign[u]] += x[:, u]
            assign[:n] = lower_peak(
                assign[:n], x[:, :n], base, capacity, active, np.ones(n, dtype=bool),
                lambda _: True, lambda _u, _w: None, min_gain=keep,
            )  # fmt: skip
        if home is not None and (home >= 0).all() and not self._gains(x, assign, home, workers):
            assign = home  # the current routing within keep_within of the plan: nothing moves
        names = workers.names
        hot_keys = {}
        for i, key in enumerate(split):
            mine = sorted(names[w] for w in assign[n:][apart[n:] == i])
            hot_keys[key] = tuple((w, 1.0) for w in mine)
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=workers,
            key_group_worker=tuple(names[w] for w in assign[:n]),
            hot_keys=hot_keys,
            params=parameters(self),
            hash_seed=loads.hash_seed,
        )
        return finish_plan(table, loads, current)
