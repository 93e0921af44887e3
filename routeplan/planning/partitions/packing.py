"""Partition → consumer assignment by bin packing with migration cost (paper 002, Landau et al.).

Pure functions over numpy arrays: ``rates[j]`` (bytes/s of partition ``j``), the bin capacity
``capacity`` (C, see :func:`bin_capacity`) and ``previous[j]`` (partition ``j``'s consumer id at
the previous iteration, −1 for none) → ``assignment[j]`` (its consumer id now). ``rates`` may
also be windows × partitions: the assignment then holds every window (a consumer takes a
partition only if it fits in each).

    from routeplan.planning.partitions.packing import bin_capacity, pack
    C = bin_capacity(2_000_000)                     # C̄ = 2 MB/s, 30 s iterations, 5 s rebalance
    assignment = pack("mwf", rates, C, previous).assignment

The algorithms are in ``heuristics`` (Any Fit §II-B/§VI-A, Algorithm 1, Kafka) and ``exact``
(the MILP reference); the package's other modules evaluate them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions.racks import in_rack

if TYPE_CHECKING:
    from routeplan.planning.partitions.exact import MilpResult

ADAPTED = ("nf", "ff", "bf", "wf", "nfd", "ffd", "bfd", "wfd")  # §II-B + Eq. 12–14
MODIFIED = ("mwf", "mbf", "mwfp", "mbfp")  # Algorithm 1, Table II
KAFKA = ("kafka_range", "kafka_roundrobin")  # equal partition counts, fixed group size
EXACT = ("binpack_milp",)
ALGORITHMS = ADAPTED + MODIFIED + KAFKA + EXACT
ARRIVAL_ORDER = ("nf", "ff", "bf", "wf")  # take partitions in arrival order (``order``)
# one bin open (Next Fit), or Kafka's round robin (not rack-aware in KIP-881): no rack preference
RACK_BLIND = ("nf", "nfd", "kafka_roundrobin")

_FITS = {"n": "next", "f": "first", "b": "best", "w": "worst"}


def bin_capacity(
    consumer_capacity: float, iteration_s: float = 30.0, rebalance_s: float = 5.0
) -> float:
    """§VI-C: C = C̄·(T − R)/T, so that a consumer whose whole load was rebalanced catches up
    within the iteration (30·C ≤ 25·C̄ for T = 30 s, R = 5 s: C = 5/6·C̄)."""
    if not consumer_capacity > 0:
        raise ValueError(f"consumer capacity must be > 0, got {consumer_capacity}")
    if not (iteration_s > 0 and 0 <= rebalance_s < iteration_s):
        raise ValueError("need iteration_s > 0 and 0 <= rebalance_s < iteration_s")
    return consumer_capacity * (iteration_s - rebalance_s) / iteration_s


@dataclass(frozen=True)
class Packing:
    """An assignment and, for ``binpack_milp``, what the solver said: ``solver_status`` (str),
    ``mip_gap`` (float or None) and ``solver_seconds``."""

    assignment: np.ndarray
    solver: dict[str, float | str | None] = field(default_factory=dict)


def pack(
    name: str,
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    consumers: int | None = None,
    order: np.ndarray | None = None,
    time_limit_s: float = 10.0,
    max_moves: int | None = None,
    reopen_previous: bool = True,
    consumer_racks: Sequence[str | None] | None = None,
    partition_racks: Sequence[Sequence[str]] | None = None,
    rack_weight: float = 0.0,
) -> Packing:
    """Run algorithm ``name`` (one of :data:`ALGORITHMS`).

    ``consumers``: the group size of the Kafka assignors (required for them); ``order``: the
    arrival order of the :data:`ARRIVAL_ORDER` algorithms and of ``kafka_roundrobin``;
    ``time_limit_s`` and ``max_moves``: ``binpack_milp`` only; ``reopen_previous=False``: the
    plain Any Fit algorithms (new bins get the lowest free id, Eq. 12, instead of Eq. 14).

    Racks (``racks``, KIP-881): ``consumer_racks[c]`` is consumer id ``c``'s rack (None:
    unknown; ids beyond the list have none), ``partition_racks[j]`` partition ``j``'s replica
    racks; ``rack_weight`` > 0 makes the packers and ``binpack_milp`` prefer in-rack consumers
    and ``kafka_range`` KIP-881's rack-aware range (0: racks are not read). The algorithms
    that cannot prefer a rack (:data:`RACK_BLIND`) refuse ``rack_weight`` > 0.
    """
    rates = np.asarray(rates, dtype=float)
    if rack_weight < 0 or not np.isfinite(rack_weight):
        raise ValueError(f"rack_weight must be >= 0, got {rack_weight}")
    if rack_weight > 0 and name in RACK_BLIND:
        raise ValueError(f"{name} cannot prefer in-rack consumers: leave rack_weight at 0")
    local = None
    if rack_weight > 0 and consumer_racks is not None and partition_racks is not None:
        local = in_rack(consumer_racks, partition_racks)
    racks = {"local": local, "rack_weight": rack_weight if local is not None else 0.0}
    if name in ADAPTED:
        assignment = heuristics.any_fit(
            rates,
            capacity,
            previous,
            fit=_FITS[name[0]],
            sort_decreasing=name.endswith("d"),
            reopen_previous=reopen_previous,
            order=order,
            **racks,
        )
    elif name in MODIFIED:
        sort = "max_partition" if name.endswith("p") else "cumulative"
        assignment = heuristics.modified_any_fit(
            rates, capacity, previous, fit=_FITS[name[1]], sort=sort, **racks
        )
    elif name in KAFKA:
        if consumers is None:
            raise ValueError(f"{name} needs a number of consumers")
        if name == "kafka_range":
            group_racks = None  # the group's consumers are ids 0 … consumers − 1
            if local is not None and consumer_racks is not None:
                known = list(consumer_racks)
                group_racks = [known[c] if c < len(known) else None for c in range(consumers)]
            assignment = heuristics.kafka_range(
                rates.shape[-1], consumers, group_racks, partition_racks if group_racks else None
            )
        else:
            assignment = heuristics.kafka_round_robin(rates.shape[-1], consumers, order)
    elif name == "binpack_milp":
        from routeplan.planning.partitions.exact import binpack_milp

        result = binpack_milp(
            rates, capacity, previous, time_limit_s=time_limit_s, max_moves=max_moves, **racks
        )
        return Packing(result.assignment, _solver_outcome(result))
    else:
        raise ValueError(f"unknown bin-packing algorithm {name!r}; known: {', '.join(ALGORITHMS)}")
    return Packing(assignment)


def _solver_outcome(result: MilpResult) -> dict[str, float | str | None]:
    """``binpack_milp``'s result in the solver vocabulary."""
    return {
        "solver_status": result.solver_status,
        "mip_gap": result.mip_gap,
        "solver_seconds": result.solver_seconds,
    }
