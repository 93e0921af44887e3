"""What producers and consumers use: nothing but a published routing table.

    router = Router.open("var/routing", "clicks", reload_interval=30)  # follows LATEST
    router.route("user-42")                    # -> "w7"
    router.route_many(keys)                    # -> array(["w7", "w2", ...]): the same decisions
    router.close()                             # or: with Router.open(...) as router: ...

    assignment = Assignment.open("https://routeplan.example", "clicks", token=TOKEN)  # partitions
    assignment.partitions("c3")                # -> [4, 9]: what c3 reads

A source is a directory or ``file://`` URL (``<root>/<stream>/LATEST`` naming ``v<N>.json``, as
``RoutingStore`` writes it), the routing-table HTTP API at an ``http(s)://`` base URL, or any
other fsspec URL (``s3://bucket/routing`` or ``s3a://…``, ``gs://…``, ``memory://…``) with the
store's layout (``routeplan.producers.sources`` reads them; this module follows them).
A stream name that breaks the name rule (``routeplan.model.names``) is refused before any read, and
a document is read within ``routeplan.contracts.documents``' bounds (``max_bytes``, nesting depth).
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Self

import numpy as np

from routeplan.contracts.documents import DEFAULT_MAX_BYTES
from routeplan.model.hashing import (
    key_group,
    key_group_mask,
    key_groups_of,
    key_hash_array,
    key_hash_fast,
)
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.producers.sources import Source, open_source, verified

log = logging.getLogger(__name__)

OnChange = Callable[[int | None, int | None], object]


# --------------------------------------------------------------------------------------------
# the shared loader


class _Published:
    """A published table held as one immutable snapshot, loaded from a source and optionally
    followed: a daemon thread polls every ``reload_interval`` seconds and swaps in each new good
    version; a bad or unreachable one is logged once and the last good table keeps serving."""

    _snapshot: Any  # set by _install; has a .table

    def __init__(self, table: Table) -> None:
        self._install(table)
        self._source: Source | None = None
        self._max_bytes = DEFAULT_MAX_BYTES
        self._tag: str | None = None
        self._on_change: OnChange | None = None
        self._poll_lock = threading.Lock()  # one poll at a time; route() never takes it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unreachable = False  # an outage has been logged
        self._rejected: str | None = None  # the bad version (or LATEST) last logged

    def _install(self, table: Table) -> None:
        """Compile ``table`` (ValueError if it is the wrong kind) and swap it in."""
        raise NotImplementedError

    @classmethod
    def open(
        cls,
        source: str | os.PathLike[str],
        stream: str,
        version: int | None = None,
        reload_interval: float | None = None,
        *,
        on_change: OnChange | None = None,
        timeout: float = 10.0,
        storage_options: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        token: str | None = None,
    ) -> Self:
        """Load LATEST (or a pinned ``version``) of ``stream`` from ``source``, schema and checksum
        verified; with ``reload_interval`` (seconds) keep following LATEST in a daemon thread.

        ``on_change(old_version, new_version)`` runs after each swap. ``timeout`` bounds HTTP
        requests; ``token`` is sent with them as ``Authorization: Bearer <token>`` (the API is
        closed by default: ``$ROUTEPLAN_API_TOKEN`` of ``routeplan serve``, or an Airflow token
        inside Airflow), and ``headers`` too; a 401 or 403 is a ``PermissionError`` saying so.
        ``storage_options`` go to fsspec. A document larger than
        ``max_bytes`` (256 MiB) or nested deeper than 64 levels is refused. Raises when the first
        load fails, and ``InvalidNameError`` (a ValueError) for a name that breaks the name rule.
        """
        if version is not None and reload_interval is not None:
            raise ValueError("a pinned version never changes: give version or reload_interval")
        if reload_interval is not None and not reload_interval > 0:
            raise ValueError(f"reload_interval must be > 0 seconds, got {reload_interval}")
        if token is not None:
            if not token.strip():
                raise ValueError("token is empty: give the API's bearer token, or None")
            headers = {**(headers or {}), "Authorization": f"Bearer {token.strip()}"}
        src = open_source(source, stream, version, timeout, storage_options, headers, max_bytes)
        try:
            fetched = src.fetch(None)
            if fetched is None:
                raise ConnectionError(f"{source}: answered 'not modified' to a first request")
            published = cls(verified(fetched, stream, max_bytes))
        except BaseException:
            src.close()
            raise
        published._source, published._tag, published._on_change = src, fetched.tag, on_change
        published._max_bytes = max_bytes
        if reload_interval is not None:
            published._follow(reload_interval)
        return published

    @classmethod
    def from_store(
        cls,
        root: str | os.PathLike[str],
        stream: str,
        version: int | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> Self:
        """Load LATEST (or a pinned ``version``) of ``stream``, schema and checksum verified."""
        return cls.open(root, stream, version, max_bytes=max_bytes)

    @property
    def table(self) -> Table:
        return self._snapshot.table

    @property
    def version(self) -> int | None:
        return self._snapshot.table.version

    def reload(self) -> bool:
        """Poll the source once; True when a new version now serves.

        Never raises for the source's sake: a corrupt new version (JSON, too large or too deep,
        schema, checksum, wrong kind) or an unreachable or failing source is logged as a WARNING
        on ``routeplan.producers.client`` (once per bad version, once per outage) and the current
        table keeps serving.
        """
        if self._source is None or self._source.version is not None:
            return False
        stream = self._source.stream
        with self._poll_lock:
            try:
                fetched = self._source.fetch(self._tag)
            except ValueError as err:  # LATEST names no version file
                self._reject(str(err), err)
                return False
            except Exception as err:  # any I/O failure is an outage, whatever the library
                if not self._unreachable:
                    log.warning(
                        "stream %s: source unavailable, keeps serving v%s: %s: %s",
                        stream,
                        self.version,
                        type(err).__name__,
                        err,
                    )
                    self._unreachable = True
                return False
            if self._unreachable:
                log.info("stream %s: source available again (serving v%s)", stream, self.version)
                self._unreachable = False
            if fetched is None:
                return False
            self._tag = fetched.tag  # a bad version is not fetched again
            old = self.version
            try:
                self._install(verified(fetched, stream, self._max_bytes))
            except (ValueError, KeyError, TypeError) as err:
                self._reject(fetched.tag, err)
                return False
            if self._rejected is not None:
                log.info(
                    "stream %s: v%s is good, after rejecting %s",
                    stream,
                    self.version,
                    self._rejected,
                )
                self._rejected = None
        new = self.version
        log.info("stream %s: now serving v%s (was v%s)", stream, new, old)
        if new != old and self._on_change is not None:
            try:
                self._on_change(old, new)
            except Exception:
                log.exception("stream %s: on_change(%s, %s) failed", stream, old, new)
        return new != old

    def _reject(self, what: str, err: Exception) -> None:
        if what != self._rejected:
            stream = self._source.stream if self._source else "?"
            log.warning(
                "stream %s: rejected %s, keeps serving v%s: %s", stream, what, self.version, err
            )
            self._rejected = what

    def _follow(self, interval: float) -> None:
        me, stop = weakref.ref(self), self._stop

        def poll() -> None:  # holds no reference between polls: a dropped router stops
            while not stop.wait(interval):
                published = me()
                if published is None:
                    return
                try:
                    published.reload()
                except Exception:
                    log.exception("stream %s: reload failed", published._source.stream)
                del published

        name = f"routeplan-reload-{self._source.stream if self._source else ''}"
        self._thread = threading.Thread(target=poll, name=name, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop following the source (idempotent); the current table keeps serving."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._source is not None:
            self._source.close()
            self._source = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# key routing


@dataclass(frozen=True, eq=False)
class _Routes:
    """One key_routing table compiled for routing, with its local loads; swapped whole when a
    new version is installed (its counts start at zero), never changed but for the counts.
    A worker's slot is its index in the table's ``workers``."""

    table: RoutingTable
    route: Callable[[str], str]  # Router.route for this table (_compile_route)
    counts: list[float] | None  # slot -> messages routed under this version; None: no split key
    split: Mapping[str, int]  # split key -> its index in candidates
    candidates: tuple[tuple[tuple[int, ...], tuple[float, ...]], ...]  # (slots, capacities)
    candidate_slots: np.ndarray  # the slots as a matrix, short rows padded with their first slot
    group_slot: np.ndarray  # key group -> worker slot
    split_group: np.ndarray  # key group -> holds a split key
    split_hashes: np.ndarray  # the split keys' unsigned 32-bit hashes (uint32), sorted
    names: np.ndarray  # worker slot -> name (dtype object)


class Router(_Published):
    """Routes keys as a ``key_routing`` table says.

    A key goes to its key group's worker, ``key_group_worker[murmur3(key) mod num_key_groups]``,
    unless the table splits it (``hot_keys``). A split key's message goes to the candidate with
    the smallest *local* load divided by its capacity: the router counts the messages it has
    itself sent to each worker under the version in force, all keys, and balances what it
    sends, as Partial Key Grouping's sources do (paper 003 §3.2 "Local Load Estimation": each
    source keeps its own load-estimate vector; balancing each source's share balances the sum).
    Ties go to the larger table weight, then table order. The counts start at zero when a new
    version is installed (its split weights describe the traffic from then on; reading the same
    version again keeps them), and a table without split keys keeps none: nothing reads them,
    and the count is a sixth of ``route``'s time.

    ``route_many(keys)`` gives exactly ``[route(k) for k in keys]`` and leaves the same local
    loads. ``route`` takes no lock: under concurrent calls from several threads a count may miss
    an increment (the local load is an estimate either way, as in the paper); ``route_many``
    holds the lock for its batch.
    """

    def __init__(self, table: Table) -> None:
        self._lock = threading.Lock()  # local loads of split-key decisions
        super().__init__(table)

    def _install(self, table: Table) -> None:
        if not isinstance(table, RoutingTable):
            raise ValueError(
                f"{table.stream} v{table.version} is a {table.kind} table: "
                "read it with routeplan.producers.client.Assignment"
            )
        current = getattr(self, "_snapshot", None)
        if current is not None and table.version is not None and table == current.table:
            return  # the version in force read again: its local loads keep counting
        names, slot = table.workers.names, table.workers.index()
        seed, n = table.hash_seed, table.num_key_groups
        dtype = np.int16 if len(slot) < 2**15 - 1 else np.int32  # int16 argsorts by radix
        capacity = {w.name: w.capacity for w in table.workers.items}
        candidates = []
        for targets in table.hot_keys.values():
            by_weight = sorted(targets, key=lambda t: -t[1])  # stable: table order on ties
            candidates.append(
                (tuple(slot[w] for w, _ in by_weight), tuple(capacity[w] for w, _ in by_weight))
            )
        width = max((len(c[0]) for c in candidates), default=1)
        candidate_slots = np.array(
            [c[0] + c[0][:1] * (width - len(c[0])) for c in candidates], dtype=dtype
        ).reshape(len(candidates), width)
        split = {key: i for i, key in enumerate(table.hot_keys)}
        split_hashes = np.unique(key_hash_array(split, seed))
        split_group = np.zeros(n, dtype=bool)
        split_group[key_groups_of(split_hashes, n)] = True
        group_slot = [slot[w] for w in table.key_group_worker]
        counts = [0.0] * len(names) if split else None
        by_key = {key: candidates[i] for key, i in split.items()}
        route = _compile_route(by_key, group_slot, split_group, seed, n, counts, list(names))
        routes = _Routes(
            table=table,
            route=route,
            counts=counts,
            split=split,
            candidates=tuple(candidates),
            candidate_slots=candidate_slots,
            group_slot=np.array(group_slot, dtype=dtype),
            split_group=split_group,
            split_hashes=split_hashes,
            names=np.array(names, dtype=object),
        )
        self._snapshot = routes
        # the instance's own ``route`` shadows the method: one dict read and a call with no
        # bound method and no attribute read of the router (swapped whole, like the snapshot)
        self.route = route  # type: ignore[method-assign]

    def candidates(self, key: str) -> list[str]:
        """Every worker that may receive ``key``, in table order."""
        table = self._snapshot.table
        if key in table.hot_keys:
            return [w for w, _ in table.hot_keys[key]]
        return [table.key_group_worker[key_group(key, table.num_key_groups, table.hash_seed)]]

    def route(self, key: str) -> str:
        """The worker for the next message of ``key``. (Each router answers through the
        function compiled for its table, ``_compile_route``, set on the instance.)"""
        return self._snapshot.route(key)

    def route_many(self, keys: Iterable[str]) -> np.ndarray:
        """The workers for the next messages of ``keys``, in order: ``route`` vectorised.

        Keys are hashed in one pass; only keys whose hash is a split key's are looked up. The
        split ones are decided in order by ``route``'s rule, the local load of a candidate at
        each being the counts before the batch, plus the batch's plain messages before it
        (searchsorted in the plain positions sorted by worker), plus the batch's earlier split
        decisions.
        """
        routes = self._snapshot
        keys = keys if isinstance(keys, list | tuple) else list(keys)
        table = routes.table
        hashes = key_hash_array(keys, table.hash_seed)
        groups = key_groups_of(hashes, table.num_key_groups)
        slots = routes.group_slot[groups]
        counts = routes.counts
        if counts is None:  # no split key: no decision, no local load
            return routes.names[slots]
        # a key may be split if its group holds one, and its hash is one's
        maybe = np.flatnonzero(routes.split_group[groups])
        near = np.searchsorted(routes.split_hashes, hashes[maybe]) % len(routes.split_hashes)
        maybe = maybe[routes.split_hashes[near] == hashes[maybe]]
        get = routes.split.get
        found = np.array([get(keys[i], -1) for i in maybe.tolist()], dtype=np.int64)
        positions, ids = maybe[found >= 0], found[found >= 0]
        with self._lock:
            if len(positions):
                slots[positions] = self._decide_split(routes, slots, positions, ids)
            sent = np.bincount(slots, minlength=len(counts))
            for slot in np.flatnonzero(sent).tolist():
                counts[slot] += float(sent[slot])
        return routes.names[slots]

    def _decide_split(
        self, routes: _Routes, slots: np.ndarray, positions: np.ndarray, ids: np.ndarray
    ) -> list[int]:
        """Slots of the split messages at ``positions`` (ascending; ``ids`` index candidates)."""
        counts = routes.counts
        assert counts is not None  # a table with split keys counts
        n, last = len(slots), len(routes.names)
        marked = slots.copy()
        marked[positions] = last  # sorts after every worker: not a plain message
        order = np.argsort(marked, kind="stable")
        ranked = marked[order].astype(np.int64) * n + order  # plain (slot, position), ascending
        start = np.concatenate(([0], np.cumsum(np.bincount(marked, minlength=last + 1))))
        cand = routes.candidate_slots[ids]  # (split messages, width)
        query = (cand.astype(np.int64) * n + positions[:, None]).ravel()
        by_slot = np.argsort(cand.ravel(), kind="stable")  # sorted queries search faster
        plain_before = np.empty_like(query)
        plain_before[by_slot] = np.searchsorted(ranked, query[by_slot])
        plain_before = plain_before.reshape(cand.shape) - start[cand]
        loads = (np.asarray(counts, dtype=np.int64)[cand] + plain_before).ravel().tolist()
        decided = [0] * len(counts)  # split messages of this batch so far, per slot
        out = []
        if cand.shape[1] == 2:  # d = 2 (PKG's choice): _split_to's rule, unrolled
            pairs = [(c[0][0], c[0][-1], c[1][0], c[1][-1]) for c in routes.candidates]
            for i, first_load, second_load in zip(
                ids.tolist(), loads[0::2], loads[1::2], strict=True
            ):
                first, second, first_capacity, second_capacity = pairs[i]
                slot = (
                    second
                    if (second_load + decided[second]) / second_capacity
                    < (first_load + decided[first]) / first_capacity
                    else first
                )
                decided[slot] += 1
                out.append(slot)
            return out
        current = [0] * len(counts)  # the local load of each candidate, refreshed
        for i, k in zip(ids.tolist(), range(0, len(loads), cand.shape[1]), strict=True):
            cand_slots, capacities = routes.candidates[i]
            for slot in cand_slots:  # flat rows, not lists: no allocation per message
                current[slot] = loads[k] + decided[slot]
                k += 1
            slot = _split_to(cand_slots, capacities, current)
            decided[slot] += 1
            out.append(slot)
        return out

    def local_loads(self) -> dict[str, int]:
        """Messages this router has sent to each worker under the version in force, as the
        split decisions read them; empty under a table without split keys (none are kept)."""
        routes = self._snapshot
        if routes.counts is None:
            return {}
        with self._lock:
            return {
                name: int(count)
                for name, count in zip(routes.table.workers.names, routes.counts, strict=True)
            }


def _compile_route(
    hot: dict[str, tuple[tuple[int, ...], tuple[float, ...]]],
    group_slot: list[int],
    split_group: np.ndarray,
    seed: int,
    n: int,
    counts: list[float] | None,
    names: list[str],
) -> Callable[[str], str]:
    """``Router.route`` for one table: a function whose state is its own locals (default
    arguments) — no attribute, tuple or global read per message — hashing through
    ``hashing.key_hash_fast`` in the cheapest form the table allows: ``key_hash_fast(key) &
    mask`` for seed 0 and a power-of-two number of key groups (``hashing.key_group_mask``; the
    arguments ``seed, False`` cost a third of the hash), ``key_hash_fast(key, seed, False) % n``
    otherwise. A table without split keys (``counts`` None) counts nothing. With split keys, a
    key group that holds one has its slot stored as ``-1 - slot``: only keys of those groups
    are looked up among the split keys, so a plain key elsewhere pays a comparison instead of a
    dict lookup (a split key pays the hash first). Profiled (issue 32; ns per call on 2 shared
    cores): the call ~22 and the read of ``router.route`` ~12, the hash ~34, mask and index
    ~23, an int count ~29 — a float one ~19 (``+= 1.0`` reuses float objects, an int past 256
    allocates one): counts are floats."""
    mask = key_group_mask(n)
    named = tuple(names)
    if counts is None:
        slot = tuple(group_slot)
        if mask is not None and seed == 0:

            def route(key: str, h=key_hash_fast, mask=mask, slot=slot, names=named) -> str:
                return names[slot[h(key) & mask]]

        else:

            def route(key: str, h=key_hash_fast, seed=seed, n=n, slot=slot, names=named) -> str:
                return names[slot[h(key, seed, False) % n]]

        return route

    holds = split_group.tolist()
    flagged = tuple(-1 - s if split else s for s, split in zip(group_slot, holds, strict=True))
    if mask is not None and seed == 0:

        def route(key: str, h=key_hash_fast, mask=mask, slot=flagged, get=hot.get,
                  counts=counts, names=named, split_to=_split_to) -> str:  # fmt: skip
            s = slot[h(key) & mask]
            if s < 0:  # its key group holds a split key
                to = get(key)
                if to is not None:
                    return names[split_to(to[0], to[1], counts)]
                s = -1 - s
            counts[s] += 1.0
            return names[s]

    else:

        def route(key: str, h=key_hash_fast, seed=seed, n=n, slot=flagged, get=hot.get,
                  counts=counts, names=named, split_to=_split_to) -> str:  # fmt: skip
            s = slot[h(key, seed, False) % n]
            if s < 0:  # its key group holds a split key
                to = get(key)
                if to is not None:
                    return names[split_to(to[0], to[1], counts)]
                s = -1 - s
            counts[s] += 1.0
            return names[s]

    return route


def _split_to(slots: tuple[int, ...], capacities: tuple[float, ...], loads: list[float]) -> int:
    """The slot among ``slots`` with the smallest ``loads[slot] / capacity``, the first one on
    ties (paper 003 §3.2); counts the message in ``loads``."""
    if len(slots) == 2:  # PKG's d = 2, the common case, without the loop
        first, second = slots
        best = second if loads[second] / capacities[1] < loads[first] / capacities[0] else first
    else:
        best, best_load = slots[0], loads[slots[0]] / capacities[0]
        for i in range(1, len(slots)):
            load = loads[slots[i]] / capacities[i]
            if load < best_load:
                best, best_load = slots[i], load
    loads[best] += 1.0
    return best


# --------------------------------------------------------------------------------------------
# partition assignment


@dataclass(frozen=True, eq=False)
class _Assigned:
    table: PartitionAssignment
    partitions: Mapping[str, list[int]]  # consumer -> its partitions, ascending


class Assignment(_Published):
    """Which consumer reads which partition, as a ``partition_assignment`` table says."""

    def _install(self, table: Table) -> None:
        if not isinstance(table, PartitionAssignment):
            raise ValueError(
                f"{table.stream} v{table.version} is a {table.kind} table, not a "
                "partition_assignment one"
            )
        partitions: dict[str, list[int]] = {}
        for partition, consumer in table.partition_consumer.items():
            partitions.setdefault(consumer, []).append(partition)
        self._snapshot = _Assigned(table, MappingProxyType(partitions))

    @property
    def consumers(self) -> list[str]:
        """The consumers of the group (each reads at least one partition)."""
        return sorted(self._snapshot.partitions)

    def consumer(self, partition: int) -> str:
        """The consumer that reads ``partition`` (KeyError if the table has no such partition)."""
        return self._snapshot.table.partition_consumer[int(partition)]

    def partitions(self, consumer: str) -> list[int]:
        """The partitions ``consumer`` reads, ascending (empty: it is not in the group)."""
        return list(self._snapshot.partitions.get(consumer, []))
