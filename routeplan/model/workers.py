"""Workers: the operator instances or consumers a stream is spread over."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.model.names import check_name

WORKER_STATES = ("active", "draining")


@dataclass(frozen=True)
class Worker:
    """One worker (operator instance / consumer). ``capacity`` is relative or msgs/s; ``rack``
    the rack (or availability zone) it runs in, a name by the rule of ``names`` (None: unknown),
    what a rack-aware partition plan matches with the racks of a partition's replicas
    (KIP-881)."""

    name: str
    capacity: float = 1.0
    state: str = "active"
    rack: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"worker name must be a non-empty string, got {self.name!r}")
        if not np.isfinite(self.capacity) or self.capacity <= 0:
            raise ValueError(f"worker {self.name}: capacity must be > 0, got {self.capacity}")
        if self.state not in WORKER_STATES:
            raise ValueError(f"worker {self.name}: state must be one of {WORKER_STATES}")
        if self.rack is not None:
            check_name(self.rack, f"worker {self.name}: rack")


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
        """From ``{"worker", "capacity", "state", "rack"?}`` records
        (schemas/worker.schema.json); ``rack`` absent or null: unknown."""
        return cls(
            tuple(
                Worker(
                    str(r["worker"]),
                    float(r.get("capacity", 1.0)),
                    r.get("state", "active"),
                    r.get("rack"),
                )
                for r in records
            )
        )

    def to_records(self) -> list[dict[str, Any]]:
        """The records ``from_records`` reads; ``rack`` only when known, so a document of
        workers without racks (and its checksum) is what it was before racks existed."""
        return [
            {"worker": w.name, "capacity": w.capacity, "state": w.state}
            | ({} if w.rack is None else {"rack": w.rack})
            for w in self.items
        ]

    def __len__(self) -> int:
        return len(self.items)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.items)

    @property
    def active(self) -> tuple[Worker, ...]:
        return tuple(w for w in self.items if w.state == "active")

    @property
    def racks(self) -> tuple[str | None, ...]:
        """Each worker's rack (None: unknown), in the workers' order."""
        return tuple(w.rack for w in self.items)

    @property
    def capacities(self) -> np.ndarray:
        return np.array([w.capacity for w in self.items], dtype=float)

    @property
    def is_active(self) -> np.ndarray:
        return np.array([w.state == "active" for w in self.items], dtype=bool)

    def index(self) -> dict[str, int]:
        return {w.name: i for i, w in enumerate(self.items)}

    def routes_like(self, other: Workers, capacity_tolerance: float = 0.0) -> bool:
        """Whether ``other`` routes as these workers do: the same names in the same order, the
        same states and racks, and each capacity within ``capacity_tolerance`` of ours relative
        to the larger of the two (``|a - b| <= tolerance * max(a, b)``; 0: equal). Capacities learnt
        from the logs move by a little every night; within the tolerance they are the same."""
        if len(self.items) != len(other.items):
            return False
        return all(
            a.name == b.name
            and a.state == b.state
            and a.rack == b.rack
            and abs(a.capacity - b.capacity) <= capacity_tolerance * max(a.capacity, b.capacity)
            for a, b in zip(self.items, other.items, strict=True)
        )
