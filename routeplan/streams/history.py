"""A stream's unit loads window by window over its last days, and a table's loads on them.

The forecast (``routeplan.streams.forecast``) plans from every window of the last days, and the
nightly gate (``routeplan.streams.rebalance``) scores tables on a day's windows. Both read one
value, ``History``: per day and window the load of every unit — key group for key routing,
partition for a partition assignment — and of the hot keys (key routing). A window a day does
not have is NaN: it counts neither in the forecast nor in a score.

``window_loads(table, units, hot)`` routes one day's windows through a table as its producers
(or consumers) route them: a key group's load to the table's worker; a hot key the table routes
on its own leaves its key group and is divided by the table's weights; a partition's load to its
consumer. ``day_score`` scores that by the kind's headline: for key routing the peak excess on
the day's workers (a worker of the table the day no longer has counts as not active, so load
the table still sends there shows as excess); for a partition assignment the **peak overload**
— the largest share of a window's load above the bin capacity C on consumers reading more than
one partition (paper 002 packs consumers up to C, so their balance is not the goal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from routeplan.model.hashing import DEFAULT_SEED, key_groups
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import consumer_excess
from routeplan.streams.forecast import Score


@dataclass(frozen=True)
class History:
    """Unit loads of the last days: ``units`` is days × windows × units (oldest day first; NaN
    where a day has no such window), ``hot_keys`` each hot key's load, days × windows."""

    days: tuple[str, ...]
    units: np.ndarray
    hot_keys: Mapping[str, np.ndarray] = field(default_factory=dict)
    hash_seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        shape = np.shape(self.units)
        if len(shape) != 3 or shape[0] != len(self.days) or not self.days:
            raise ValueError(f"units must be days × windows × units for {len(self.days)} days")
        for key, loads in self.hot_keys.items():
            if np.shape(loads) != shape[:2]:
                raise ValueError(f"hot key {key!r}: one load per day and window {shape[:2]}")

    @property
    def num_units(self) -> int:
        return int(np.shape(self.units)[2])

    def first(self, days: int) -> History:
        """The oldest ``days`` days (what a plan fitted the night before saw)."""
        return History(
            self.days[:days],
            self.units[:days],
            {k: v[:days] for k, v in self.hot_keys.items()},
            self.hash_seed,
        )

    def day(self, index: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One day's windows (those it has): units as windows × units, hot keys per window."""
        present = ~np.isnan(self.units[index]).all(axis=1)
        units = np.nan_to_num(self.units[index][present])
        return units, {k: np.nan_to_num(v[index][present]) for k, v in self.hot_keys.items()}


def window_loads(
    table: Table, units: np.ndarray, hot: Mapping[str, np.ndarray] | None = None
) -> np.ndarray:
    """windows × workers (``table.workers_of()`` order): ``units`` (windows × units) and the hot
    keys' loads per window routed through ``table``."""
    units = np.atleast_2d(np.asarray(units, dtype=float))
    workers = table.workers_of()
    index = workers.index()
    loads = np.zeros((units.shape[0], len(workers)))
    if isinstance(table, PartitionAssignment):
        for partition, consumer in table.partition_consumer.items():
            if partition < units.shape[1]:
                loads[:, index[consumer]] += units[:, partition]
        return loads
    if not isinstance(table, RoutingTable):
        raise TypeError(f"cannot route loads through a {type(table).__name__}")
    if units.shape[1] != table.num_key_groups:
        raise ValueError(f"loads of {units.shape[1]} units, table of {table.num_key_groups}")
    groups = units.copy()
    for key, targets in table.hot_keys.items():
        own = (hot or {}).get(key)
        if own is None:
            continue
        group = int(key_groups([key], table.num_key_groups, table.hash_seed)[0])
        groups[:, group] = np.maximum(groups[:, group] - own, 0.0)
        total = sum(weight for _, weight in targets)
        for worker, weight in targets:
            loads[:, index[worker]] += own * weight / total
    owner = np.fromiter((index[w] for w in table.key_group_worker), dtype=np.int64)
    for w in range(len(workers)):
        loads[:, w] += groups[:, owner == w].sum(axis=1)
    return loads


def on_workers(table: Table, loads: np.ndarray, workers: Workers) -> tuple[np.ndarray, Workers]:
    """``loads`` of the table's workers (windows × its workers) as the loads of ``workers`` in
    their order, followed by the table's workers ``workers`` lacks (not active, at the mean
    capacity): what the day's workers carried under the table."""
    mine = table.workers_of().names
    gone = [n for n in mine if n not in workers.index()]
    mean = float(np.mean(workers.capacities)) if workers.items else 1.0
    every = Workers((*workers.items, *(Worker(n, mean, "draining") for n in gone)))
    column = {n: i for i, n in enumerate(mine)}
    out = np.zeros((np.shape(loads)[0], len(every)))
    for j, name in enumerate(every.names):
        if name in column:
            out[:, j] = loads[:, column[name]]
    return out, every


def day_score(table: Table, history: History, index: int, workers: Workers) -> Score:
    """``table``'s score on day ``index`` of ``history`` with ``workers`` (the day's)."""
    units, hot = history.day(index)
    if isinstance(table, PartitionAssignment):
        return overload_score(table, window_loads(table, units))
    loads, every = on_workers(table, window_loads(table, units, hot), workers)
    return Score.of(loads, every.capacities, every.is_active)


def overload_score(table: PartitionAssignment, loads: np.ndarray) -> Score:
    """A partition assignment's score on consumer rates ``loads`` (windows × its consumers):
    each window's overload — the load above C on consumers with more than one partition, over
    the window's load — its largest (``peak_excess``), the day's mean rates' (``day_imbalance``)
    and its p10–p90."""
    names = table.consumers.names

    def overload(rows: np.ndarray) -> np.ndarray:
        total = rows.sum(axis=1)
        excess = consumer_excess(table, names, rows).sum(axis=1)
        return np.where(total > 0, excess / np.maximum(total, 1e-300), 0.0)

    loads = np.atleast_2d(loads)
    per_window = overload(loads)
    low, high = np.percentile(per_window, [10, 90]) if per_window.size else (0.0, 0.0)
    return Score(
        peak_excess=float(per_window.max(initial=0.0)),
        day_imbalance=float(overload(loads.mean(axis=0, keepdims=True))[0]),
        low=float(low),
        high=float(high),
    )
