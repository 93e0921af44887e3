"""Run algorithms over a stream of measurements and summarise them as paper 002 §VI does."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.latency import latency_summary, queue_segments
from routeplan.planning.partitions.packing import ONLINE, pack


@dataclass(frozen=True)
class Run:
    """One algorithm over ``N`` iterations: each iteration starts from the previous one."""

    name: str
    assignments: np.ndarray  # N × P consumer ids
    consumers: np.ndarray  # N
    rscore: np.ndarray  # N, Eq. 11
    moves: np.ndarray  # N, partitions rebalanced
    overloaded: np.ndarray  # N, consumers over C with more than one partition
    seconds: np.ndarray  # N, planning time
    solver: list[dict] = field(default_factory=list)  # binpack_milp: per iteration


def replay(
    name: str,
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None = None,
    *,
    consumers: int | None = None,
    orders: np.ndarray | None = None,
    time_limit_s: float = 10.0,
) -> Run:
    """Plan every measurement (row of ``rates``) with ``name``, each from the last plan.

    ``orders`` (N × P): arrival orders of the online algorithms, one per iteration (the paper
    shuffles them); ``kafka_roundrobin`` takes the first, once: Kafka keeps its assignment
    while the group does not resize.
    """
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    before = None if previous is None else np.asarray(previous, dtype=np.int64)
    plans, solver, seconds = [], [], []
    for k, rate in enumerate(rates):
        order = None
        if orders is not None and name in ONLINE:
            order = orders[k]
        elif orders is not None and name == "kafka_roundrobin":
            order = orders[0]
        started = time.perf_counter()
        packing = pack(
            name,
            rate,
            capacity,
            before,
            consumers=consumers,
            order=order,
            time_limit_s=time_limit_s,
        )
        seconds.append(time.perf_counter() - started)
        plans.append(packing.assignment)
        if packing.solver:
            solver.append(packing.solver)
        before = packing.assignment
    assignments = np.array(plans, dtype=np.int64).reshape(rates.shape)
    priors = [previous] + list(assignments[:-1])
    moved = [bm.moved(p, a) for p, a in zip(priors, assignments, strict=True)]
    return Run(
        name=name,
        assignments=assignments,
        consumers=np.array([bm.consumers(a) for a in assignments]),
        rscore=np.array(
            [
                bm.rscore(r, capacity, p, a)
                for r, p, a in zip(rates, priors, assignments, strict=True)
            ]
        ),
        moves=np.array([int(m.sum()) for m in moved]),
        overloaded=np.array(
            [bm.overloaded(a, r, capacity) for a, r in zip(assignments, rates, strict=True)]
        ),
        seconds=np.array(seconds),
        solver=solver,
    )


def summarize(
    runs: Sequence[Run],
    rates: np.ndarray,
    capacity: float,
    consumer_capacity: float,
    *,
    iteration_s: float = 30.0,
    rebalance_s: float = 5.0,
    previous: np.ndarray | None = None,
) -> dict:
    """JSON-ready: per-iteration ``consumers``/``rscore``/``moves`` per algorithm, their means,
    the gap to the lower bound, latency percentiles (§VI-C), and with several algorithms their
    ``cbs`` (Eq. 28) and Pareto front of (CBS, mean Rscore) — among the algorithms that never
    put a consumer over C (Kafka's assignors, blind to rates, rarely qualify)."""
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    bound = np.array([bm.lower_bound(r, capacity) for r in rates])
    out: dict = {
        "partitions": int(rates.shape[1]),
        "iterations": int(rates.shape[0]),
        "consumer_capacity": float(consumer_capacity),
        "capacity": float(capacity),
        "iteration_s": float(iteration_s),
        "rebalance_s": float(rebalance_s),
        "lower_bound": bound.tolist(),
        "algorithms": {},
    }
    for run in runs:
        segments = queue_segments(
            rates,
            run.assignments,
            consumer_capacity,
            iteration_s=iteration_s,
            rebalance_s=rebalance_s,
            previous=previous,
        )
        entry = {
            "consumers": run.consumers.tolist(),
            "rscore": [round(float(x), 6) for x in run.rscore],
            "moves": run.moves.tolist(),
            "mean_consumers": float(run.consumers.mean()),
            "mean_rscore": float(run.rscore.mean()),
            "lower_bound_gap": float(np.mean((run.consumers - bound) / np.maximum(bound, 1))),
            "overloaded": int(run.overloaded.max(initial=0)),
            "latency": latency_summary(segments),
            "planning_ms": float(run.seconds.mean() * 1000),
        }
        if run.solver:
            entry["solver"] = run.solver
        out["algorithms"][run.name] = entry
    feasible = [run for run in runs if not run.overloaded.any()]
    if len(feasible) > 1:
        cbs = bm.cbs({run.name: run.consumers for run in feasible})
        for name, value in cbs.items():
            out["algorithms"][name]["cbs"] = value
        out["cbs"] = cbs
        out["pareto_front"] = bm.pareto_front(
            {run.name: (cbs[run.name], float(run.rscore.mean())) for run in feasible}
        )
    return out
