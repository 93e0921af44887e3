"""A kafka-python consumer group assigned by its ``partition_assignment`` table: the Python twin
of the Java client's ``RouteplanAssignor`` and ``RouteplanRebalancer``.

    import os
    from kafka import KafkaConsumer
    from routeplan_client.kafka import Rebalancer, assignor

    Assignor = assignor("https://routeplan.example", "orders",
                        token=os.environ.get("ROUTEPLAN_API_TOKEN"), consumer="c3")
    rebalancer = Rebalancer(Assignor, reload_interval=30)    # before subscribe
    consumer = KafkaConsumer(bootstrap_servers="kafka:9092", group_id="orders-readers",
                             partition_assignment_strategy=[Assignor])
    consumer.subscribe(["orders"])
    while running:
        for records in consumer.poll(timeout_ms=500).values():
            ...
        rebalancer.maybe_rebalance(consumer)                 # in the thread that polls

``assignor(...)`` gives a class, as kafka-python's ``partition_assignment_strategy`` takes
assignors (one per consumer process: ``consumer=`` is that process's name in the plan). The
table is read from a routing store directory or ``file://`` URL, the HTTP API (``token=``), or
an fsspec URL (``s3://…``), as ``routeplan_client.sources`` reads them. It needs kafka-python
3.x, whose assignors see each member's ``group_instance_id``; the group uses the classic group
protocol and EAGER rebalances (every rebalance revokes every partition, then assigns them all:
simpler than the Java assignor's COOPERATIVE protocol, and a partition is never owned twice).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor

try:
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
    )
except ImportError as err:  # kafka-python 2.x: its assignors see no group_instance_id
    raise ImportError(
        f"routeplan_client's assignor needs kafka-python 3.x: pip install 'kafka-python>=3' ({err})"
    ) from err

from routeplan_client.documents import DEFAULT_MAX_BYTES, parse_document
from routeplan_client.names import check_name
from routeplan_client.sources import Fetched, Source, open_source, with_token
from routeplan_client.tables import PartitionAssignment, Table, table_from_document

log = logging.getLogger(__name__)

NAME = "routeplan"  # the assignor's name in the group protocol (Java's RouteplanAssignor.NAME)


class InvalidTableError(ValueError):
    """LATEST names a document the reader refuses (JSON, bounds, fields, checksum, version)."""


class _Latest:
    """A stream's LATEST table, read when asked (no thread of its own), as the Java client's
    ``Latest``: the source is asked again each time; a version it has delivered before (same
    file name or ETag) is not read or verified again, and a refused one stays refused until
    LATEST moves on. The assignor and the rebalancer act on whatever LATEST is now, not on a
    last good table."""

    def __init__(
        self, location: str, stream: str, open_: Callable[[], Source], max_bytes: int
    ) -> None:
        self.location, self.stream, self._open, self._max_bytes = location, stream, open_, max_bytes
        self._source = open_()  # InvalidNameError, or ImportError for a missing httpx / s3fs
        self._lock = threading.Lock()
        self._tag: str | None = None
        self._read: tuple[Table, str] | None = None
        self._refused: InvalidTableError | None = None

    def again(self) -> _Latest:
        """Another reader of the same stream, with a source of its own."""
        return _Latest(self.location, self.stream, self._open, self._max_bytes)

    def where(self) -> str:
        return f"{self.location} (stream {self.stream})"

    def read(self) -> tuple[Table, str]:
        """The table LATEST names now and its checksum: ``InvalidTableError`` when the document
        is refused; the source's own error (OSError, ConnectionError, PermissionError, a
        ValueError for a LATEST that names no version) when it cannot be read."""
        with self._lock:
            fetched = self._source.fetch(self._tag)
            if fetched is not None:
                self._tag = fetched.tag
                try:
                    self._read, self._refused = _verified(fetched, self._max_bytes), None
                except (ValueError, KeyError, TypeError) as err:
                    self._read = None
                    self._refused = InvalidTableError(f"{fetched.where}: refused: {err}")
            if self._refused is not None:
                raise self._refused
            assert self._read is not None  # a first fetch is never "not modified"
            return self._read


def _verified(fetched: Fetched, max_bytes: int) -> tuple[Table, str]:
    """The table in ``fetched`` and its checksum: bounded JSON, checked, checksum verified, and
    the version the source says it is. Its stream is not checked here: the assignor says why."""
    doc = parse_document(fetched.body, fetched.where, max_bytes)
    table = table_from_document(doc)
    if fetched.version not in (None, table.version):
        raise ValueError(f"holds v{table.version}, not v{fetched.version}")
    return table, str(doc["checksum"])


def describe(table: Table) -> str:
    """``orders v3 (partition_assignment)``: a table in log messages."""
    return f"{table.stream} v{table.version} ({table.kind})"


# --------------------------------------------------------------------------------------------
# the assignment: pure functions of the table, the topic's partitions and the members


def declared(member: Any) -> str | None:
    """The consumer name a member declared: ``consumer=`` of its ``assignor(...)`` (carried in
    its subscription's user data), else its ``group_instance_id`` (static membership)."""
    user_data = getattr(member.metadata, "user_data", None)
    if isinstance(user_data, (bytes, bytearray, memoryview)) and len(user_data):
        try:
            name = json.loads(bytes(user_data)).get("consumer")
        except (ValueError, AttributeError):  # another assignor's bytes, or not an object
            name = None
        if isinstance(name, str) and name:
            return name
    return getattr(member, "group_instance_id", None) or None


def readers(table: PartitionAssignment) -> list[str]:
    """The table's consumers that read partitions, in the table's order."""
    reading = set(table.partition_consumer.values())
    return [c.name for c in table.consumers if c.name in reading]


def unfit(
    table: Table, stream: str, topic: str, cluster: Any, members: Sequence[Any]
) -> str | None:
    """Why ``table`` cannot assign the group, or None when it can."""
    if not isinstance(table, PartitionAssignment):
        return f"a {table.kind} table, not a partition_assignment one"
    if table.stream != stream:
        return f"the table is of stream {table.stream!r}, not {stream!r}"
    for member in members:
        topics = sorted(member.metadata.topics)
        if topics != [topic]:
            return f"member {member.member_id} subscribes to {topics}, not to topic {topic!r} alone"
    if not cluster.partitions_for_topic(topic):
        return f"no metadata for topic {topic!r}"
    return None


def other_size(table: PartitionAssignment, members: Sequence[Any]) -> str | None:
    """Why the plan's consumers cannot be the group's members (None: as many of each)."""
    consumers = len(readers(table))
    if consumers == len(members):
        return None
    return (
        f"the group has {len(members)} members, the plan {consumers} consumers that read partitions"
    )


def partition_loads(table: PartitionAssignment) -> dict[int, float] | None:
    """The load the plan planned each partition on (``planning_load.partition_load``, its index
    the partition), or None when the table has none (or not finite loads >= 0)."""
    planning = table.document.get("planning_load")
    loads = planning.get("partition_load") if isinstance(planning, Mapping) else None
    if not isinstance(loads, list) or not loads:
        return None
    if not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < float("inf")
        for x in loads
    ):
        return None
    return {p: float(x) for p, x in enumerate(loads)}


def spread(
    loads: Mapping[int, float], partitions: Iterable[int], members: Sequence[Any]
) -> dict[str, list[int]]:
    """Each member's partitions when the group is not the plan's size: the plan's partitions
    spread by the plan's loads (Graham's LPT rule). Heaviest first (ties: the lower partition),
    each to the member carrying the least load so far (ties: fewer partitions, then the members'
    order: declared name, then member id). A partition the plan has no load for counts as the
    mean of those it has."""
    mean = sum(loads.values()) / len(loads)
    order = sorted(members, key=lambda m: (declared(m) or "", m.member_id))
    carried = {m.member_id: (0.0, 0, i) for i, m in enumerate(order)}
    assigned: dict[str, list[int]] = {m.member_id: [] for m in order}
    for p in sorted(set(partitions), key=lambda p: (-loads.get(p, mean), p)):
        member = min(carried, key=carried.__getitem__)
        load, count, rank = carried[member]
        carried[member] = (load + loads.get(p, mean), count + 1, rank)
        assigned[member].append(p)
    return {m: sorted(ps) for m, ps in assigned.items()}


def pair(consumers: Iterable[str], members: Sequence[Any]) -> dict[str, str]:
    """Consumer → member id, in consumer-name order: a member that declared a consumer's name
    gets it (the first by member id, when two declare one); the others pair in order, consumer
    names sorted, members by declared name ("" for none), then member id. As many members as
    consumers."""
    named = set(consumers)
    paired: dict[str, str] = {}
    rest = []
    for member in sorted(members, key=lambda m: m.member_id):
        name = declared(member)
        if name in named and name not in paired:
            paired[name] = member.member_id
        else:
            if name in paired:
                log.warning(
                    "routeplan: members %s and %s both declare consumer %s: %s is paired in order",
                    paired[name],
                    member.member_id,
                    name,
                    member.member_id,
                )
            rest.append(member)
    rest.sort(key=lambda m: (declared(m) or "", m.member_id))
    open_ = [name for name in sorted(named) if name not in paired]
    for name, member in zip(open_, rest):
        paired[name] = member.member_id
    return dict(sorted(paired.items()))


def target(
    table: PartitionAssignment, topic: str, partitions: Iterable[int], consumer_member: Mapping
) -> dict[int, str]:
    """Partition → member id by the plan, for every partition of the topic: one the table does
    not name goes to the member with the fewest partitions (the first in consumer-name order on
    ties); one the table names that the topic lacks is left out. Both are logged."""
    topic_partitions = sorted(set(partitions))
    out: dict[int, str] = {}
    load = dict.fromkeys(consumer_member.values(), 0)  # in consumer-name order
    unplanned = []
    for p in topic_partitions:
        consumer = table.partition_consumer.get(p)
        if consumer is None:
            unplanned.append(p)
        else:
            out[p] = consumer_member[consumer]
            load[out[p]] += 1
    for p in unplanned:
        least = min(load, key=load.__getitem__)  # the first of the fewest
        out[p] = least
        load[least] += 1
    if unplanned:
        log.warning(
            "routeplan: %s does not name partitions %s of topic %s: each goes to the member "
            "with the fewest",
            describe(table),
            unplanned,
            topic,
        )
    missing = sorted(set(table.partition_consumer) - set(topic_partitions))
    if missing:
        log.warning(
            "routeplan: %s names partitions %s, which topic %s does not have (%d partitions): "
            "left out",
            describe(table),
            missing,
            topic,
            len(topic_partitions),
        )
    return dict(sorted(out.items()))


def follow(
    table: PartitionAssignment, topic: str, partitions: Iterable[int], members: Sequence[Any]
) -> dict[str, list[int]]:
    """Each member's partitions of ``topic`` by the plan, ascending (logged)."""
    consumer_member = pair(readers(table), members)
    assigned: dict[str, list[int]] = {m.member_id: [] for m in members}
    for p, member in target(table, topic, partitions, consumer_member).items():
        assigned[member].append(p)
    log.info(
        "routeplan: topic %s assigned by %s to %d members (consumer -> member: %s)",
        topic,
        describe(table),
        len(members),
        consumer_member,
    )
    return assigned


# --------------------------------------------------------------------------------------------
# the assignor


class RouteplanAssignor(AbstractPartitionAssignor):
    """A kafka-python partition assignor that gives each consumer of the group the partitions
    a routeplan ``partition_assignment`` table names for it (the routing spec §5); made by
    ``assignor(...)``, which sets the class attributes.

    At each rebalance the group's leader reads the stream's LATEST table. The plan is followed
    when it is a valid ``partition_assignment`` table of the stream, every member subscribes to
    the topic and nothing else, and the group has as many members as the table has consumers
    that read partitions. A member that declared a consumer's name (``consumer=`` of its
    ``assignor(...)``, else its ``group_instance_id``) gets that consumer's partitions; the
    others are paired in order (the remaining consumer names sorted; the remaining members by
    declared name, then member id). A partition of the topic the table does not name goes to
    the member with the fewest partitions; one the table names that the topic lacks is left
    out; both are logged. A group of another size than the plan's gets the plan's partitions
    spread over its members by the plan's loads (``spread``: the loads it was planned on, LPT).
    Otherwise — no table, a refused one, a key_routing table, another stream or topic, another
    group size and no loads — the assignment is kafka-python's ``RangePartitionAssignor``'s.
    Either way the reason is logged as a WARNING (and kept in ``fallback_reason`` on the
    leader's class).

    EAGER protocol only (kafka-python's default, as Range's): each rebalance revokes every
    partition before assigning, so a moved partition needs no second round. A new version is
    followed at the next rebalance: ``Rebalancer`` asks for one when LATEST changes.
    """

    name = NAME
    version = 0
    stream: str = ""
    topic: str | None = None  # the topic the table assigns (None: the stream's name)
    consumer: str | None = None  # this process's name in the plan
    latest: _Latest | None = None
    table_seen: str | None = None  # set by a Rebalancer: sent in the user data (see there)
    fallback = RangePartitionAssignor
    fallback_reason: str | None = None  # why the last assignment fell back (None: the plan)

    @classmethod
    def plan_topic(cls) -> str:
        return cls.topic or cls.stream

    @classmethod
    def user_data(cls) -> bytes:
        """``{"consumer": …, "table": …}`` as JSON (empty when neither is set)."""
        data = {"consumer": cls.consumer, "table": cls.table_seen}
        kept = {k: v for k, v in data.items() if v is not None}
        return json.dumps(kept, sort_keys=True).encode() if kept else b""

    @classmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        """The subscription this member sends with its JoinGroup."""
        return ConsumerProtocolSubscription(
            version=cls.version, topics=sorted(topics), user_data=cls.user_data()
        )

    @classmethod
    def on_assignment(cls, assignment: ConsumerProtocolAssignment, generation: Any = None) -> None:
        """Nothing to remember: every assignment is the plan's or Range's, neither sticky."""

    @classmethod
    def assign(cls, cluster: Any, members: Sequence[Any]) -> dict[str, ConsumerProtocolAssignment]:
        """``{member_id: assignment}`` for the group's ``members`` (kafka-python's
        ``JoinGroupResponseMember``: ``member_id``, ``group_instance_id``, ``metadata`` decoded);
        ``cluster`` is read through ``partitions_for_topic`` only."""
        if cls.latest is None:
            raise RuntimeError("RouteplanAssignor is made by assignor(location, stream, ...)")
        members = list(members)
        try:
            table, _ = cls.latest.read()
        except InvalidTableError as err:
            return cls._fall_back(cluster, members, f"invalid table: {err}")
        except Exception as err:  # any failure to read is "no table", whatever the library
            reason = f"no table at {cls.latest.where()}: {type(err).__name__}: {err}"
            return cls._fall_back(cluster, members, reason)
        topic = cls.plan_topic()
        why = unfit(table, cls.stream, topic, cluster, members)
        if why is not None:
            return cls._fall_back(cluster, members, f"{describe(table)}: {why}")
        assert isinstance(table, PartitionAssignment)
        partitions = cluster.partitions_for_topic(topic)
        size = other_size(table, members)
        if size is None:
            assigned = follow(table, topic, partitions, members)
            cls.fallback_reason = None
        else:
            loads = partition_loads(table)
            if loads is None:
                reason = f"{describe(table)}: {size}, and it has no partition loads to spread"
                return cls._fall_back(cluster, members, reason)
            log.warning(
                "routeplan: %s: %s: its partitions are spread by its loads over the members",
                describe(table),
                size,
            )
            cls.fallback_reason = f"{describe(table)}: {size}"
            assigned = spread(loads, partitions, members)
        return {
            member: ConsumerProtocolAssignment(cls.version, [(topic, ps)] if ps else [], b"")
            for member, ps in assigned.items()
        }

    @classmethod
    def _fall_back(
        cls, cluster: Any, members: list[Any], reason: str
    ) -> dict[str, ConsumerProtocolAssignment]:
        log.warning(
            "routeplan: the group is assigned by %s (%d members), not by the plan: %s",
            cls.fallback.name,
            len(members),
            reason,
        )
        cls.fallback_reason = reason
        return cls.fallback.assign(cluster, members)


def assignor(
    location: str | os.PathLike[str],
    stream: str,
    *,
    topic: str | None = None,
    token: str | None = None,
    consumer: str | None = None,
    timeout: float = 10.0,
    storage_options: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> type[RouteplanAssignor]:
    """A ``RouteplanAssignor`` class for kafka-python's ``partition_assignment_strategy``,
    following ``stream``'s LATEST at ``location`` (a routing store directory or ``file://``
    URL, the HTTP API's base URL, an fsspec URL).

    ``topic``: the topic the table assigns (default: the stream's name). ``consumer``: this
    process's consumer name in the plan (sent in its subscription's user data; without it the
    member's ``group_instance_id`` counts). ``token`` is sent to the HTTP API as ``Authorization:
    Bearer <token>``, with ``headers``; ``timeout`` bounds a request (the leader reads LATEST
    while the group waits); ``storage_options`` go to fsspec; a document larger than
    ``max_bytes`` is refused. ``InvalidNameError`` (a ValueError) for a stream or consumer name
    that breaks the name rule; ImportError when the location needs httpx or an fsspec package
    that is not installed. Nothing is read until the first assignment.
    """
    check_name(stream, "stream")
    if consumer is not None:
        check_name(consumer, "consumer")
    if topic is not None and not topic.strip():
        raise ValueError("topic is empty: give the topic the table assigns, or None")
    extra = with_token(headers, token)
    where = os.fspath(location)

    def open_() -> Source:
        return open_source(where, stream, None, timeout, storage_options, extra, max_bytes)

    attributes = {
        "__module__": __name__,
        "__doc__": RouteplanAssignor.__doc__,
        "stream": stream,
        "topic": topic,
        "consumer": consumer,
        "latest": _Latest(where, stream, open_, max_bytes),
        "table_seen": None,
        "fallback_reason": None,
    }
    return type("RouteplanAssignor", (RouteplanAssignor,), attributes)


# --------------------------------------------------------------------------------------------
# following a new version


class Rebalancer:
    """Makes the consumer group rebalance when a new version of its ``partition_assignment``
    table is published, so that the assignor assigns by it. Driven from the consumer's poll
    loop: ``maybe_rebalance(consumer)`` after each ``poll``.

    ``maybe_rebalance`` reads the stream's LATEST (as the assignor class does, with a source of
    its own) at most once per ``reload_interval`` seconds (None: never), in the calling thread
    (a file read, or one HTTP request bounded by the assignor's ``timeout``). When LATEST names
    a valid ``partition_assignment`` table other than the last one seen (another version or
    checksum), it asks for a rebalance. kafka-python 3.x has no public way to (Java's
    ``enforceRebalance``); re-subscribing to the same topics does nothing. So it calls
    ``consumer._coordinator.request_rejoin()`` — what kafka-python itself calls when a topic's
    partitions change: the consumer rejoins at its next ``poll`` (a private attribute: a
    kafka-python without it is a TypeError here). A member's JoinGroup starts a rebalance only
    when it is the leader's, or its subscription changed; so the rebalancer also puts the table
    it saw into the assignor class's ``table_seen``, which the member sends in its
    subscription's user data: any member's request starts one. Call it from the thread that
    polls: a KafkaConsumer is not thread-safe.

    The first table seen is the one LATEST names when the rebalancer is made: make it before
    the consumer subscribes, so that the group's first assignment reads that version or a newer
    one. A LATEST that is missing or refused, or names a key_routing table, asks for nothing
    (logged once): the assignor would fall back, and the next valid version asks again.
    """

    def __init__(
        self, assignor_class: type[RouteplanAssignor], reload_interval: float | None = 30.0
    ) -> None:
        if not (
            isinstance(assignor_class, type)
            and issubclass(assignor_class, RouteplanAssignor)
            and assignor_class.latest is not None
        ):
            raise TypeError("Rebalancer(assignor_class): give the class assignor(...) made")
        if reload_interval is not None and not reload_interval > 0:
            raise ValueError(f"reload_interval must be > 0 seconds or None, got {reload_interval}")
        self._assignor = assignor_class
        self._latest = assignor_class.latest.again()
        self._interval = reload_interval
        self._next = time.monotonic() + (reload_interval or 0.0)
        self._seen: tuple[PartitionAssignment, str] | None = None
        self._problem: str | None = None
        self.changed()  # the baseline: what the group's first assignment reads (or newer)

    @property
    def table(self) -> PartitionAssignment | None:
        """The last partition_assignment table seen, or None."""
        return self._seen[0] if self._seen is not None else None

    def maybe_rebalance(self, consumer: Any) -> bool:
        """Once per interval: reads LATEST and, when it names a new partition_assignment table,
        makes ``consumer`` rejoin its group; True when it did. Call it from the thread that
        polls ``consumer``.

        At every call it also mends a rebalance kafka-python finished but never applied
        (``stranded_join``): the consumer then rejoins, and reads its partitions again."""
        if stranded_join(consumer):
            log.warning(
                "routeplan: kafka-python finished a rebalance but did not apply its assignment "
                "(the consumer's poll timed out during it, and the group looked stable by then): "
                "the consumer rejoins"
            )
            request_rejoin(consumer)
            return True
        now = time.monotonic()
        if self._interval is None or now < self._next:
            return False
        self._next = now + self._interval
        reason = self.changed()
        if reason is None:
            return False
        log.info("routeplan: a new table is LATEST, the group rebalances: %s", reason)
        request_rejoin(consumer)
        return True

    def changed(self) -> str | None:
        """Reads LATEST now: the reason to rebalance when it names a partition_assignment table
        other than the last one seen (which it becomes), None otherwise."""
        try:
            table, checksum = self._latest.read()
        except Exception as err:  # refused, missing, unreachable: the assignor falls back
            self._report(f"cannot read {self._latest.where()}: {type(err).__name__}: {err}")
            return None
        if not isinstance(table, PartitionAssignment):
            self._report(f"{describe(table)} is not a partition_assignment table")
            return None
        self._problem = None
        before = self._seen
        if before is not None and (before[0].version, before[1]) == (table.version, checksum):
            return None
        self._seen = (table, checksum)
        self._assignor.table_seen = f"v{table.version} {checksum[-12:]}"
        was = "" if before is None else f" (was v{before[0].version})"
        return f"routeplan {table.stream} v{table.version}{was}"

    def _report(self, what: str) -> None:
        if what != self._problem:
            log.warning("routeplan: %s; no rebalance asked for", what)
            self._problem = what


def stranded_join(consumer: Any) -> bool:
    """Whether kafka-python 3.0 left a finished JoinGroup/SyncGroup unapplied on ``consumer``.

    Its ``join_group_async`` keeps an in-flight join task across ``poll`` calls, but only
    collects it while ``need_rejoin()`` is True. A leader that rejoined because the topic's
    metadata changed (its ``_assignment_snapshot`` differed from ``_metadata_snapshot``) makes
    them equal again when it performs the assignment; should its ``poll(timeout_ms=…)`` end
    before the SyncGroup answer, the next poll sees ``need_rejoin()`` False and never applies
    the answer: the member holds no partitions, and the group, stable, never rebalances again.
    Seen on a group whose first rebalance ran before the leader had the topic's metadata. True
    when the coordinator has a done join task and needs no rejoin (private attributes: False for
    a kafka-python without them)."""
    coordinator = getattr(consumer, "_coordinator", None)
    task = getattr(coordinator, "_join_task", None)
    if task is None or not getattr(task, "is_done", False):
        return False
    need_rejoin = getattr(coordinator, "need_rejoin", None)
    return need_rejoin is not None and not need_rejoin()


def request_rejoin(consumer: Any) -> None:
    """Make a kafka-python ``KafkaConsumer`` rejoin its group at its next ``poll``."""
    rejoin = getattr(getattr(consumer, "_coordinator", None), "request_rejoin", None)
    if rejoin is None:
        raise TypeError(
            f"{type(consumer).__name__} has no _coordinator.request_rejoin(): the Rebalancer "
            "drives a kafka-python 3.x KafkaConsumer"
        )
    rejoin()
