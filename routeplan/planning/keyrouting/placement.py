"""Greedy placement shared by the choice-based batch planners (``sg``, ``potc``, ``pkg``,
``dchoices``): the per-message schemes of papers 000 and 003 replayed once on a snapshot's loads.

A routing table routes whole key groups, so a per-message scheme becomes a table this way:

* every hot key is a divisible unit: its load is **water-filled** over the workers the scheme may
  send it to — the limit of sending its messages one by one to the least loaded (normalised by
  capacity) of its choices, which is what the greedy-d process does (paper 003 §5) — and the table
  lists it with those workers, weighted by their part;
* every other key group is one indivisible unit, placed whole on the least loaded of its choices
  (paper 003 §3.1's "static PoTC" at key-group granularity);
* units are visited in decreasing load, as the off-line greedy of paper 003 §6.2 Q1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan

_TINY = 1e-9  # parts below this share of a key's load are dropped (weights must be > 0)


def water_fill(
    amount: float, candidates: Sequence[int], load: np.ndarray, capacity: np.ndarray
) -> dict[int, float]:
    """Pour ``amount`` over ``candidates`` so their normalised loads rise to one common level.

    Returns ``{worker: part}`` (parts sum to ``amount``) and adds the parts to ``load`` in place.
    With no load to pour, the least loaded candidate gets the (empty) key.
    """
    cand = np.asarray(sorted(set(candidates)), dtype=np.int64)
    if amount <= 0:
        best = int(cand[np.argmin(load[cand] / capacity[cand])])
        return {best: 0.0}
    level = load[cand] / capacity[cand]
    order = np.argsort(level, kind="stable")
    cand, level, cap = cand[order], level[order], capacity[cand][order]
    filled_cap, remaining, top = 0.0, amount, level[0]
    for i in range(cand.size):
        filled_cap += cap[i]
        ceiling = level[i + 1] if i + 1 < cand.size else np.inf
        need = (ceiling - top) * filled_cap
        if need >= remaining:
            top += remaining / filled_cap
            break
        remaining -= need
        top = ceiling
    parts = np.clip(top - level, 0.0, None) * cap
    parts *= amount / parts.sum()
    kept = parts > _TINY * amount
    result = {int(w): float(x) for w, x in zip(cand[kept], parts[kept], strict=True)}
    for w, x in result.items():
        load[w] += x
    return result


def place_whole(
    amount: float, candidates: Sequence[int], load: np.ndarray, capacity: np.ndarray
) -> int:
    """The candidate whose normalised load is lowest once ``amount`` is added (ties: first)."""
    cand = np.asarray(candidates, dtype=np.int64)
    best = int(cand[np.argmin((load[cand] + amount) / capacity[cand])])
    load[best] += amount
    return best


def plan_by_choices(
    loads: LoadSnapshot,
    workers: Workers,
    hot_choices: Callable[[str, float, int], Sequence[int]],
    group_choices: Callable[[int, int], Sequence[int]],
) -> tuple[tuple[str, ...], dict[str, tuple[tuple[str, float], ...]]]:
    """Key-group owners and hot-key splits of a choice-based scheme on the snapshot's loads.

    ``hot_choices(key, share, n)`` and ``group_choices(group, n)`` give a unit's candidate
    indices among the ``n`` active workers (``share`` is the key's share of the total load).
    """
    active = workers.active
    names = [w.name for w in active]
    capacity = np.array([w.capacity for w in active])
    n = len(active)
    total = loads.total
    hot = dict(loads.hot_key_load)
    residual = loads.residual_key_group_load(hot)
    units: list[tuple[float, int, str]] = [(v, 0, k) for k, v in hot.items()]
    units += [(float(x), 1, str(g)) for g, x in enumerate(residual)]
    units.sort(key=lambda u: (-u[0], u[1], u[2]))
    load = np.zeros(n)
    owner = np.zeros(loads.num_key_groups, dtype=np.int64)
    hot_keys: dict[str, tuple[tuple[str, float], ...]] = {}
    for amount, is_group, unit in units:
        if is_group:
            g = int(unit)
            owner[g] = place_whole(amount, group_choices(g, n), load, capacity)
        else:
            share = amount / total if total > 0 else 0.0
            parts = water_fill(amount, hot_choices(unit, share, n), load, capacity)
            weights = parts.values() if amount > 0 else [1.0]
            scale = sum(weights)
            hot_keys[unit] = tuple(
                (names[w], x / scale) for w, x in zip(parts, weights, strict=True)
            )
    return tuple(names[o] for o in owner), hot_keys


def choices_plan(
    strategy: str,
    params: Mapping[str, Any],
    loads: LoadSnapshot,
    current: RoutingTable | None,
    workers: Workers,
    hot_choices: Callable[[str, float, int], Sequence[int]],
    group_choices: Callable[[int, int], Sequence[int]],
) -> Plan:
    """The plan of a choice-based scheme: ``plan_by_choices`` as a table, then ``finish_plan``."""
    groups, hot_keys = plan_by_choices(loads, workers, hot_choices, group_choices)
    table = RoutingTable(
        stream=loads.stream,
        strategy=strategy,
        workers=workers,
        key_group_worker=groups,
        hot_keys=hot_keys,
        params=params,
        hash_seed=loads.hash_seed,
    )
    return finish_plan(table, loads, current)
