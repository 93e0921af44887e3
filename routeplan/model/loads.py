"""The load of one stream in one window: what a planner sees, never raw events.

One value per kind of plan: ``LoadSnapshot`` (key groups and hot keys, for ``key_routing``
strategies) and ``PartitionLoad`` (partitions, for ``partition_assignment`` strategies);
``Loads`` is either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from routeplan.model.hashing import DEFAULT_SEED, key_group
from routeplan.model.names import check_name


def checked_windows(windows: np.ndarray | None, units: int) -> np.ndarray | None:
    """``windows`` as a float array of windows × ``units`` (finite, >= 0, at least one window),
    or None; ValueError otherwise."""
    if windows is None:
        return None
    loads = np.asarray(windows, dtype=float)
    if loads.ndim != 2 or loads.shape[0] == 0 or loads.shape[1] != units:
        raise ValueError(f"windows must be windows × {units} units, got shape {loads.shape}")
    if not np.all(np.isfinite(loads)) or np.any(loads < 0):
        raise ValueError("window loads must be finite and >= 0")
    return loads


def checked_partition_racks(
    racks: Iterable[Iterable[str]], partitions: int
) -> tuple[tuple[str, ...], ...]:
    """``racks`` as one tuple of replica racks per partition (leader first; empty: unknown);
    ValueError unless there are ``partitions`` of them, each of valid names (two replicas may
    share a rack: Kafka places them apart only when there are racks enough)."""
    if isinstance(racks, str | bytes):
        raise ValueError("partition_racks must list each partition's replica racks")
    found = tuple((r,) if isinstance(r, str) else tuple(r) for r in racks)
    if len(found) != partitions:
        raise ValueError(
            f"partition_racks must list the racks of each of the {partitions} partitions, "
            f"got {len(found)}"
        )
    for p, replicas in enumerate(found):
        for rack in replicas:
            check_name(rack, f"partition {p}: rack")
    return found


def _frozen(mapping: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class LoadSnapshot:
    """Aggregated load of one stream in one window: what a planner sees, never raw events.

    ``key_group_load[g]`` is the whole load of key group ``g`` (messages, bytes or cost), hot keys
    included; ``hot_key_load`` lists the top keys, each already counted inside its key group;
    ``distinct_keys[g]`` (optional) is the number of distinct keys in key group ``g``;
    ``key_group_resources[r][g]`` (optional) is group ``g``'s use of another resource ``r`` (e.g.
    bytes, cost_ms). ``key_group_flow`` (optional, paper 004 §4.3.2) lists the messages between key
    groups as rows ``(upstream, downstream, messages)``: an index below ``num_key_groups`` is a
    group of this snapshot, ``num_key_groups + j`` a key group of another stream that sits on
    worker ``flow_anchors[j]`` (placed by that stream's table). ``key_group_windows`` (optional)
    is windows × key groups: each group's load in every window of the day the plan must hold
    (hot keys counted inside, as in ``key_group_load``); the planners that can take several
    windows (``lpt``, ``milp``, ``cg``) lower the worst of them, the others plan on
    ``key_group_load``. ``hot_key_windows`` (optional, with ``key_group_windows``) is a hot key's
    own load in each of those windows: real keys have their own hours, so a hot key routed on its
    own is planned on them; a hot key without them is taken to follow the stream's shape
    (``hot_key_profile``).
    """

    stream: str
    key_group_load: np.ndarray
    hot_key_load: Mapping[str, float] = field(default_factory=dict)
    distinct_keys: np.ndarray | None = None
    hash_seed: int = DEFAULT_SEED
    key_group_resources: Mapping[str, np.ndarray] = field(default_factory=dict)
    key_group_flow: np.ndarray | None = None
    flow_anchors: tuple[str, ...] = ()
    key_group_windows: np.ndarray | None = None
    hot_key_windows: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        load = np.asarray(self.key_group_load, dtype=float)
        if load.ndim != 1 or load.size == 0:
            raise ValueError("key_group_load must be a non-empty 1-d array")
        if not np.all(np.isfinite(load)) or np.any(load < 0):
            raise ValueError("key_group_load must be finite and >= 0")
        object.__setattr__(self, "key_group_load", load)
        object.__setattr__(
            self, "key_group_windows", checked_windows(self.key_group_windows, load.size)
        )
        hot = _frozen(self.hot_key_load)
        bad = [k for k, v in hot.items() if not np.isfinite(v) or v < 0]
        if bad:
            raise ValueError(f"hot key loads must be finite and >= 0: {bad[:5]}")
        object.__setattr__(self, "hot_key_load", hot)
        object.__setattr__(self, "hot_key_windows", self._checked_hot_windows())
        if self.distinct_keys is not None:
            keys = np.asarray(self.distinct_keys, dtype=float)
            if keys.shape != load.shape:
                raise ValueError("distinct_keys must have one entry per key group")
            object.__setattr__(self, "distinct_keys", keys)
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

    def _checked_hot_windows(self) -> Mapping[str, np.ndarray]:
        given = dict(self.hot_key_windows or {})
        if given and self.key_group_windows is None:
            raise ValueError("hot_key_windows need key_group_windows (the same windows)")
        found = {}
        for key, windows in given.items():
            if key not in self.hot_key_load:
                raise ValueError(f"hot_key_windows: {key!r} is not a hot key of the snapshot")
            loads = np.asarray(windows, dtype=float)
            assert self.key_group_windows is not None
            if loads.shape != (self.key_group_windows.shape[0],):
                raise ValueError(
                    f"hot_key_windows: {key!r} needs one load per window "
                    f"({self.key_group_windows.shape[0]}), got shape {loads.shape}"
                )
            if not np.all(np.isfinite(loads)) or np.any(loads < 0):
                raise ValueError(f"hot_key_windows: {key!r}: loads must be finite and >= 0")
            found[key] = loads
        return MappingProxyType(found)

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

    def hot_key_profile(self, key: str) -> np.ndarray:
        """Hot key ``key``'s load in each of ``key_group_windows``: its own
        (``hot_key_windows``) or, without them, its load spread like the stream's (each
        window's share of the key groups' windows, scaled so that the windows' mean is the
        key's ``hot_key_load``, as each key group's windows are)."""
        windows = self.key_group_windows
        if windows is None:
            raise ValueError("the snapshot has no windows")
        own = self.hot_key_windows.get(key)
        if own is not None:
            return own
        shape = windows.sum(axis=1)
        total = shape.sum()
        if total <= 0:
            return np.full(windows.shape[0], self.hot_key_load[key])
        return shape / total * windows.shape[0] * self.hot_key_load[key]

    def residual_key_group_load(self, hot_keys: Iterable[str]) -> np.ndarray:
        """Group loads once the given hot keys are taken out (they are routed on their own)."""
        residual = self.key_group_load.copy()
        for key in hot_keys:
            residual[self.hot_key_group(key)] -= self.hot_key_load[key]
        return np.clip(residual, 0.0, None)


@dataclass(frozen=True)
class PartitionLoad:
    """The write rate of each partition of one stream in one window: what a partition
    (``partition_assignment``) strategy plans from (paper 002's ``s_j(t_k)``, bytes/s).

    ``partition_load[p]`` is partition ``p``'s rate; partitions are numbered from 0.
    ``partition_windows`` (optional) is windows × partitions: each partition's rate in every
    window of the day the assignment must hold; the bin packers then fill a consumer only while
    the partitions fit in each window (vector bin packing).
    ``partition_racks`` (optional) holds, per partition, the racks of its replicas, leader
    first (KIP-881: a consumer may fetch from the replica in its own rack); an empty tuple is a
    partition whose racks are unknown. Rack names follow the name rule (``names``).
    """

    stream: str
    partition_load: np.ndarray
    partition_windows: np.ndarray | None = None
    partition_racks: tuple[tuple[str, ...], ...] | None = None

    def __post_init__(self) -> None:
        rates = np.asarray(self.partition_load, dtype=float)
        if rates.ndim != 1 or not np.all(np.isfinite(rates)) or np.any(rates < 0):
            raise ValueError("partition_load must be a 1-d array of finite loads >= 0")
        object.__setattr__(self, "partition_load", rates)
        object.__setattr__(
            self, "partition_windows", checked_windows(self.partition_windows, rates.size)
        )
        if self.partition_racks is not None:
            object.__setattr__(
                self, "partition_racks", checked_partition_racks(self.partition_racks, rates.size)
            )

    @property
    def num_partitions(self) -> int:
        return int(self.partition_load.size)

    @property
    def total(self) -> float:
        return float(self.partition_load.sum())


# What a strategy plans from: key-group loads (key_routing) or partition loads
# (partition_assignment).
Loads = LoadSnapshot | PartitionLoad
