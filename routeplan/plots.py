"""Pictures of plans: data in, PNG bytes out (matplotlib's object API, no pyplot, no display).

- ``worker_loads`` + ``worker_load_png``: each worker's load relative to its capacity, before
  (the current routing) and after a plan, as side-by-side bars with the line a balanced
  worker sits on — the fair share for key routing, the bin capacity C for partitions.
  ``version_png`` draws a published version against the one it replaced (its parent).
  The caller passes the parent (``routeplan.publishing.diff.stored_parent`` finds it in a store).
- ``pareto_png``: ``routeplan binpack``'s strategies as mean consumers vs mean Rscore, with the
  Pareto front of those that never overload a consumer.
- ``compare_png``: ``routeplan compare``'s simulated strategies, imbalance and queues over time.
- ``outcomes_png``: a stream's outcomes night by night, realized against predicted (the Routing
  page).

The CLI (``routeplan show / plan / binpack / compare --plot``), the HTTP API
(``/streams/{stream}/plot.png``, the Routing pages) and the publish job only call these and
write the bytes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from routeplan.model.loads import Loads
from routeplan.model.table import PartitionAssignment, Table
from routeplan.planning import metrics
from routeplan.planning.partitions.scores import pareto_front

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from routeplan.simulation.replay import SimulationResult

BEFORE_COLOR, AFTER_COLOR, OVER_COLOR, LINE_COLOR = "#9e9e9e", "#1f77b4", "#d62728", "#333333"


@dataclass(frozen=True)
class WorkerLoads:
    """Each worker's load relative to its capacity (1.0 = where a balanced worker sits), after a
    plan and, when the current routing is known, before it (0 for a worker a table lacks)."""

    workers: tuple[str, ...]
    capacities: tuple[float, ...]
    draining: tuple[bool, ...]
    after: np.ndarray
    before: np.ndarray | None
    reference: str  # what 1.0 is: "fair share" or "bin capacity C"
    line_is_limit: bool  # above the line is an overload (C), not only above the mean
    title: str
    after_label: str  # "v8 (after)", "after (plan)"
    before_label: str = ""  # "v7 (before)", "before (current routing)"


def worker_loads(
    table: Table, current: Table | None = None, loads: Loads | None = None, title: str = ""
) -> WorkerLoads:
    """The relative loads of ``table`` (and of ``current``, when given) under ``loads`` — by
    default the loads the table was planned on (its ``planning_load``). ``ValueError`` when
    there are no loads or ``current`` is of another kind or shape."""
    loads = table.planning_snapshot() if loads is None else loads
    if loads is None:
        raise ValueError(f"{table.stream} v{table.version}: the table records no planning load")
    if current is not None and current.kind != table.kind:
        raise ValueError(f"cannot compare a {current.kind} table with a {table.kind} one")
    after_by_name, workers, reference = metrics.relative_worker_loads(table, loads)
    names = list(after_by_name)
    by_name = {w.name: w for w in workers.items}
    before = None
    if current is not None:
        before_by_name, old_workers, _ = metrics.relative_worker_loads(current, loads)
        names += [n for n in before_by_name if n not in after_by_name]
        by_name = {w.name: w for w in old_workers.items} | by_name  # the plan's say wins
        before = np.array([before_by_name.get(n, 0.0) for n in names])
    return WorkerLoads(
        workers=tuple(names),
        capacities=tuple(by_name[n].capacity for n in names),
        draining=tuple(by_name[n].state == "draining" for n in names),
        after=np.array([after_by_name.get(n, 0.0) for n in names]),
        before=before,
        reference=reference,
        line_is_limit=isinstance(table, PartitionAssignment),
        title=title or _default_title(table),
        after_label=_label("after" if current else "", table, "plan"),
        before_label=_label("before", current, "current routing") if current else "",
    )


def _label(when: str, table: Table, otherwise: str) -> str:
    """``v7 (before)`` for a published table, ``before (current routing)`` for another."""
    if table.version:
        return f"v{table.version} ({when})" if when else f"v{table.version}"
    return f"{when} ({otherwise})" if when else otherwise


def version_png(table: Table, parent: Table | None) -> tuple[bytes, str | None]:
    """A published version's worker-load plot against its ``parent`` (None: not stored), and,
    when the parent is not drawn, why (also written under the plot's title)."""
    note = None
    data = None
    if table.parent_version is not None and parent is None:
        note = f"v{table.parent_version} is no longer stored"
    elif parent is not None:
        try:
            data = worker_loads(table, parent)
        except ValueError as err:  # another kind, or another number of key groups
            note = f"v{parent.version} cannot be compared: {err}"
    if data is None:
        title = _default_title(table)
        data = worker_loads(table, title=f"{title}\n({note})" if note else title)
    return worker_load_png(data), note


def _default_title(table: Table) -> str:
    version = f" v{table.version}" if table.version else ""
    return f"{table.stream}{version} ({table.strategy})"


def worker_load_png(data: WorkerLoads) -> bytes:
    """Side-by-side bars per worker — before (grey) and after (blue; red above the bin
    capacity) — with the line at 1.0 and each side's highest bar in the legend."""
    n = len(data.workers)
    fig = new_figure(width=min(18.0, 4.0 + 0.45 * n * (2 if data.before is not None else 1)))
    ax = fig.add_subplot()
    x = np.arange(n)
    width = 0.4 if data.before is not None else 0.7
    if data.before is not None:
        ax.bar(
            x - width / 2,
            data.before,
            width,
            color=BEFORE_COLOR,
            label=f"{data.before_label}: highest {_highest(data.before)}",
        )
    shift = width / 2 if data.before is not None else 0.0
    over = data.after > 1.0 + 1e-9 if data.line_is_limit else np.zeros(n, bool)
    colors = [OVER_COLOR if o else AFTER_COLOR for o in over]
    bars = ax.bar(x + shift, data.after, width, color=colors)
    bars.set_label(f"{data.after_label}: highest {_highest(data.after)}")
    for bar, draining in zip(bars, data.draining, strict=True):
        if draining:
            bar.set_hatch("//")
    ax.axhline(1.0, color=LINE_COLOR, linestyle="--", linewidth=1.2, label=data.reference)
    ax.set_xticks(x, _worker_labels(data), rotation=90 if n > 16 else 0, fontsize=8)
    ax.set_ylabel(f"load / {data.reference}")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(0, max(1.15, float(np.max(_all_values(data), initial=0.0)) * 1.1))
    fig.suptitle(data.title)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return png_bytes(fig)


def _highest(values: np.ndarray) -> str:
    return f"{float(np.max(values, initial=0.0)):.3g}×"


def _all_values(data: WorkerLoads) -> np.ndarray:
    return data.after if data.before is None else np.concatenate([data.after, data.before])


def _worker_labels(data: WorkerLoads) -> list[str]:
    """Names, with the capacity when capacities differ and ``(draining)`` for draining ones."""
    mixed = len(set(data.capacities)) > 1
    labels = []
    for name, capacity, draining in zip(data.workers, data.capacities, data.draining, strict=True):
        label = f"{name}\nc={capacity:g}" if mixed else name
        labels.append(f"{label}\n(draining)" if draining else label)
    return labels


def pareto_png(summary: Mapping[str, Any], title: str = "") -> bytes:
    """``routeplan binpack``'s strategies (its ``summarize`` output) as points of mean consumers
    (x) and mean Rscore (y), both lower is better; those that overloaded a consumer (over C) are
    hollow red and left out of the front, which is drawn as a step line."""
    algorithms: Mapping[str, Mapping[str, Any]] = summary["algorithms"]
    points = {n: (a["mean_consumers"], a["mean_rscore"]) for n, a in algorithms.items()}
    feasible = {n: p for n, p in points.items() if not algorithms[n].get("overloaded")}
    front = pareto_front(feasible) if feasible else []
    fig = new_figure(width=7.5)
    ax = fig.add_subplot()
    for name, (x, y) in points.items():
        if name in front:
            style = {"color": AFTER_COLOR, "s": 60, "zorder": 3}
        elif name in feasible:
            style = {"color": BEFORE_COLOR, "s": 40}
        else:
            style = {"facecolors": "none", "edgecolors": OVER_COLOR, "s": 50}
        ax.scatter([x], [y], **style)
        ax.annotate(name, (x, y), xytext=(5, 4), textcoords="offset points", fontsize=8)
    if front:
        xs, ys = zip(*(points[n] for n in front), strict=True)
        ax.step(xs, ys, where="post", color=AFTER_COLOR, marker="o", label="Pareto front")
    lower_bound = float(np.mean(summary["lower_bound"]))
    ax.axvline(lower_bound, color=LINE_COLOR, linestyle="--", linewidth=1, label="lower bound")
    if len(feasible) < len(points):
        ax.scatter([], [], facecolors="none", edgecolors=OVER_COLOR, label="a consumer over C")
    ax.set_xlabel("consumers (mean per iteration)")
    ax.set_ylabel("Rscore (mean; lower = less rebalanced load)")
    ax.set_title(title or f"{summary['partitions']} partitions, {summary['iterations']} iterations")
    ax.margins(0.15)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return png_bytes(fig)


def compare_png(results: Sequence[SimulationResult], title: str = "") -> bytes:
    """Imbalance and queue spread over time, and replication, per strategy: one PNG."""
    fig = new_figure(width=15.0, height=4.2)
    axes = fig.subplots(1, 3)
    for r in results:
        t = r.series["messages"]
        axes[0].plot(t, np.maximum(r.series["imbalance"], 1e-6), label=r.strategy)
        axes[1].plot(t, r.series["queue_spread"], label=r.strategy)
    axes[0].set(xlabel="messages", ylabel="imbalance (max u − 1)", yscale="log")
    axes[1].set(xlabel="messages", ylabel="queue length max − min")
    axes[2].bar([r.strategy for r in results], [r.replication for r in results])
    axes[2].set(ylabel="replication (memory / distinct keys)")
    axes[2].tick_params(axis="x", rotation=45)
    for ax in axes[:2]:
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return png_bytes(fig)


def outcomes_png(records: Sequence[Mapping[str, Any]], title: str = "") -> bytes:
    """A stream's outcome records (``routeplan outcomes``, oldest first) as the headline
    measure predicted (dashed) and realized (solid) night by night, each point labelled with
    the version in force; a regressed night is marked red. When the records carry the day's
    peak excess, a second panel shows it realized against the band each version was published
    predicting (shaded, its point dashed)."""
    peaks = any(r.get("realized_peak_excess") is not None for r in records)
    fig = new_figure(
        width=max(6.0, min(14.0, 2.5 + 0.6 * len(records))), height=6.4 if peaks else 3.6
    )
    axes = fig.subplots(2, 1, sharex=True) if peaks else [fig.add_subplot()]
    ax = axes[0]
    days = [str(r["interval_start"]) for r in records]
    x = np.arange(len(days))

    def values(key: str) -> np.ndarray:
        return np.array([np.nan if r.get(key) is None else float(r[key]) for r in records])

    predicted, realized = values("predicted"), values("realized")
    ax.plot(x, predicted, linestyle="--", marker="o", color=BEFORE_COLOR, label="predicted")
    ax.plot(x, realized, marker="o", color=AFTER_COLOR, label="realized")
    for i, record in enumerate(records):
        if record.get("verdict") == "regressed":
            ax.plot([i], [realized[i]], marker="o", markersize=10, color=OVER_COLOR)
        ax.annotate(
            f"v{record['version']}",
            (i, realized[i]),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    measure = records[0]["measure"] if records else "imbalance"
    ax.set_ylabel(f"{measure} (lower is better)")
    ax.set_title(title or f"{measure}: predicted and realized, night by night", fontsize=10)
    if peaks:
        low, high = values("predicted_low"), values("predicted_high")
        band = axes[1]
        band.fill_between(x, low, high, color=BEFORE_COLOR, alpha=0.2, label="predicted band")
        band.plot(x, values("predicted_peak_excess"), linestyle="--", marker="o",
                  color=BEFORE_COLOR, label="predicted")  # fmt: skip
        band.plot(x, values("realized_peak_excess"), marker="o", color=AFTER_COLOR,
                  label="realized")  # fmt: skip
        band.set_ylabel("peak excess (lower is better)")
        band.set_title("the day's peak excess against the predicted band", fontsize=10)
    for each in axes:
        each.grid(alpha=0.3)
        each.legend(fontsize=8)
    axes[-1].set_xticks(x, days, rotation=30 if len(days) > 6 else 0, fontsize=8)
    return png_bytes(fig)


def new_figure(width: float, height: float = 4.5) -> Figure:
    """A figure drawn by Agg, whatever backend pyplot would pick (safe in threads)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def png_bytes(fig: Figure) -> bytes:
    """The figure as a PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
