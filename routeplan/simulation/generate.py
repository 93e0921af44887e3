"""Sample stream logs: Zipf keys with drift, partitions, today's key grouping, unequal workers.

Seeded and reproducible: the same config writes the same bytes. Files land in
``<landing>/<date>/<stream>-<part>.<fmt>[.gz]``, each covering a slice of the day; the workers
file (``schemas/worker.schema.json``) lists every stream's workers with capacities — ``y`` of them
``z`` times faster, as in paper 000 §VII. With ``upstream = A``, the events of every other stream
name the event of stream ``A`` they derive from (``upstream_stream``, ``upstream_key``: ``A``'s key
of the same rank id for ``upstream_correlation`` of them, a random one otherwise), the
communication between key groups of paper 004's ALBIC; without it the output is unchanged.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from routeplan.model.hashing import DEFAULT_NUM_KEY_GROUPS, key_groups
from routeplan.model.names import check_name
from routeplan.model.workers import Worker, Workers
from routeplan.parsing import (
    MAX_KEYS,
    MAX_MESSAGES,
    MAX_PARTITIONS,
    integer,
    key_group_count,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    probability,
    stream_name,
    worker_count,
)
from routeplan.planning.keyrouting.key_grouping import key_grouping_workers

FORMATS = ("jsonl", "csv", "parquet")
MALFORMED_KINDS = ("truncated", "missing_key", "bad_ts", "negative_size", "bad_partition")
MAX_FILES = 10_000  # files per stream

# the type of each numeric field, for ``routeplan generate``'s flags and ``generate:`` specs
SPEC_FIELDS: dict[str, Callable[[str], object]] = {
    "events": integer(1, MAX_MESSAGES),
    "keys": integer(1, MAX_KEYS),
    "zipf": nonnegative_float,
    "drift": probability,
    "workers": worker_count,
    "fast_workers": nonnegative_int,
    "speedup": positive_float,
    "partitions": integer(1, MAX_PARTITIONS),
    "num_key_groups": key_group_count,
    "files_per_stream": integer(1, MAX_FILES),
    "malformed": probability,
    "duplicates": probability,
    "seed": nonnegative_int,
    "upstream_correlation": probability,
    "stream": stream_name,  # generate: only (the one stream it replays)
}


@dataclass(frozen=True)
class GeneratorConfig:
    landing: Path
    workers_out: Path
    day: date
    streams: tuple[str, ...] = ("clicks", "orders", "views")
    events: int = 200_000  # per stream
    keys: int = 20_000
    zipf: float = 1.1
    drift: float = 0.05  # share of the top-1000 ranks reshuffled each hour
    workers: int = 8
    fast_workers: int = 2  # y
    speedup: float = 4.0  # z
    partitions: int = 16
    num_key_groups: int = DEFAULT_NUM_KEY_GROUPS
    files_per_stream: int = 4
    fmt: str = "jsonl"
    gzip: bool = False
    malformed: float = 0.0  # share of lines replaced by a broken line
    duplicates: float = 0.0  # share of events written twice (same event_id)
    seed: int = 42
    upstream: str | None = None  # the stream the others' events derive from (paper 004)
    upstream_correlation: float = 0.9  # share of events whose upstream key mirrors their key

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {self.fmt!r}")
        if self.fmt == "parquet" and self.gzip:
            raise ValueError("parquet is compressed already; --gzip applies to jsonl and csv")
        for stream in self.streams:
            check_name(stream, "stream")
        for name in ("events", "keys", "workers", "partitions", "files_per_stream"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not 0 <= self.fast_workers <= self.workers:
            raise ValueError(
                f"fast_workers must be between 0 and workers ({self.workers}), "
                f"got {self.fast_workers}"
            )
        if not (0 <= self.zipf < math.inf and 0 < self.speedup < math.inf):
            raise ValueError(
                f"zipf must be finite and >= 0 and speedup finite and > 0, got zipf={self.zipf}, "
                f"speedup={self.speedup}"
            )
        if self.upstream is not None and self.upstream not in self.streams:
            raise ValueError(f"upstream stream {self.upstream!r} is not among {self.streams}")
        for name in ("malformed", "duplicates", "drift", "upstream_correlation"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be a share in [0, 1]")


def stream_workers(config: GeneratorConfig) -> Workers:
    return Workers(
        tuple(
            Worker(f"w{i}", config.speedup if i < config.fast_workers else 1.0)
            for i in range(config.workers)
        )
    )


def generate(config: GeneratorConfig, on_step: Callable[[int], None] | None = None) -> dict:
    """Write the landing files and the workers file; returns counts per stream. ``on_step`` is
    called after each file with its number of events (they add up to events × streams)."""
    folder = config.landing / config.day.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    workers = stream_workers(config)
    summary = {"landing": str(config.landing), "day": config.day.isoformat(), "streams": {}}
    for s, stream in enumerate(config.streams):
        rng = np.random.default_rng([config.seed, s])
        counts = _write_stream(config, stream, workers, rng, folder, on_step)
        summary["streams"][stream] = counts
    records = [{"stream": st, **w} for st in config.streams for w in workers.to_records()]
    config.workers_out.parent.mkdir(parents=True, exist_ok=True)
    config.workers_out.write_text(json.dumps({"workers": records}, indent=1) + "\n")
    summary["workers_file"] = str(config.workers_out)
    summary["config"] = {k: str(v) for k, v in asdict(config).items()}
    return summary


def _write_stream(
    config: GeneratorConfig,
    stream: str,
    workers: Workers,
    rng: np.random.Generator,
    folder: Path,
    on_step: Callable[[int], None] | None,
) -> dict:
    ranks_p = 1.0 / np.arange(1, config.keys + 1) ** config.zipf
    ranks_p /= ranks_p.sum()
    key_names = np.char.add(f"{stream[:1]}k", np.arange(config.keys).astype(str))
    # today's routing: hash key grouping over the workers (what the logs record)
    groups = key_groups(key_names.tolist(), config.num_key_groups)
    kg_workers = np.asarray(key_grouping_workers(config.num_key_groups, workers))
    key_worker = kg_workers[groups]
    key_partition = key_groups(key_names.tolist(), config.partitions, seed=1)
    capacity = dict(zip(workers.names, workers.capacities.tolist(), strict=True))
    key_capacity = np.array([capacity[w] for w in key_worker])

    permutations = _drifting_permutations(config, rng)
    start = datetime(config.day.year, config.day.month, config.day.day, tzinfo=UTC)
    day_ms = 24 * 3600 * 1000
    bounds = np.linspace(0, config.events, config.files_per_stream + 1).astype(int)
    written = {"events": 0, "lines": 0, "duplicates": 0, "malformed": 0, "files": 0}
    for part in range(config.files_per_stream):
        n = int(bounds[part + 1] - bounds[part])
        if n == 0:
            continue
        lo, hi = (
            part * day_ms // config.files_per_stream,
            (part + 1) * day_ms // config.files_per_stream,
        )
        offset_ms = np.sort(rng.integers(lo, hi, size=n))
        hour = offset_ms // 3_600_000
        rank = rng.choice(config.keys, size=n, p=ranks_p)
        key = permutations[hour, rank]
        ts_ms = int(start.timestamp() * 1000) + offset_ms
        frame = pd.DataFrame(
            {
                "event_id": [f"{stream}-{config.seed}-{bounds[part] + i}" for i in range(n)],
                "ts": ts_ms,
                "stream": stream,
                "key": key_names[key],
                "partition": key_partition[key],
                "worker": key_worker[key],
                "size_bytes": np.maximum(1, rng.lognormal(5.0, 0.6, size=n)).astype(np.int64),
                "cost_ms": np.round(rng.lognormal(0.5, 0.3, size=n) / key_capacity[key], 3),
            }
        )
        if config.upstream is not None and stream != config.upstream:
            frame["upstream_stream"] = config.upstream
            frame["upstream_key"] = _upstream_keys(config, stream, part, key)
        if config.duplicates > 0:
            dup = frame.sample(frac=config.duplicates, random_state=rng.integers(2**31))
            frame = pd.concat([frame, dup]).sort_values("ts", kind="stable")
            written["duplicates"] += len(dup)
        path = folder / f"{stream}-{part:03d}.{config.fmt}{'.gz' if config.gzip else ''}"
        broken = _write_frame(config, frame, path, rng)
        written["events"] += n
        written["lines"] += len(frame)
        written["malformed"] += broken
        if on_step is not None:
            on_step(n)
        written["files"] += 1
    return written


def _upstream_keys(config: GeneratorConfig, stream: str, part: int, key: np.ndarray) -> np.ndarray:
    """The upstream stream's key each event derives from: the key of the same id (correlated) or
    a random one. Its own random stream, so the other columns are the same with or without."""
    rng = np.random.default_rng([config.seed, config.streams.index(stream), part, 4])
    ids = np.where(
        rng.random(key.size) < config.upstream_correlation,
        key,
        rng.integers(0, config.keys, size=key.size),
    )
    return np.char.add(f"{config.upstream[:1]}k", ids.astype(str))


def _drifting_permutations(config: GeneratorConfig, rng: np.random.Generator) -> np.ndarray:
    """``perm[h, rank]`` = key id of that popularity rank in hour ``h``; each hour a ``drift``
    share of the top ranks swaps with random ranks (popularity drift)."""
    perm = np.empty((24, config.keys), dtype=np.int64)
    current = rng.permutation(config.keys)
    top = min(1000, config.keys)
    for h in range(24):
        swaps = int(round(config.drift * top))
        if h and swaps:
            a = rng.choice(top, size=swaps, replace=False)
            b = rng.integers(0, config.keys, size=swaps)
            current[a], current[b] = current[b].copy(), current[a].copy()
        perm[h] = current
    return perm


def _iso(ts_ms: pd.Series) -> pd.Series:
    return pd.Series(
        np.datetime_as_string(ts_ms.to_numpy().astype("datetime64[ms]"), unit="ms"),
        index=ts_ms.index,
    ).str.cat(["Z"] * len(ts_ms))


def _write_frame(
    config: GeneratorConfig, frame: pd.DataFrame, path: Path, rng: np.random.Generator
) -> int:
    """Write one file; returns how many broken lines were injected."""
    broken_rows = (
        np.flatnonzero(rng.random(len(frame)) < config.malformed)
        if config.malformed
        else np.array([], dtype=np.int64)
    )
    if config.fmt == "parquet":
        out = frame.assign(ts=frame["ts"].astype(str), partition=frame["partition"].astype(str))
        for j, row in enumerate(broken_rows):
            kind = MALFORMED_KINDS[j % len(MALFORMED_KINDS)]
            col, value = {
                "truncated": ("ts", ""),
                "missing_key": ("key", None),
                "bad_ts": ("ts", "yesterday-ish"),
                "negative_size": ("size_bytes", -5),
                "bad_partition": ("partition", "p?"),
            }[kind]
            out.iloc[row, out.columns.get_loc(col)] = value
        out.to_parquet(path, index=False)
        return len(broken_rows)

    out = frame.assign(ts=_iso(frame["ts"]))
    if config.fmt == "jsonl":
        text = out.to_json(orient="records", lines=True)
        lines = text.splitlines()
        header: list[str] = []
    else:
        lines = out.to_csv(index=False, lineterminator="\n").splitlines()
        header, lines = lines[:1], lines[1:]
    for j, row in enumerate(broken_rows):
        lines[row] = _break_line(lines[row], MALFORMED_KINDS[j % len(MALFORMED_KINDS)], config.fmt)
    payload = ("\n".join(header + lines) + "\n").encode()
    if config.gzip:
        payload = gzip.compress(payload, mtime=0)
    path.write_bytes(payload)
    return len(broken_rows)


def _break_line(line: str, kind: str, fmt: str) -> str:
    if kind == "truncated":
        return line[: len(line) // 2]
    if fmt == "jsonl":
        record = json.loads(line)
        if kind == "missing_key":
            record.pop("key")
        elif kind == "bad_ts":
            record["ts"] = "yesterday-ish"
        elif kind == "negative_size":
            record["size_bytes"] = -5
        elif kind == "bad_partition":
            record["partition"] = "p?"
        return json.dumps(record)
    fields = line.split(",")  # generated CSV has no quoted commas
    column = {"missing_key": 3, "bad_ts": 1, "negative_size": 6, "bad_partition": 4}[kind]
    fields[column] = {"missing_key": "", "bad_ts": "yesterday-ish", "negative_size": "-5"}.get(
        kind, "p?"
    )
    return ",".join(fields)


def default_day() -> date:
    """Yesterday (UTC): the interval a nightly run processes."""
    return (datetime.now(UTC) - timedelta(days=1)).date()
