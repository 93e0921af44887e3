"""Worker capacities learnt from the logs: how many messages per second each worker sustains.

Paper 000 (Nasir et al., Consistent Grouping, §V-B "worker delegation") has every worker monitor
its own workload and signal the planner when it is busy or idle, so the planner learns who is
fast without being told. Here the logs play that monitor: every event records the ``worker``
that processed it and, when the application measures it, ``cost_ms`` — the milliseconds that
worker spent on it. A worker whose capacity is ``auto`` (or absent) in the workers file gets the
capacity estimated here, night after night.

**From ``cost_ms``** (preferred). Over the night's windows ``w`` of one worker, with ``m_w`` the
messages that carry a ``cost_ms`` and ``c_w`` their summed cost in milliseconds, the worker was
busy ``B = Σ_w c_w / 1000`` seconds and got through ``M = Σ_w m_w`` messages in that time::

    ĉ = M / B        (messages per second while busy)

The ratio of sums (not the mean of per-message rates) weighs every message once, so a few very
cheap messages cannot inflate it. It needs no saturation: a worker idle most of the night still
shows its speed in the messages it did process.

**Fallback: the busiest windows.** Without ``cost_ms`` (missing, or zero for every event) the
only signal is throughput, and a worker that was never saturated shows its load, not its speed.
The ``k`` windows (``busiest_windows``) with the highest rate ``r_w = n_w / T_w`` (``n_w`` all
messages, ``T_w`` the window's seconds) are the closest the night came to saturating it::

    ĉ = Σ_{top k} n_w / Σ_{top k} T_w

— a lower bound on the capacity, exact only when the worker was busy all through those windows.
The evidence says which method was used (``method``), so a consumer can trust each accordingly.

**Smoothing across nights.** One night is noisy (a slow disk, a garbage-collection storm), so the
estimate is an exponentially weighted average with the previous night's (``p``), when there is
one::

    capacity = α · ĉ + (1 − α) · p        (α = ``alpha``, default 0.5)

α = 0.5 halves the weight of a night every night: a worker that became twice as fast reaches
94 % of its new speed in four nights. Without a previous estimate ``capacity = ĉ`` (the
``smoothing`` recorded is then 1: all weight on tonight).

**Too little evidence.** Fewer than ``min_messages`` messages behind the estimate (costed ones for
``cost_ms``, those of the busiest windows for the fallback) gives no estimate: the worker is
listed in ``CapacityEstimates.skipped`` with the reason, and keeps its file value (or 1).

**Units.** Estimates are messages per second. Planners only use capacities relative to each
other (``routeplan.planning.metrics``: ``load / capacity`` against its share of ``Σ capacity``),
so ``resolve_capacities`` brings the learnt ones into the units of the workers file: the file's
fixed capacities over the learnt ones of the same workers when the stream has both, else relative
to the stream's median learnt worker (a typical worker = 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

METHODS = ("cost_ms", "busiest_windows")
DEFAULT_ALPHA = 0.5
DEFAULT_MIN_MESSAGES = 1_000
DEFAULT_BUSIEST_WINDOWS = 3

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BUSIEST_WINDOWS",
    "DEFAULT_MIN_MESSAGES",
    "METHODS",
    "CapacityEstimate",
    "CapacityEstimates",
    "estimate_capacities",
    "resolve_capacities",
    "smooth",
]


@dataclass(frozen=True)
class CapacityEstimate:
    """One worker's learnt capacity and the evidence behind it (a ``silver.worker_capacity``
    row without the stream and the interval)."""

    worker: str
    capacity: float  # messages/s while busy, smoothed across nights
    observed_capacity: float  # tonight's ĉ, before smoothing
    method: str  # one of METHODS
    windows: int  # windows the estimate used
    messages: int  # messages behind it (costed ones, or those of the busiest windows)
    busy_seconds: float  # Σ cost_ms / 1000, or the busiest windows' seconds
    previous_capacity: float | None  # the previous night's capacity, when there is one
    smoothing: float  # weight of tonight's ĉ in ``capacity`` (α, or 1 without a previous)


@dataclass(frozen=True)
class CapacityEstimates:
    """What ``estimate_capacities`` found: an estimate per worker with enough evidence, and
    why every other worker has none (for the job log — never silently)."""

    estimates: dict[str, CapacityEstimate] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def capacities(self) -> dict[str, float]:
        """Worker → smoothed capacity (messages/s)."""
        return {w: e.capacity for w, e in self.estimates.items()}


def smooth(observed: float, previous: float | None, alpha: float = DEFAULT_ALPHA) -> float:
    """``α · observed + (1 − α) · previous``; ``observed`` when there is no usable previous."""
    _check_alpha(alpha)
    if previous is None or not math.isfinite(previous) or previous <= 0:
        return float(observed)
    return alpha * float(observed) + (1.0 - alpha) * float(previous)


def estimate_capacities(
    worker: Sequence[str],
    messages: Sequence[float] | np.ndarray,
    cost_ms: Sequence[float] | np.ndarray,
    window_seconds: Sequence[float] | np.ndarray,
    costed_messages: Sequence[float] | np.ndarray | None = None,
    *,
    previous: Mapping[str, float] | None = None,
    alpha: float = DEFAULT_ALPHA,
    min_messages: int = DEFAULT_MIN_MESSAGES,
    busiest_windows: int = DEFAULT_BUSIEST_WINDOWS,
) -> CapacityEstimates:
    """Each worker's capacity (messages/s while busy) from one night's per-window loads.

    One element per (worker, window): ``worker`` its name, ``messages`` all its messages,
    ``cost_ms`` the summed ``cost_ms`` of those that carry one, ``window_seconds`` the window's
    length, ``costed_messages`` how many carry a ``cost_ms`` (default: all of them). The method
    and its guards are in the module's docstring; ``previous`` maps workers to the previous
    night's capacity for the smoothing."""
    _check_alpha(alpha)
    if min_messages < 1 or busiest_windows < 1:
        raise ValueError("min_messages and busiest_windows must be >= 1")
    names = np.asarray(list(worker), dtype=object)
    n = np.asarray(messages, dtype=float)
    cost = np.asarray(cost_ms, dtype=float)
    seconds = np.asarray(window_seconds, dtype=float)
    costed = n if costed_messages is None else np.asarray(costed_messages, dtype=float)
    sizes = {a.shape for a in (n, cost, seconds, costed)} | {names.shape}
    if len(sizes) != 1 or names.ndim != 1:
        raise ValueError(f"one value per (worker, window) in every array, got shapes {sizes}")
    arrays = (n, cost, seconds, costed)
    if any((~np.isfinite(a)).any() or (a < 0).any() for a in arrays) or (seconds <= 0).any():
        raise ValueError("loads must be finite and >= 0, window seconds > 0")
    previous = previous or {}
    found = CapacityEstimates()
    for name in sorted(set(names.tolist())):
        rows = names == name
        cost_evidence = _from_cost(costed[rows], cost[rows])
        busy_evidence = _from_busiest_windows(n[rows], seconds[rows], busiest_windows)
        if cost_evidence[1] >= min_messages and cost_evidence[2] > 0:
            method, (windows, count, busy) = "cost_ms", cost_evidence
        elif busy_evidence[1] >= min_messages and busy_evidence[2] > 0:
            method, (windows, count, busy) = "busiest_windows", busy_evidence
        else:
            found.skipped[name] = (
                f"too little evidence: {int(cost_evidence[1])} messages with cost_ms and "
                f"{int(busy_evidence[1])} in its {busiest_windows} busiest windows "
                f"(fewer than min_messages={min_messages})"
            )
            continue
        observed = count / busy
        before = previous.get(name)
        usable = before is not None and math.isfinite(before) and before > 0
        found.estimates[name] = CapacityEstimate(
            worker=name,
            capacity=smooth(observed, before, alpha),
            observed_capacity=observed,
            method=method,
            windows=int(windows),
            messages=int(count),
            busy_seconds=float(busy),
            previous_capacity=float(before) if usable else None,
            smoothing=alpha if usable else 1.0,
        )
    return found


def _from_cost(costed: np.ndarray, cost_ms: np.ndarray) -> tuple[int, float, float]:
    """(windows with costed messages, costed messages, busy seconds)."""
    used = (costed > 0) & (cost_ms > 0)
    return int(used.sum()), float(costed[used].sum()), float(cost_ms[used].sum() / 1000.0)


def _from_busiest_windows(
    messages: np.ndarray, seconds: np.ndarray, k: int
) -> tuple[int, float, float]:
    """(windows used, their messages, their seconds) for the ``k`` windows of highest rate."""
    busy = messages > 0
    rate = np.where(busy, messages / seconds, 0.0)
    top = np.argsort(-rate, kind="stable")[: min(k, int(busy.sum()))]
    return int(top.size), float(messages[top].sum()), float(seconds[top].sum())


def resolve_capacities(
    fixed: Mapping[str, float], learn: Iterable[str], learnt: Mapping[str, float]
) -> tuple[dict[str, float], list[str]]:
    """The capacity of every worker to ``learn``, in the units of the ``fixed`` ones.

    ``fixed``: the stream's capacities given in the workers file; ``learnt``: messages/s from
    ``silver.worker_capacity`` (any workers of the stream). The scale is the median of
    ``fixed / learnt`` over workers that have both; without such a worker it is
    ``1 / median(learnt)`` (a typical worker = 1). A worker to learn without an estimate gets 1.
    Returns the capacities and one note per decision worth a log line."""
    usable = {w: c for w, c in learnt.items() if math.isfinite(c) and c > 0}
    both = [w for w in fixed if w in usable]
    notes = []
    if both:
        scale = float(np.median([fixed[w] / usable[w] for w in both]))
        unit = f"the workers file's units (scaled on {len(both)} workers it fixes)"
    elif usable:
        scale = 1.0 / float(np.median(list(usable.values())))
        unit = "relative to the stream's median learnt worker"
    else:
        scale, unit = 1.0, ""
    resolved = {}
    for name in learn:
        if name in usable:
            resolved[name] = usable[name] * scale
        else:
            resolved[name] = 1.0
            notes.append(f"{name}: no learnt capacity yet, using 1")
    learnt_here = [w for w in resolved if w in usable]
    if learnt_here:
        notes.append(f"{len(learnt_here)} capacities learnt from the logs, {unit}")
    return resolved, notes


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")


CAPACITY_SOURCES = ("given", "learnt", "mixed")


def capacities_source(names: Iterable[str], learnt: Iterable[str]) -> str:
    """Where the capacities of workers ``names`` came from, ``learnt`` being those learnt from
    the logs: ``given`` (none), ``learnt`` (all) or ``mixed``."""
    names, learnt = set(names), set(learnt) & set(names)
    if not learnt:
        return "given"
    return "learnt" if learnt == names else "mixed"
