"""Partition → consumer assignment by bin packing with migration cost (paper 002, Landau et al.).

Every algorithm of :mod:`routeplan.planning.partitions.packing` is a strategy of the same name,
one class each: ``nf``, ``ff``, ``bf``, ``wf``, ``nfd``, ``ffd``, ``bfd``, ``wfd`` (adapted Any
Fit, §VI-A), ``mwf``, ``mbf``, ``mwfp``, ``mbfp`` (Algorithm 1), ``kafka_range``,
``kafka_roundrobin`` (Kafka's count-balanced assignors, a fixed group size) and ``binpack_milp``
(exact: fewest consumers, then least Rscore). They plan from a ``PartitionLoad`` (bytes/s per
partition) and return a ``PartitionAssignment`` whose ``partition_consumer`` maps every
partition ``0 … P−1`` (P also covers the current assignment's partitions) to a consumer.

Consumers: the active workers, in the workers' order, then the consumers an earlier plan
created; when more are needed the new ones are named ``c<id>``. A draining worker gets nothing:
its partitions count as moves. The table lists the consumers used, each at capacity C̄:
``consumer_capacity`` (bytes/s), else the smallest active worker capacity (the paper assumes
equal consumers). The bin capacity ``bin_capacity`` is C = C̄·(T − R)/T (§VI-C) for
``iteration_s`` T and ``rebalance_s`` R; the table's ``params`` record the parameters, the C̄
used and C.

Several windows (``PartitionLoad.partition_windows``, the day's windows the nightly forecast
gives): the packers and ``binpack_milp`` fill a consumer only while its partitions fit in every
window (vector bin packing), so consumers whose partitions peak at different hours share; the
Kafka assignors balance partition counts and read no rate.

Budget: ``binpack_milp`` honours ``max_moves`` (a hard constraint; the partitions a draining
worker must give up count against it; its time limit is ``Budget.time_limit_s``). The heuristics
honour no limit — Algorithm 1 is their way of moving little, not a cap — so a budget that sets
one is refused for them (``contract.check_budget``).

Racks (KIP-881, :mod:`routeplan.planning.partitions.racks`): consumers' racks are the workers'
``rack`` (and the current table's consumers'), partitions' racks ``PartitionLoad.partition_racks``.
Every packer but Next Fit, and ``binpack_milp``, takes ``rack_weight`` (default 1: an in-rack
consumer first among those a partition fits; 0: racks are not read, the plan of before); so does
``kafka_range`` (> 0: KIP-881's rack-aware range, Kafka's behaviour when racks are known).
``nf``, ``nfd`` and ``kafka_roundrobin`` cannot prefer a rack and take no ``rack_weight``; every
plan's predicted metrics report ``cross_rack_fraction`` whenever racks are known, so racks a
strategy did not plan by are still reported, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar, TypedDict

import numpy as np

from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import PartitionAssignment, Table
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.metrics import partition_rates, partition_window_rates
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.packing import Packing, bin_capacity, pack
from routeplan.planning.registry import register


class Racks(TypedDict):
    """What ``pack`` reads of racks: consumer ids' racks, partitions' replica racks, the weight."""

    consumer_racks: Sequence[str | None]
    partition_racks: Sequence[Sequence[str]] | None
    rack_weight: float


def check_rack_weight(weight: object) -> None:
    """ValueError unless ``weight`` is a finite number >= 0."""
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ValueError(f"rack_weight must be a number >= 0, got {weight!r}")
    if not 0 <= weight < float("inf"):
        raise ValueError(f"rack_weight must be a finite number >= 0, got {weight!r}")


@dataclass(frozen=True)
class BinPacking:
    """Plan partitions onto consumers with :func:`routeplan.planning.partitions.packing.pack`
    (the algorithm of the strategy's registered ``name``). Not registered itself."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "partition_assignment"
    honours: ClassVar[frozenset[str]] = frozenset()

    consumer_capacity: float | None = None
    iteration_s: float = 30.0
    rebalance_s: float = 5.0

    def __post_init__(self) -> None:
        if self.consumer_capacity is not None and not self.consumer_capacity > 0:
            raise ValueError(f"consumer_capacity must be > 0 bytes/s, got {self.consumer_capacity}")
        bin_capacity(1.0, self.iteration_s, self.rebalance_s)  # checks the times

    def _pack(
        self,
        rates: np.ndarray,
        capacity: float,
        previous: np.ndarray,
        workers: Workers,
        budget: Budget,
        racks: Racks,
    ) -> Packing:
        return pack(self.name, rates, capacity, previous, **racks)

    def plan(
        self,
        loads: PartitionLoad,
        current: Table | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        if not isinstance(loads, PartitionLoad):
            raise TypeError(
                f"{self.name} assigns partitions: it plans from a PartitionLoad, "
                f"not a {type(loads).__name__}"
            )
        consumer_capacity = self.consumer_capacity or min(w.capacity for w in workers.active)
        capacity = bin_capacity(consumer_capacity, self.iteration_s, self.rebalance_s)
        before: dict[int, str] = {}
        if isinstance(current, PartitionAssignment):
            before = dict(current.partition_consumer)
        partitions = range(max(loads.num_partitions, max(before, default=-1) + 1))
        rates = partition_rates(loads, partitions)
        windows = partition_window_rates(loads, partitions)
        if windows is not None:  # every window of the day must fit
            rates = windows
        draining = {w.name for w in workers.items if w.state != "active"}
        created = sorted(set(before.values()) - set(workers.names), key=lambda n: (len(n), n))
        names = ConsumerNames([w.name for w in workers.active] + created, workers.names)
        kept = [None if before.get(p) in draining else before.get(p) for p in partitions]
        previous = names.encode(kept)
        forced = sum(1 for p in partitions if before.get(p) in draining)
        rack_of = consumer_racks(workers, current)
        racks: Racks = {
            "consumer_racks": [rack_of.get(n) for n in names.known],
            "partition_racks": _padded(loads.partition_racks, len(partitions)),
            "rack_weight": float(getattr(self, "rack_weight", 0.0)),
        }
        packing = self._pack(rates, capacity, previous, workers, _less_moves(budget, forced), racks)
        consumers = names.decode(packing.assignment)
        table = PartitionAssignment(
            stream=loads.stream,
            strategy=self.name,
            consumers=Workers(
                tuple(
                    Worker(
                        names.name(int(c)),
                        consumer_capacity,
                        rack=rack_of.get(names.name(int(c))),
                    )
                    for c in np.unique(packing.assignment)
                )
            ),
            partition_consumer=dict(zip(partitions, consumers, strict=True)),
            params={
                **parameters(self),
                "consumer_capacity": consumer_capacity,
                "bin_capacity": capacity,
            },
            strategy_state=(
                {"solver_status": packing.solver["solver_status"]} if packing.solver else {}
            ),
        )
        extra = {}
        if packing.solver:
            extra["solver_seconds"] = float(packing.solver["solver_seconds"])
            if packing.solver["mip_gap"] is not None:
                extra["mip_gap"] = float(packing.solver["mip_gap"])
        return finish_plan(table, loads, current, extra)


def consumer_racks(workers: Workers, current: Table | None) -> dict[str, str]:
    """Each consumer's known rack by name: the current table's consumers', then the workers'
    (the workers file or policy is the newer word)."""
    found: dict[str, str] = {}
    if isinstance(current, PartitionAssignment):
        found.update({w.name: w.rack for w in current.consumers.items if w.rack is not None})
    found.update({w.name: w.rack for w in workers.items if w.rack is not None})
    return found


def _padded(
    racks: tuple[tuple[str, ...], ...] | None, partitions: int
) -> tuple[tuple[str, ...], ...] | None:
    """``racks`` for ``partitions`` partitions: those the loads do not cover are unknown."""
    if racks is None:
        return None
    return racks[:partitions] + ((),) * (partitions - len(racks))


@dataclass(frozen=True)
class RackAwarePacking(BinPacking):
    """A packer that prefers in-rack consumers: ``rack_weight`` is how much an in-rack consumer
    counts against the fit's own preference (a bin's fill or slack over C, in [0, 1];
    ``heuristics``), or against the Rscore for ``binpack_milp``; 0: racks are not read, the plan
    of before. Not registered itself."""

    rack_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_rack_weight(self.rack_weight)


def _less_moves(budget: Budget, forced: int) -> Budget:
    """``budget`` with ``max_moves`` less the ``forced`` moves (partitions on draining
    workers); ValueError when they alone exceed it."""
    if budget.max_moves is None or not forced:
        return budget
    if forced > budget.max_moves:
        raise ValueError(
            f"{forced} partitions sit on draining workers and must move: more than "
            f"max_moves={budget.max_moves}"
        )
    return replace(budget, max_moves=budget.max_moves - forced)


# Adapted Any Fit (§II-B, §VI-A: a new bin reopens a partition's previous consumer, Eq. 12–14)


@register("nf")
@dataclass(frozen=True)
class NextFit(BinPacking):
    """Next Fit, adapted (paper 002 §VI-A): partitions in arrival order, one open bin."""


@register("ff")
@dataclass(frozen=True)
class FirstFit(RackAwarePacking):
    """First Fit, adapted (paper 002 §VI-A): the first open bin that fits."""


@register("bf")
@dataclass(frozen=True)
class BestFit(RackAwarePacking):
    """Best Fit, adapted (paper 002 §VI-A): the fullest open bin that fits."""


@register("wf")
@dataclass(frozen=True)
class WorstFit(RackAwarePacking):
    """Worst Fit, adapted (paper 002 §VI-A): the emptiest open bin that fits."""


@register("nfd")
@dataclass(frozen=True)
class NextFitDecreasing(BinPacking):
    """Next Fit Decreasing, adapted (paper 002 §VI-A): partitions largest first."""


@register("ffd")
@dataclass(frozen=True)
class FirstFitDecreasing(RackAwarePacking):
    """First Fit Decreasing, adapted (paper 002 §VI-A): partitions largest first."""


@register("bfd")
@dataclass(frozen=True)
class BestFitDecreasing(RackAwarePacking):
    """Best Fit Decreasing, adapted (paper 002 §VI-A): partitions largest first."""


@register("wfd")
@dataclass(frozen=True)
class WorstFitDecreasing(RackAwarePacking):
    """Worst Fit Decreasing, adapted (paper 002 §VI-A): partitions largest first."""


# Modified Any Fit (Algorithm 1, §IV-B, Table II)


@register("mwf")
@dataclass(frozen=True)
class ModifiedWorstFit(RackAwarePacking):
    """Modified Worst Fit (paper 002 Algorithm 1): previous consumers by their summed rate."""


@register("mbf")
@dataclass(frozen=True)
class ModifiedBestFit(RackAwarePacking):
    """Modified Best Fit (paper 002 Algorithm 1): previous consumers by their summed rate."""


@register("mwfp")
@dataclass(frozen=True)
class ModifiedWorstFitPartition(RackAwarePacking):
    """Modified Worst Fit Partition (paper 002 Algorithm 1): previous consumers by their
    largest partition."""


@register("mbfp")
@dataclass(frozen=True)
class ModifiedBestFitPartition(RackAwarePacking):
    """Modified Best Fit Partition (paper 002 Algorithm 1): previous consumers by their
    largest partition."""


# Kafka's assignors: count-balanced, blind to rates (the §VI-C baseline)


@dataclass(frozen=True)
class KafkaAssignor(BinPacking):
    """Kafka's count-balanced assignment of partitions to ``consumers`` (default: the active
    workers), blind to rates. Not registered itself."""

    consumers: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.consumers is not None and (
            isinstance(self.consumers, bool) or int(self.consumers) < 1
        ):
            raise ValueError(f"consumers must be >= 1, got {self.consumers}")

    def _pack(self, rates, capacity, previous, workers, budget, racks) -> Packing:  # noqa: ANN001
        group = int(self.consumers or len(workers.active))
        return pack(self.name, rates, capacity, previous, consumers=group, **racks)


@register("kafka_range")
@dataclass(frozen=True)
class KafkaRange(KafkaAssignor):
    """Kafka's RangeAssignor: consecutive partitions per consumer; with racks known and
    ``rack_weight`` > 0, KIP-881's rack-aware range (in-rack partitions first, counts still
    balanced)."""

    rack_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_rack_weight(self.rack_weight)


@register("kafka_roundrobin")
@dataclass(frozen=True)
class KafkaRoundRobin(KafkaAssignor):
    """Kafka's RoundRobinAssignor: partition i → consumer i mod n."""


# The exact reference (§III)


@register("binpack_milp")
@dataclass(frozen=True)
class BinPackingMilp(RackAwarePacking):
    """Exact reference: fewest consumers, then least Rscore (PuLP + HiGHS, time-limited,
    warm-started from the best heuristic); honours ``Budget.max_moves``. Records
    ``solver_status`` in ``strategy_state``, ``solver_seconds`` and ``mip_gap`` in
    ``predicted``."""

    honours: ClassVar[frozenset[str]] = frozenset({"max_moves"})

    def _pack(self, rates, capacity, previous, workers, budget, racks) -> Packing:  # noqa: ANN001
        return pack(
            self.name,
            rates,
            capacity,
            previous,
            time_limit_s=budget.time_limit_s,
            max_moves=budget.max_moves,
            **racks,
        )
