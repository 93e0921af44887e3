"""What producers and consumers use: nothing but a published routing table.

    router = Router.open("https://routeplan.example", "clicks", token=TOKEN, reload_interval=30)
    router.route("user-42")                    # -> "w7" (follows LATEST every 30 s)
    router.version                             # -> 12: stamp it on the record (routing_version)
    router.route_many(keys)                    # -> ["w7", "w2", ...]: the same decisions
    router.close()                             # or: with Router.open(...) as router: ...

    assignment = Assignment.open("var/routing", "orders")   # partitions
    assignment.partitions("c3")                # -> [4, 9]: what c3 reads

A source is a directory or ``file://`` URL (``<root>/<stream>/LATEST`` naming ``v<N>.json``),
the routing-table HTTP API at an ``http(s)://`` base URL, or any other fsspec URL
(``s3://bucket/routing`` or ``s3a://…``, ``gs://…``, ``memory://…``) with the store's layout
(``routeplan_client.sources`` reads them; this module follows them). A stream name that breaks
the name rule (``routeplan_client.names``) is refused before any read, and a document is read
within ``routeplan_client.documents``' bounds (``max_bytes``, nesting depth).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Optional, TypeVar

from routeplan_client.documents import DEFAULT_MAX_BYTES
from routeplan_client.hashing import key_group, key_group_mask, key_hash_fast
from routeplan_client.sources import Source, open_source, verified, with_token
from routeplan_client.splitting import split_to
from routeplan_client.tables import PartitionAssignment, RoutingTable, Table, table_from_document

_VECTOR_MIN = 64  # below this many keys a batch is cheaper one route at a time

log = logging.getLogger(__name__)


@functools.cache
def _vectorised() -> ModuleType | None:
    """``routeplan_client._vectorised`` when numpy is installed, else None: ``route_many``
    decides a batch with numpy, or one ``route`` per key. Imported by the first batch, not with
    the client (numpy takes longer to import than the rest of the client)."""
    try:
        from routeplan_client import _vectorised
    except ImportError:  # pragma: no cover - numpy absent
        return None
    return _vectorised


OnChange = Callable[[Optional[int], Optional[int]], object]  # noqa: UP007 (a runtime alias: 3.9)
P = TypeVar("P", bound="_Published")


# --------------------------------------------------------------------------------------------
# the shared loader


class _Published:
    """A published table held as one immutable snapshot, loaded from a source and optionally
    followed: a daemon thread polls every ``reload_interval`` seconds and swaps in each new good
    version; a bad or unreachable one is logged once and the last good table keeps serving."""

    _snapshot: Any  # set by _install; has a .table

    def __init__(self, table: Any) -> None:
        """Serve ``table``: a table read by ``routeplan_client`` (``table_from_document``), or
        any object with a ``to_document()`` giving a routing-table document (routeplan's planned
        tables), read through ``table_from_document`` with its checksum verified."""
        self._install(as_table(table))
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
        cls: type[P],
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
    ) -> P:
        """Load LATEST (or a pinned ``version``) of ``stream`` from ``source``, checked and
        checksum verified (``table_from_document``); with ``reload_interval`` (seconds) keep
        following LATEST in a daemon thread.

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
        headers = with_token(headers, token)
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
        cls: type[P],
        root: str | os.PathLike[str],
        stream: str,
        version: int | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> P:
        """Load LATEST (or a pinned ``version``) of ``stream``, checked and checksum verified."""
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
        the fields it routes by, checksum, wrong kind) or an unreachable or failing source is
        logged as a WARNING on ``routeplan_client.router`` (once per bad version, once per
        outage) and the current table keeps serving.
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

    def __enter__(self) -> P:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def as_table(table: Any) -> Table:
    """``table`` itself when ``routeplan_client`` read it, else the table its ``to_document()``
    holds (checksum verified); ``TypeError`` for anything else."""
    if isinstance(table, (RoutingTable, PartitionAssignment)):
        return table
    to_document = getattr(table, "to_document", None)
    if to_document is None:
        raise TypeError(
            f"not a routing table: {type(table).__name__} (read one with Router.open, or "
            "routeplan_client.table_from_document)"
        )
    return table_from_document(to_document())


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
    group_slot: tuple[int, ...]  # key group -> worker slot
    split_groups: frozenset[int]  # the key groups that hold a hot key
    arrays: dict[str, Any] = field(default_factory=dict)  # route_many's numpy forms, built once


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

    def __init__(self, table: Any) -> None:
        self._lock = threading.Lock()  # local loads of split-key decisions
        super().__init__(table)

    def _install(self, table: Table) -> None:
        if not isinstance(table, RoutingTable):
            raise ValueError(
                f"{table.stream} v{table.version} is a {table.kind} table: "
                "read it with routeplan_client.Assignment"
            )
        current = getattr(self, "_snapshot", None)
        if current is not None and table.same_version(current.table):
            return  # the version in force read again: its local loads keep counting
        names = table.worker_names
        slot = {name: i for i, name in enumerate(names)}
        seed, n = table.hash_seed, table.num_key_groups
        capacity = {w.name: w.capacity for w in table.workers}
        candidates = []
        for targets in table.hot_keys.values():
            by_weight = sorted(targets, key=lambda t: -t[1])  # stable: table order on ties
            candidates.append(
                (tuple(slot[w] for w, _ in by_weight), tuple(capacity[w] for w, _ in by_weight))
            )
        split = {key: i for i, key in enumerate(table.hot_keys)}
        split_groups = frozenset(key_group(key, n, seed) for key in split)
        group_slot = tuple(slot[w] for w in table.key_group_worker)
        counts = [0.0] * len(names) if split else None
        by_key = {key: candidates[i] for key, i in split.items()}
        route = _compile_route(by_key, group_slot, split_groups, seed, n, counts, list(names))
        routes = _Routes(
            table=table,
            route=route,
            counts=counts,
            split=split,
            candidates=tuple(candidates),
            group_slot=group_slot,
            split_groups=split_groups,
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

    def route_many(self, keys: Iterable[str]) -> list[str]:
        """The workers for the next messages of ``keys``, in order: exactly
        ``[route(k) for k in keys]``, leaving the same local loads, under the lock for the batch.
        With numpy installed the batch is decided vectorised (``routeplan_client._vectorised``:
        hashed in one pass, only keys whose hash is a split key's looked up); without it, one
        ``route`` per key."""
        routes = self._snapshot
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        if len(keys) >= _VECTOR_MIN and (vectorised := _vectorised()) is not None:
            return vectorised.route_many(routes, keys, self._lock)
        with self._lock:
            return [routes.route(k) for k in keys]

    def local_loads(self) -> dict[str, int]:
        """Messages this router has sent to each worker under the version in force, as the
        split decisions read them; empty under a table without split keys (none are kept)."""
        routes = self._snapshot
        if routes.counts is None:
            return {}
        with self._lock:
            return {
                name: int(count) for name, count in zip(routes.table.worker_names, routes.counts)
            }


def _compile_route(
    hot: dict[str, tuple[tuple[int, ...], tuple[float, ...]]],
    group_slot: tuple[int, ...],
    split_groups: frozenset[int],
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

    marked = list(group_slot)
    for g in split_groups:
        marked[g] = -1 - marked[g]
    flagged = tuple(marked)
    if mask is not None and seed == 0:

        def route(key: str, h=key_hash_fast, mask=mask, slot=flagged, get=hot.get,
                  counts=counts, names=named, split_to=split_to) -> str:  # fmt: skip
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
                  counts=counts, names=named, split_to=split_to) -> str:  # fmt: skip
            s = slot[h(key, seed, False) % n]
            if s < 0:  # its key group holds a split key
                to = get(key)
                if to is not None:
                    return names[split_to(to[0], to[1], counts)]
                s = -1 - s
            counts[s] += 1.0
            return names[s]

    return route


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
