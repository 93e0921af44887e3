"""Racks in partition plans: which consumer reads which partition from its own rack (KIP-881).

KIP-881 ("Rack-aware partition assignment for Kafka consumers") lets a consumer's ``client.rack``
reach the assignor, and a consumer may fetch from the closest replica (KIP-392, follower
fetching): a partition is read *in rack* when its consumer's rack is among the racks of its
replicas, otherwise its bytes cross racks (availability zones, which clouds bill).

Consumer ids are what the bin packers number (``heuristics``); ``consumer_racks[c]`` is id
``c``'s rack (None: unknown) for the known ids ``0 … K−1``, and every higher id — a consumer a
plan creates — has no known rack. ``partition_racks[j]`` lists partition ``j``'s replica racks
(empty: unknown).

What is counted: only the partitions whose racks are known **and** whose consumer's rack is known
(:func:`cross_rack`); the rest are reported as unknown, never guessed in-rack or cross-rack. A
planner prefers in-rack consumers (:func:`in_rack`); an unknown rack is never in rack.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from routeplan.model.table import PartitionAssignment

RackList = Sequence[Sequence[str]]


def in_rack(consumer_racks: Sequence[str | None], partition_racks: RackList | None) -> np.ndarray:
    """Partitions × known consumer ids: True where the consumer's rack is among the partition's
    replica racks (both known). All False without partition racks."""
    local = np.zeros((len(partition_racks or ()), len(consumer_racks)), dtype=bool)
    if not partition_racks:
        return local
    names = sorted({r for r in consumer_racks if r is not None})
    code = {r: i for i, r in enumerate(names)}
    consumer = np.array([code.get(r, -1) if r is not None else -1 for r in consumer_racks])
    replica = np.zeros((len(partition_racks), len(names) + 1), dtype=bool)  # last: unknown
    for j, racks in enumerate(partition_racks):
        for r in racks:
            if r in code:
                replica[j, code[r]] = True
    local[:, :] = replica[:, consumer] & (consumer >= 0)
    return local


def cross_rack(
    rates: np.ndarray,
    readers: Sequence[str | None],
    partition_racks: RackList | None,
) -> tuple[float, float]:
    """``(cross-rack load, known load)`` of partitions with ``rates`` read by consumers in racks
    ``readers`` (partition ``j``'s consumer's rack, None: unknown): the known load sums the
    partitions whose replica racks and consumer's rack are both known, the cross-rack load those
    of them whose consumer's rack is not among their replicas'."""
    rates = np.asarray(rates, dtype=float)
    if partition_racks is None or rates.size == 0:
        return 0.0, 0.0
    if len(partition_racks) != rates.size or len(readers) != rates.size:
        raise ValueError("one rate, one reader's rack and one list of racks per partition")
    pairs = list(zip(partition_racks, readers, strict=True))
    known = np.array([bool(racks) and rack is not None for racks, rack in pairs])
    far = np.array([rack not in racks for racks, rack in pairs])
    return float(rates[known & far].sum()), float(rates[known].sum())


def cross_rack_fraction(
    rates: np.ndarray,
    readers: Sequence[str | None],
    partition_racks: RackList | None,
) -> float | None:
    """The cross-rack share of the load whose racks are known (:func:`cross_rack`); None when
    no partition's racks and consumer's rack are both known (nothing to measure)."""
    cross, known = cross_rack(rates, readers, partition_racks)
    if known <= 0:
        return None
    return cross / known


def has_racks(consumer_racks: Sequence[str | None], partition_racks: RackList | None) -> bool:
    """Whether some consumer and some partition have a known rack: a plan can be rack-aware."""
    return any(r is not None for r in consumer_racks) and any(partition_racks or ())


def rack_metrics(
    table: PartitionAssignment, rates: np.ndarray, partition_racks: RackList | None
) -> dict[str, float]:
    """``cross_rack_fraction`` (of the load whose racks are known), ``cross_rack_load`` and
    ``rack_known_share`` (the share of the load both racks are known for) of ``table``'s
    partitions ``0 … len(rates) − 1`` read at ``rates``; empty when nothing can be measured
    (no racks on either side). Partitions the table or ``partition_racks`` do not cover count
    as unknown."""
    rates = np.asarray(rates, dtype=float)
    if partition_racks is None:
        return {}
    rack_of = {w.name: w.rack for w in table.consumers.items}
    readers = [rack_of.get(table.partition_consumer.get(p, "")) for p in range(rates.size)]
    racks = [
        tuple(partition_racks[p]) if p < len(partition_racks) else () for p in range(rates.size)
    ]
    cross, known = cross_rack(rates, readers, racks)
    if known <= 0:
        return {}
    total = float(rates.sum())
    return {
        "cross_rack_fraction": cross / known,
        "cross_rack_load": cross,
        "rack_known_share": known / total if total > 0 else 0.0,
    }
