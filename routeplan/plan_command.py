"""``routeplan plan``: plan key groups onto workers from a file of loads, with any strategy.

    routeplan plan --loads loads.csv --strategy milp --current v7.json --workers workers.json \\
        --param max_migrations=13 --out v8.json --json

``--loads``: CSV (header row) or JSON Lines, one row per key group: ``key_group``, ``load`` and
optionally ``worker`` (its current worker, used when there is no ``--current``), ``keys`` or
``state_size`` (state-size proxy: distinct keys or bytes — ``migration_cost=keys``), and any other
numeric column as a resource (e.g. ``bytes``, ``cost_ms``, for ``resource_bounds``).
``--flow``: rows ``upstream_key_group``, ``key_group``, ``messages`` (optionally
``upstream_worker``: the upstream group belongs to another stream and sits there) for ``albic``.
``--workers``: a number of equal workers, or a workers file (``schemas/worker.schema.json``).
``--current``: a routing-table document. ``--out``: where to write the new one.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from routeplan.models import Budget, LoadSnapshot, Workers
from routeplan.routing_table import RoutingTable
from routeplan.schemas import validate_document

KNOWN_COLUMNS = {"key_group", "load", "worker", "keys", "state_size", "stream"}


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV file (header row) or a JSON Lines file."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = path.read_text()
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not JSON Lines: {err}") from None
    return list(csv.DictReader(text.splitlines()))


def _number(row: dict[str, Any], column: str, path: Path) -> float:
    try:
        value = float(row[column])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: row {row} needs a number in {column!r}") from None
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{path}: {column} must be finite and >= 0 in row {row}")
    return value


def read_loads(
    path: Path, stream: str, num_key_groups: int | None = None
) -> tuple[LoadSnapshot, dict[int, str]]:
    """The snapshot of a loads file and the current worker of the groups that name one."""
    rows = read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no key groups")
    groups = [int(_number(r, "key_group", path)) for r in rows]
    if len(set(groups)) != len(groups):
        raise ValueError(f"{path}: a key group appears twice")
    size = num_key_groups or max(groups) + 1
    if max(groups) >= size:
        raise ValueError(f"{path}: key group {max(groups)} outside 0..{size - 1}")
    load = np.zeros(size)
    state_column = next((c for c in ("keys", "state_size") if rows[0].get(c) not in (None, "")), "")
    state = np.zeros(size) if state_column else None
    extra = [c for c in rows[0] if c not in KNOWN_COLUMNS]
    resources = {c: np.zeros(size) for c in extra}
    owners: dict[int, str] = {}
    for g, row in zip(groups, rows, strict=True):
        load[g] = _number(row, "load", path)
        if state is not None:
            state[g] = _number(row, state_column, path)
        for c in extra:
            resources[c][g] = _number(row, c, path)
        if row.get("worker") not in (None, ""):
            owners[g] = str(row["worker"])
    snapshot = LoadSnapshot(stream, load, key_group_keys=state, key_group_resources=resources)
    return snapshot, owners


def read_flow(path: Path, num_key_groups: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """``key_group_flow`` and ``flow_anchors`` from a flow file (see the module docstring)."""
    from routeplan.strategies.albic import flow_arrays

    edges = []
    for row in read_rows(path):
        up: int | tuple[str, str] = int(_number(row, "upstream_key_group", path))
        if row.get("upstream_worker") not in (None, ""):
            up = (f"upstream:{up}@{row['upstream_worker']}", str(row["upstream_worker"]))
        edges.append((up, int(_number(row, "key_group", path)), _number(row, "messages", path)))
    return flow_arrays(num_key_groups, edges)


def read_workers_arg(text: str, stream: str) -> Workers:
    """``N`` equal workers, or the stream's workers from a workers file."""
    if text.isdigit():
        return Workers.homogeneous(int(text))
    path = Path(text)
    if not path.is_file():
        raise ValueError(f"--workers: {text} is neither a number nor a file")
    doc = json.loads(path.read_text())
    validate_document("worker", doc, where=str(path))
    streams = sorted({r["stream"] for r in doc["workers"]})
    chosen = stream if stream in streams else streams[0] if len(streams) == 1 else None
    if chosen is None:
        raise ValueError(f"{path} has no workers for stream {stream!r} (it has {streams})")
    return Workers.from_records(r for r in doc["workers"] if r["stream"] == chosen)


def cmd_plan(args: argparse.Namespace) -> int:
    from routeplan.strategies import get_strategy

    snapshot, owners = read_loads(Path(args.loads), args.stream, args.num_key_groups)
    if args.flow:
        flow, anchors = read_flow(Path(args.flow), snapshot.num_key_groups)
        snapshot = LoadSnapshot(
            snapshot.stream,
            snapshot.key_group_load,
            key_group_keys=snapshot.key_group_keys,
            key_group_resources=snapshot.key_group_resources,
            key_group_flow=flow,
            flow_anchors=anchors,
        )
    workers = read_workers_arg(args.workers, args.stream)
    current = None
    if args.current:
        current = RoutingTable.from_document(json.loads(Path(args.current).read_text()))
    elif owners:
        if len(owners) != snapshot.num_key_groups:
            raise ValueError("the loads file names a worker for some key groups only")
        current = observed_table(snapshot, owners, workers)
    budget = Budget(
        max_moves=args.max_moves,
        max_migrated_load_share=args.max_migrated_load_share,
        time_limit_s=args.time_limit,
    )
    strategy = get_strategy(args.strategy, **dict(args.param))
    started = time.perf_counter()
    plan = strategy.plan(snapshot, current, workers, budget)
    seconds = time.perf_counter() - started
    if args.out:
        Path(args.out).write_text(json.dumps(plan.table.to_document(), indent=1) + "\n")
    summary = plan_summary(plan, seconds)
    summary["out"] = args.out
    if args.json:
        print(json.dumps(summary))
        return 0
    status = summary["solve_status"] or "-"
    gap = "-" if summary["gap"] is None else f"{summary['gap']:.4g}"
    print(
        f"{args.strategy}: load distance {summary['load_distance']:.4%}, imbalance "
        f"{summary['imbalance']:.4f}, {summary['migrations']:.0f} migrations "
        f"(cost {summary['migration_cost']:.6g}), solver {status}, gap {gap}, "
        f"{summary['solve_seconds']:.2f} s"
    )
    if summary["collocation_factor"] is not None:
        print(f"  collocation factor {summary['collocation_factor']:.2%}")
    if args.out:
        print(f"  table: {args.out}")
    return 0


def observed_table(
    snapshot: LoadSnapshot, owners: dict[int, str], workers: Workers
) -> RoutingTable:
    """The table the loads file describes (each group on its ``worker``); workers it names that
    are not listed join as draining ones."""
    extra = sorted(set(owners.values()) - set(workers.names))
    listed = Workers.from_records(
        workers.to_records() + [{"worker": w, "state": "draining"} for w in extra]
    )
    return RoutingTable(
        stream=snapshot.stream,
        strategy="observed",
        workers=listed,
        key_group_worker=tuple(owners[g] for g in range(snapshot.num_key_groups)),
        hash_seed=snapshot.hash_seed,
    )


def plan_summary(plan, seconds: float) -> dict[str, Any]:
    """The predicted metrics a person compares plans by."""
    metrics, state = plan.metrics, plan.table.strategy_state
    return {
        "strategy": plan.table.strategy,
        "stream": plan.table.stream,
        "load_distance": metrics["load_distance"],
        "imbalance": metrics["imbalance"],
        "migrations": metrics["moves"],
        "migration_cost": metrics.get("migration_cost", metrics["moves"]),
        "migrated_load_share": metrics["migrated_load_share"],
        "collocation_factor": metrics.get("collocation_factor"),
        "solve_status": state.get("solve_status"),
        "gap": state.get("gap"),
        "solve_seconds": metrics.get("solve_seconds", seconds),
        "metrics": dict(metrics),
        "strategy_state": {k: v for k, v in state.items() if k != "virtual_worker_worker"},
    }


def add_parser(sub: Any, param: Callable[[str], tuple[str, object]]) -> None:
    """Register ``routeplan plan`` on the CLI's subparsers (``param`` parses ``K=V``)."""
    p = sub.add_parser("plan", help="plan key groups onto workers from a file of loads")
    p.add_argument("--loads", required=True, help="CSV or JSON Lines: key_group, load, …")
    p.add_argument("--strategy", required=True, help="any strategy name (kg, cg, milp, …)")
    p.add_argument("--current", help="current routing-table document (JSON)")
    p.add_argument("--workers", required=True, help="N equal workers, or a workers file")
    p.add_argument("--flow", help="messages between key groups (for albic)")
    p.add_argument("--stream", default="default", help="stream name (workers file entry)")
    p.add_argument("--num-key-groups", type=int, help="default: the largest key_group + 1")
    p.add_argument(
        "--param", type=param, action="append", default=[], metavar="K=V", help="repeatable"
    )
    p.add_argument("--max-moves", type=int, help="most key groups a plan may move")
    p.add_argument("--max-migrated-load-share", type=float)
    p.add_argument("--time-limit", type=float, default=30.0, help="solver seconds")
    p.add_argument("--out", help="write the new routing-table document here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plan)
