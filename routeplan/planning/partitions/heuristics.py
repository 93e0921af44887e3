"""Bin-packing heuristics for partition → consumer assignment (paper 002, Landau et al.).

Items are partitions with write rates ``rates[j]`` (bytes/s) — or ``rates[t, j]`` in every
window ``t`` of a day, when the assignment must hold each window (vector bin packing: a bin takes
a partition only if it fits in every window; "decreasing" and "most loaded" then read each
partition's and bin's highest window; one window is the paper's case) — bins are consumers of
capacity
``capacity`` (the bin capacity C, see :func:`routeplan.planning.partitions.packing.bin_capacity`).
Every function takes ``previous[j]``, the consumer id partition ``j`` had at iteration k−1 (−1:
none), and returns ``assignment[j]``, its consumer id at iteration k. Consumer ids are ints ≥ 0.

A bin that is empty takes any partition, so a partition above C gets a consumer of its own
(it cannot be split: one partition is read by one consumer); no other rule ever lets a consumer
exceed C. Open bins are kept in the order they were opened: "left-most" (First Fit) and ties
(Best/Worst Fit: the first opened wins) follow that order, never the consumer ids, so the choice
of id for a new bin (Eq. 12–14) cannot change how many bins an algorithm uses (§VI-A).

Racks (KIP-881, ``racks``): with ``local`` (partitions × known consumer ids: the consumer's rack
is among the partition's replica racks) and ``rack_weight`` > 0, a fit chooses among the open
bins the partition fits by its own preference (a bin's fill over C for Best Fit, its slack for
Worst Fit, its place in the opening order for First Fit; each in [0, 1]) plus ``rack_weight``
for a bin whose consumer is in the partition's rack: 0 is the plain algorithm, ≥ 1 puts in-rack
bins first. A new bin that does not reopen the partition's previous consumer (Eq. 14: a move
costs more than a cross-rack read) opens the lowest free consumer in one of its racks, else
f(k). Only bins the partition fits are candidates and a bin is opened only when none is, so
racks never add a consumer nor overload one; without an in-rack candidate the choice is the plain
algorithm's. Once packed, :func:`rack_repair` moves or swaps cross-rack partitions onto in-rack
consumers where they fit (never one that stays on its previous consumer).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

FITS = ("next", "first", "best", "worst")
SORTS = ("cumulative", "max_partition")


class _Bins:
    """The consumer group being built at iteration k: open bins with their loads and ids."""

    def __init__(
        self,
        rates: np.ndarray,
        capacity: float,
        previous: np.ndarray,
        local: np.ndarray | None = None,
        rack_weight: float = 0.0,
    ) -> None:
        self.rates = np.atleast_2d(rates)  # windows × partitions
        self.capacity = float(capacity)
        self.previous = previous
        size = max(self.rates.shape[1], 1)
        self.load = np.zeros((self.rates.shape[0], size))  # windows × bins
        self.ids = np.zeros(size, dtype=np.int64)
        self.count = 0
        self.used: set[int] = set()  # y_i(t_k) = 1
        self._lowest = 0
        self.assignment = np.full(self.rates.shape[1], -1, dtype=np.int64)
        self.local = _checked_local(local, self.rates.shape[1]) if rack_weight > 0 else None
        self.rack_weight = float(rack_weight)

    def near(self, j: int, ids: np.ndarray) -> np.ndarray:
        """Whether each consumer id of ``ids`` is in partition ``j``'s rack (ids beyond the
        known consumers: never)."""
        near = np.zeros(ids.shape, dtype=bool)
        if self.local is not None:
            known = ids < self.local.shape[1]
            near[known] = self.local[j, ids[known]]
        return near

    def lowest_unused(self) -> int:
        """Eq. 12: f(k), the lowest consumer id not in use at iteration k."""
        while self._lowest in self.used:
            self._lowest += 1
        return self._lowest

    def open(self, j: int, reopen_previous: bool = True) -> int:
        """Open a bin for partition ``j`` and return its index; its id is Eq. 14's h(j, k):
        the previous consumer g(j, k) (Eq. 13) when unused, else (racks) the lowest free
        consumer in ``j``'s rack, else f(k)."""
        g = int(self.previous[j])
        if reopen_previous and g >= 0 and g not in self.used:
            return self.open_id(g)
        if self.local is not None:  # the lowest free consumer in the partition's rack
            free = np.flatnonzero(self.local[j])
            free = [int(c) for c in free if int(c) not in self.used]
            if free:
                return self.open_id(free[0])
        return self.open_id(self.lowest_unused())

    def open_id(self, cid: int) -> int:
        if cid in self.used:
            raise ValueError(f"consumer {cid} is already open")
        self.used.add(cid)
        self.ids[self.count] = cid
        self.count += 1
        return self.count - 1

    def put(self, b: int, j: int) -> None:
        self.load[:, b] += self.rates[:, j]
        self.assignment[j] = self.ids[b]

    def fits(self, b: int, j: int) -> bool:
        return bool(np.all(self.load[:, b] + self.rates[:, j] <= self.capacity))

    def choose(self, j: int, fit: str) -> int | None:
        """The open bin ``fit`` picks for partition ``j``, or None when no open bin takes it."""
        n = self.count
        if n == 0:
            return None
        if fit == "next":  # only the last opened bin is open
            return n - 1 if self.fits(n - 1, j) else None
        ok = np.all(self.load[:, :n] + self.rates[:, j, None] <= self.capacity, axis=0)
        load = self.load[:, :n].max(axis=0)  # a bin's highest window
        near = self.near(j, self.ids[:n]) & ok
        if near.any():
            b = int(np.argmax(np.where(ok, self.preference(fit, load) + self.rack_weight * near,
                                       -np.inf)))  # fmt: skip
            return b
        if fit == "first":
            b = int(np.argmax(ok))
        elif fit == "best":  # tightest: most loaded bin that still fits
            b = int(np.argmax(np.where(ok, load, -np.inf)))
        else:  # worst: most slack
            b = int(np.argmin(np.where(ok, load, np.inf)))
        return b if ok[b] else None

    def preference(self, fit: str, load: np.ndarray) -> np.ndarray:
        """Each open bin's standing in ``fit``'s own order, in [0, 1] (higher: chosen first)."""
        fill = np.clip(load / self.capacity, 0.0, 1.0)
        if fit == "first":
            return 1.0 - np.arange(load.size) / load.size
        return fill if fit == "best" else 1.0 - fill


def _checked_local(local: np.ndarray | None, partitions: int) -> np.ndarray | None:
    if local is None:
        return None
    local = np.asarray(local, dtype=bool)
    if local.ndim != 2 or local.shape[0] != partitions:
        raise ValueError("local must be partitions × known consumer ids")
    return local


def _inputs(
    rates: np.ndarray, capacity: float, previous: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    rates = np.asarray(rates, dtype=float)
    if rates.ndim not in (1, 2) or not np.all(np.isfinite(rates)) or np.any(rates < 0):
        raise ValueError("rates must be finite rates >= 0, per partition (or windows × partitions)")
    if not np.isfinite(capacity) or capacity <= 0:
        raise ValueError(f"capacity must be > 0, got {capacity}")
    partitions = rates.shape[-1]
    if previous is None:
        return rates, np.full(partitions, -1, dtype=np.int64)
    previous = np.asarray(previous, dtype=np.int64)
    if previous.shape != (partitions,):
        raise ValueError("previous must have one consumer id (or -1) per partition")
    return rates, np.where(previous < 0, -1, previous)


def peak(rates: np.ndarray) -> np.ndarray:
    """Each partition's highest rate over the windows (its rate when there is one window)."""
    return np.atleast_2d(np.asarray(rates, dtype=float)).max(axis=0)


def decreasing(rates: np.ndarray) -> np.ndarray:
    """Partition indices by (highest) rate, largest first; ties by partition index."""
    return np.argsort(-peak(rates), kind="stable")


def any_fit(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    fit: str,
    sort_decreasing: bool = False,
    reopen_previous: bool = True,
    order: np.ndarray | None = None,
    local: np.ndarray | None = None,
    rack_weight: float = 0.0,
) -> np.ndarray:
    """Next/First/Best/Worst Fit (§II-B), their Decreasing versions with ``sort_decreasing``,
    adapted to reopen a partition's previous consumer when a new bin is needed (§VI-A,
    Eq. 12–14); ``reopen_previous=False`` gives the plain algorithm (new bin = f(k)).

    The online versions take partitions in ``order`` (default: by index; the paper's runs
    shuffle it every iteration). ``local`` and ``rack_weight``: the module's racks.
    """
    if fit not in FITS:
        raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
    rates, previous = _inputs(rates, capacity, previous)
    if sort_decreasing:
        sequence = decreasing(rates)
    elif order is not None:
        sequence = np.asarray(order, dtype=np.int64)
        if sequence.shape != previous.shape or not np.array_equal(
            np.sort(sequence), np.arange(previous.size)
        ):
            raise ValueError("order must be a permutation of the partitions")
    else:
        sequence = np.arange(previous.size)
    if fit == "next" and rack_weight > 0:
        raise ValueError("Next Fit keeps one bin open: it cannot prefer in-rack consumers")
    bins = _Bins(rates, capacity, previous, local, rack_weight)
    for j in sequence.tolist():
        b = bins.choose(j, fit)
        if b is None:
            b = bins.open(j, reopen_previous)
        bins.put(b, j)
    return _repaired(bins)


def _repaired(bins: _Bins) -> np.ndarray:
    """``bins``' assignment after :func:`rack_repair` when it prefers racks."""
    if bins.local is None:
        return bins.assignment
    movable = (bins.previous < 0) | (bins.previous != bins.assignment)
    return rack_repair(bins.rates, bins.capacity, bins.assignment, bins.local, movable)


def rack_repair(
    rates: np.ndarray,
    capacity: float,
    assignment: np.ndarray,
    local: np.ndarray,
    movable: np.ndarray,
) -> np.ndarray:
    """One pass over the cross-rack partitions, largest first: each that may move (``movable``:
    not staying on its previous consumer) goes to the fullest in-rack consumer it fits in every
    window, else swaps with the movable partition of an in-rack consumer that gains the most
    in-rack load with both consumers still within C. Each step raises the load read in rack;
    no consumer is opened or put above C, and a partition above C (alone on its consumer) stays.
    ``local``: partitions × known consumer ids (the module's racks)."""
    windows = np.atleast_2d(np.asarray(rates, dtype=float))  # windows × partitions
    size = windows.max(axis=0)
    found = np.asarray(assignment, dtype=np.int64).copy()
    ids, slot = np.unique(found, return_inverse=True)
    load = np.stack([np.bincount(slot, weights=row, minlength=ids.size) for row in windows])
    near = np.zeros((found.size, ids.size), dtype=bool)  # partition × open consumer: in rack
    known = ids < local.shape[1]
    near[:, known] = local[:, ids[known]]
    free = np.asarray(movable, dtype=bool) & (size <= capacity)
    for j in np.argsort(-size, kind="stable").tolist():
        a = int(slot[j])
        if not free[j] or near[j, a]:
            continue
        targets = np.flatnonzero(near[j])
        fits = np.all(load[:, targets] + windows[:, j, None] <= capacity, axis=0)
        if fits.any():
            b = int(targets[fits][np.argmax(load[:, targets[fits]].max(axis=0))])
            load[:, a] -= windows[:, j]
            load[:, b] += windows[:, j]
            slot[j] = b
            continue
        others = np.flatnonzero(free & np.isin(slot, targets))
        if others.size == 0:
            continue
        there = slot[others]
        gain = size[j] + size[others] * (near[others, a].astype(float) - near[others, there])
        stay_a = load[:, a, None] - windows[:, j, None] + windows[:, others] <= capacity
        stay_b = load[:, there] - windows[:, others] + windows[:, j, None] <= capacity
        ok = np.all(stay_a, axis=0) & np.all(stay_b, axis=0) & (gain > 0)
        if not ok.any():
            continue
        k = int(others[ok][np.argmax(gain[ok])])
        b = int(slot[k])
        load[:, a] += windows[:, k] - windows[:, j]
        load[:, b] += windows[:, j] - windows[:, k]
        slot[j], slot[k] = b, a
    return ids[slot]


def modified_any_fit(
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    fit: str,
    sort: str = "cumulative",
    local: np.ndarray | None = None,
    rack_weight: float = 0.0,
) -> np.ndarray:
    """Algorithm 1 (§IV-B), the Modified Any Fit: MWF/MBF (``sort="cumulative"``) and
    MWFP/MBFP (``sort="max_partition"``) with ``fit`` "worst" or "best".

    Previous consumers are visited biggest first (line 2: by the sum, or the largest, of their
    partitions' current rates). A consumer's partitions go, smallest first, into bins already
    open (lines 6–13: cheap partitions migrate); the first that fits nowhere reopens the
    consumer itself (line 17), which keeps its partitions biggest first while they fit
    (lines 18–24); the rest, and partitions without a previous consumer, are placed last,
    biggest first, by ``fit`` with Eq. 14's reopening (lines 25–30). ``local`` and
    ``rack_weight``: the module's racks (migrating partitions prefer in-rack bins).
    """
    if fit not in ("best", "worst"):
        raise ValueError(f"Algorithm 1 fits by 'best' or 'worst', got {fit!r}")
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}, got {sort!r}")
    rates, previous = _inputs(rates, capacity, previous)
    size = peak(rates)
    bins = _Bins(rates, capacity, previous, local, rack_weight)
    unassigned: list[int] = np.flatnonzero(previous < 0).tolist()
    held = np.flatnonzero(previous >= 0)
    if held.size:
        owners, group = np.unique(previous[held], return_inverse=True)
        if sort == "cumulative":
            key = np.bincount(group, weights=size[held], minlength=owners.size)
        else:
            key = np.zeros(owners.size)
            np.maximum.at(key, group, size[held])
        for o in np.lexsort((owners, -key)).tolist():
            pset = held[group == o]
            pset = pset[decreasing(size[pset])].tolist()  # line 5
            while pset:  # lines 6-13
                b = bins.choose(pset[-1], fit)
                if b is None:
                    break
                bins.put(b, pset.pop())
            if not pset:
                continue
            b = bins.open_id(int(owners[o]))  # line 17
            kept = 1
            bins.put(b, pset[0])  # an empty bin takes any partition
            while kept < len(pset) and bins.fits(b, pset[kept]):  # lines 18-24
                bins.put(b, pset[kept])
                kept += 1
            unassigned.extend(pset[kept:])  # line 25
    rest = np.asarray(unassigned, dtype=np.int64)
    for j in rest[decreasing(size[rest])].tolist():  # lines 27-30
        b = bins.choose(j, fit)
        if b is None:
            b = bins.open(j)
        bins.put(b, j)
    return _repaired(bins)


def kafka_range(
    num_partitions: int,
    consumers: int,
    consumer_racks: Sequence[str | None] | None = None,
    partition_racks: Sequence[Sequence[str]] | None = None,
) -> np.ndarray:
    """Kafka's RangeAssignor for one topic: consecutive partitions, counts differ by ≤ 1.

    With racks (consumer ``i``'s rack ``consumer_racks[i]``, the consumers in Kafka's order;
    partition ``p``'s replica racks ``partition_racks[p]``) it is KIP-881's rack-aware range
    assignment: when some consumer has a rack that some replica has, and the partitions' rack
    sets are not all the same, each consumer in turn first takes the unassigned partitions
    that match its rack (a consumer without a rack matches any), in partition order, up to its
    quota (⌊P/N⌋, one more while consumers with an extra partition remain); then the standard
    range pass gives each consumer in turn the first unassigned partitions up to its quota.
    Balance of counts comes first, rack alignment second (Kafka's RangeAssignor)."""
    _check_consumers(consumers)
    base, extra = divmod(num_partitions, consumers)
    if not _needs_rack_matching(consumer_racks, partition_racks, consumers, num_partitions):
        counts = np.full(consumers, base) + (np.arange(consumers) < extra)
        return np.repeat(np.arange(consumers, dtype=np.int64), counts)
    assert consumer_racks is not None and partition_racks is not None
    assignment = np.full(num_partitions, -1, dtype=np.int64)
    taken = np.zeros(consumers, dtype=np.int64)
    left = [extra]  # consumers that may still take an extra partition

    def quota(c: int) -> int:
        return max(0, base + (1 if left[0] > 0 else 0) - int(taken[c]))

    def give(c: int, matching: bool) -> None:
        rack = consumer_racks[c]
        free = np.flatnonzero(assignment < 0).tolist()
        if matching and rack is not None:
            free = [p for p in free if rack in partition_racks[p]]
        chosen = free[: quota(c)]
        assignment[chosen] = c
        taken[c] += len(chosen)
        if chosen and taken[c] > base:
            left[0] -= 1

    for matching in (True, False):
        for c in range(consumers):
            give(c, matching)
    return assignment


def _needs_rack_matching(
    consumer_racks: list[str | None] | None,
    partition_racks: list[tuple[str, ...]] | None,
    consumers: int,
    num_partitions: int,
) -> bool:
    """KIP-881's condition (AbstractPartitionAssignor.useRackAwareAssignment): some consumer
    rack is a replica rack, and not every partition has the same set of replica racks."""
    if consumer_racks is None or partition_racks is None:
        return False
    if len(consumer_racks) != consumers or len(partition_racks) != num_partitions:
        raise ValueError("one rack (or None) per consumer and one list of racks per partition")
    mine = {r for r in consumer_racks if r is not None}
    theirs = [frozenset(r) for r in partition_racks]
    every = frozenset().union(*theirs) if theirs else frozenset()
    return bool(mine & every) and any(r != every for r in theirs)


def kafka_round_robin(
    num_partitions: int, consumers: int, order: np.ndarray | None = None
) -> np.ndarray:
    """Kafka's RoundRobinAssignor: the i-th partition of ``order`` (default: by index) goes to
    consumer ``i mod consumers``; blind to rates (§VI-C's kd_N baseline)."""
    _check_consumers(consumers)
    sequence = np.arange(num_partitions) if order is None else np.asarray(order, dtype=np.int64)
    assignment = np.empty(num_partitions, dtype=np.int64)
    assignment[sequence] = np.arange(num_partitions) % consumers
    return assignment


def _check_consumers(consumers: int) -> None:
    if isinstance(consumers, bool) or not isinstance(consumers, int | np.integer) or consumers < 1:
        raise ValueError(f"Kafka's assignors need a number of consumers >= 1, got {consumers!r}")
