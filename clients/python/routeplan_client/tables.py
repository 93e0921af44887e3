"""The two kinds of published table, as a producer or consumer reads them.

* ``RoutingTable`` (``kind = "key_routing"``): ``key_group(key)`` picks
  ``key_group_worker[group]`` unless the key has a ``hot_keys`` entry (a split key), whose
  messages go to the listed worker this producer has loaded least relative to its capacity
  (``Router``); the weights are the planner's intended shares and break ties.
* ``PartitionAssignment`` (``kind = "partition_assignment"``): which consumer of a group reads
  each partition (``Assignment``, the Kafka assignors in ``routeplan_client.kafka``).

``table_from_document`` checks what routing depends on — the kind, the hash, the key groups and
the workers they name, the hot keys' weights, the partitions and their consumers, names by the
name rule — and the checksum (``jcs-sha256:``: SHA-256 of the RFC 8785 form of the document
without ``checksum``, ``routeplan_client.jcs``). Fields the client does not route by
(``predicted``, ``planning_load``, …) are kept in ``document`` and not checked: the publisher
validated the whole document against its JSON schema, and a newer publisher may add some.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Union

from routeplan_client.hashing import HASH_FUNCTION, MAX_NUM_KEY_GROUPS
from routeplan_client.jcs import canonical_json
from routeplan_client.names import check_name

KINDS = ("key_routing", "partition_assignment")
WORKER_STATES = ("active", "draining")
CHECKSUM_PREFIX = "jcs-sha256:"  # what every document is published with
LEGACY_CHECKSUM_PREFIX = "sha256:"  # documents published before: Python's own JSON spelling


@dataclass(frozen=True)
class Worker:
    """A worker (or a group's consumer) as a table lists it."""

    name: str
    capacity: float = 1.0
    state: str = "active"
    rack: str | None = None  # where it runs (a rack or zone), when the plan knows

    @classmethod
    def from_record(cls, record: Any) -> Worker:
        if not isinstance(record, Mapping):
            raise ValueError(f"a worker record is an object, got {record!r:.60}")
        name = check_name(record.get("worker"), "worker")
        capacity = record.get("capacity", 1.0)
        if isinstance(capacity, bool) or not isinstance(capacity, (int, float)):
            raise ValueError(f"worker {name}: capacity must be a number, got {capacity!r}")
        if not 0 < capacity < float("inf"):
            raise ValueError(f"worker {name}: capacity must be > 0, got {capacity}")
        state = record.get("state", "active")
        if state not in WORKER_STATES:
            raise ValueError(f"worker {name}: state must be one of {WORKER_STATES}, got {state!r}")
        rack = record.get("rack")
        if rack is not None and not (isinstance(rack, str) and rack):
            raise ValueError(f"worker {name}: rack must be a non-empty string, got {rack!r}")
        return cls(name, float(capacity), state, rack)


def _workers(records: Any, what: str) -> tuple[Worker, ...]:
    if not isinstance(records, list) or not records:
        raise ValueError(f"{what} must be a non-empty list")
    workers = tuple(Worker.from_record(r) for r in records)
    names = [w.name for w in workers]
    if len(set(names)) != len(names):
        twice = sorted(n for n in set(names) if names.count(n) > 1)
        raise ValueError(f"{what}: a name is listed twice: {twice[:5]}")
    if not any(w.state == "active" for w in workers):
        raise ValueError(f"{what}: at least one must be active")
    return workers


@dataclass(frozen=True, eq=False)
class _Table:
    stream: str
    version: int | None
    checksum: str
    document: Mapping[str, Any] = field(repr=False)

    @property
    def kind(self) -> str:
        return str(self.document["kind"])

    @property
    def strategy(self) -> str:
        return str(self.document.get("strategy", ""))

    @property
    def parent_version(self) -> int | None:
        return self.document.get("parent_version")

    @property
    def created_at(self) -> str | None:
        return self.document.get("created_at")

    def same_version(self, other: object) -> bool:
        """The same published version of the same stream: same stream, version and checksum."""
        return (
            isinstance(other, _Table)
            and self.version is not None
            and (self.stream, self.version, self.checksum)
            == (other.stream, other.version, other.checksum)
        )


@dataclass(frozen=True, eq=False)
class RoutingTable(_Table):
    """Key groups and split keys onto workers (``key_routing``)."""

    workers: tuple[Worker, ...] = ()
    key_group_worker: tuple[str, ...] = ()
    hot_keys: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    hash_seed: int = 0

    @property
    def num_key_groups(self) -> int:
        return len(self.key_group_worker)

    @property
    def worker_names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.workers)


@dataclass(frozen=True, eq=False)
class PartitionAssignment(_Table):
    """Partitions onto the consumers of a group (``partition_assignment``)."""

    consumers: tuple[Worker, ...] = ()
    partition_consumer: Mapping[int, str] = field(default_factory=dict)

    @property
    def num_partitions(self) -> int:
        return len(self.partition_consumer)


Table = Union[RoutingTable, PartitionAssignment]


def table_from_document(doc: Any, verify: bool = True) -> Table:
    """The table in ``doc``; ``ValueError`` saying what is wrong. With ``verify`` the checksum
    must match the document as stored (``verify_checksum``)."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"a routing table is a JSON object, got {type(doc).__name__}")
    try:
        return _parse(doc, verify)
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"routing table {doc.get('stream')!r} v{doc.get('version')}: malformed: "
            f"{type(err).__name__}: {err}"
        ) from None


def _parse(doc: Mapping[str, Any], verify: bool) -> Table:
    stream = check_name(doc["stream"], "stream")
    version = doc.get("version")
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 1
    ):
        raise ValueError(f"{stream}: version must be an integer >= 1, got {version!r}")
    common = {
        "stream": stream,
        "version": version,
        "checksum": str(doc.get("checksum", "")),
        "document": MappingProxyType(dict(doc)),
    }
    kind = doc.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{stream} v{version}: kind must be one of {KINDS}, got {kind!r}")
    table = _routing(doc, common) if kind == "key_routing" else _assignment(doc, common)
    if verify:  # after the shape: a missing field is named as such, not as a checksum mismatch
        verify_checksum(doc)
    return table


def _routing(doc: Mapping[str, Any], common: dict) -> RoutingTable:
    where = f"{common['stream']} v{common['version']}"
    if doc["hash"]["function"] != HASH_FUNCTION:
        raise ValueError(f"{where}: unsupported hash function {doc['hash']['function']!r}")
    seed = doc["hash"]["seed"]
    if not (
        isinstance(seed, (int, float))
        and not isinstance(seed, bool)
        and float(seed).is_integer()
        and 0 <= seed < 2**32
    ):
        raise ValueError(f"{where}: hash.seed must be an integer in [0, 2^32), got {seed!r}")
    n = doc["num_key_groups"]
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_NUM_KEY_GROUPS:
        raise ValueError(f"{where}: num_key_groups must be in [1, 2^24], got {n!r}")
    groups = doc["key_group_worker"]
    if not isinstance(groups, list) or len(groups) != n:
        raise ValueError(f"{where}: key_group_worker must have num_key_groups entries")
    if doc.get("partition_consumer") or "consumers" in doc:
        raise ValueError(
            f"{where}: partition_consumer and consumers belong to partition_assignment tables"
        )
    workers = _workers(doc["workers"], f"{where}: workers")
    known = {w.name for w in workers}
    unknown = set(groups) - known
    hot: dict = {}
    for entry in doc.get("hot_keys", []):
        key, targets = entry["key"], entry["workers"]
        if not isinstance(key, str):
            raise ValueError(f"{where}: a hot key must be a string, got {key!r:.60}")
        if key in hot:
            raise ValueError(f"{where}: a key is listed twice in hot_keys: {key!r:.60}")
        if not isinstance(targets, list) or not targets:
            raise ValueError(f"{where}: hot key {key!r:.60} has no workers")
        pairs = tuple((t["worker"], t["weight"]) for t in targets)
        if any(
            isinstance(x, bool) or not isinstance(x, (int, float)) or not x > 0 for _, x in pairs
        ):
            raise ValueError(f"{where}: hot key {key!r:.60}: weights must be numbers > 0")
        unknown |= {w for w, _ in pairs} - known
        hot[key] = tuple((str(w), float(x)) for w, x in pairs)
    if unknown:
        shown = sorted(map(str, unknown))[:5]
        raise ValueError(f"{where}: routes to workers it does not list: {shown}")
    return RoutingTable(
        **common,
        workers=workers,
        key_group_worker=tuple(groups),
        hot_keys=MappingProxyType(hot),
        hash_seed=int(seed),
    )


def _assignment(doc: Mapping[str, Any], common: dict) -> PartitionAssignment:
    where = f"{common['stream']} v{common['version']}"
    # documents published before the kinds had their own shapes name the consumers "workers"
    consumers = _workers(
        doc["consumers"] if "consumers" in doc else doc["workers"], f"{where}: consumers"
    )
    raw = doc["partition_consumer"]
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError(f"{where}: partition_consumer must be a non-empty object")
    partitions = {}
    for text, consumer in raw.items():
        if not (isinstance(text, str) and text.isdigit() and text.isascii()):
            raise ValueError(f"{where}: partition {text!r:.30} is not a number >= 0")
        partitions[int(text)] = consumer
    unknown = set(partitions.values()) - {c.name for c in consumers}
    if unknown:
        shown = sorted(map(str, unknown))[:5]
        raise ValueError(f"{where}: assigns partitions to consumers it does not list: {shown}")
    return PartitionAssignment(
        **common,
        consumers=consumers,
        partition_consumer=MappingProxyType(dict(sorted(partitions.items()))),
    )


def checksum(doc: Mapping[str, Any], prefix: str = CHECKSUM_PREFIX) -> str:
    """The checksum of the document without its ``checksum`` field.

    ``jcs-sha256:<hex>`` (``CHECKSUM_PREFIX``): SHA-256 of the RFC 8785 canonical JSON
    (``routeplan_client.jcs``), which any language reproduces (the routing spec).
    ``sha256:<hex>`` (``LEGACY_CHECKSUM_PREFIX``, documents published before): SHA-256 of
    ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, whose number
    spelling is Python's; still verified for the documents that carry it, never written.
    """
    body = {k: v for k, v in doc.items() if k != "checksum"}
    if prefix == CHECKSUM_PREFIX:
        return CHECKSUM_PREFIX + hashlib.sha256(canonical_json(body)).hexdigest()
    if prefix == LEGACY_CHECKSUM_PREFIX:
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return LEGACY_CHECKSUM_PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    raise ValueError(f"unknown checksum scheme {prefix!r}")


def verify_checksum(doc: Mapping[str, Any]) -> None:
    """ValueError unless ``doc["checksum"]`` is its checksum, by the scheme its prefix names
    (``jcs-sha256:``, or ``sha256:`` for a document published before)."""
    stated = doc.get("checksum")
    prefix = LEGACY_CHECKSUM_PREFIX if str(stated).startswith("sha256:") else CHECKSUM_PREFIX
    try:
        expected = checksum(doc, prefix)
    except (ValueError, TypeError, OverflowError) as err:
        raise ValueError(
            f"routing table {doc.get('stream')} v{doc.get('version')}: cannot canonicalise: {err}"
        ) from None
    if stated != expected:
        raise ValueError(
            f"routing table {doc.get('stream')} v{doc.get('version')}: checksum mismatch "
            f"({stated} != {expected})"
        )
