"""Load metrics: one implementation for plans, validation, simulator and benchmarks.

Normalised load of worker w is ``u_w = L_w / (c_w · f)`` with the fair share
``f = Σ L / Σ_{active} c``: 1.0 is exactly a worker's share of the work for its capacity.
The imbalance is ``max_w u_w − 1`` — the paper-000 imbalance ``I = max − mean`` of normalised
load, divided by the mean so that runs of different sizes compare (0 is perfect balance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.plan import Move, moves
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.model.workers import Workers


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
    # (L_w / total) · (C / c_w): the same as L_w / (c_w · total / C), and still finite when the
    # total load is so small (subnormal) that total / C underflows to 0
    return (worker_load / total) * (capacity[active].sum() / capacity)


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


def peak_excess(
    window_loads: np.ndarray, capacity: np.ndarray | None = None, active: np.ndarray | None = None
) -> float:
    """The day's headroom problem: the largest load any worker carried in any window, over its
    capacity, relative to the busiest window's fair share, minus 1::

        peak_excess = max_{t,w} (L[t,w] / c_w) / max_t (Σ_w L[t,w] / Σ_{active} c) − 1

    ``window_loads`` is windows × workers. 0 = no worker ever needed more than a perfectly
    balanced share of the busiest window; a plan that balances the peak hour and unbalances
    another hour has a low imbalance there and a high peak excess. 0 when there is no load."""
    loads = np.atleast_2d(np.asarray(window_loads, dtype=float))
    caps = np.ones(loads.shape[1]) if capacity is None else np.asarray(capacity, dtype=float)
    active = np.ones(caps.shape, bool) if active is None else np.asarray(active, bool)
    busiest = loads.sum(axis=1).max(initial=0.0)  # the busiest window's load
    if busiest <= 0:
        return 0.0
    # × Σ c before ÷ the load: a tiny load (a subnormal) divided by Σ c first would round to 0
    return float((loads / caps).max() * caps[active].sum() / busiest - 1.0)


def load_distance(
    worker_load: np.ndarray, capacity: np.ndarray | None = None, active: np.ndarray | None = None
) -> float:
    """Paper 004 §4.3.1: the largest difference between a worker's load and the mean load of the
    active workers — ``max(|u_w − 1|)`` over active workers and ``max(u_w − 1, 0)`` over draining
    ones (constraint (3) holds for every worker, (4) only for active ones), with the normalised
    load ``u_w`` above. Relative to the mean (0.01 = 1 %); the paper's loads are utilisation
    percentages, so its "1 %" is one point of a worker's capacity."""
    worker_load = np.asarray(worker_load, dtype=float)
    capacity = np.ones_like(worker_load) if capacity is None else np.asarray(capacity, float)
    active = np.ones(worker_load.shape, bool) if active is None else np.asarray(active, bool)
    if worker_load.sum() <= 0:
        return 0.0
    deviation = normalised_load(worker_load, capacity, active) - 1.0
    over_draining = np.clip(deviation[~active], 0.0, None)
    return float(max(np.abs(deviation[active]).max(initial=0.0), over_draining.max(initial=0.0)))


def collocation_factor(group_worker: Sequence[str], snapshot: LoadSnapshot) -> float | None:
    """Paper 004 §4.3.2/§5.3: the share of the messages between key groups (``key_group_flow``)
    that stay on one worker, in [0, 1]; None without flow. ``group_worker[g]`` is group ``g``'s
    worker; flow anchors sit on ``snapshot.flow_anchors``."""
    flow = snapshot.key_group_flow
    if flow is None or flow.size == 0 or flow[:, 2].sum() <= 0:
        return None
    where = np.asarray(list(group_worker) + list(snapshot.flow_anchors), dtype=object)
    ends = flow[:, :2].astype(np.int64)
    same = where[ends[:, 0]] == where[ends[:, 1]]
    return float(flow[same, 2].sum() / flow[:, 2].sum())


def skew(worker_load: np.ndarray) -> float:
    """Paper 001 §6.1.1: ``S = (W − U) / (M − U)`` with ``M`` messages, ``U = ⌈M/R⌉`` over ``R``
    workers and ``W`` the most any worker got (0 = uniform, 1 = everything on one worker)."""
    worker_load = np.asarray(worker_load, dtype=float)
    total = worker_load.sum()
    fair = np.ceil(total / worker_load.size)
    if total - fair <= 0:
        return 0.0
    return float(max(worker_load.max() - fair, 0.0) / (total - fair))


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


def memory(table: RoutingTable, snapshot: LoadSnapshot) -> float | None:
    """Σ over workers of distinct keys (paper 000 memory footprint), if key counts are known."""
    if snapshot.distinct_keys is None:
        return None
    extra = sum(len(targets) - 1 for targets in table.hot_keys.values())
    return float(snapshot.distinct_keys.sum() + extra)


def evaluate(
    table: Table, snapshot: Loads, current: Table | None = None
) -> tuple[tuple[Move, ...], dict[str, float]]:
    """Moves against ``current`` and the predicted metrics of ``table`` on ``snapshot`` (loads
    of the table's kind). A ``current`` table of the other kind has nothing to move from: it
    counts as none."""
    if current is not None and current.kind != table.kind:
        current = None
    if isinstance(table, PartitionAssignment):
        if not isinstance(snapshot, PartitionLoad):
            raise TypeError("a partition_assignment table is evaluated on a PartitionLoad")
        return evaluate_partitions(table, snapshot, current)  # type: ignore[arg-type]
    if not isinstance(table, RoutingTable) or not isinstance(snapshot, LoadSnapshot):
        raise TypeError("a key_routing table is evaluated on a LoadSnapshot")
    load = worker_load(table, snapshot)
    found = moves(current, table, snapshot)  # type: ignore[arg-type]
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
    metrics["load_distance"] = load_distance(
        load, table.workers.capacities, table.workers.is_active
    )
    collocated = collocation_factor(table.key_group_worker, snapshot)
    if collocated is not None:
        metrics["collocation_factor"] = collocated
    return found, metrics


def partition_rates(loads: PartitionLoad, partitions: Sequence[int]) -> np.ndarray:
    """The write rate of each of ``partitions`` (0 for partitions ``loads`` has no rate for)."""
    known = loads.partition_load
    index = np.asarray(partitions, dtype=np.int64)
    rates = np.zeros(index.size)
    inside = index < known.size
    rates[inside] = known[index[inside]]
    return rates


def partition_window_rates(loads: PartitionLoad, partitions: Sequence[int]) -> np.ndarray | None:
    """Windows × ``partitions``: the rate of each in every window of ``loads.partition_windows``
    (0 for partitions it has no rate for), or None without windows."""
    known = loads.partition_windows
    if known is None:
        return None
    index = np.asarray(partitions, dtype=np.int64)
    rates = np.zeros((known.shape[0], index.size))
    inside = index < known.shape[1]
    rates[:, inside] = known[:, index[inside]]
    return rates


def evaluate_partitions(
    table: PartitionAssignment, loads: PartitionLoad, current: PartitionAssignment | None = None
) -> tuple[tuple[Move, ...], dict[str, float]]:
    """Moves and predicted metrics of a ``partition_assignment`` table (paper 002): consumers
    against the lower bound, Rscore (Eq. 11), consumers over the bin capacity C (``overloaded``:
    with more than one partition; ``oversized_partitions``: alone but above C) — with
    ``loads.partition_windows``, in any window, the bound the busiest window's — the §VI-C
    latency of one iteration, and with ``loads.partition_racks`` the cross-rack share of
    KIP-881 (``racks.rack_metrics``: ``cross_rack_fraction``, ``cross_rack_load``,
    ``rack_known_share``). ``table.params`` carries C (``bin_capacity``; ``capacity`` in tables
    published before the name changed), C̄ (``consumer_capacity``), ``iteration_s`` and
    ``rebalance_s``."""
    from routeplan.planning.partitions import latency
    from routeplan.planning.partitions import scores as bm
    from routeplan.planning.partitions.racks import rack_metrics

    params = dict(table.params)
    if "bin_capacity" not in params and "capacity" in params:
        params["bin_capacity"] = params["capacity"]
    needed = ("bin_capacity", "consumer_capacity", "iteration_s", "rebalance_s")
    if any(k not in params for k in needed):
        raise ValueError(f"a partition_assignment table needs params {', '.join(needed)}")
    capacity = float(params["bin_capacity"])
    partitions = list(table.partition_consumer)
    rates = partition_rates(loads, partitions)
    racks = loads.partition_racks  # KIP-881: the share of the known load read across racks
    names = {n: i for i, n in enumerate(dict.fromkeys(table.consumers.names))}
    before = dict(current.partition_consumer) if current is not None else {}
    for name in before.values():
        names.setdefault(name, len(names))
    now = np.array([names[table.partition_consumer[p]] for p in partitions])
    previous = np.array([names[before[p]] if p in before else -1 for p in partitions])
    moved = bm.moved(previous, now)
    found = tuple(
        Move(f"partition:{p}", (before[p],), (table.partition_consumer[p],), float(rate))
        for p, rate, m in zip(partitions, rates, moved, strict=True)
        if m
    )
    window_rates = partition_window_rates(loads, partitions)
    held = rates if window_rates is None else window_rates  # what the plan must hold
    _, loads, _ = bm.consumer_loads(now, rates)
    total = float(rates.sum())
    migrated = float(rates[moved].sum())
    segments = latency.queue_segments(
        rates,
        now,
        float(params["consumer_capacity"]),
        iteration_s=float(params["iteration_s"]),
        rebalance_s=float(params["rebalance_s"]),
        previous=previous,
    )
    delay = latency.latency_summary(segments)
    metrics = {
        "consumers": float(bm.consumers(now)),
        "lower_bound": float(bm.lower_bound(held, capacity)),
        "rscore": bm.rscore(rates, capacity, previous, now),
        "imbalance": imbalance(loads),
        "max_consumer_load": float(loads.max(initial=0.0)),
        "bin_capacity": capacity,
        "overloaded": float(bm.overloaded(now, held, capacity)),
        "oversized_partitions": float(np.sum(rates > capacity)),
        "total_load": total,
        "moves": float(len(found)),
        "migrated_load": migrated,
        "migrated_load_share": migrated / total if total > 0 else 0.0,
        "delayed_share": delay["delayed_share"],
        "latency_p50_s": delay["p50"],
        "latency_p90_s": delay["p90"],
        "latency_p99_s": delay["p99"],
    }
    metrics.update(rack_metrics(table, _covering(rates, partitions), racks))
    return found, metrics


def _covering(rates: np.ndarray, partitions: Sequence[int]) -> np.ndarray:
    """``rates`` of ``partitions`` as an array indexed by partition (0 where none is listed)."""
    out = np.zeros(max(partitions, default=-1) + 1)
    out[np.asarray(partitions, dtype=np.int64)] = rates
    return out


def bin_capacity(table: PartitionAssignment) -> float:
    """The bin capacity C a partition assignment was planned with (``params``:
    ``bin_capacity``; ``capacity`` in tables published before the name changed); 0 unknown."""
    params = table.params
    return float(params.get("bin_capacity") or params.get("capacity") or 0.0)


def consumer_excess(
    table: PartitionAssignment, names: Sequence[str], loads: np.ndarray
) -> np.ndarray:
    """The load above C of each consumer ``names`` (rows × consumers of ``loads``, e.g. one row
    per window) that ``table`` gives more than one partition — a partition above C alone can
    only have a consumer of its own: no assignment does better. Without a recorded C, each
    consumer's own capacity (1 for a consumer the table does not list)."""
    capacity = bin_capacity(table)
    if capacity > 0:
        limit = np.full(len(names), capacity)
    else:
        caps = {w.name: w.capacity for w in table.consumers.items}
        limit = np.array([caps.get(n, 1.0) for n in names])
    held: dict[str, int] = {}
    for consumer in table.partition_consumer.values():
        held[consumer] = held.get(consumer, 0) + 1
    shared = np.array([held.get(n, 0) > 1 for n in names], dtype=bool)
    loads = np.atleast_2d(np.asarray(loads, dtype=float))
    return np.where(shared, np.maximum(loads - limit * (1 + 1e-9), 0.0), 0.0)


def relative_worker_loads(table: Table, loads: Loads) -> tuple[dict[str, float], Workers, str]:
    """Worker → load relative to capacity under ``loads``, the workers that carry it, and what
    1.0 means: for key routing every worker of the table, 1.0 = its fair share (``u_w``); for a
    partition assignment the consumers that read a partition, 1.0 = the bin capacity C (from
    ``table.params``). ``ValueError`` when the loads are of the other kind or C is unknown."""
    if isinstance(table, RoutingTable):
        if not isinstance(loads, LoadSnapshot):
            raise ValueError("a key_routing table needs key-group loads")
        workers = table.workers
        relative = normalised_load(worker_load(table, loads), workers.capacities, workers.is_active)
        return dict(zip(workers.names, relative.tolist(), strict=True)), workers, "fair share"
    if not isinstance(table, PartitionAssignment) or not isinstance(loads, PartitionLoad):
        raise ValueError("a partition_assignment table needs partition loads")
    capacity = bin_capacity(table)
    if capacity <= 0:
        raise ValueError(f"{table.stream}: the table records no bin_capacity")
    partitions = list(table.partition_consumer)
    rates = partition_rates(loads, partitions)
    by_consumer = dict.fromkeys(table.consumers.names, 0.0)
    for p, rate in zip(partitions, rates.tolist(), strict=True):
        by_consumer[table.partition_consumer[p]] += rate / capacity
    used = Workers(tuple(w for w in table.consumers.items if by_consumer[w.name] > 0))
    relative = {n: v for n, v in by_consumer.items() if v > 0}
    return relative, used if used.items else table.consumers, "bin capacity C"


def worker_load_by_name(table: RoutingTable, snapshot: LoadSnapshot) -> Mapping[str, float]:
    return dict(zip(table.workers.names, worker_load(table, snapshot).tolist(), strict=True))


def observed_imbalance(load_by_worker: Mapping[str, float], workers: Workers) -> float:
    """Imbalance of loads recorded in logs; workers absent from ``workers`` count at capacity 1."""
    names, caps, active = _logged_workers([load_by_worker], workers)
    return imbalance(np.array([load_by_worker.get(n, 0.0) for n in names]), caps, active)


def observed_peak_excess(window_loads: Sequence[Mapping[str, float]], workers: Workers) -> float:
    """The day's ``peak_excess`` of loads recorded in logs, one mapping worker → load per
    window; workers absent from ``workers`` count at capacity 1 (as ``observed_imbalance``)."""
    names, caps, active = _logged_workers(window_loads, workers)
    loads = np.array([[w.get(n, 0.0) for n in names] for w in window_loads]).reshape(-1, len(names))
    return peak_excess(loads, caps, active)


def _logged_workers(
    loads: Sequence[Mapping[str, float]], workers: Workers
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every worker of ``workers`` and of ``loads``, sorted, with capacities and states."""
    caps = {w.name: w.capacity for w in workers.items}
    active = {w.name: w.state == "active" for w in workers.items}
    names = sorted(set(caps).union(*(set(w) for w in loads)))
    return (
        names,
        np.array([caps.get(n, 1.0) for n in names]),
        np.array([active.get(n, True) for n in names]),
    )
