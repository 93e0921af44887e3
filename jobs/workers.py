"""The workers of one stream for the jobs: the workers file, else the workers the logs name; a
capacity ``auto`` (or absent) resolved from ``silver.worker_capacity`` (``resolve_workers``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import date

from jobs.common import Tables, log, table_exists
from routeplan import storage
from routeplan.files import read_workers_and_learn
from routeplan.model.capacity import capacities_source, resolve_capacities
from routeplan.model.workers import Worker, Workers
from routeplan.streams.attribution import UNRECORDED

CAPACITY_TABLE = "silver.worker_capacity"


def read_workers(
    path: str | os.PathLike[str] | None, stream: str, seen: Iterable[str] = ()
) -> Workers:
    """The stream's workers from the workers file (``routeplan.files.read_workers_file``);
    without a file (or an entry for the stream), the workers ``seen`` in the logs at capacity 1
    — said in the job log, never silently. Capacities ``auto`` stay at 1 here (logged):
    ``resolve_workers`` learns them."""
    workers, learn = _workers(path, stream, seen)
    if learn:
        log("workers", f"{stream}: capacity 1 for {len(learn)} workers (not learnt here)")
    return workers


def workers_with_capacities(
    path: str | os.PathLike[str] | None,
    stream: str,
    seen: Iterable[str],
    learnt: Mapping[str, float],
) -> Workers:
    """``read_workers`` with the capacities ``auto`` (in the file, or every worker when the
    stream has no file entry) taken from ``learnt`` (messages/s per worker, e.g. tonight's
    ``routeplan.model.capacity.estimate_capacities``), brought into the file's units by
    ``resolve_capacities``; every decision is logged."""
    return _resolved(stream, *_workers(path, stream, seen), learnt)


def _resolved(
    stream: str, workers: Workers, learn: frozenset[str], learnt: Mapping[str, float]
) -> Workers:
    if not learn:
        return workers
    fixed = {w.name: w.capacity for w in workers.items if w.name not in learn}
    capacities, notes = resolve_capacities(fixed, sorted(learn), learnt)
    for note in notes:
        log("workers", f"{stream}: {note}")
    return Workers(
        tuple(
            replace(w, capacity=capacities[w.name]) if w.name in capacities else w
            for w in workers.items
        )
    )


def learnt_capacities(
    spark, tables: Tables, stream: str, on_or_before: date | None = None
) -> dict[str, float]:
    """Each worker's latest capacity (messages/s) in ``silver.worker_capacity`` for ``stream``
    from an interval starting on or before ``on_or_before`` (default: any); empty without the
    table. An estimate older than that interval is named in the job log."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not table_exists(tables, CAPACITY_TABLE):
        log("workers", f"{stream}: no {CAPACITY_TABLE} yet: no learnt capacities")
        return {}
    latest_day = on_or_before or date.max
    latest = Window.partitionBy("worker").orderBy(F.desc("interval_start"))
    rows = (
        spark.read.format("delta")
        .load(tables.path(CAPACITY_TABLE))
        .where((F.col("stream") == stream) & (F.col("interval_start") <= F.lit(latest_day)))
        .withColumn("newest", F.row_number().over(latest))
        .where("newest = 1")
        .select("worker", "capacity", "interval_start")
        .collect()
    )
    stale = sorted(r["worker"] for r in rows if on_or_before and r["interval_start"] < on_or_before)
    if stale:
        log("workers", f"{stream}: capacities from an earlier night for {', '.join(stale)}")
    return {r["worker"]: float(r["capacity"]) for r in rows}


def resolve_workers(
    spark,
    tables: Tables,
    path: str | os.PathLike[str] | None,
    stream: str,
    seen: Iterable[str] = (),
    interval_start: date | None = None,
) -> tuple[Workers, str]:
    """The stream's workers with every capacity ``auto`` (or absent, or every capacity when the
    file has no entry for the stream) learnt from ``silver.worker_capacity`` — the latest
    estimate on or before ``interval_start`` (default: any) — and where their capacities came
    from (``routeplan.model.capacity.capacities_source``: given, learnt or mixed). What the plan
    job calls in place of ``read_workers``."""
    workers, learn = _workers(path, stream, seen)
    source = capacities_source(workers.names, learn)
    if not learn:
        return workers, source
    learnt = learnt_capacities(spark, tables, stream, interval_start)
    return _resolved(stream, workers, learn, learnt), source


def _workers(
    path: str | os.PathLike[str] | None, stream: str, seen: Iterable[str]
) -> tuple[Workers, frozenset[str]]:
    """The workers (capacities ``auto`` at 1) and the names whose capacity is to be learnt."""
    if path is not None and storage.is_file(path):
        by_stream, learn = read_workers_and_learn(path)
        workers = by_stream.get(stream)
        if workers is not None:
            return workers, learn.get(stream, frozenset())
    names = sorted(w for w in seen if w != UNRECORDED)
    if not names:
        raise SystemExit(f"no workers for stream {stream!r}: none in {path}, none in the logs")
    log("workers", f"{stream}: no workers file entry; using the {len(names)} logged workers")
    return Workers(tuple(Worker(n) for n in names)), frozenset(names)
