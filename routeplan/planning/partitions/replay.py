"""Run algorithms over a stream of measurements and summarise them as paper 002 §VI does.

``replay_strategy`` plans each measurement with a registered strategy, from its previous plan
(what ``routeplan binpack`` runs); ``replay`` does the same on arrays with
:func:`~routeplan.planning.partitions.packing.pack` and also takes the arrival orders the paper
shuffles (what the benchmark runs). Both give a ``Run``; ``summarize`` compares runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from routeplan.model.loads import PartitionLoad
from routeplan.model.plan import Budget
from routeplan.model.table import PartitionAssignment
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import Strategy
from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.latency import latency_summary, queue_segments
from routeplan.planning.partitions.packing import ARRIVAL_ORDER, pack


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
    # binpack_milp, per iteration: solver_status, mip_gap, solver_seconds
    solver: list[dict] = field(default_factory=list)


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
        if orders is not None and name in ARRIVAL_ORDER:
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
    return _run(name, rates, capacity, previous, plans, seconds, solver)


def replay_strategy(
    strategy: Strategy,
    rates: np.ndarray,
    consumers: ConsumerNames,
    previous: np.ndarray | None = None,
    *,
    budget: Budget | None = None,
    stream: str = "replay",
    on_step: Callable[[int], None] | None = None,
) -> tuple[Run, list[PartitionAssignment]]:
    """Plan every measurement (row of ``rates``) with a ``partition_assignment`` ``strategy``,
    each from its last plan (the first from ``previous``: consumer ids, −1 for none), as a
    consumer group that may grow: ``consumers`` names consumer ids (the known ones first, then
    ``c<id>``, as the strategy names them).

    The strategy sees the group as its workers: every consumer a plan may use, up to one per
    partition beyond those ``previous`` names, so that a consumer keeps its id from one plan to
    the next and each plan sees what ``replay`` would (the same numbers). Returns the ``Run``
    (the bin capacity is the first plan's ``bin_capacity``) and the plans' tables.
    ``on_step(1)`` is called after each plan (a progress bar's advance)."""
    if getattr(strategy, "consumer_capacity", None) is None:
        raise ValueError(f"{strategy.name}: replaying needs the strategy's consumer_capacity")
    rates = np.atleast_2d(np.asarray(rates, dtype=float))
    budget = budget or Budget()
    prior = None if previous is None else np.asarray(previous, dtype=np.int64)
    pool = max(len(consumers.known), 1 + int(prior.max(initial=-1)) if prior is not None else 0)
    group = consumers.decode(range(pool + rates.shape[1]))
    ids = {name: i for i, name in enumerate(group)}
    workers = Workers(tuple(Worker(name) for name in group))
    current = None
    if prior is not None and np.any(prior >= 0):
        held = {p: group[int(c)] for p, c in enumerate(prior.tolist()) if c >= 0}
        current = PartitionAssignment(stream, "current", workers, held)
    tables: list[PartitionAssignment] = []
    plans, solver, seconds = [], [], []
    capacity = None
    for rate in rates:
        started = time.perf_counter()
        plan = strategy.plan(PartitionLoad(stream, rate), current, workers, budget)
        seconds.append(time.perf_counter() - started)
        table = plan.table
        if not isinstance(table, PartitionAssignment):
            raise TypeError(f"{strategy.name} does not assign partitions")
        capacity = float(table.params["bin_capacity"]) if capacity is None else capacity
        for name in table.consumers.names:  # beyond the group: a consumer the plan created
            ids.setdefault(name, len(ids))
        owner = table.partition_consumer
        plans.append(np.array([ids[owner[p]] for p in range(rate.size)], dtype=np.int64))
        if "solver_status" in table.strategy_state:
            solver.append(
                {
                    "solver_status": table.strategy_state["solver_status"],
                    "mip_gap": plan.predicted.get("mip_gap"),
                    "solver_seconds": plan.predicted["solver_seconds"],
                }
            )
        tables.append(table)
        current = table
        if on_step is not None:
            on_step(1)
    name = strategy.name
    return _run(name, rates, capacity, prior, plans, seconds, solver), tables


def _run(
    name: str,
    rates: np.ndarray,
    capacity: float,
    previous: np.ndarray | None,
    plans: list[np.ndarray],
    seconds: list[float],
    solver: list[dict],
) -> Run:
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
        "bin_capacity": float(capacity),
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
