"""Load metrics: one implementation for plans, validation, simulator and benchmarks.

Normalised load of worker w is ``u_w = L_w / (c_w · f)`` with the fair share
``f = Σ L / Σ_{active} c``: 1.0 is exactly a worker's share of the work for its capacity.
The imbalance is ``max_w u_w − 1`` — the paper-000 imbalance ``I = max − mean`` of normalised
load, divided by the mean so that runs of different sizes compare (0 is perfect balance).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from routeplan.models import LoadSnapshot, Move, Workers
from routeplan.routing_table import RoutingTable


def normalised_load(
    worker_load: np.ndarray, capacity: np.ndarray, active: np.ndarray | None = None
) -> np.ndarray:
    """``u_w = L_w / (c_w · f)``; all zeros when there is no load."""
    worker_load = np.asarray(worker_load, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    active = np.ones(capacity.shape, bool) if active is None else np.asarray(active, bool)
    total = worker_load.sum()
    if total <= 0:
        return np.zeros_like(worker_load)
    fair = total / capacity[active].sum()
    return worker_load / (capacity * fair)


def imbalance(
    worker_load: np.ndarray, capacity: np.ndarray | None = None, active: np.ndarray | None = None
) -> float:
    """``max_w u_w − 1`` (0 = every worker carries exactly its capacity's share)."""
    worker_load = np.asarray(worker_load, dtype=float)
    if capacity is None:
        capacity = np.ones_like(worker_load)
    if worker_load.sum() <= 0:
        return 0.0
    return float(normalised_load(worker_load, capacity, active).max() - 1.0)


def hot_key_split(
    table: RoutingTable, snapshot: LoadSnapshot
) -> dict[str, list[tuple[str, float]]]:
    """The load of each hot key the table routes on its own, spread by the table's weights."""
    split: dict[str, list[tuple[str, float]]] = {}
    for key, targets in table.hot_keys.items():
        load = snapshot.hot_key_load.get(key, 0.0)
        total_weight = sum(w for _, w in targets)
        split[key] = [(worker, load * w / total_weight) for worker, w in targets]
    return split


def worker_load(table: RoutingTable, snapshot: LoadSnapshot) -> np.ndarray:
    """Predicted load of each of ``table.workers`` under the snapshot's loads."""
    if table.num_key_groups != snapshot.num_key_groups:
        raise ValueError(
            f"table has {table.num_key_groups} key groups, loads have {snapshot.num_key_groups}"
        )
    index = table.workers.index()
    group_owner = np.fromiter((index[w] for w in table.key_group_worker), dtype=np.int64)
    hot = [k for k in table.hot_keys if k in snapshot.hot_key_load]
    residual = snapshot.residual_key_group_load(hot)
    load = np.bincount(group_owner, weights=residual, minlength=len(table.workers))
    for parts in hot_key_split(table, snapshot).values():
        for worker, part in parts:
            load[index[worker]] += part
    return load


def table_imbalance(table: RoutingTable, snapshot: LoadSnapshot) -> float:
    workers = table.workers
    return imbalance(worker_load(table, snapshot), workers.capacities, workers.is_active)


def moves(
    current: RoutingTable | None, new: RoutingTable, snapshot: LoadSnapshot
) -> tuple[Move, ...]:
    """Key groups and hot keys whose workers differ between ``current`` and ``new``."""
    if current is None or current.num_key_groups != new.num_key_groups:
        return ()
    hot = set(new.hot_keys) | set(current.hot_keys)
    residual = snapshot.residual_key_group_load([k for k in hot if k in snapshot.hot_key_load])
    old_groups = np.asarray(current.key_group_worker, dtype=object)
    new_groups = np.asarray(new.key_group_worker, dtype=object)
    result = [
        Move(f"key_group:{g}", (old_groups[g],), (new_groups[g],), float(residual[g]))
        for g in np.flatnonzero(old_groups != new_groups)
    ]
    for key in sorted(hot):
        before = _targets(current, key, snapshot)
        after = _targets(new, key, snapshot)
        if before != after:
            result.append(Move(f"key:{key}", before, after, snapshot.hot_key_load.get(key, 0.0)))
    return tuple(result)


def _targets(table: RoutingTable, key: str, snapshot: LoadSnapshot) -> tuple[str, ...]:
    if key in table.hot_keys:
        return tuple(sorted(w for w, _ in table.hot_keys[key]))
    return (table.key_group_worker[snapshot.hot_key_group(key)],)


def memory(table: RoutingTable, snapshot: LoadSnapshot) -> float | None:
    """Σ over workers of distinct keys (paper 000 memory footprint), if key counts are known."""
    if snapshot.key_group_keys is None:
        return None
    extra = sum(len(targets) - 1 for targets in table.hot_keys.values())
    return float(snapshot.key_group_keys.sum() + extra)


def evaluate(
    table: RoutingTable, snapshot: LoadSnapshot, current: RoutingTable | None = None
) -> tuple[tuple[Move, ...], dict[str, float]]:
    """Moves against ``current`` and the predicted metrics of ``table`` on ``snapshot``."""
    load = worker_load(table, snapshot)
    found = moves(current, table, snapshot)
    migrated = float(sum(m.load for m in found))
    total = snapshot.total
    metrics: dict[str, float] = {
        "imbalance": imbalance(load, table.workers.capacities, table.workers.is_active),
        "max_worker_load": float(load.max()),
        "total_load": float(total),
        "moves": float(len(found)),
        "migrated_load": migrated,
        "migrated_load_share": migrated / total if total > 0 else 0.0,
        "hot_keys_split": float(sum(1 for v in table.hot_keys.values() if len(v) > 1)),
    }
    footprint = memory(table, snapshot)
    if footprint is not None:
        metrics["memory"] = footprint
    return found, metrics


def worker_load_by_name(table: RoutingTable, snapshot: LoadSnapshot) -> Mapping[str, float]:
    return dict(zip(table.workers.names, worker_load(table, snapshot).tolist(), strict=True))


def observed_imbalance(load_by_worker: Mapping[str, float], workers: Workers) -> float:
    """Imbalance of loads recorded in logs; workers absent from ``workers`` count at capacity 1."""
    caps = {w.name: w.capacity for w in workers.items}
    active = {w.name: w.state == "active" for w in workers.items}
    names = sorted(set(caps) | set(load_by_worker))
    return imbalance(
        np.array([load_by_worker.get(n, 0.0) for n in names]),
        np.array([caps.get(n, 1.0) for n in names]),
        np.array([active.get(n, True) for n in names]),
    )
