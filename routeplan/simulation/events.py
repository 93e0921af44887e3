"""Message streams for the simulator: synthetic (Zipf, the generator) or read from event logs."""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from routeplan.errors import InputError, UsageError
from routeplan.files import JSON_LINES_SUFFIXES, reading
from routeplan.parsing import (
    MAX_KEYS,
    MAX_MESSAGES,
    checked,
    integer,
    nonnegative_float,
    nonnegative_int,
    parse_spec,
    positive_float,
)

EVENT_SUFFIXES = (*JSON_LINES_SUFFIXES, ".csv", ".parquet")  # what ingest reads too


# --------------------------------------------------------------------------------------------
# streams


@dataclass(frozen=True)
class Stream:
    """Messages as integer key ids in arrival order; ``names[id]`` is the key."""

    keys: np.ndarray
    names: Sequence[str]
    skipped: int = 0  # input rows left out (no key, unparseable ts), reported, never silent

    def __post_init__(self) -> None:
        keys = np.asarray(self.keys, dtype=np.int64)
        if keys.ndim != 1 or keys.size == 0:
            raise ValueError("a stream needs at least one message")
        if keys.min() < 0 or keys.max() >= len(self.names):
            raise ValueError("key ids must index names")
        object.__setattr__(self, "keys", keys)

    @classmethod
    def from_keys(cls, keys: Iterable[str], skipped: int = 0) -> Stream:
        text = np.asarray(list(keys), dtype=object).astype(str)
        names, ids = np.unique(text, return_inverse=True)
        return cls(ids.astype(np.int64), names.tolist(), skipped)

    @property
    def messages(self) -> int:
        return int(self.keys.size)

    @property
    def distinct(self) -> int:
        return int(np.unique(self.keys).size)

    def head(self, messages: int) -> Stream:
        return Stream(self.keys[:messages], self.names, self.skipped)

    def top_share(self) -> float:
        """``p_1``: the share of the most frequent key (papers' Table I)."""
        return float(np.bincount(self.keys).max() / self.keys.size)


def zipf_stream(
    messages: int, keys: int, exponent: float, seed: int = 0, prefix: str = "k"
) -> Stream:
    """``messages`` draws of ``keys`` keys with ``P(rank r) ∝ r^-exponent`` (paper 003 §6.1 ZF)."""
    if messages < 1 or keys < 1 or not 0 <= exponent < np.inf:
        raise ValueError("need messages >= 1, keys >= 1, exponent >= 0")
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, keys + 1) ** exponent)
    ranks = np.searchsorted(cdf, rng.random(messages) * cdf[-1], side="right")
    return Stream(np.minimum(ranks, keys - 1), [f"{prefix}{r}" for r in range(keys)])


def read_events(path: str | Path, stream: str | None = None) -> Stream:
    """Keys of stream-event files (jsonl/csv/parquet, optionally .gz; a file or a directory),
    ordered by ``ts`` when present. Rows without a key or with an unparseable ``ts`` are
    counted in ``skipped``. A Delta table needs the optional ``deltalake`` package."""
    import pandas as pd

    root = Path(path)
    if not root.exists():
        raise InputError(f"no such events file or directory: {root}")
    if (root / "_delta_log").is_dir():
        with reading(root):
            frame = _read_delta(root)
    else:
        files = sorted(p for p in ([root] if root.is_file() else root.rglob("*")) if _is_event(p))
        if not files:
            raise InputError(f"no event files (jsonl/csv/parquet) under {root}")
        frames = []
        for p in files:
            with reading(p):
                frames.append(_read_file(p))
        frame = pd.concat(frames, ignore_index=True)
    if "key" not in frame:
        raise InputError(f"{root}: events have no 'key' column (schemas/stream_event.schema.json)")
    if stream is not None:
        names = frame["stream"] if "stream" in frame else pd.Series("default", index=frame.index)
        frame = frame[names.fillna("default").astype(str) == stream]
    bad = frame["key"].isna() | (frame["key"].astype(str) == "")
    if "ts" in frame:
        ts = _parse_ts(frame["ts"])
        bad |= ts.isna()
        frame = frame.assign(_ts=ts)[~bad].sort_values("_ts", kind="stable")
    else:
        frame = frame[~bad]
    if frame.empty:
        where = f" in stream {stream!r}" if stream else ""
        raise InputError(f"{root}: no events with a key{where}")
    return Stream.from_keys(frame["key"].astype(str), skipped=int(bad.sum()))


def _is_event(p: Path) -> bool:
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    return p.is_file() and name.endswith(EVENT_SUFFIXES)


def _read_file(p: Path):
    import json

    import pandas as pd

    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        present = set(pq.read_schema(p).names)
        return pd.read_parquet(p, columns=[c for c in ("ts", "key", "stream") if c in present])
    opener = gzip.open if p.name.endswith(".gz") else open
    if name.endswith(".csv"):
        frame = pd.read_csv(
            p, dtype=str, keep_default_na=False, na_values=[""], on_bad_lines="skip"
        )
        with opener(p, "rt", encoding="utf-8") as f:
            lines = sum(1 for line in f if line.strip()) - 1  # without the header
        broken = pd.DataFrame({"key": [None] * max(0, lines - len(frame))})
        return pd.concat([frame, broken], ignore_index=True)  # counted as skipped
    rows = []
    with opener(p, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                record = {}  # malformed line: no key, counted as skipped
            key = record.get("key")
            rows.append((record.get("ts"), None if key is None else str(key), record.get("stream")))
    return pd.DataFrame(rows, columns=["ts", "key", "stream"])


def _parse_ts(ts):
    import pandas as pd

    numeric = pd.to_numeric(ts, errors="coerce")
    parsed = pd.Series(pd.NaT, index=ts.index, dtype="datetime64[ns, UTC]")
    # epoch ms as integers: pandas' float path can trip numpy overflow checks on NaN gaps
    epoch = numeric.notna() & (numeric.abs() < 1e14)
    parsed[epoch] = pd.to_datetime(numeric[epoch].astype("int64"), unit="ms", utc=True)
    text = ts[numeric.isna() & ts.notna()]
    if not text.empty:
        parsed[text.index] = pd.to_datetime(text, utc=True, errors="coerce", format="ISO8601")
    return parsed


def _read_delta(root: Path):
    try:
        import deltalake
    except ImportError:
        raise ValueError(
            f"{root} is a Delta table; routeplan simulate reads jsonl/csv/parquet files. Install "
            "the optional 'deltalake' package, or export the table with Spark, e.g. "
            "spark.read.format('delta').load(PATH).select('ts', 'key', 'stream')"
            ".write.parquet(OUT), and pass OUT"
        ) from None
    return deltalake.DeltaTable(str(root)).to_pandas(columns=["ts", "key", "stream"])


ZIPF_FIELDS = {
    "messages": integer(1, MAX_MESSAGES),
    "keys": integer(1, MAX_KEYS),
    "z": nonnegative_float,
    "seed": nonnegative_int,
}


def events_from_spec(spec: str, stream: str | None = None) -> Stream:
    """``--events``: a path, ``zipf:messages=N,keys=K,z=Z[,seed=S]`` or ``generate:`` with
    ``routeplan.simulation.generate.GeneratorConfig`` fields (events, keys, zipf, drift, seed, …).
    A bad spec raises ``UsageError``, an unusable file ``InputError``."""
    kind, _, rest = spec.partition(":")
    if kind == "zipf":
        args = parse_spec(rest, ZIPF_FIELDS, "zipf")
        return zipf_stream(
            args.get("messages", 10**6),
            args.get("keys", 10**5),
            args.get("z", 1.0),
            args.get("seed", 0),
        )
    if kind == "generate":
        return _generated(rest, stream)
    return read_events(spec, stream)


def _generated(spec: str, stream: str | None) -> Stream:
    """Events of ``routeplan.simulation.generate`` (one stream), written to a temporary landing
    folder."""
    import tempfile
    from datetime import date

    from routeplan.simulation.generate import SPEC_FIELDS, GeneratorConfig, generate

    typed = parse_spec(spec, SPEC_FIELDS, "generator")
    name = typed.pop("stream", stream or "clicks")
    with tempfile.TemporaryDirectory() as tmp:
        config = GeneratorConfig(
            landing=Path(tmp) / "landing",
            workers_out=Path(tmp) / "workers.json",
            day=date(2026, 1, 1),
            streams=(name,),
            **typed,
        )
        generate(config)
        return read_events(config.landing, name)


def parse_capacities(spec: str | None, workers: int) -> np.ndarray:
    """``None`` → all 1; ``y=3,z=5`` → the first y workers z times faster (paper 000 §VII);
    ``5,5,1,…`` → one capacity per worker."""
    if workers < 1:
        raise ValueError("need at least one worker")
    if not spec:
        return np.ones(workers)
    if "=" in spec:
        args = parse_spec(spec, {"y": nonnegative_int, "z": positive_float}, "capacities")
        if set(args) != {"y", "z"}:
            raise UsageError(f"capacities: expected y=N,z=X (both), got {spec!r}")
        if args["y"] > workers:
            raise UsageError(f"capacities: y={args['y']} is more than the {workers} workers")
        return np.where(np.arange(workers) < args["y"], args["z"], 1.0)
    items = [x.strip() for x in spec.split(",") if x.strip()]
    if len(items) != workers:
        raise UsageError(f"capacities: {len(items)} values for {workers} workers")
    return np.array([checked(positive_float, x, "capacities") for x in items])
