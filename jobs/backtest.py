"""backtest: the day's windows routed through a candidate plan and through LATEST, in Spark.

Called by the plan job (``jobs/plan.py``) for each stream's selected candidate when the stream
has a LATEST table of the same kind. Every window of the interval is routed through both tables
and gets, for each, its imbalance by the library's one definition
(``routeplan.planning.metrics.imbalance``, workers and capacities from the table — what the
plan's predicted imbalance uses); ``gold.plans`` stores the figures with the selected plan
(``backtest``, ``backtest_regression``) and the validate job refuses a candidate whose mean over
the windows is worse than LATEST's by more than the policy's ``regression_tolerance``.

* **key routing** (``RoutingTable``): a window's load on a worker is the sum of the loads of the
  key groups the table gives it (``silver.key_group_load`` joined to the small group → worker
  map, broadcast), except the table's split keys (``hot_keys``): their own load, from the day's
  ``bronze.stream_events`` (``key IN`` the split keys, grouped by window and key, in the
  policy's load metric), is taken out of their key group (never below 0: it is part of the
  group's load, from the same events) and divided among their workers by the table's
  weights (``routeplan.planning.metrics.hot_key_split``: the planner's intended shares, not
  the producers' least-loaded choice among them).
* **partition assignment** (``PartitionAssignment``): a window's partition rates
  (``silver.partition_load``'s ``bytes_per_s``, what the plan plans partitions on, whatever the
  load metric) summed per consumer, judged by the kind's own headline — ``overload``, the share
  of the rate above the consumers' capacity C (``routeplan.streams.outcomes.measures``), not the
  imbalance, which paper 002's packers do not aim at (they fill as few consumers as the load
  needs). Partitions a table does not assign are routed by neither.

Both tables are routed in one Spark pass; only the per-window × per-worker sums are collected.
A LATEST of another kind, or a key-routing LATEST whose key groups (count or hash seed) differ
from the windows', cannot be routed from the silver tables: no backtest, and a note says why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce

import numpy as np

from jobs.common import RunArgs, read_delta
from routeplan.model.hashing import key_group
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.planning.metrics import imbalance
from routeplan.streams.outcomes import HEADLINES, measures

# gold.plans' columns for the backtest (jobs/migrations.py adds them to older tables)
BACKTEST_COLUMNS = "backtest string, backtest_regression double"
ROUTINGS = ("candidate", "latest")
WINDOW_FORMAT = "yyyy-MM-dd'T'HH:mm:ssXXX"  # in the session's time zone (UTC): ...Z


@dataclass(frozen=True)
class Backtest:
    """Per-window imbalances of a candidate and of LATEST over one interval.

    ``windows``: ``(window_start ISO text, candidate imbalance, LATEST imbalance)``, by start."""

    latest_version: int | None
    windows: tuple[tuple[str, float, float], ...]
    tolerance: float
    seconds: float = 0.0
    measure: str = "imbalance"  # the kind's headline: imbalance, or overload for partitions

    @property
    def candidate_mean(self) -> float:
        return float(np.mean([c for _, c, _ in self.windows])) if self.windows else 0.0

    @property
    def latest_mean(self) -> float:
        return float(np.mean([x for _, _, x in self.windows])) if self.windows else 0.0

    @property
    def regression(self) -> float:
        """How much worse the candidate balances the day than LATEST (> 0: worse)."""
        return self.candidate_mean - self.latest_mean

    def document(self) -> dict:
        """The ``gold.plans.backtest`` JSON object."""
        return {
            "latest_version": self.latest_version,
            "windows": [
                {"window_start": w, "candidate": c, "latest": x} for w, c, x in self.windows
            ],
            "candidate_mean": self.candidate_mean,
            "latest_mean": self.latest_mean,
            "tolerance": self.tolerance,
            "measure": self.measure,
        }

    def to_json(self) -> str:
        return json.dumps(self.document())

    def describe(self) -> str:
        """One line for an operator: the means, the tolerance and every window's figures."""
        figures = "; ".join(f"{w} {c:.4f} / {x:.4f}" for w, c, x in self.windows)
        return (
            f"backtest against LATEST v{self.latest_version}: mean {self.measure} "
            f"{self.candidate_mean:.4f} against {self.latest_mean:.4f}, "
            f"{self.regression:+.4f} beyond the tolerance {self.tolerance} over "
            f"{len(self.windows)} windows (window start candidate / LATEST): {figures}"
        )


def backtest_of(text: str | None) -> Backtest | None:
    """The ``Backtest`` a ``gold.plans.backtest`` value holds (None for none)."""
    if not text:
        return None
    doc = json.loads(text)
    return Backtest(
        doc.get("latest_version"),
        tuple((w["window_start"], w["candidate"], w["latest"]) for w in doc["windows"]),
        float(doc["tolerance"]),
        measure=doc.get("measure", "imbalance"),
    )


def unroutable(candidate: Table, latest: Table | None, num_key_groups: int, seed: int):
    """Why the day cannot be routed through both tables from the silver tables, or None."""
    if latest is None:
        return "no LATEST: no backtest"
    if latest.kind != candidate.kind:
        return f"LATEST v{latest.version} is a {latest.kind} table: no backtest"
    for name, table in (("LATEST", latest), ("the candidate", candidate)):
        if isinstance(table, RoutingTable) and (
            table.num_key_groups != num_key_groups or table.hash_seed != seed
        ):
            return (
                f"{name} has {table.num_key_groups} key groups (seed {table.hash_seed}), the "
                f"windows {num_key_groups} (seed {seed}): no backtest"
            )
    return None


def run_backtest(
    spark,
    args: RunArgs,
    stream: str,
    candidate: Table,
    latest: Table,
    metric: str,
    tolerance: float,
    minutes: int | None = None,
) -> Backtest:
    """Route the interval's windows of ``stream`` through ``candidate`` and ``latest`` (the
    same kind; check ``unroutable`` first); ``minutes``: the windows' length, if known. A
    candidate that routes as LATEST (the rerun rule kept it) is routed once: its regression is
    exactly 0."""
    started = time.perf_counter()
    same = candidate.same_routing(latest)
    tables = {"candidate": candidate} if same else {"candidate": candidate, "latest": latest}
    if isinstance(candidate, RoutingTable):
        loads = key_routing_loads(spark, args, stream, metric, tables, minutes)  # type: ignore[arg-type]
    else:
        loads = partition_loads(spark, args, stream, tables)  # type: ignore[arg-type]
    if same:
        loads["latest"] = loads["candidate"]
    per_window = {
        routing: window_measures(tables.get(routing, latest), loads.get(routing, {}))
        for routing in ROUTINGS
    }
    starts = sorted(set(per_window["candidate"]) | set(per_window["latest"]))
    windows = tuple(
        (w, per_window["candidate"].get(w, 0.0), per_window["latest"].get(w, 0.0)) for w in starts
    )
    measure = HEADLINES[candidate.kind]
    return Backtest(latest.version, windows, tolerance, time.perf_counter() - started, measure)


def window_measures(table: Table, loads: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Window start → ``table``'s headline measure on that window's per-worker loads: the
    imbalance by ``routeplan.planning.metrics.imbalance`` with the table's workers and
    capacities, or for partitions the overload of the consumers' rates against C."""
    if isinstance(table, PartitionAssignment):
        return {w: float(measures(table, rates).overload or 0.0) for w, rates in loads.items()}
    names = table.workers.names
    capacity, active = table.workers.capacities, table.workers.is_active
    return {
        window: imbalance(np.array([by_worker.get(n, 0.0) for n in names]), capacity, active)
        for window, by_worker in loads.items()
    }


def _metric_sum(metric: str):
    """The load of a set of events in ``metric``, as the windows job sums it."""
    from pyspark.sql import functions as F

    if metric == "messages":
        return F.count("*").cast("double")
    if metric == "bytes":
        return F.coalesce(F.sum("size_bytes").cast("double"), F.lit(0.0))
    return F.sum(F.coalesce(F.col("cost_ms"), F.lit(0.0))).cast("double")


def key_routing_loads(
    spark,
    args: RunArgs,
    stream: str,
    metric: str,
    tables: Mapping[str, RoutingTable],
    minutes: int | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Routing → window start → worker → load, for each key-routing table of ``tables``
    (``minutes``: the windows' length; None: read from ``silver.key_group_load``)."""
    from pyspark.sql import functions as F

    where = args.interval_predicate() + f" AND stream = '{stream}'"
    groups = read_delta(spark, args.tables, "silver.key_group_load").where(where)
    if minutes is None:  # the windows' length, when the caller does not know it
        span = groups.select("window_start", "window_end").first()
        if span is None:
            return {}
        minutes = round((span["window_end"] - span["window_start"]).total_seconds() / 60)
    window = F.date_format("window_start", WINDOW_FORMAT).alias("window")
    owners = F.broadcast(
        spark.createDataFrame(
            [(r, g, w) for r, t in tables.items() for g, w in enumerate(t.key_group_worker)],
            "routing string, key_group int, worker string",
        )
    )
    group_load = groups.select(
        window, "key_group", F.coalesce(F.col(metric).cast("double"), F.lit(0.0)).alias("load")
    ).crossJoin(F.broadcast(spark.createDataFrame([(r,) for r in tables], "routing string")))
    spread = []
    split = sorted({k for t in tables.values() for k in t.hot_keys})
    if split:
        events = (
            read_delta(spark, args.tables, "bronze.stream_events")
            .where(where)
            .where(F.col("key").isin(split))
        )
        start = F.window("ts", f"{minutes} minutes").start
        hot = events.groupBy(F.date_format(start, WINDOW_FORMAT).alias("window"), "key").agg(
            _metric_sum(metric).alias("load")
        )
        # a split key leaves its group (share -1 there) and goes to its workers by weight
        out, shares = [], []
        for routing, table in tables.items():
            for key, targets in table.hot_keys.items():
                out.append((routing, key, key_group(key, table.num_key_groups, table.hash_seed)))
                total = sum(w for _, w in targets)
                shares += [(routing, key, worker, w / total) for worker, w in targets]
        taken = hot.join(
            F.broadcast(spark.createDataFrame(out, "routing string, key string, key_group int")),
            "key",
        ).select("window", "key_group", (-F.col("load")).alias("load"), "routing")
        group_load = group_load.unionByName(taken)
        spread.append(
            hot.join(
                F.broadcast(
                    spark.createDataFrame(
                        shares, "routing string, key string, worker string, share double"
                    )
                ),
                "key",
            ).select("routing", "window", "worker", (F.col("load") * F.col("share")).alias("load"))
        )
    # one aggregation: a split key's load is part of its group's (both from the same events), so
    # its group's residual is never below 0 and needs no clipping before the sum per worker
    residual = group_load.join(owners, ["routing", "key_group"]).select(
        "routing", "window", "worker", "load"
    )
    return _collected(reduce(lambda a, b: a.unionByName(b), [residual, *spread]))


def partition_loads(
    spark, args: RunArgs, stream: str, tables: Mapping[str, PartitionAssignment]
) -> dict[str, dict[str, dict[str, float]]]:
    """Routing → window start → consumer → summed partition rate (bytes/s)."""
    from pyspark.sql import functions as F

    where = args.interval_predicate() + f" AND stream = '{stream}'"
    rates = read_delta(spark, args.tables, "silver.partition_load").where(where)
    consumers = F.broadcast(
        spark.createDataFrame(
            [(r, p, c) for r, t in tables.items() for p, c in t.partition_consumer.items()],
            "routing string, partition int, worker string",
        )
    )
    routed = rates.join(consumers, "partition").select(
        "routing",
        F.date_format("window_start", WINDOW_FORMAT).alias("window"),
        "worker",
        F.coalesce(F.col("bytes_per_s").cast("double"), F.lit(0.0)).alias("load"),
    )
    return _collected(routed)


def _collected(frame) -> dict[str, dict[str, dict[str, float]]]:
    """``frame`` (routing, window, worker, load) summed per routing, window and worker, then
    collected (small: a row per table, window and worker) as nested dicts."""
    from pyspark.sql import functions as F

    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in frame.groupBy("routing", "window", "worker").agg(F.sum("load").alias("l")).collect():
        out.setdefault(r["routing"], {}).setdefault(r["window"], {})[r["worker"]] = float(r["l"])
    return out


def selected_backtest(
    spark, args: RunArgs, stream: str, options, candidate: Table, latest: Table | None, window
) -> Backtest | None:
    """The backtest of a stream's selected ``candidate`` against ``latest`` (``options``: a
    ``jobs.plan_loads.StreamOptions``: policy, key groups, hash seed; ``window``: its planning
    window, one window's span when it is the peak), or None when there is none — the plan job's
    log says why."""
    from jobs.common import log

    why = unroutable(candidate, latest, options.num_key_groups, options.hash_seed)
    if why is not None:
        log("plan", f"{stream}: {why}")
        return None
    assert latest is not None
    policy = options.policy
    peak = options.planning_window == "peak"
    minutes = round((window[1] - window[0]).total_seconds() / 60) if peak else None
    found = run_backtest(
        spark,
        args,
        stream,
        candidate,
        latest,
        policy.load_metric,
        policy.regression_tolerance,
        minutes,
    )
    log(
        "plan",
        f"{stream}: backtest over {len(found.windows)} windows: {candidate.strategy} "
        f"{found.candidate_mean:.4f}, LATEST v{latest.version} {found.latest_mean:.4f} "
        f"(regression {found.regression:+.4f}, tolerance {found.tolerance}) "
        f"in {found.seconds:.1f} s",
    )
    return found
