"""What a published plan did: its prediction against the days that followed, and the guard.

A night plans from day D's logs and publishes version N with *predicted* numbers. Producers
follow N during the next days; each following night measures N's *realized* numbers on that
day's logs — by the same definitions, in the same planning window — and records both as an
``Outcome`` (Delta ``gold.plan_outcomes``). Compare like with like:

* **realized against the predecessor's realized** decides whether N made things better or
  worse: the predecessor's realized is measured, with N's workers and capacities, on the logs of
  the day before N came into force (produced under the predecessor, or by hash before any
  version) — for a nightly plan, the day it was planned from;
* **realized against predicted** is the model's ``error``.

Each kind has its own headline measure (``HEADLINES``): key routing — the imbalance (the most
loaded worker's load over its capacity, relative to its fair share, minus 1); partitions onto
consumers — ``overload``, the share of the load above the capacity C on consumers that read more
than one partition (paper 002 packs partitions into as few consumers as the load needs,
⌈Σ rates / C⌉, without overloading one; a partition above C alone has a consumer of its own).
Imbalance is kept beside it as a secondary column for partitions.

Verdicts, in this order (``tolerance`` is the policy's ``regression_tolerance``):

* ``unknown`` — the version's table is gone from the store, or the logs name workers it never
  had: nothing can be measured against it (``note`` says why);
* ``no_traffic`` — no message of the day was routed by the version;
* ``regressed`` — realized over the day worse than the predecessor's over the day before it by
  more than the tolerance (never called on one window: hourly windows of small streams are
  noisy);
* ``as_predicted`` — a version planned on the forecast: its realized peak excess inside its
  predicted band (``band``: inside, above or below it); a version planned on one window:
  realized in the planning window within the tolerance of the prediction. A version published
  on numbers fitted on its own day (``predicted.out_of_sample`` 0: a first version) made no
  prediction: it is judged against the day before only (``in_sample``);
* ``improved`` — realized over the day better than the predecessor's by more than the
  tolerance, though off its prediction;
* ``off_prediction`` — none of the above: no better nor worse than before, and off its prediction.

The regression guard — what a night does about a regression — decides from these outcomes and
the stream's loop state (``routeplan.streams.loop_state``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.planning.metrics import (
    bin_capacity,
    consumer_excess,
    observed_imbalance,
    observed_peak_excess,
)
from routeplan.planning.partitions.racks import rack_metrics
from routeplan.planning.partitions.scores import lower_bound
from routeplan.streams.attribution import MIN_ATTRIBUTED_SHARE

HEADLINES: Mapping[str, str] = {"key_routing": "imbalance", "partition_assignment": "overload"}
VERDICTS = ("unknown", "no_traffic", "regressed", "as_predicted", "improved", "off_prediction")


@dataclass(frozen=True)
class Measures:
    """One table's numbers on one set of worker loads (``None``: not defined for the kind)."""

    imbalance: float
    consumers: int | None = None  # consumers carrying load (partitions)
    lower_bound: int | None = None  # paper 002's bound on the consumers needed (partitions)
    overloaded: int | None = None  # consumers above C (partitions)
    overload: float | None = None  # share of the load above C on shared consumers (partitions)

    def headline(self, kind: str) -> float:
        value = getattr(self, HEADLINES[kind])
        return float("nan") if value is None else float(value)


def measures(table: Table, loads: Mapping[str, float], seconds: float | None = None) -> Measures:
    """``table``'s measures when its workers carried ``loads`` (worker → load in the planning
    metric over ``seconds``; partitions compare rates, load / seconds, with the table's C).

    A worker ``loads`` names and the table does not list counts at capacity 1 (see
    ``unknown_workers``: an outcome on such loads is ``unknown``)."""
    if isinstance(table, RoutingTable):
        return Measures(imbalance=observed_imbalance(loads, table.workers))
    assert isinstance(table, PartitionAssignment)
    rates = {w: v / seconds if seconds else v for w, v in loads.items()}
    return _consumer_measures(table, rates, _partition_rates(table, rates))


def day_peak_excess(table: Table, windows: Mapping[Any, Mapping[str, float]]) -> float | None:
    """The day's peak excess under ``table`` (``routeplan.planning.metrics.peak_excess``: the
    largest load any of its workers carried in any window over its capacity, relative to the
    busiest window's fair share, minus 1) from ``windows`` (window → worker → load); None
    without load or when the loads name a worker ``table`` does not have."""
    workers = table.workers_of()
    names = set(workers.names)
    if not windows or any(w not in names for loads in windows.values() for w in loads):
        return None
    if sum(sum(loads.values()) for loads in windows.values()) <= 0:
        return None
    return observed_peak_excess(list(windows.values()), workers)


def in_sample(table: Table) -> bool:
    """Whether ``table`` was published on numbers fitted on the day it was planned from
    (``predicted.out_of_sample`` 0: a first version, one day of history): they are not a
    prediction, and the outcome judges it against the day before only."""
    return table.predicted.get("out_of_sample") == 0.0


def prediction(table: Table, name: str) -> float | None:
    """``table``'s ``predicted[name]`` as a prediction to show: None when missing or when the
    table was published on numbers fitted on its own day (``in_sample``)."""
    value = table.predicted.get(name)
    return None if value is None or in_sample(table) else float(value)


def predicted_measures(table: Table) -> Measures:
    """The measures ``table`` was published with: its ``predicted`` imbalance, and for
    partitions the consumers' rates of its ``planning_load`` by its own assignment."""
    if isinstance(table, RoutingTable):
        return Measures(imbalance=float(table.predicted["imbalance"]))
    assert isinstance(table, PartitionAssignment)
    rates = table.planning_load.get("partition_load") or []
    by_consumer: dict[str, float] = {}
    for partition, consumer in table.partition_consumer.items():
        if partition < len(rates):
            by_consumer[consumer] = by_consumer.get(consumer, 0.0) + float(rates[partition])
    found = _consumer_measures(table, by_consumer, np.asarray(rates, dtype=float))
    return Measures(
        imbalance=float(table.predicted.get("imbalance", found.imbalance)),
        consumers=found.consumers,
        lower_bound=found.lower_bound,
        overloaded=found.overloaded,
        overload=found.overload,
    )


def _partition_rates(table: PartitionAssignment, rates: Mapping[str, float]) -> np.ndarray:
    """Each partition's rate when its consumers carried ``rates`` (consumer → rate): the logs
    give a consumer's load, not its partitions', so a consumer's rate is split over its
    partitions in proportion to their planned rates (``planning_load``; equally when it has
    none). Exact for a consumer reading one partition."""
    planned = table.planning_load.get("partition_load") or []
    size = max([len(planned), *(p + 1 for p in table.partition_consumer)], default=0)
    weight = np.zeros(size)
    weight[: len(planned)] = np.maximum(np.asarray(planned, dtype=float), 0.0)
    by_consumer: dict[str, list[int]] = {}
    for partition, consumer in table.partition_consumer.items():
        by_consumer.setdefault(consumer, []).append(partition)
    out = np.zeros(size)
    for consumer, partitions in by_consumer.items():
        mine = weight[partitions]
        share = mine / mine.sum() if mine.sum() > 0 else np.full(len(partitions), 1 / len(mine))
        out[partitions] = max(float(rates.get(consumer, 0.0)), 0.0) * share
    return out


def _consumer_measures(
    table: PartitionAssignment, rates: Mapping[str, float], partition_rates: np.ndarray
) -> Measures:
    """Paper 002's figures of consumers reading ``rates``: a consumer above C counts as
    overloaded only when the assignment gives it more than one partition (a partition above C
    alone can only have a consumer of its own: no assignment does better). The lower bound on
    the consumers needed is the planner's (``scores.lower_bound``: ⌈Σ/C⌉ over the partitions
    that fit a consumer, plus one per partition above C), on ``partition_rates``."""
    capacity = bin_capacity(table)
    values = np.array([max(float(v), 0.0) for v in rates.values()])
    total = float(values.sum())
    excess = consumer_excess(table, list(rates), values)[0]
    return Measures(
        imbalance=observed_imbalance(rates, table.consumers),
        consumers=int(np.sum(values > 0)),
        lower_bound=lower_bound(partition_rates[partition_rates > 0], capacity)
        if capacity > 0
        else None,
        overloaded=int(np.sum(excess > 0)),
        overload=float(excess.sum() / total) if total > 0 else 0.0,
    )


def unknown_workers(table: Table, loads: Mapping[str, float]) -> list[str]:
    """The workers ``loads`` names with load that ``table`` never had, sorted."""
    listed = set(table.workers_of().names)
    return sorted(w for w, v in loads.items() if v > 0 and w not in listed)


@dataclass(frozen=True)
class Outcome:
    """One version's realized numbers on one day (a row of ``gold.plan_outcomes``).

    ``predicted``, ``realized``, ``previous_realized`` and ``error`` are the kind's headline
    measure (``measure``); the ``*_imbalance`` columns hold the imbalance for every kind."""

    stream: str
    version: int
    interval_start: str  # the day observed, YYYY-MM-DD
    kind: str
    attribution: str  # one of ATTRIBUTIONS
    measure: str
    predicted: float | None
    realized: float | None
    previous_realized: float | None
    error: float | None
    verdict: str
    realized_day: float | None  # the headline over the whole day: what the verdict weighs
    previous_realized_day: float | None
    predicted_imbalance: float | None
    realized_imbalance: float | None
    previous_realized_imbalance: float | None
    realized_imbalance_day: float | None  # over the whole day, beside the planning window's
    messages: float
    consumers: int | None = None
    lower_bound: int | None = None
    overloaded: int | None = None
    note: str = ""
    # the share of the day's messages this version routed (None: attributed by history)
    attributed_share: float | None = None
    # the day's peak excess (the busiest worker-window over the busiest window's fair share, − 1)
    realized_peak_excess: float | None = None
    previous_peak_excess: float | None = None  # the same on the day before it came into force
    # planned on the forecast: the peak excess it was predicted to realize, the band, and where
    # the realized fell (inside, above, below)
    predicted_peak_excess: float | None = None
    predicted_low: float | None = None
    predicted_high: float | None = None
    band: str | None = None
    # partitions with racks known (KIP-881): the share of the load read across racks the version
    # was published predicting, and on the day's measured partition loads
    predicted_cross_rack_fraction: float | None = None
    realized_cross_rack_fraction: float | None = None

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


def outcome(
    stream: str,
    interval_start: str,
    version: int,
    table: Table | None,
    attribution: str,
    messages: float,
    realized: Measures | None,
    realized_day: Measures | None,
    previous: Measures | None,
    tolerance: float,
    notes: Sequence[str] = (),
    previous_day: Measures | None = None,
    attributed_share: float | None = None,
    peak: tuple[float | None, float | None] = (None, None),
    partition_load: np.ndarray | None = None,
) -> Outcome:
    """The outcome of ``version`` (``table``; None when it is gone from the store) on day
    ``interval_start``: realized measures in the planning window and over the day, the
    predecessor's on the day before the version came into force (``previous``,
    ``previous_day``; None when unknown), and the verdict (see the module docstring).

    ``attributed_share`` — the share of the day's messages the version routed — below
    ``MIN_ATTRIBUTED_SHARE`` keeps the day from being compared with the day before (a part of
    the traffic against the whole): no ``regressed`` or ``improved`` verdict, a note says so.
    ``peak`` is the day's peak excess realized and the predecessor's (``day_peak_excess``),
    reported beside the headline. ``partition_load`` (partitions: the day's measured load of
    each partition, bytes) gives the realized cross-rack share (``realized_cross_rack``)."""
    notes = list(notes)
    band = predicted_band(table) if table is not None else None
    where = None  # where the realized peak excess fell against the predicted band
    if band is not None and peak[0] is not None and messages > 0:
        where = "above" if peak[0] > band[2] else "below" if peak[0] < band[1] else "inside"
    kind = table.kind if table is not None else "key_routing"
    measure = HEADLINES[kind]
    if table is None:
        notes.insert(0, f"v{version} is not in the routing store nor in gold.routing_tables")
    fitted = table is not None and in_sample(table)
    if fitted:
        band = where = None
    predicted = predicted_measures(table) if table is not None and not fitted else None
    p = predicted.headline(kind) if predicted is not None else None
    r = realized.headline(kind) if realized is not None and messages > 0 else None
    before = previous.headline(kind) if previous is not None else None
    r_day = realized_day.headline(kind) if realized_day is not None and messages > 0 else None
    before_day = previous_day.headline(kind) if previous_day is not None else None
    if table is None or (realized is None and messages > 0):
        verdict = "unknown"
    elif messages <= 0:
        verdict, notes = "no_traffic", [*notes, "no message of the day was routed by it"]
    else:
        partial = attributed_share is not None and attributed_share < MIN_ATTRIBUTED_SHARE
        if partial:
            notes.append(
                f"v{version} routed {attributed_share:.0%} of the day's messages (the rest name "
                "another version or none): not compared with the day before"
            )
        verdict = judge(p, r, r_day, None if partial else before_day, tolerance, where)
    return Outcome(
        stream=stream,
        version=version,
        interval_start=interval_start,
        kind=kind,
        attribution=attribution,
        measure=measure,
        predicted=_finite(p),
        realized=_finite(r),
        previous_realized=_finite(before),
        error=_finite(r - p) if r is not None and p is not None else None,
        verdict=verdict,
        realized_day=_finite(r_day),
        previous_realized_day=_finite(before_day),
        predicted_imbalance=predicted.imbalance if predicted is not None else None,
        realized_imbalance=realized.imbalance if realized is not None and messages > 0 else None,
        previous_realized_imbalance=previous.imbalance if previous is not None else None,
        realized_imbalance_day=(
            realized_day.imbalance if realized_day is not None and messages > 0 else None
        ),
        messages=float(messages),
        consumers=realized.consumers if realized is not None else None,
        lower_bound=realized.lower_bound if realized is not None else None,
        overloaded=realized.overloaded if realized is not None else None,
        note="; ".join(notes),
        attributed_share=_finite(attributed_share),
        realized_peak_excess=_finite(peak[0]) if messages > 0 else None,
        previous_peak_excess=_finite(peak[1]),
        predicted_peak_excess=band[0] if band else None,
        predicted_low=band[1] if band else None,
        predicted_high=band[2] if band else None,
        band=where,
        predicted_cross_rack_fraction=(
            _finite(table.predicted.get("cross_rack_fraction")) if table is not None else None
        ),
        realized_cross_rack_fraction=(
            realized_cross_rack(table, partition_load)
            if table is not None and partition_load is not None and messages > 0
            else None
        ),
    )


def realized_cross_rack(table: Table, partition_load: np.ndarray) -> float | None:
    """The share of ``partition_load`` (each partition's measured load; partitions beyond it
    carried none) that ``table``'s consumers read across racks (KIP-881), over the partitions
    whose replica racks (the table's ``planning_load.partition_racks``) and consumer's rack are
    both known; None for a key-routing table or when no such partition carried load."""
    if not isinstance(table, PartitionAssignment):
        return None
    racks = table.planning_load.get("partition_racks")
    return _finite(
        rack_metrics(table, np.asarray(partition_load, dtype=float), racks).get(
            "cross_rack_fraction"
        )
    )


def predicted_band(table: Table) -> tuple[float, float, float] | None:
    """The peak excess ``table`` was published predicting, with its band (point, low, high):
    tables planned on the forecast carry it; None for others."""
    found = [table.predicted.get(k) for k in ("peak_excess", "peak_excess_low", "peak_excess_high")]
    if any(v is None or not math.isfinite(v) for v in found):
        return None
    return float(found[0]), float(found[1]), float(found[2])


def judge(
    predicted: float | None,
    realized: float | None,
    realized_day: float | None,
    previous_day: float | None,
    tolerance: float,
    band: str | None = None,
) -> str:
    """The verdict of a version with traffic (lower is better for every headline measure).

    Better or worse than before is judged on the whole day against the day before (one busy
    hour of a small stream is noise: a regression is never called on one window); the
    prediction is checked in the planning window it was made for — or, for a version planned
    on the forecast, by ``band``: where its realized peak excess fell against the band it was
    published predicting (only ``inside`` is as predicted)."""
    if realized is None:
        return "unknown"
    change = None if previous_day is None or realized_day is None else realized_day - previous_day
    if change is not None and change > tolerance:
        return "regressed"
    if band is not None:
        if band == "inside":
            return "as_predicted"
    elif predicted is not None and abs(realized - predicted) <= tolerance:
        return "as_predicted"
    if change is not None and -change > tolerance:
        return "improved"
    return "off_prediction"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
