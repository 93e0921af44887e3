"""What changes for producers when one routing-table version replaces another.

``diff_tables(old, new)`` lists every key group, hot key and partition whose worker(s) differ and
weighs each move with the loads a plan was computed on (the newer table's ``planning_load``, else
the older one's). Without loads it still lists the moves and the share of the key space they
cover (key groups are equal-sized slices of the hash space). The JSON form is
``schemas/routing_diff.schema.json``; ``routeplan diff`` and the HTTP API print it.
``stored_parent(store, table)`` finds the version a table replaced, when the store still holds
it (``routeplan show --plot`` and the publish job draw a version against it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from routeplan.model.loads import LoadSnapshot, PartitionLoad
from routeplan.model.plan import Move
from routeplan.model.plan import moves as key_moves
from routeplan.model.table import PartitionAssignment, RoutingTable, Table

if TYPE_CHECKING:
    from routeplan.publishing.store import RoutingStore


def diff_tables(old: Table, new: Table) -> dict[str, Any]:
    """The moves from ``old`` to ``new`` (same stream, same kind) and the load they carry.

    For a ``partition_assignment`` the workers added and removed are its consumers."""
    if old.stream != new.stream:
        raise ValueError(f"cannot diff tables of two streams ({old.stream!r}, {new.stream!r})")
    if old.kind != new.kind:
        raise ValueError(f"cannot diff a {old.kind} table with a {new.kind} one")
    rehashed = False
    total: np.ndarray | None
    if isinstance(old, PartitionAssignment) and isinstance(new, PartitionAssignment):
        basis, rates = _partition_basis(old, new)
        moved = _partition_moves(old, new, rates)
        total = rates
        old_names, new_names = set(old.consumers.names), set(new.consumers.names)
        key_space_share = 0.0
    elif isinstance(old, RoutingTable) and isinstance(new, RoutingTable):
        basis, snapshot = _key_basis(old, new)
        rehashed = old.num_key_groups != new.num_key_groups or old.hash_seed != new.hash_seed
        if rehashed:
            moved = ()  # key groups of two hash spaces do not correspond: every key may move
            total = None
        else:
            moved = key_moves(old, new, snapshot or _no_loads(new))
            total = None if snapshot is None else snapshot.key_group_load
        old_names, new_names = set(old.workers.names), set(new.workers.names)
        groups = sum(m.unit.startswith("key_group:") for m in moved)
        key_space_share = 1.0 if rehashed else groups / new.num_key_groups
    else:  # pragma: no cover - a third kind
        raise ValueError(f"cannot diff {old.kind} tables")
    weighed = total is not None
    moved_load = sum(m.load for m in moved) if weighed else None
    total_load = float(np.sum(total)) if weighed else None
    return {
        "stream": new.stream,
        "kind": new.kind,
        "from_version": old.version,
        "to_version": new.version,
        "load_basis": basis,
        "rehashed": rehashed,
        "workers_added": sorted(new_names - old_names),
        "workers_removed": sorted(old_names - new_names),
        "moved_key_groups": sum(m.unit.startswith("key_group:") for m in moved),
        "moved_hot_keys": sum(m.unit.startswith("key:") for m in moved),
        "moved_partitions": sum(m.unit.startswith("partition:") for m in moved),
        "key_space_share": key_space_share,
        "moved_load": moved_load,
        "total_load": total_load,
        "moved_load_share": (moved_load / total_load) if weighed and total_load else None,
        "moves": [
            {
                "unit": m.unit,
                "from_workers": list(m.from_workers),
                "to_workers": list(m.to_workers),
                "load": float(m.load) if weighed else None,
            }
            for m in moved
        ],
    }


def stored_parent(store: RoutingStore, table: Table) -> Table | None:
    """The version ``table`` replaced, when the store still holds it (pruned: None)."""
    parent = table.parent_version
    if parent is None or parent not in store.versions(table.stream):
        return None
    return store.load(table.stream, parent)


def _key_basis(old: RoutingTable, new: RoutingTable) -> tuple[str | None, LoadSnapshot | None]:
    """The newer table's planning loads if they fit both tables, else the older one's."""
    for table in (new, old):
        snapshot = table.planning_snapshot()
        if snapshot is not None and (
            snapshot.num_key_groups == new.num_key_groups == old.num_key_groups
        ):
            return f"planning_load of v{table.version}", snapshot
    return None, None


def _partition_basis(
    old: PartitionAssignment, new: PartitionAssignment
) -> tuple[str | None, np.ndarray | None]:
    """The newer assignment's planning partition loads, else the older one's."""
    for table in (new, old):
        loads: PartitionLoad | None = table.planning_snapshot()
        if loads is not None:
            return f"planning_load of v{table.version}", loads.partition_load
    return None, None


def _no_loads(table: RoutingTable) -> LoadSnapshot:
    return LoadSnapshot(
        stream=table.stream,
        key_group_load=np.zeros(table.num_key_groups),
        hash_seed=table.hash_seed,
    )


def _partition_moves(
    old: PartitionAssignment, new: PartitionAssignment, rates: np.ndarray | None
) -> tuple[Move, ...]:
    before, after = old.partition_consumer, new.partition_consumer
    return tuple(
        Move(
            f"partition:{p}",
            tuple(filter(None, [before.get(p)])),
            tuple(filter(None, [after.get(p)])),
            float(rates[p]) if rates is not None and p < len(rates) else 0.0,
        )
        for p in sorted(set(before) | set(after))
        if before.get(p) != after.get(p)
    )


def format_diff(diff: dict[str, Any], limit: int = 20) -> str:
    """A few lines for a terminal: the summary, then the heaviest moves."""
    share = diff["moved_load_share"]
    lines = [
        f"{diff['stream']}: v{diff['from_version']} → v{diff['to_version']} ({diff['kind']})",
        f"  moved: {diff['moved_key_groups']} key groups "
        f"({diff['key_space_share']:.1%} of the key space), {diff['moved_hot_keys']} hot keys, "
        f"{diff['moved_partitions']} partitions",
        "  load moved: "
        + (
            f"{diff['moved_load']:.6g} of {diff['total_load']:.6g} ({share:.1%}, "
            f"{diff['load_basis']})"
            if share is not None
            else "unknown (neither table carries planning loads)"
        ),
    ]
    if diff["rehashed"]:
        lines.append("  the hash spec changed: every key may move")
    for label in ("workers_added", "workers_removed"):
        if diff[label]:
            lines.append(f"  {label.replace('_', ' ')}: {', '.join(diff[label])}")
    ordered = sorted(diff["moves"], key=lambda m: -(m["load"] or 0.0))
    for move in ordered[:limit]:
        load = "" if move["load"] is None else f"  load {move['load']:.6g}"
        frm = ",".join(move["from_workers"]) or "-"
        to = ",".join(move["to_workers"]) or "-"
        lines.append(f"  {move['unit']:<24} {frm} → {to}{load}")
    if len(ordered) > limit:
        lines.append(f"  … {len(ordered) - limit} more (--json lists all)")
    return "\n".join(lines)
