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

import gzip
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from routeplan import metrics
from routeplan.arguments import (
    MAX_KEYS,
    MAX_MESSAGES,
    checked,
    integer,
    nonnegative_float,
    nonnegative_int,
    parse_spec,
    positive_float,
)
from routeplan.errors import InputError, UsageError
from routeplan.hashing import (
    DEFAULT_SEED,
    hash_choices,
    hash_choices_many,
    key_hashes,
    salted_choice,
)
from routeplan.inputs import reading
from routeplan.models import Budget
from routeplan.strategies import get_strategy
from routeplan.strategies.consistent_grouping import proportional_counts
from routeplan.strategies.partial_key_grouping import head_choices
from routeplan.strategies.ring import HashRing, redistribute, triggered

EVENT_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")


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
    ``routeplan.generate.GeneratorConfig`` fields (events, keys, zipf, drift, seed, …).
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
    """Events of ``routeplan.generate`` (one stream), written to a temporary landing folder."""
    import tempfile
    from datetime import date

    from routeplan.generate import SPEC_FIELDS, GeneratorConfig, generate

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


# --------------------------------------------------------------------------------------------
# online schemes


@dataclass
class Setup:
    """What every online scheme may know: the keys, how many workers and sources (not the
    capacities: they reach a scheme only as feedback through ``end_slot``)."""

    names: Sequence[str]
    workers: int
    sources: int
    seed: int = DEFAULT_SEED
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))


class OnlineScheme:
    """One key-routing scheme replayed message by message.

    ``route(keys, start)`` returns the worker of messages ``start … start + len(keys) − 1``
    (source ``i mod S`` routes message ``i``); ``end_slot`` is the feedback at the end of a time
    slot (busy/idle signals, queue lengths). ``moves`` counts reconfigurations.
    """

    moves = 0

    def __init__(self, strategy: Any, setup: Setup) -> None:
        self.strategy = strategy
        self.setup = setup

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        raise NotImplementedError

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        """Default: the scheme ignores feedback."""


class PerSource(OnlineScheme):
    """A scheme whose sources decide independently on local state: each source's messages of a
    block go through ``route_source`` in one tight loop."""

    def __init__(self, strategy: Any, setup: Setup, bins: int | None = None) -> None:
        super().__init__(strategy, setup)
        bins = setup.workers if bins is None else bins
        self.load = [[0] * bins for _ in range(setup.sources)]
        self.sent = [0] * setup.sources

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        out = np.empty(keys.size, dtype=np.int64)
        sources = self.setup.sources
        for s in range(sources):
            first = (s - start) % sources
            mine = keys[first::sources]
            if mine.size:
                out[first::sources] = self.route_source(s, mine.tolist())
                self.sent[s] += mine.size
        return out

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        raise NotImplementedError


class KeyGroupingOnline(OnlineScheme):
    """``murmur3(key) mod W`` (paper 003 §3 "single choice")."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.worker = (key_hashes(setup.names, setup.seed) % np.uint64(setup.workers)).astype(
            np.int64
        )

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]


class ShuffleGroupingOnline(OnlineScheme):
    """Round robin per source, source ``s`` starting at worker ``s`` (paper 003 §2.1)."""

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        i = start + np.arange(keys.size)
        s = self.setup.sources
        return (i % s + i // s) % self.setup.workers


class PartialKeyGroupingOnline(PerSource):
    """Greedy-d over the key's hash choices by local load (paper 003 §3, §5)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup, setup.workers)
        d = min(getattr(strategy, "d", 2), setup.workers)
        choices = hash_choices_many(list(setup.names), d, setup.workers, setup.seed)
        self.d = d
        self.c0 = choices[:, 0].tolist()
        self.c1 = choices[:, min(1, d - 1)].tolist()
        self.all = [tuple(row) for row in choices.tolist()] if d > 2 else None

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load = self.load[source]
        out = [0] * len(keys)
        if self.all is None:
            c0, c1 = self.c0, self.c1
            for i, k in enumerate(keys):
                a = c0[k]
                b = c1[k]
                w = a if load[a] <= load[b] else b
                load[w] += 1
                out[i] = w
        else:
            every, get = self.all, load.__getitem__
            for i, k in enumerate(keys):
                w = min(every[k], key=get)
                load[w] += 1
                out[i] = w
        return out


class DChoicesOnline(PartialKeyGroupingOnline):
    """PKG whose head keys get ``d_i`` choices (paper 003 Q4, ``head_choices``).

    The sources refresh their view of the head from the key counts seen so far — an exact
    stand-in for the heavy-hitter sketch each would keep — after 1k, 2k, 4k, … messages, then
    every ``HEAD_REFRESH``; between refreshes a key outside the head keeps its two choices."""

    HEAD_REFRESH = 10_000

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.count = np.zeros(len(setup.names), dtype=np.int64)
        self.head: dict[int, list[int]] = {}  # key id → its first d_i hash choices
        self.order: dict[int, list[int]] = {}  # key id → all W hash choices, once in the head

    def _refresh(self) -> None:
        n, seen = self.setup.workers, self.count.sum()
        s = self.strategy
        threshold = 1 / (5 * n) if s.head_threshold is None else s.head_threshold
        head = np.flatnonzero(self.count >= threshold * seen).tolist()
        d = head_choices((self.count[head] / seen).tolist(), n, threshold, s.fill)
        self.head = {}
        for k, dk in zip(head, d, strict=True):
            if k not in self.order:
                self.order[k] = hash_choices(self.setup.names[k], n, n, self.setup.seed)
            self.head[k] = self.order[k][:dk]

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        out = np.empty(keys.size, dtype=np.int64)
        done = 0
        while done < keys.size:
            seen = start + done
            step = min(max(seen, 1_000), self.HEAD_REFRESH)
            part = keys[done : done + step]
            out[done : done + part.size] = super().route(part, seen)
            self.count += np.bincount(part, minlength=self.count.size)
            done += part.size
            self._refresh()
        return out

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, c0, c1, head = self.load[source], self.c0, self.c1, self.head
        get = load.__getitem__
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            choices = head.get(k)
            if choices is None:
                a = c0[k]
                b = c1[k]
                w = a if load[a] <= load[b] else b
            else:
                w = min(choices, key=get)
            load[w] += 1
            out[i] = w
        return out


class PowerOfTwoChoicesOnline(PerSource):
    """The less loaded of ``d`` workers drawn at random per message (paper 000 §III-D)."""

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load = self.load[source]
        d, n = self.strategy.d, len(keys)
        draws = self.setup.rng.integers(0, self.setup.workers, size=(d, n))
        out = [0] * n
        if d == 2:
            first, second = draws[0].tolist(), draws[1].tolist()
            for i in range(n):
                a = first[i]
                b = second[i]
                w = a if load[a] <= load[b] else b
                load[w] += 1
                out[i] = w
        else:
            get = load.__getitem__
            for i, pick in enumerate(draws.T.tolist()):
                w = min(pick, key=get)
                load[w] += 1
                out[i] = w
        return out


class PowerOfRandomChoicesOnline(PerSource):
    """Paper 000 Alg. 1 over ``bins`` bins: the first salted choice below ``(1+ε)·m_t/bins``."""

    def __init__(self, strategy: Any, setup: Setup, bins: int | None = None) -> None:
        bins = setup.workers if bins is None else bins
        super().__init__(strategy, setup, bins)
        self.bins = bins
        labels = (f"{name}#1" for name in setup.names)
        self.first = (key_hashes(labels, setup.seed) % np.uint64(bins)).astype(np.int64).tolist()
        self.later: dict[int, list[int]] = {}
        self.max_salt = max(64, 4 * bins)

    def _probe(self, k: int, load: list[int], cap: float) -> int:
        """Alg. 1's loop past the principal choice: salts 2, 3, … (cached per key)."""
        seq = self.later.get(k)
        if seq is None:
            seq = self.later[k] = []
        for v in seq:
            if load[v] < cap:
                return v
        name, seed = self.setup.names[k], self.setup.seed
        for salt in range(len(seq) + 2, self.max_salt + 2):
            v = salted_choice(name, salt, self.bins, seed)
            seq.append(v)
            if load[v] < cap:
                return v
        return min(range(self.bins), key=load.__getitem__)

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, first, probe = self.load[source], self.first, self._probe
        factor = (1 + self.strategy.epsilon) / self.bins
        t = self.sent[source]
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            t += 1
            cap = t * factor
            v = first[k]
            if load[v] >= cap:
                v = probe(k, load, cap)
            load[v] += 1
            out[i] = v
        return out


class BoundedRingOnline(PerSource):
    """Consistent hashing with bounded loads: clockwise to the first worker below the bound."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup, setup.workers)
        ring = HashRing.build({str(w): strategy.tokens for w in range(setup.workers)}, setup.seed)
        self.owner = ring.owners.tolist()  # ring names are "0" … "W-1" in order
        self.start = ring.first_token(key_hashes(setup.names, setup.seed)).tolist()

    def route_source(self, source: int, keys: list[int]) -> list[int]:
        load, owner, start = self.load[source], self.owner, self.start
        tokens = len(owner)
        factor = (1 + self.strategy.epsilon) / self.setup.workers
        t = self.sent[source]
        out = [0] * len(keys)
        for i, k in enumerate(keys):
            t += 1
            cap = t * factor
            j = start[k]
            w = owner[j]
            while load[w] >= cap:
                j = j + 1 if j + 1 < tokens else 0
                w = owner[j]
            load[w] += 1
            out[i] = w
        return out


class ConsistentGroupingOnline(OnlineScheme):
    """PoRC onto ``α·W`` virtual workers; busy/idle pairing at every slot end (paper 000 §V-B).

    Virtual workers start evenly dealt (§V-B: "CG initializes with the same number of virtual
    workers for each worker"); at a slot end each worker compares the load it received in the
    slot with its fair share (θ_b, θ_i) and the sources move virtual workers from busy to idle
    workers, at most one per busy worker (``ConsistentGrouping.pair_busy_idle``)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.virtual = strategy.alpha * setup.workers
        self.porc = PowerOfRandomChoicesOnline(strategy, setup, self.virtual)
        counts = proportional_counts(np.ones(setup.workers), self.virtual)
        self.owner = np.array(
            [w for r in range(counts.max()) for w in range(setup.workers) if counts[w] > r],
            dtype=np.int64,
        )
        self.slot = np.zeros(self.virtual)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        vw = self.porc.route(keys, start)
        self.slot += np.bincount(vw, minlength=self.virtual)
        return self.owner[vw]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        load = np.bincount(self.owner, weights=self.slot, minlength=self.setup.workers)
        share = load.sum() * capacity / capacity.sum()
        busy = int(np.sum(load >= self.strategy.theta_busy * share)) if load.sum() else 0
        if busy:
            before = self.owner.copy()
            self.strategy.pair_busy_idle(
                self.owner,
                load,
                self.slot,
                np.ones(self.virtual, dtype=np.int64),
                capacity,
                Budget(max_moves=busy),
            )
            self.moves += int(np.sum(before != self.owner))
        self.slot[:] = 0


class TokenRingOnline(OnlineScheme):
    """Paper 001: keys on the token ring; at a slot end the trigger on queue lengths and one
    round of halving or doubling for the longest queue (each worker at most ``max_rounds``)."""

    def __init__(self, strategy: Any, setup: Setup) -> None:
        super().__init__(strategy, setup)
        self.names = [str(w) for w in range(setup.workers)]
        self.tokens = strategy.initial(self.names)
        self.hashes = key_hashes(setup.names, setup.seed)
        self.rounds = [0] * setup.workers
        self._remap()

    def _remap(self) -> None:
        ring = HashRing.build(self.tokens, self.setup.seed)  # names "0" … "W-1" in order
        self.worker = ring.lookup(self.hashes)

    def route(self, keys: np.ndarray, start: int) -> np.ndarray:
        return self.worker[keys]

    def end_slot(self, capacity: np.ndarray, queue: np.ndarray) -> None:
        x = triggered(queue, self.strategy.tau)
        if x is None or self.rounds[x] >= self.strategy.max_rounds:
            return
        if redistribute(self.tokens, self.names[x], self.strategy.method):
            self.rounds[x] += 1
            self.moves += 1
            self._remap()


ONLINE: dict[str, Callable[[Any, Setup], OnlineScheme]] = {
    "kg": KeyGroupingOnline,
    "sg": ShuffleGroupingOnline,
    "potc": PowerOfTwoChoicesOnline,
    "pkg": PartialKeyGroupingOnline,
    "dchoices": DChoicesOnline,
    "porc": PowerOfRandomChoicesOnline,
    "chbl": BoundedRingOnline,
    "cg": ConsistentGroupingOnline,
    "ring": TokenRingOnline,
}


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
) -> SimulationResult:
    """Replay ``stream`` through ``strategy`` on workers of the given capacities.

    ``report_every`` (default: 1/100 of the stream) is the time slot: metrics are taken and the
    adaptive schemes get feedback every that many messages. ``capacity_changes`` lists
    ``(message index, new capacities)`` (paper 000 Fig. 13); a change starts a new slot.
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
    if strategy not in ONLINE:
        raise ValueError(f"no online form of strategy {strategy!r}; known: {', '.join(ONLINE)}")
    started = time.perf_counter()
    setup = Setup(stream.names, workers, sources, hash_seed, np.random.default_rng(seed))
    scheme = ONLINE[strategy](get_strategy(strategy, **params), setup)

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
    """``simulate`` every strategy on the same stream (same capacities, sources, slots)."""
    params: Mapping[str, Mapping[str, Any]] = options.pop("params", {})
    return [
        simulate(stream, name, capacities, params=params.get(name, {}), **options)
        for name in strategies
    ]


def plot(results: Sequence[SimulationResult], path: str | Path, title: str = "") -> Path:
    """Imbalance and queue spread over time, memory per strategy: one PNG (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
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
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
