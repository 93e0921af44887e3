"""Partition → consumer assignment by bin packing with migration cost (paper 002, Landau et al.).

Every algorithm of :mod:`routeplan.planning.partitions.packing` is a strategy of the same name:
``nf``, ``ff``, ``bf``, ``wf``, ``nfd``, ``ffd``, ``bfd``, ``wfd`` (adapted Any Fit, §VI-A),
``mwf``, ``mbf``, ``mwfp``, ``mbfp`` (Algorithm 1), ``kafka_range``, ``kafka_roundrobin`` (Kafka's
count-balanced assignors, a fixed group size) and ``binpack_milp`` (exact: fewest consumers, then
least Rscore). They read ``loads.partition_load`` (bytes/s per partition) and return a
``partition_assignment`` table whose ``partition_consumer`` maps every partition ``0 … P−1``
(P also covers the current table's partitions) to a consumer.

Consumers: the active workers, in the workers' order, then the consumers an earlier plan
created; when more are needed the new ones are named ``c<id>``. A draining worker gets nothing:
its partitions count as moves. The table lists the consumers used, each at capacity C̄:
``consumer_capacity`` (bytes/s), else the smallest active worker capacity (the paper assumes
equal consumers). The bin capacity is C = C̄·(T − R)/T (§VI-C) for ``iteration_s`` T and
``rebalance_s`` R. ``Budget.max_moves`` binds ``binpack_milp`` only (a hard constraint, its
time limit is ``Budget.time_limit_s``); the heuristics have no move budget — Algorithm 1 is
their way of moving little — and ``Budget.max_migrated_load_share`` is not used here.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.metrics import partition_rates
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.packing import (
    ADAPTED,
    ALGORITHMS,
    MODIFIED,
    Packing,
    bin_capacity,
    pack,
)
from routeplan.planning.registry import register

PARTITION_STRATEGIES = frozenset(ALGORITHMS)
PARTITION_BASELINE = "kafka_range"  # what jobs/plan.py plans beside a partition strategy

_DESCRIPTIONS = {
    "nf": "Next Fit",
    "ff": "First Fit",
    "bf": "Best Fit",
    "wf": "Worst Fit",
    "nfd": "Next Fit Decreasing",
    "ffd": "First Fit Decreasing",
    "bfd": "Best Fit Decreasing",
    "wfd": "Worst Fit Decreasing",
    "mwf": "Modified Worst Fit (Algorithm 1, cumulative sort)",
    "mbf": "Modified Best Fit (Algorithm 1, cumulative sort)",
    "mwfp": "Modified Worst Fit Partition (Algorithm 1, max partition sort)",
    "mbfp": "Modified Best Fit Partition (Algorithm 1, max partition sort)",
}


class BinPacking:
    """Plan partitions onto consumers with :func:`routeplan.planning.partitions.packing.pack`
    (``algorithm``)."""

    kind: ClassVar[str] = "partition_assignment"
    honours: ClassVar[frozenset[str]] = frozenset()

    name = "binpack"
    algorithm = ""

    def __init__(
        self,
        consumer_capacity: float | None = None,
        iteration_s: float = 30.0,
        rebalance_s: float = 5.0,
    ) -> None:
        if consumer_capacity is not None and not consumer_capacity > 0:
            raise ValueError(f"consumer_capacity must be > 0 bytes/s, got {consumer_capacity}")
        bin_capacity(1.0, iteration_s, rebalance_s)  # checks the times
        self.consumer_capacity = consumer_capacity
        self.iteration_s = float(iteration_s)
        self.rebalance_s = float(rebalance_s)

    def params(self) -> dict:
        return {}

    def pack(
        self,
        rates: np.ndarray,
        capacity: float,
        previous: np.ndarray,
        workers: Workers,
        budget: Budget,
    ) -> Packing:
        return pack(self.algorithm, rates, capacity, previous)

    def plan(
        self,
        loads: LoadSnapshot,
        current: RoutingTable | None,
        workers: Workers,
        budget: Budget,
    ) -> Plan:
        if loads.partition_load is None:
            raise ValueError(f"{self.name} assigns partitions: the loads have no partition_load")
        consumer_capacity = self.consumer_capacity or min(w.capacity for w in workers.active)
        capacity = bin_capacity(consumer_capacity, self.iteration_s, self.rebalance_s)
        before = {}
        if current is not None and current.kind == "partition_assignment":
            before = dict(current.partition_consumer)
        partitions = range(max(loads.partition_load.size, max(before, default=-1) + 1))
        rates = partition_rates(loads, partitions)
        draining = {w.name for w in workers.items if w.state != "active"}
        created = sorted(set(before.values()) - set(workers.names), key=lambda n: (len(n), n))
        names = ConsumerNames([w.name for w in workers.active] + created, workers.names)
        previous = names.encode(
            [None if before.get(p) in draining else before.get(p) for p in partitions]
        )
        packing = self.pack(rates, capacity, previous, workers, budget)
        consumers = names.decode(packing.assignment)
        table = RoutingTable(
            stream=loads.stream,
            strategy=self.name,
            workers=Workers(
                tuple(
                    Worker(names.name(int(c)), consumer_capacity)
                    for c in np.unique(packing.assignment)
                )
            ),
            key_group_worker=(),
            params={
                "algorithm": self.algorithm,
                "consumer_capacity": consumer_capacity,
                "iteration_s": self.iteration_s,
                "rebalance_s": self.rebalance_s,
                "capacity": capacity,
                **self.params(),
            },
            hash_seed=loads.hash_seed,
            kind="partition_assignment",
            partition_consumer=dict(zip(partitions, consumers, strict=True)),
        )
        extra = {}
        if packing.solver:
            extra["solver_optimal"] = float(packing.solver["status"] == "optimal")
            extra["solver_seconds"] = float(packing.solver["seconds"])
            if packing.solver["mip_gap"] is not None:
                extra["mip_gap"] = float(packing.solver["mip_gap"])
        return finish_plan(table, loads, current, extra)


for _name in ADAPTED + MODIFIED:
    register(_name)(
        type(
            f"BinPacking_{_name}",
            (BinPacking,),
            {"algorithm": _name, "__doc__": f"{_DESCRIPTIONS[_name]} (paper 002)."},
        )
    )


class _Kafka(BinPacking):
    """Kafka's count-balanced assignment of partitions to ``consumers`` (default: the active
    workers), blind to rates: the baseline of §VI-C."""

    def __init__(
        self,
        consumers: int | None = None,
        consumer_capacity: float | None = None,
        iteration_s: float = 30.0,
        rebalance_s: float = 5.0,
    ) -> None:
        super().__init__(consumer_capacity, iteration_s, rebalance_s)
        if consumers is not None and (isinstance(consumers, bool) or int(consumers) < 1):
            raise ValueError(f"consumers must be >= 1, got {consumers}")
        self.consumers = consumers

    def params(self) -> dict:
        return {} if self.consumers is None else {"consumers": int(self.consumers)}

    def pack(self, rates, capacity, previous, workers, budget):
        group = int(self.consumers or len(workers.active))
        return pack(self.algorithm, rates, capacity, previous, consumers=group)


@register("kafka_range")
class KafkaRange(_Kafka):
    """Kafka's RangeAssignor: consecutive partitions per consumer."""

    algorithm = "kafka_range"


@register("kafka_roundrobin")
class KafkaRoundRobin(_Kafka):
    """Kafka's RoundRobinAssignor: partition i → consumer i mod n."""

    algorithm = "kafka_roundrobin"


@register("binpack_milp")
class BinPackingMilp(BinPacking):
    """Exact reference: fewest consumers, then least Rscore (PuLP + HiGHS, time-limited,
    warm-started from the best heuristic); honours ``Budget.max_moves``."""

    kind: ClassVar[str] = "partition_assignment"
    honours: ClassVar[frozenset[str]] = frozenset({"max_moves"})

    algorithm = "binpack_milp"

    def pack(self, rates, capacity, previous, workers, budget):
        return pack(
            self.algorithm,
            rates,
            capacity,
            previous,
            time_limit_s=budget.time_limit_s,
            max_moves=budget.max_moves,
        )
