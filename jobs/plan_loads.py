"""What plan reads a stream's planning loads from: the silver tables of the windows job, turned
into the library's values for one stream's planning window — a ``LoadSnapshot`` of key groups
and hot keys (``silver.key_group_load``, ``silver.key_load``; with ``silver.key_group_flow`` for
``albic``), or a ``PartitionLoad`` of write rates (``silver.partition_load``) — and the load each
logged worker carried there (``silver.worker_load``). The planning window is the busiest one
(``peak``: ``routeplan.streams.attribution.peak_window``, the rule outcomes judge by) or the
whole interval, as the stream's policy says (``StreamOptions``). With the ``forecast`` window (the
default) the loads of the whole interval give the planning loads' other fields (distinct keys,
resources, flow) and ``load_history`` reads every window of the last ``planning.history_days``
days, one query per table, into the ``History`` the forecast and the nightly gate read
(``routeplan.streams.rebalance``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from jobs.common import RunArgs, log, read_delta, table_exists
from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.publishing.store import RoutingStore
from routeplan.streams.attribution import peak_window
from routeplan.streams.history import History
from routeplan.streams.policy import LOAD_METRICS, StreamPolicy


@dataclass(frozen=True)
class StreamOptions:
    """How one stream is planned in this run: its policy, and the run's key-group space."""

    policy: StreamPolicy
    num_key_groups: int
    hash_seed: int
    workers_path: str  # a location

    @property
    def planning_window(self) -> str:
        return self.policy.planning_window

    @property
    def load_metric(self) -> str:
        return self.policy.load_metric

    @property
    def hot_key_min_share(self) -> float:
        return self.policy.hot_key_min_share


def load_snapshot(spark, args: RunArgs, stream: str, options, kind: str):
    """The stream's loads of ``kind`` (a ``LoadSnapshot`` for key_routing, a ``PartitionLoad``
    for partition_assignment; None when no event named a partition), the window they cover, and
    the load per logged worker there (None when the interval has no data for the stream)."""
    from pyspark.sql import functions as F

    tables = args.tables
    where = args.interval_predicate() + f" AND stream = '{stream}'"
    summary = read_delta(spark, tables, "silver.window_summary").where(where)
    frames = {
        name: read_delta(spark, tables, f"silver.{name}").where(where)
        for name in ("key_group_load", "key_load", "worker_load")
    }
    if options.planning_window == "peak":  # the busiest window, as outcomes find it
        counts = {r["window_start"]: r for r in summary.select(
            "window_start", "window_end", "messages").collect()}  # fmt: skip
        if not counts:
            return None
        start = peak_window({w: float(r["messages"] or 0) for w, r in counts.items()})
        window = (start, counts[start]["window_end"])
        frames = {
            name: frame.where(F.col("window_start") == F.lit(window[0]))
            for name, frame in frames.items()
        }
    else:
        span = summary.agg(
            F.min("window_start").alias("start"), F.max("window_end").alias("end")
        ).first()
        if span["start"] is None:
            return None
        window = (span["start"], span["end"])
    metric = options.load_metric
    logged = {
        r["worker"]: float(r["load"])
        for r in frames["worker_load"].groupBy("worker").agg(F.sum(metric).alias("load")).collect()
    }
    loads: Loads | None
    if kind == "partition_assignment":
        rates = partition_rates(spark, args, stream, options, window)
        loads = None if rates is None else partition_load(stream, rates, options.policy)
    else:
        loads = key_group_snapshot(spark, args, stream, options, window, frames)
    return loads, window, logged


def partition_load(stream: str, rates: np.ndarray, policy: StreamPolicy) -> PartitionLoad:
    """The ``PartitionLoad`` of ``rates`` with the replica racks the policy names
    (``partition_racks``, KIP-881); partitions it names that the loads lack are logged."""
    racks, note = policy.racks_for(len(rates))
    if note:
        log("plan", note)
    return PartitionLoad(stream, rates, partition_racks=racks)


def key_group_snapshot(spark, args: RunArgs, stream: str, options, window, frames) -> LoadSnapshot:
    """The ``LoadSnapshot`` of the window's key groups, hot keys (and flow, for ``albic``)."""
    from pyspark.sql import functions as F

    metric = options.load_metric
    load = np.zeros(options.num_key_groups)
    distinct_keys = np.zeros(options.num_key_groups)
    resources = {m: np.zeros(options.num_key_groups) for m in LOAD_METRICS if m != metric}
    for r in (
        frames["key_group_load"]
        .groupBy("key_group")
        .agg(
            F.sum(metric).alias("load"),
            F.sum("distinct_keys").alias("distinct_keys"),
            *[F.sum(m).alias(m) for m in resources],
        )
        .collect()
    ):
        if not 0 <= r["key_group"] < options.num_key_groups:
            raise SystemExit(
                f"{stream}: key group {r['key_group']} outside 0..{options.num_key_groups - 1}: "
                "the windows job ran with another --num-key-groups"
            )
        load[r["key_group"]] = r["load"]
        distinct_keys[r["key_group"]] = r["distinct_keys"]
        for m, values in resources.items():
            values[r["key_group"]] = r[m]
    hot = (
        frames["key_load"]
        .where(F.col("share") >= options.hot_key_min_share)
        .groupBy("key")
        .agg(F.sum(metric).alias("load"))
        .collect()
    )
    flow, anchors = (
        key_group_flow(spark, args, stream, options, window)
        if "albic" in options.policy.strategies
        else (None, ())
    )
    return LoadSnapshot(
        stream=stream,
        key_group_load=load,
        hot_key_load={r["key"]: float(r["load"]) for r in hot},
        distinct_keys=distinct_keys,
        key_group_resources=resources,
        key_group_flow=flow,
        flow_anchors=anchors,
        hash_seed=options.hash_seed,
    )


def key_group_flow(spark, args: RunArgs, stream: str, options, window):
    """Messages into and out of the stream's key groups in the planning window(s), as
    ``(key_group_flow, flow_anchors)``: a key group of another stream is an anchor on the worker
    its LATEST table gives it (edges to streams not published yet are left out)."""
    from pyspark.sql import functions as F

    from routeplan.model.flow import flow_arrays

    name = "silver.key_group_flow"
    if not table_exists(args.tables, name):
        return None, ()
    frame = read_delta(spark, args.tables, name).where(
        args.interval_predicate() + f" AND (stream = '{stream}' OR upstream_stream = '{stream}')"
    )
    if options.planning_window == "peak":
        frame = frame.where(F.col("window_start") == F.lit(window[0]))
    rows = (
        frame.groupBy("stream", "upstream_stream", "upstream_key_group", "key_group")
        .agg(F.sum("messages").alias("messages"))
        .collect()
    )
    store, tables = RoutingStore(args.tables.routing), {}

    def end(other: str, group: int):
        if other == stream:
            return int(group)
        if other not in tables:
            tables[other] = store.load(other)
        table = tables[other]
        if table is None or table.num_key_groups != options.num_key_groups:
            return None
        return (f"{other}:{group}", table.key_group_worker[group])

    edges = []
    for r in rows:
        up = end(r["upstream_stream"], r["upstream_key_group"])
        down = end(r["stream"], r["key_group"])
        known = up is not None and down is not None
        if known and (isinstance(up, int) or isinstance(down, int)):  # one end is ours
            edges.append((up, down, float(r["messages"])))
    if not edges:
        return None, ()
    return flow_arrays(options.num_key_groups, edges)


def partition_rates(spark, args: RunArgs, stream: str, options, window) -> np.ndarray | None:
    """Write rate (bytes/s) of every partition seen in the interval: its rate in the planning
    window (peak), or its bytes over the whole interval's span; None when no event had one."""
    from pyspark.sql import functions as F

    frame = read_delta(spark, args.tables, "silver.partition_load").where(
        args.interval_predicate() + f" AND stream = '{stream}'"
    )
    top = frame.agg(F.max("partition").alias("top")).first()["top"]
    if top is None:
        return None
    if options.planning_window == "peak":
        rows = frame.where(F.col("window_start") == F.lit(window[0])).select(
            "partition", F.col("bytes_per_s").alias("rate")
        )
    else:
        seconds = (window[1] - window[0]).total_seconds()
        rows = frame.groupBy("partition").agg((F.sum("bytes") / F.lit(seconds)).alias("rate"))
    rates = np.zeros(top + 1)
    for r in rows.collect():
        rates[r["partition"]] = r["rate"]
    return rates


def load_history(spark, args: RunArgs, stream: str, options, kind: str) -> History | None:
    """Every window of the stream's last ``planning.history_days`` days up to the interval's
    (days without windows left out; window t is the same time of every day, NaN on a day
    without it): key-group (or partition) loads in the policy's load metric
    and the loads of the keys that were hot in any window; None without a window."""
    from pyspark.sql import functions as F

    policy = options.policy
    first = args.interval_start - timedelta(days=policy.forecast.history_days - 1)
    where = f"date >= '{first}' AND date < '{args.interval_end}' AND stream = '{stream}'"
    if kind == "partition_assignment":
        table, unit, metric, size = "silver.partition_load", "partition", "bytes_per_s", None
    else:
        table, unit, metric = "silver.key_group_load", "key_group", options.load_metric
        size = options.num_key_groups
    rows = (
        read_delta(spark, args.tables, table)
        .where(where)
        .select("window_start", F.col(unit).alias("unit"), F.col(metric).alias("load"))
        .collect()
    )
    if not rows:
        return None
    starts = sorted({r["window_start"] for r in rows})
    days = sorted({s.date() for s in starts})
    times = sorted({s.time() for s in starts})  # window t: the same time of every day
    slot = {s: (days.index(s.date()), times.index(s.time())) for s in starts}
    top = size if size is not None else max(int(r["unit"]) for r in rows) + 1
    units = np.full((len(days), len(times), top), np.nan)
    for d, t in slot.values():
        units[d, t] = 0.0
    for r in rows:
        if not 0 <= r["unit"] < top:
            raise SystemExit(
                f"{stream}: key group {r['unit']} outside 0..{top - 1}: "
                "the windows job ran with another --num-key-groups"
            )
        d, t = slot[r["window_start"]]
        units[d, t, r["unit"]] += float(r["load"] or 0.0)
    hot: dict[str, np.ndarray] = {}
    if kind != "partition_assignment":
        keys = read_delta(spark, args.tables, "silver.key_load").where(where)
        named = {
            r["key"]
            for r in keys.where(F.col("share") >= options.hot_key_min_share)
            .select("key")
            .distinct()
            .collect()
        }
        for r in (
            keys.where(F.col("key").isin(sorted(named)))
            .select("window_start", "key", F.col(metric).alias("load"))
            .collect()
        ):
            if r["window_start"] in slot:
                own = hot.setdefault(r["key"], np.where(np.isnan(units[:, :, 0]), np.nan, 0.0))
                own[slot[r["window_start"]]] += float(r["load"] or 0.0)
    return History(tuple(d.isoformat() for d in days), units, hot, hash_seed=options.hash_seed)
