"""Plain data the strategies take and return: loads, workers, budget, moves, plan."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from routeplan.hashing import DEFAULT_SEED, key_group

if TYPE_CHECKING:
    from routeplan.routing_table import RoutingTable

WORKER_STATES = ("active", "draining")


@dataclass(frozen=True)
class Worker:
    """One worker (operator instance / consumer). ``capacity`` is relative or msgs/s."""

    name: str
    capacity: float = 1.0
    state: str = "active"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"worker name must be a non-empty string, got {self.name!r}")
        if not np.isfinite(self.capacity) or self.capacity <= 0:
            raise ValueError(f"worker {self.name}: capacity must be > 0, got {self.capacity}")
        if self.state not in WORKER_STATES:
            raise ValueError(f"worker {self.name}: state must be one of {WORKER_STATES}")


@dataclass(frozen=True)
class Workers:
    """The workers of one stream, in a fixed order; at least one is active."""

    items: tuple[Worker, ...]

    def __post_init__(self) -> None:
        names = [w.name for w in self.items]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"duplicate worker names: {dup}")
        if not any(w.state == "active" for w in self.items):
            raise ValueError("at least one worker must be active")

    @classmethod
    def homogeneous(cls, n: int, prefix: str = "w") -> Workers:
        """``n`` active workers of capacity 1 named ``w0 … w{n-1}``."""
        return cls(tuple(Worker(f"{prefix}{i}") for i in range(n)))

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> Workers:
        """From ``{"worker", "capacity", "state"}`` records (schemas/worker.schema.json)."""
        return cls(
            tuple(
                Worker(str(r["worker"]), float(r.get("capacity", 1.0)), r.get("state", "active"))
                for r in records
            )
        )

    def to_records(self) -> list[dict[str, Any]]:
        return [{"worker": w.name, "capacity": w.capacity, "state": w.state} for w in self.items]

    def __len__(self) -> int:
        return len(self.items)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.items)

    @property
    def active(self) -> tuple[Worker, ...]:
        return tuple(w for w in self.items if w.state == "active")

    @property
    def capacities(self) -> np.ndarray:
        return np.array([w.capacity for w in self.items], dtype=float)

    @property
    def is_active(self) -> np.ndarray:
        return np.array([w.state == "active" for w in self.items], dtype=bool)

    def index(self) -> dict[str, int]:
        return {w.name: i for i, w in enumerate(self.items)}


def _frozen(mapping: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class LoadSnapshot:
    """Aggregated load of one stream in one window: what a planner sees, never raw events.

    ``key_group_load[g]`` is the whole load of key group ``g`` (messages, bytes or cost), hot keys
    included; ``hot_key_load`` lists heavy hitters, each already counted inside its key group;
    ``key_group_keys[g]`` (optional) is the number of distinct keys in group ``g``;
    ``partition_load[p]`` (optional) is the load (write rate) of partition ``p``;
    ``key_group_resources[r][g]`` (optional) is group ``g``'s use of another resource ``r`` (e.g.
    bytes, cost_ms). ``key_group_flow`` (optional, paper 004 §4.3.2) lists the messages between key
    groups as rows ``(upstream, downstream, messages)``: an index below ``num_key_groups`` is a
    group of this snapshot, ``num_key_groups + j`` a key group of another stream that sits on
    worker ``flow_anchors[j]`` (placed by that stream's table).
    """

    stream: str
    key_group_load: np.ndarray
    hot_key_load: Mapping[str, float] = field(default_factory=dict)
    key_group_keys: np.ndarray | None = None
    partition_load: np.ndarray | None = None
    hash_seed: int = DEFAULT_SEED
    key_group_resources: Mapping[str, np.ndarray] = field(default_factory=dict)
    key_group_flow: np.ndarray | None = None
    flow_anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        load = np.asarray(self.key_group_load, dtype=float)
        if load.ndim != 1 or load.size == 0:
            raise ValueError("key_group_load must be a non-empty 1-d array")
        if not np.all(np.isfinite(load)) or np.any(load < 0):
            raise ValueError("key_group_load must be finite and >= 0")
        object.__setattr__(self, "key_group_load", load)
        hot = _frozen(self.hot_key_load)
        bad = [k for k, v in hot.items() if not np.isfinite(v) or v < 0]
        if bad:
            raise ValueError(f"hot key loads must be finite and >= 0: {bad[:5]}")
        object.__setattr__(self, "hot_key_load", hot)
        if self.key_group_keys is not None:
            keys = np.asarray(self.key_group_keys, dtype=float)
            if keys.shape != load.shape:
                raise ValueError("key_group_keys must have one entry per key group")
            object.__setattr__(self, "key_group_keys", keys)
        if self.partition_load is not None:
            partitions = np.asarray(self.partition_load, dtype=float)
            if (
                partitions.ndim != 1
                or np.any(partitions < 0)
                or not np.all(np.isfinite(partitions))
            ):
                raise ValueError("partition_load must be a 1-d array of finite loads >= 0")
            object.__setattr__(self, "partition_load", partitions)
        resources = {}
        for name, usage in dict(self.key_group_resources).items():
            usage = np.asarray(usage, dtype=float)
            if usage.shape != load.shape or not np.all(np.isfinite(usage)) or np.any(usage < 0):
                raise ValueError(f"resource {name!r}: one finite value >= 0 per key group")
            resources[name] = usage
        object.__setattr__(self, "key_group_resources", MappingProxyType(resources))
        object.__setattr__(self, "flow_anchors", tuple(str(w) for w in self.flow_anchors))
        if self.key_group_flow is not None:
            object.__setattr__(self, "key_group_flow", self._checked_flow(load.size))

    def _checked_flow(self, groups: int) -> np.ndarray:
        flow = np.asarray(self.key_group_flow, dtype=float)
        flow = flow.reshape(0, 3) if flow.size == 0 else flow
        if flow.ndim != 2 or flow.shape[1] != 3:
            raise ValueError("key_group_flow must have rows (upstream, downstream, messages)")
        nodes = groups + len(self.flow_anchors)
        ends = flow[:, :2]
        if not np.all(np.isfinite(flow)) or np.any(flow[:, 2] < 0):
            raise ValueError("key_group_flow: messages must be finite and >= 0")
        if np.any(ends != np.round(ends)) or np.any(ends < 0) or np.any(ends >= nodes):
            raise ValueError(f"key_group_flow: endpoints must be integers in [0, {nodes})")
        if np.any(np.all(ends >= groups, axis=1)):
            raise ValueError("key_group_flow: an edge needs one end among this stream's groups")
        return flow

    @property
    def num_key_groups(self) -> int:
        return int(self.key_group_load.size)

    @property
    def total(self) -> float:
        return float(self.key_group_load.sum())

    def hot_key_group(self, key: str) -> int:
        return key_group(key, self.num_key_groups, self.hash_seed)

    def residual_key_group_load(self, hot_keys: Iterable[str]) -> np.ndarray:
        """Group loads once the given hot keys are taken out (they are routed on their own)."""
        residual = self.key_group_load.copy()
        for key in hot_keys:
            residual[self.hot_key_group(key)] -= self.hot_key_load[key]
        return np.clip(residual, 0.0, None)


@dataclass(frozen=True)
class Budget:
    """Limits on one plan: moves of key groups / hot keys, migrated load share, solver time."""

    max_moves: int | None = None
    max_migrated_load_share: float | None = None
    time_limit_s: float = 30.0


@dataclass(frozen=True)
class Move:
    """One key group (or one hot key) whose workers change between two tables."""

    unit: str  # "key_group:<g>", "key:<key>" or "partition:<p>"
    from_workers: tuple[str, ...]
    to_workers: tuple[str, ...]
    load: float


@dataclass(frozen=True)
class Plan:
    """A strategy's answer: the new table, the moves against the current one, predicted metrics."""

    table: RoutingTable
    moves: tuple[Move, ...]
    metrics: Mapping[str, float]
