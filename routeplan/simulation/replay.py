"""Stream simulator: replay messages through a key-routing scheme as papers 000, 001, 003 do.

The DAG of paper 003 §6.1 / paper 000 §VII-A: ``S`` sources read the stream by shuffle grouping
(message ``i`` goes to source ``i mod S``) and route each message to one of ``W`` workers; time
is the message index (one message per time unit). Every scheme is an ``OnlineScheme``:

* ``kg`` Murmur3 of the key mod ``W``; ``sg`` round robin per source — pure array operations;
* ``pkg`` / ``dchoices`` / ``potc`` the least loaded of the key's hash choices (or of two random
  workers per message) by the **local** load each source has sent (paper 003 §3.2);
* ``porc`` / ``chbl`` the first bin with room below ``(1 + ε)·m/n`` on the key's salted sequence /
  clockwise on the ring, by local load; ``cg`` PoRC onto ``α·W`` virtual workers, which move from
  busy to idle workers at the end of every time slot (paper 000 §V-B), a slot being
  ``report_every`` messages;
* ``ring`` the token ring of paper 001: keys on the ring, at the end of a slot the trigger
  ``Q_max > Q_second·(1+τ)`` on queue lengths and one round of halving or doubling.

Sources know nothing of capacities (paper 000 §VI-A: "the sources do not know the capacity of
each worker"): only ``cg`` (through the workers' busy/idle signals) and ``ring`` (queue lengths)
react to them. The stateful schemes run tight Python loops over integer key ids with every hash
precomputed once per distinct key; ``bench/simulator_speed.py`` measures messages/s.

Metrics every ``report_every`` messages: imbalance of the normalised cumulative load (``metrics.
imbalance``, ``max u − 1``); memory = Σ over workers of distinct keys seen (paper 000 §IV) and
replication = memory / distinct keys; and a fluid queueing model (paper 000 §IV, §VII Q2): worker
``w`` serves ``c_w / Σc / utilisation`` messages per time unit (total capacity = arrival rate /
utilisation, 80 % by default), its queue grows by arrivals minus service, latency = queue /
service rate; each reported as max − min over workers, as the paper does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.model.hashing import (
    DEFAULT_SEED,
)
from routeplan.planning import metrics
from routeplan.planning.registry import get_strategy
from routeplan.simulation.events import Stream
from routeplan.simulation.online import ONLINE_SCHEMES, Setup, online_scheme

# --------------------------------------------------------------------------------------------
# the replay


@dataclass(frozen=True)
class SimulationResult:
    """Final metrics and their series over time (one point per slot)."""

    strategy: str
    params: Mapping[str, Any]
    messages: int
    workers: int
    sources: int
    distinct_keys: int
    imbalance: float
    max_imbalance: float
    mean_imbalance: float
    memory: int
    replication: float
    moves: int
    worker_load: np.ndarray
    series: Mapping[str, np.ndarray]
    elapsed_s: float
    skipped: int = 0

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    def summary(self, series: bool = False) -> dict[str, Any]:
        """The JSON object ``routeplan simulate --json`` prints."""
        s = self.series
        doc: dict[str, Any] = {
            "strategy": self.strategy,
            "params": dict(self.params),
            "messages": self.messages,
            "workers": self.workers,
            "sources": self.sources,
            "distinct_keys": self.distinct_keys,
            "skipped": self.skipped,
            "imbalance": self.imbalance,
            "max_imbalance": self.max_imbalance,
            "mean_imbalance": self.mean_imbalance,
            "memory": self.memory,
            "replication": self.replication,
            "moves": self.moves,
            "queue_spread": float(s["queue_spread"][-1]),
            "max_queue_spread": float(s["queue_spread"].max()),
            "latency_spread": float(s["latency_spread"][-1]),
            "max_latency_spread": float(s["latency_spread"].max()),
            "utilisation_spread": float(s["utilisation_spread"][-1]),
            "worker_load": self.worker_load.tolist(),
            "elapsed_s": round(self.elapsed_s, 3),
            "messages_per_s": round(self.messages_per_s),
        }
        if series:
            doc["series"] = {k: v.tolist() for k, v in s.items()}
        return doc


def simulate(
    stream: Stream,
    strategy: str,
    capacities: Sequence[float] | np.ndarray,
    sources: int = 1,
    params: Mapping[str, Any] | None = None,
    report_every: int | None = None,
    utilisation: float = 0.8,
    capacity_changes: Sequence[tuple[int, Sequence[float]]] = (),
    seed: int = 0,
    hash_seed: int = DEFAULT_SEED,
    on_step: Callable[[int], None] | None = None,
) -> SimulationResult:
    """Replay ``stream`` through ``strategy`` on workers of the given capacities.

    ``report_every`` (default: 1/100 of the stream) is the time slot: metrics are taken and the
    adaptive schemes get feedback every that many messages. ``capacity_changes`` lists
    ``(message index, new capacities)`` (paper 000 Fig. 13); a change starts a new slot.
    ``on_step`` is called after each slot with the number of messages it routed (a progress
    bar's advance: they add up to ``stream.messages``).
    """
    capacity = np.asarray(capacities, dtype=float)
    workers = capacity.size
    if workers < 1 or np.any(capacity <= 0):
        raise ValueError("need at least one worker, every capacity > 0")
    if sources < 1:
        raise ValueError("sources must be >= 1")
    if not 0 < utilisation < np.inf:
        raise ValueError(f"utilisation must be a finite number > 0, got {utilisation}")
    params = dict(params or {})
    if strategy not in ONLINE_SCHEMES:
        known = ", ".join(ONLINE_SCHEMES)
        raise ValueError(f"no online form of strategy {strategy!r}; known: {known}")
    started = time.perf_counter()
    setup = Setup(stream.names, workers, sources, hash_seed, np.random.default_rng(seed))
    scheme = online_scheme(get_strategy(strategy, **params), setup)

    m = stream.messages
    step = max(1, report_every or m // 100)
    changes = sorted((int(t), np.asarray(c, dtype=float)) for t, c in capacity_changes)
    for t, c in changes:
        if c.shape != capacity.shape or np.any(c <= 0):
            raise ValueError(f"capacity change at {t}: need {workers} capacities > 0")
    bounds = sorted({*range(step, m, step), m, *(t for t, _ in changes if 0 < t < m)})

    words = (workers + 63) // 64
    seen = np.zeros((len(stream.names), words), dtype=np.uint64)
    load = np.zeros(workers)
    capacity_time = np.zeros(workers)  # ∫ c_w dt: the fair share of a time-varying cluster
    queue = np.zeros(workers)
    series: dict[str, list[float]] = {
        k: []
        for k in (
            "messages",
            "imbalance",
            "memory",
            "queue_spread",
            "latency_spread",
            "utilisation_spread",
        )
    }
    position = 0
    for end in bounds:
        for t, c in changes:
            if t == position:
                capacity = c
        keys = stream.keys[position:end]
        routed = scheme.route(keys, position)
        arrivals = np.bincount(routed, minlength=workers).astype(float)
        span = end - position
        rate = capacity / capacity.sum() / utilisation  # messages served per time unit
        queue = np.maximum(0.0, queue + arrivals - rate * span)
        load += arrivals
        capacity_time += capacity * span
        codes = np.unique(keys * workers + routed)
        w = codes % workers
        bit = np.left_shift(np.uint64(1), (w & 63).astype(np.uint64))
        np.bitwise_or.at(seen, (codes // workers, w >> 6), bit)
        latency = queue / rate
        used = arrivals / (rate * span)
        series["messages"].append(end)
        series["imbalance"].append(metrics.imbalance(load, capacity_time))
        series["memory"].append(float(np.bitwise_count(seen).sum()))
        series["queue_spread"].append(float(queue.max() - queue.min()))
        series["latency_spread"].append(float(latency.max() - latency.min()))
        series["utilisation_spread"].append(float(used.max() - used.min()))
        scheme.end_slot(capacity, queue)
        position = end
        if on_step is not None:
            on_step(span)

    arrays = {k: np.asarray(v) for k, v in series.items()}
    memory = int(arrays["memory"][-1])
    distinct = stream.distinct
    return SimulationResult(
        strategy=strategy,
        params=params,
        messages=m,
        workers=workers,
        sources=sources,
        distinct_keys=distinct,
        imbalance=float(arrays["imbalance"][-1]),
        max_imbalance=float(arrays["imbalance"].max()),
        mean_imbalance=float(arrays["imbalance"].mean()),
        memory=memory,
        replication=memory / distinct,
        moves=int(scheme.moves),
        worker_load=load,
        series=arrays,
        elapsed_s=time.perf_counter() - started,
        skipped=stream.skipped,
    )


def compare(
    stream: Stream, strategies: Iterable[str], capacities: np.ndarray, **options: Any
) -> list[SimulationResult]:
    """``simulate`` every strategy on the same stream (same capacities, sources, slots; an
    ``on_step`` callback is called for every strategy's slots)."""
    params: Mapping[str, Mapping[str, Any]] = options.pop("params", {})
    return [
        simulate(stream, name, capacities, params=params.get(name, {}), **options)
        for name in strategies
    ]
