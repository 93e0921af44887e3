"""The published tables: what producers route by and consumers read (docs/architecture.md).

Two kinds, one proposal shape (as Cruise Control has one proposal object for every goal), each
with its own routing:

* ``RoutingTable`` (``kind = "key_routing"``): a producer needs nothing but this document and
  Murmur3: ``key_group(key)`` picks ``key_group_worker[group]`` unless the key has a
  ``hot_keys`` entry (a hot key, its messages split), in which case each message goes to the
  listed worker the producer has loaded least relative to its capacity (paper 003 §3.2, see
  ``routeplan_client.Router``); the weights are the planner's intended shares and break ties.
* ``PartitionAssignment`` (``kind = "partition_assignment"``): which consumer of the group
  (``consumers``) reads each partition (``partition_consumer``), as Kafka's assignors answer
  (paper 002; ``routeplan_client.Assignment``).

What both share is ``Table``: the stream, the strategy and its parameters and state, the
predicted metrics and planning loads, the version fields set when it is published, the
canonical ``content`` (what the table routes), the JSON document with its checksum and the way
back (``table_from_document``, which picks the kind from the document). The JSON form is
``schemas/routing_table.schema.json``.

Partition documents published before the kinds had their own shapes carry the key-routing fields
empty (``hash``, ``num_key_groups`` 0, ``key_group_worker`` and ``hot_keys`` []) and list their
consumers as ``workers``; they are still read, their checksum verified over the document as
stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar, Self

import numpy as np

from routeplan.model.hashing import DEFAULT_SEED, HASH_FUNCTION, MAX_NUM_KEY_GROUPS
from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.workers import Workers
from routeplan_client.jcs import canonical_json
from routeplan_client.tables import (
    CHECKSUM_PREFIX,
    LEGACY_CHECKSUM_PREFIX,
    checksum,
    verify_checksum,
)

KINDS = ("key_routing", "partition_assignment")
# what a partition_assignment table keeps of its loads (``planning_load``)
PARTITION_PLANNING_LOAD = frozenset({"partition_load", "partition_racks"})


@dataclass(frozen=True)
class Table:
    """What a table of either kind has; ``version`` and friends are set when it is published.

    A subclass declares its ``kind`` and what it routes (``routing``: the kind's document
    fields); ``content``, ``same_routing``, ``to_document``, ``published`` and
    ``from_document`` are the same for both kinds."""

    kind: ClassVar[str] = ""

    stream: str
    strategy: str
    params: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    strategy_state: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    predicted: Mapping[str, float] = field(default_factory=dict, kw_only=True)
    planning_load: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    # how it was planned (window, load_metric, capacities, history_days): its outcomes are judged
    # the same way
    planned: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    version: int | None = field(default=None, kw_only=True)
    parent_version: int | None = field(default=None, kw_only=True)
    created_at: str | None = field(default=None, kw_only=True)
    reason: str | None = field(default=None, kw_only=True)
    restored_version: int | None = field(default=None, kw_only=True)

    def routing(self) -> dict[str, Any]:
        """The kind's own document fields: what it routes."""
        raise NotImplementedError

    def content(self) -> dict[str, Any]:
        """What the table *does*: two tables with equal content route every key (or assign every
        partition) alike."""
        return {"kind": self.kind, **self.routing()}

    def same_routing(self, other: Table | None, capacity_tolerance: float = 0.0) -> bool:
        """Whether ``other`` routes every key (assigns every partition) as this table does:
        the same ``fingerprint``, and the workers' capacities within ``capacity_tolerance``
        (``Workers.routes_like``; 0: the same content)."""
        return (
            other is not None
            and self.fingerprint() == other.fingerprint()
            and self.workers_of().routes_like(other.workers_of(), capacity_tolerance)
        )

    def workers_of(self) -> Workers:
        """What the table routes to: a key-routing table's workers, an assignment's consumers."""
        raise NotImplementedError

    def fingerprint(self) -> str:
        """``content`` without the workers' capacities, hashed: ``jcs-sha256:<hex>`` of its
        canonical JSON. Two tables with the same fingerprint send every key (partition) to the
        same worker names in the same states; only capacities may differ (``same_routing``
        weighs them). The loop's state remembers a routing by it (a rolled-back content)."""
        content = self.content()
        for field_name in ("workers", "consumers"):
            if field_name in content:
                content[field_name] = [
                    {"worker": r["worker"], "state": r["state"]} for r in content[field_name]
                ]
        return CHECKSUM_PREFIX + hashlib.sha256(canonical_json(content)).hexdigest()

    def to_document(self) -> dict[str, Any]:
        """The JSON document, with its checksum."""
        doc: dict[str, Any] = {
            "stream": self.stream,
            "version": self.version,
            "parent_version": self.parent_version,
            "created_at": self.created_at,
            "strategy": self.strategy,
            "params": dict(self.params),
            **self.content(),
            "strategy_state": dict(self.strategy_state),
            "predicted": dict(self.predicted),
        }
        if self.planning_load:
            doc["planning_load"] = dict(self.planning_load)
        if self.planned:
            doc["planned"] = dict(self.planned)
        if self.reason is not None:
            doc["reason"] = self.reason
        if self.restored_version is not None:
            doc["restored_version"] = self.restored_version
        doc["checksum"] = checksum(doc)
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], verify: bool = True) -> Self:
        """Parse a document of the kind it names (``Table.from_document``: either kind; a
        subclass: its own kind only); with ``verify`` the checksum must match the document as
        stored (``verify_checksum``: by the scheme its prefix names)."""
        if verify:
            verify_checksum(doc)
        kind = doc.get("kind")
        if kind not in _BY_KIND:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        table_class = _BY_KIND[kind]
        if cls is not Table and table_class is not cls:
            raise ValueError(
                f"{doc.get('stream')} v{doc.get('version')} is a {kind} table, not a {cls.kind} "
                "one (routeplan.model.table.table_from_document reads either kind)"
            )
        common = {
            "stream": doc["stream"],
            "strategy": doc["strategy"],
            "params": doc.get("params", {}),
            "strategy_state": doc.get("strategy_state", {}),
            "predicted": doc.get("predicted", {}),
            "planning_load": doc.get("planning_load", {}),
            "planned": doc.get("planned", {}),
            "version": doc.get("version"),
            "parent_version": doc.get("parent_version"),
            "created_at": doc.get("created_at"),
            "reason": doc.get("reason"),
            "restored_version": doc.get("restored_version"),
        }
        return table_class._parse(doc, common)  # type: ignore[return-value]

    @classmethod
    def _parse(cls, doc: Mapping[str, Any], common: dict[str, Any]) -> Table:
        raise NotImplementedError

    def published(
        self,
        version: int,
        parent_version: int | None,
        created_at: str,
        reason: str | None = None,
        restored_version: int | None = None,
    ) -> Self:
        return replace(
            self,
            version=version,
            parent_version=parent_version,
            created_at=created_at,
            reason=reason,
            restored_version=restored_version,
        )

    def planning_snapshot(self) -> Loads | None:
        """The loads this table was planned on (``planning_load``), or None if it has none."""
        raise NotImplementedError


@dataclass(frozen=True)
class RoutingTable(Table):
    """Key groups and hot keys onto workers (``key_routing``)."""

    kind: ClassVar[str] = "key_routing"

    workers: Workers
    key_group_worker: tuple[str, ...]
    hot_keys: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    hash_seed: int = field(default=DEFAULT_SEED, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_group_worker", tuple(self.key_group_worker))
        hot = {k: tuple((str(w), float(x)) for w, x in v) for k, v in dict(self.hot_keys).items()}
        object.__setattr__(self, "hot_keys", MappingProxyType(hot))
        if not self.key_group_worker:
            raise ValueError("a routing table needs at least one key group")
        known = set(self.workers.names)
        unknown = set(self.key_group_worker) - known
        for key, targets in hot.items():
            if not targets:
                raise ValueError(f"hot key {key!r} has no workers")
            if any(weight <= 0 for _, weight in targets):
                raise ValueError(f"hot key {key!r}: weights must be > 0")
            unknown |= {w for w, _ in targets} - known
        if unknown:
            raise ValueError(f"table routes to workers it does not list: {sorted(unknown)[:5]}")

    @property
    def num_key_groups(self) -> int:
        return len(self.key_group_worker)

    def workers_of(self) -> Workers:
        return self.workers

    def routing(self) -> dict[str, Any]:
        return {
            "hash": {"function": HASH_FUNCTION, "seed": self.hash_seed},
            "num_key_groups": self.num_key_groups,
            "workers": self.workers.to_records(),
            "key_group_worker": list(self.key_group_worker),
            "hot_keys": [
                {"key": k, "workers": [{"worker": w, "weight": x} for w, x in v]}
                for k, v in sorted(self.hot_keys.items())
            ],
        }

    @classmethod
    def _parse(cls, doc: Mapping[str, Any], common: dict[str, Any]) -> RoutingTable:
        if doc["hash"]["function"] != HASH_FUNCTION:
            raise ValueError(f"unsupported hash function {doc['hash']['function']!r}")
        seed = doc["hash"]["seed"]
        if not (isinstance(seed, int | float) and float(seed).is_integer() and 0 <= seed < 2**32):
            raise ValueError(f"hash.seed must be an integer in [0, 2^32), got {seed!r}")
        if not 1 <= doc["num_key_groups"] <= MAX_NUM_KEY_GROUPS:
            raise ValueError(f"num_key_groups must be in [1, 2^24], got {doc['num_key_groups']}")
        if len(doc["key_group_worker"]) != doc["num_key_groups"]:
            raise ValueError("key_group_worker must have num_key_groups entries")
        hot_keys = [h["key"] for h in doc.get("hot_keys", [])]
        if len(set(hot_keys)) != len(hot_keys):
            raise ValueError("a key is listed twice in hot_keys")
        if doc.get("partition_consumer"):
            raise ValueError("partition_consumer belongs to partition_assignment tables")
        return cls(
            workers=Workers.from_records(doc["workers"]),
            key_group_worker=tuple(doc["key_group_worker"]),
            hot_keys={
                h["key"]: tuple((t["worker"], t["weight"]) for t in h["workers"])
                for h in doc.get("hot_keys", [])
            },
            hash_seed=int(doc["hash"]["seed"]),
            **common,
        )

    def planning_snapshot(self) -> LoadSnapshot | None:
        if not self.planning_load or "key_group_load" not in self.planning_load:
            return None
        return LoadSnapshot(
            stream=self.stream,
            key_group_load=np.asarray(self.planning_load["key_group_load"], dtype=float),
            hot_key_load=self.planning_load.get("hot_key_load", {}),
            hash_seed=self.hash_seed,
        )


@dataclass(frozen=True)
class PartitionAssignment(Table):
    """Partitions onto the consumers of a group (``partition_assignment``, paper 002).

    ``consumers``: the consumers the assignment uses (name, capacity C̄); ``partition_consumer``:
    partition → the consumer that reads it, for every partition the plan covers."""

    kind: ClassVar[str] = "partition_assignment"

    consumers: Workers
    partition_consumer: Mapping[int, str]

    def __post_init__(self) -> None:
        if set(self.planning_load) - PARTITION_PLANNING_LOAD:  # an old document's key groups
            kept = {k: v for k, v in self.planning_load.items() if k in PARTITION_PLANNING_LOAD}
            object.__setattr__(self, "planning_load", kept)
        partitions = {int(p): str(c) for p, c in sorted(dict(self.partition_consumer).items())}
        object.__setattr__(self, "partition_consumer", MappingProxyType(partitions))
        if not partitions:
            raise ValueError("a partition_assignment table needs at least one partition")
        if any(p < 0 for p in partitions):
            raise ValueError("partitions must be >= 0")
        unknown = set(partitions.values()) - set(self.consumers.names)
        if unknown:
            raise ValueError(
                f"table assigns partitions to consumers it does not list: {sorted(unknown)[:5]}"
            )

    @property
    def num_partitions(self) -> int:
        return len(self.partition_consumer)

    def workers_of(self) -> Workers:
        return self.consumers

    def routing(self) -> dict[str, Any]:
        return {
            "consumers": self.consumers.to_records(),
            "partition_consumer": {str(p): c for p, c in self.partition_consumer.items()},
        }

    @classmethod
    def _parse(cls, doc: Mapping[str, Any], common: dict[str, Any]) -> PartitionAssignment:
        # documents published before the kinds had their own shapes name the consumers "workers"
        consumers = doc["consumers"] if "consumers" in doc else doc["workers"]
        return cls(
            consumers=Workers.from_records(consumers),
            partition_consumer={int(p): c for p, c in doc["partition_consumer"].items()},
            **common,
        )

    def planning_snapshot(self) -> PartitionLoad | None:
        if not self.planning_load or "partition_load" not in self.planning_load:
            return None
        rates = np.asarray(self.planning_load["partition_load"], dtype=float)
        racks = self.planning_load.get("partition_racks")
        return PartitionLoad(
            self.stream,
            rates,
            partition_racks=None if racks is None or len(racks) != rates.size else racks,
        )


_BY_KIND: dict[str, type[Table]] = {
    RoutingTable.kind: RoutingTable,
    PartitionAssignment.kind: PartitionAssignment,
}


def table_from_document(doc: Mapping[str, Any], verify: bool = True) -> Table:
    """The table of either kind in ``doc`` (``Table.from_document``)."""
    return Table.from_document(doc, verify)


def planning_load(loads: Loads) -> dict[str, Any]:
    """The part of the loads a table keeps so that diffs and audits can weigh its moves."""
    if isinstance(loads, PartitionLoad):
        kept: dict[str, Any] = {"partition_load": loads.partition_load.tolist()}
        if loads.partition_racks is not None:  # only when known: documents stay as they were
            kept["partition_racks"] = [list(r) for r in loads.partition_racks]
        return kept
    return {
        "key_group_load": loads.key_group_load.tolist(),
        "hot_key_load": dict(sorted(loads.hot_key_load.items())),
    }


__all__ = [
    "CHECKSUM_PREFIX",
    "KINDS",
    "LEGACY_CHECKSUM_PREFIX",
    "PartitionAssignment",
    "RoutingTable",
    "Table",
    "checksum",
    "planning_load",
    "table_from_document",
    "verify_checksum",
]
