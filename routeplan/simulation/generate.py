"""Sample stream logs: Zipf keys with drift, partitions, routing, unequal workers.

Seeded and reproducible: the same config writes the same bytes. Files land in
``<landing>/<date>/<stream>-<part>.<fmt>[.gz]``, each covering a slice of the day; the workers
file (``schemas/worker.schema.json``) lists every stream's workers with capacities — ``y`` of them
``z`` times faster, as in paper 000 §VII. With ``upstream = A``, the events of every other stream
name the event of stream ``A`` they derive from (``upstream_stream``, ``upstream_key``: ``A``'s key
of the same rank id for ``upstream_correlation`` of them, a random one otherwise), the
communication between key groups of paper 004's ALBIC; without it the output is unchanged.

**Popularity drifts hour by hour, across days too.** Each hour a ``drift`` share of the top 1000
popularity ranks swaps with random ranks. The hours form one chain from a fixed origin
(``DRIFT_ORIGIN``, 2026-01-01 00:00 UTC, whose ranks are a seeded permutation), walked forward
for later days and backward (a swap undoes itself) for earlier ones; so day D starts where day
D−1 ended, and the same arguments give the same files whatever was generated before. No state
is kept anywhere.

**Routing.** By default a stream is routed by hash key grouping over its workers (``worker``:
``key_group_worker`` of ``kg``). ``generate(config, follow={stream: FollowedTable(...)})`` routes
a stream as producers following a published table do instead: ``FollowedTable.route`` gets each
file's keys and partitions in time order and answers the workers (the caller — the CLI — builds
it from ``routeplan_client``; this module stays below the producers and the store), and
every event carries the table's ``routing_version``. ``config.scenarios`` add the day's events
(``routeplan.simulation.scenarios``).
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from routeplan import storage
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
from routeplan.simulation.scenarios import (
    REROUTE_SEED,
    Scenario,
    day_workers,
    hot_keys,
    workers_named,
)

FORMATS = ("jsonl", "csv", "parquet")
MALFORMED_KINDS = ("truncated", "missing_key", "bad_ts", "negative_size", "bad_partition")
MAX_FILES = 10_000  # files per stream
DRIFT_ORIGIN = date(2026, 1, 1)  # hour 0 of the popularity chain (module docstring)
TOP_RANKS = 1000  # the ranks drift swaps from
KINDS = ("key_routing", "partition_assignment")

if TYPE_CHECKING:
    import pandas as pd

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
    scenarios: tuple[Scenario, ...] = ()  # the day's events (routeplan.simulation.scenarios)

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
        if not all(isinstance(x, Scenario) for x in self.scenarios):
            raise ValueError("scenarios must be routeplan.simulation.scenarios.Scenario values")
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


@dataclass(frozen=True)
class FollowedTable:
    """How producers following a stream's published table route it, as plain values.

    ``route(keys, partitions)`` gets one file's events in time order (their keys as a string
    array, their partitions as an int array) and answers each one's worker, keeping whatever
    state producers keep from one call to the next (a router's local loads); ``version`` is
    the table's version, ``kind`` its kind (``KINDS``), ``workers`` its workers (consumers)."""

    version: int
    kind: str
    workers: Workers
    route: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if isinstance(self.version, bool) or not int(self.version) >= 1:
            raise ValueError(f"a routing version is >= 1, got {self.version!r}")


@dataclass(frozen=True)
class _Day:
    """One stream's day: the workers the workers file lists, their capacities (the costs),
    the table it follows and the workers it reroutes from."""

    workers: Workers
    capacity: dict[str, float]
    followed: FollowedTable | None
    removed: frozenset[str]


def generate(
    config: GeneratorConfig,
    on_step: Callable[[int], None] | None = None,
    follow: Mapping[str, FollowedTable] | None = None,
) -> dict:
    """Write the landing files and the workers file; returns counts per stream. ``on_step`` is
    called after each file with its number of events (they add up to events × streams).
    ``follow`` maps streams to the table their producers follow (the others are routed by hash
    key grouping). A scenario naming a worker a stream does not have raises ``UsageError``
    before anything is written."""
    follow = dict(follow or {})
    if set(follow) - set(config.streams):
        raise ValueError(
            f"follow names streams not generated: {sorted(set(follow) - set(config.streams))}"
        )
    generated = stream_workers(config)
    removed = frozenset(workers_named(config.scenarios, "remove-worker"))
    days = {}
    for stream in config.streams:
        followed = follow.get(stream)
        workers = day_workers(stream, generated, followed and followed.workers, config.scenarios)
        days[stream] = _Day(
            workers,
            dict(zip(workers.names, workers.capacities.tolist(), strict=True)),
            followed,
            removed,
        )
    folder = config.landing / config.day.isoformat()
    storage.make_folder(folder)
    summary = {"landing": str(config.landing), "day": config.day.isoformat(), "streams": {}}
    for s, stream in enumerate(config.streams):
        rng = np.random.default_rng([config.seed, s])
        counts = _write_stream(config, stream, days[stream], rng, folder, on_step)
        summary["streams"][stream] = counts
    records = [{"stream": st, **w} for st in config.streams for w in days[st].workers.to_records()]
    storage.make_folder(config.workers_out.parent, writing=config.workers_out)
    config.workers_out.write_text(json.dumps({"workers": records}, indent=1) + "\n")
    summary["workers_file"] = str(config.workers_out)
    summary["config"] = {k: str(v) for k, v in asdict(config).items()}
    summary["config"]["scenarios"] = [str(x) for x in config.scenarios]
    return summary


def _write_stream(
    config: GeneratorConfig,
    stream: str,
    day: _Day,
    rng: np.random.Generator,
    folder: Path,
    on_step: Callable[[int], None] | None,
) -> dict:
    import pandas as pd

    s = config.streams.index(stream)
    ranks_p = 1.0 / np.arange(1, config.keys + 1) ** config.zipf
    ranks_p /= ranks_p.sum()
    key_names = np.char.add(f"{stream[:1]}k", np.arange(config.keys).astype(str))
    key_partition = key_groups(key_names.tolist(), config.partitions, seed=1)
    key_worker = None
    if day.followed is None:  # hash key grouping over the day's workers, as ever
        groups = key_groups(key_names.tolist(), config.num_key_groups)
        key_worker = np.asarray(key_grouping_workers(config.num_key_groups, day.workers))[groups]

    popularity = _hourly_popularity(config, s)
    permutations, yesterday = popularity[1:], popularity[0]
    new_hot = _new_hot_keys(config, s, yesterday)
    start = datetime(config.day.year, config.day.month, config.day.day, tzinfo=UTC)
    day_ms = 24 * 3600 * 1000
    bounds = np.linspace(0, config.events, config.files_per_stream + 1).astype(int)
    written = {"events": 0, "lines": 0, "duplicates": 0, "malformed": 0, "files": 0}
    if day.followed is not None:
        written["routing_version"] = int(day.followed.version)
    if new_hot:
        written["new_hot_keys"] = [str(key_names[k]) for k, _ in new_hot]
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
        if new_hot:  # its own random stream: the other columns are the same without
            hot_rng = np.random.default_rng([config.seed, s, part, 5])
            for hot_key, share in new_hot:
                key = np.where(hot_rng.random(n) < share, hot_key, key)
        names = key_names[key]
        partition = key_partition[key]
        if day.followed is None:
            worker = key_worker[key]
        else:
            worker = _followed_workers(day, names, partition)
        size_bytes = np.maximum(1, rng.lognormal(5.0, 0.6, size=n)).astype(np.int64)
        cost = rng.lognormal(0.5, 0.3, size=n)
        ts_ms = int(start.timestamp() * 1000) + offset_ms
        columns = {
            "event_id": [f"{stream}-{config.seed}-{bounds[part] + i}" for i in range(n)],
            "ts": ts_ms,
            "stream": stream,
            "key": names,
            "partition": partition,
            "worker": worker,
            "size_bytes": size_bytes,
            "cost_ms": np.round(cost / _capacities(day.capacity, worker), 3),
        }
        if day.followed is not None:
            columns["routing_version"] = np.full(n, int(day.followed.version), dtype=np.int64)
        frame = pd.DataFrame(columns)
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


def _followed_workers(day: _Day, keys: np.ndarray, partitions: np.ndarray) -> np.ndarray:
    """The workers producers following ``day.followed`` send these events to; those their
    table routes to a removed worker go to one of its remaining workers instead, by the hash of
    the key (of the partition, for a partition assignment)."""
    followed = day.followed
    assert followed is not None
    worker = np.asarray(followed.route(keys, partitions), dtype=object)
    if worker.shape != keys.shape:
        raise ValueError(f"route answered {worker.shape[0]} workers for {keys.size} events")
    unknown = set(np.unique(worker).tolist()) - set(followed.workers.names)
    if unknown:
        raise ValueError(f"route answered workers its table does not list: {sorted(unknown)[:5]}")
    if day.removed:
        gone = np.isin(worker, list(day.removed))
        if gone.any():
            survivors = [w for w in followed.workers.names if w not in day.removed]
            survivors = survivors or [w.name for w in day.workers.active]
            if followed.kind == "partition_assignment":
                pick = partitions[gone] % len(survivors)
            else:
                pick = key_groups(keys[gone].tolist(), len(survivors), seed=REROUTE_SEED)
            worker[gone] = np.asarray(survivors, dtype=object)[pick]
    return worker


def _capacities(capacity: Mapping[str, float], worker: np.ndarray) -> np.ndarray:
    """Each event's worker's capacity."""
    names, inverse = np.unique(worker, return_inverse=True)
    return np.array([capacity[w] for w in names.tolist()], dtype=float)[inverse]


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


def _new_hot_keys(
    config: GeneratorConfig, s: int, yesterday: np.ndarray
) -> list[tuple[int, float]]:
    """hot-key scenarios: (key id, share) each, a key from the colder half of ``yesterday``'s
    ranks (the previous day's last hour), distinct."""
    scenarios = hot_keys(config.scenarios)
    if not scenarios:
        return []
    rng = np.random.default_rng([config.seed, s, 6, config.day.toordinal()])
    cold = yesterday[config.keys // 2 :] if config.keys > 1 else yesterday
    chosen = rng.choice(cold, size=min(len(scenarios), cold.size), replace=False)
    return [(int(k), x.share) for k, x in zip(chosen.tolist(), scenarios, strict=False)]


def _hourly_popularity(config: GeneratorConfig, s: int) -> np.ndarray:
    """``perm[1 + h, rank]`` = key id of that popularity rank in hour ``h`` of the day,
    ``perm[0]`` the previous day's last hour: the drift chain of the module's docstring. Each
    hour a ``drift`` share of the top ranks swaps with random ranks, one swap after the other
    (hour ``t``'s swaps drawn from its day's seed, so any hour is reached from the origin)."""
    keys = config.keys
    top = min(TOP_RANKS, keys)
    swaps = int(round(config.drift * top))
    current = np.random.default_rng([config.seed, s, 3]).permutation(keys)
    out = np.empty((25, keys), dtype=np.int64)
    first = (config.day - DRIFT_ORIGIN).days * 24 - 1  # hours from the origin
    drawn: dict[int, tuple[list[list[int]], list[list[int]]]] = {}

    def swap(t: int, undo: bool = False) -> None:  # the swaps into hour t (or out of it)
        d, h = divmod(t, 24)
        if d not in drawn:
            drawn.clear()
            day = (DRIFT_ORIGIN + timedelta(days=d)).toordinal()
            rng = np.random.default_rng([config.seed, s, 3, day])
            drawn[d] = (
                rng.integers(0, top, size=(24, swaps)).tolist(),
                rng.integers(0, keys, size=(24, swaps)).tolist(),
            )
        pairs = list(zip(drawn[d][0][h], drawn[d][1][h], strict=True))
        for a, b in reversed(pairs) if undo else pairs:
            current[a], current[b] = current[b], current[a]

    if swaps:
        for t in range(1, first + 1):
            swap(t)
        for t in range(0, first, -1):
            swap(t, undo=True)
    for i in range(25):
        if i and swaps:
            swap(first + i)
        out[i] = current
    return out


def _iso(ts_ms: pd.Series) -> pd.Series:
    import pandas as pd

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
