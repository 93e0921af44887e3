"""The routing table: the document producers route by (DESIGN.md "Data contracts").

A producer needs nothing but this document and Murmur3: ``key_group(key)`` picks
``key_group_worker[group]`` unless the key has a ``hot_keys`` entry (a split key), in which case
each message goes to the listed worker the producer has loaded least relative to its capacity
(paper 003 §3.2, see ``routeplan.producers.client.Router``); the weights are the planner's intended
shares and break ties. A ``partition_assignment`` table instead maps each
partition to the consumer that reads it (``partition_consumer``; its key groups may be empty).
The JSON form is ``schemas/routing_table.schema.json``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from routeplan.model.hashing import DEFAULT_SEED, HASH_FUNCTION
from routeplan.model.loads import LoadSnapshot
from routeplan.model.workers import Workers

KINDS = ("key_routing", "partition_assignment")


@dataclass(frozen=True)
class RoutingTable:
    """One routing table; ``version`` and friends are set when it is published."""

    stream: str
    strategy: str
    workers: Workers
    key_group_worker: tuple[str, ...]
    hot_keys: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    strategy_state: Mapping[str, Any] = field(default_factory=dict)
    hash_seed: int = DEFAULT_SEED
    kind: str = "key_routing"
    partition_consumer: Mapping[int, str] = field(default_factory=dict)
    predicted: Mapping[str, float] = field(default_factory=dict)
    planning_load: Mapping[str, Any] = field(default_factory=dict)
    version: int | None = None
    parent_version: int | None = None
    created_at: str | None = None
    reason: str | None = None
    restored_version: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_group_worker", tuple(self.key_group_worker))
        hot = {k: tuple((str(w), float(x)) for w, x in v) for k, v in dict(self.hot_keys).items()}
        object.__setattr__(self, "hot_keys", MappingProxyType(hot))
        partitions = {int(p): str(c) for p, c in sorted(dict(self.partition_consumer).items())}
        object.__setattr__(self, "partition_consumer", MappingProxyType(partitions))
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "key_routing" and not self.key_group_worker:
            raise ValueError("a routing table needs at least one key group")
        if self.kind == "key_routing" and partitions:
            raise ValueError("partition_consumer belongs to partition_assignment tables")
        if self.kind == "partition_assignment" and not partitions:
            raise ValueError("a partition_assignment table needs at least one partition")
        if any(p < 0 for p in partitions):
            raise ValueError("partitions must be >= 0")
        known = set(self.workers.names)
        unknown = (set(self.key_group_worker) | set(partitions.values())) - known
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

    def content(self) -> dict[str, Any]:
        """What the routing *does*: two tables with equal content route every key (and assign
        every partition) alike."""
        content = {
            "kind": self.kind,
            "hash": {"function": HASH_FUNCTION, "seed": self.hash_seed},
            "num_key_groups": self.num_key_groups,
            "workers": self.workers.to_records(),
            "key_group_worker": list(self.key_group_worker),
            "hot_keys": [
                {"key": k, "workers": [{"worker": w, "weight": x} for w, x in v]}
                for k, v in sorted(self.hot_keys.items())
            ],
        }
        if self.kind == "partition_assignment":
            content["partition_consumer"] = {str(p): c for p, c in self.partition_consumer.items()}
        return content

    def same_routing(self, other: RoutingTable | None) -> bool:
        return other is not None and self.content() == other.content()

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
        if self.reason is not None:
            doc["reason"] = self.reason
        if self.restored_version is not None:
            doc["restored_version"] = self.restored_version
        doc["checksum"] = checksum(doc)
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], verify: bool = True) -> RoutingTable:
        """Parse a document; with ``verify`` the checksum must match its content."""
        if verify:
            expected = checksum(doc)
            if doc.get("checksum") != expected:
                raise ValueError(
                    f"routing table {doc.get('stream')} v{doc.get('version')}: checksum mismatch "
                    f"({doc.get('checksum')} != {expected})"
                )
        if doc["hash"]["function"] != HASH_FUNCTION:
            raise ValueError(f"unsupported hash function {doc['hash']['function']!r}")
        if len(doc["key_group_worker"]) != doc["num_key_groups"]:
            raise ValueError("key_group_worker must have num_key_groups entries")
        return cls(
            stream=doc["stream"],
            strategy=doc["strategy"],
            workers=Workers.from_records(doc["workers"]),
            key_group_worker=tuple(doc["key_group_worker"]),
            hot_keys={
                h["key"]: tuple((t["worker"], t["weight"]) for t in h["workers"])
                for h in doc.get("hot_keys", [])
            },
            params=doc.get("params", {}),
            strategy_state=doc.get("strategy_state", {}),
            hash_seed=int(doc["hash"]["seed"]),
            kind=doc["kind"],
            partition_consumer={int(p): c for p, c in doc.get("partition_consumer", {}).items()},
            predicted=doc.get("predicted", {}),
            planning_load=doc.get("planning_load", {}),
            version=doc.get("version"),
            parent_version=doc.get("parent_version"),
            created_at=doc.get("created_at"),
            reason=doc.get("reason"),
            restored_version=doc.get("restored_version"),
        )

    def published(
        self,
        version: int,
        parent_version: int | None,
        created_at: str,
        reason: str | None = None,
        restored_version: int | None = None,
    ) -> RoutingTable:
        return replace(
            self,
            version=version,
            parent_version=parent_version,
            created_at=created_at,
            reason=reason,
            restored_version=restored_version,
        )

    def planning_snapshot(self) -> LoadSnapshot | None:
        """The loads this table was planned on (``planning_load``), or None if it has none."""
        if not self.planning_load:
            return None
        partitions = self.planning_load.get("partition_load")
        return LoadSnapshot(
            stream=self.stream,
            key_group_load=np.asarray(self.planning_load["key_group_load"], dtype=float),
            hot_key_load=self.planning_load.get("hot_key_load", {}),
            partition_load=None if partitions is None else np.asarray(partitions, dtype=float),
            hash_seed=self.hash_seed,
        )


def planning_load(snapshot: LoadSnapshot) -> dict[str, Any]:
    """The part of a snapshot a table keeps so that diffs and audits can weigh its moves."""
    doc: dict[str, Any] = {
        "key_group_load": snapshot.key_group_load.tolist(),
        "hot_key_load": dict(sorted(snapshot.hot_key_load.items())),
    }
    if snapshot.partition_load is not None:
        doc["partition_load"] = snapshot.partition_load.tolist()
    return doc


def checksum(doc: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of the document without its ``checksum`` field."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
