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

Key groups are integers from 0 to ``--num-key-groups`` − 1 (default: the largest one + 1, at most
``MAX_NUM_KEY_GROUPS`` = 2**24), checked row by row before any array is allocated. A bad row is
an ``InputError`` naming the file and its line.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from routeplan.errors import InputError
from routeplan.files import Row, json_text, read_json, read_rows, reading, where
from routeplan.model.hashing import MAX_NUM_KEY_GROUPS
from routeplan.model.loads import LoadSnapshot
from routeplan.model.names import is_valid_name, name_rule
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.parsing import (
    MAX_WORKERS,
    check_strategy_params,
    checked,
    key_group_count,
    nonnegative_int,
    param_pair,
    positive_float,
    probability,
    strategy_name,
    stream_name,
    worker_count,
)
from routeplan.publishing.schemas import validate_document

KNOWN_COLUMNS = {"key_group", "load", "worker", "keys", "state_size", "stream"}


def _number(row: Row, column: str, path: Path) -> float:
    """The finite, non-negative number in ``row[column]``."""
    raw = row.get(column)
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(raw, bool) or not 0 <= value < math.inf:
        shown = "nothing" if raw in (None, "") else repr(raw)
        raise InputError(f"{where(path, row)}: {column} must be a finite number >= 0, got {shown}")
    return value


def _key_group(row: Row, column: str, path: Path, limit: int, why: str) -> int:
    """The key group in ``row[column]``: an integer in ``0..limit - 1`` (``why`` the limit)."""
    value = _number(row, column, path)
    if not value.is_integer() or value >= limit:
        raise InputError(
            f"{where(path, row)}: {column} {row.get(column)!r} is not an integer in "
            f"0..{limit - 1} ({why})"
        )
    return int(value)


def _worker(row: Row, column: str, path: Path) -> str | None:
    """The worker named in ``row[column]`` (None when blank), by the name rule."""
    name = row.get(column)
    if name in (None, ""):
        return None
    if not is_valid_name(name):
        raise InputError(f"{where(path, row)}: invalid worker name {name!r}: {name_rule()}")
    return str(name)


def read_loads(
    path: Path, stream: str, num_key_groups: int | None = None
) -> tuple[LoadSnapshot, dict[int, str]]:
    """The snapshot of a loads file and the current worker of the groups that name one."""
    rows = read_rows(path)
    if not rows:
        raise InputError(f"{path}: no key groups")
    missing = [c for c in ("key_group", "load") if c not in rows[0]]
    if missing:
        raise InputError(
            f"{where(path, rows[0])}: no {' or '.join(missing)} column "
            f"(found: {', '.join(map(str, rows[0])) or 'none'})"
        )
    limit, why = (
        (num_key_groups, f"--num-key-groups {num_key_groups}")
        if num_key_groups
        else (MAX_NUM_KEY_GROUPS, "the most key groups a table may have")
    )
    first: dict[int, int] = {}
    for row in rows:
        g = _key_group(row, "key_group", path, limit, why)
        if g in first:
            raise InputError(
                f"{where(path, row)}: key group {g} appears twice (first on line {first[g]})"
            )
        first[g] = row.line
    groups = list(first)
    size = num_key_groups or max(groups) + 1
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
        owner = _worker(row, "worker", path)
        if owner is not None:
            owners[g] = owner
    snapshot = LoadSnapshot(stream, load, distinct_keys=state, key_group_resources=resources)
    return snapshot, owners


def read_flow(path: Path, num_key_groups: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """``key_group_flow`` and ``flow_anchors`` from a flow file (see the module docstring)."""
    from routeplan.planning.reassign.albic import flow_arrays

    edges = []
    ours = f"the loads file has {num_key_groups} key groups"
    for row in read_rows(path):
        upstream_worker = _worker(row, "upstream_worker", path)
        up: int | tuple[str, str]
        if upstream_worker is None:
            up = _key_group(row, "upstream_key_group", path, num_key_groups, ours)
        else:  # a key group of another stream, anchored on its worker
            other = _key_group(
                row, "upstream_key_group", path, MAX_NUM_KEY_GROUPS, "the most a table may have"
            )
            up = (f"upstream:{other}@{upstream_worker}", upstream_worker)
        down = _key_group(row, "key_group", path, num_key_groups, ours)
        edges.append((up, down, _number(row, "messages", path)))
    return flow_arrays(num_key_groups, edges)


def read_workers_arg(text: str, stream: str) -> Workers:
    """``N`` equal workers (1..``MAX_WORKERS``), or the stream's workers from a workers file."""
    if text.strip().lstrip("+-").isdigit():
        return Workers.homogeneous(checked(worker_count, text, "--workers"))
    path = Path(text)
    if not path.exists():
        raise InputError(
            f"--workers: {text!r} is neither a number of workers (1..{MAX_WORKERS}) nor a file"
        )
    doc = read_json(path)
    with reading(path):
        validate_document("worker", doc, where=str(path))
    streams = sorted({r["stream"] for r in doc["workers"]})
    chosen = stream if stream in streams else streams[0] if len(streams) == 1 else None
    if chosen is None:
        raise InputError(f"{path}: no workers for stream {stream!r} (it has {streams})")
    return Workers.from_records(r for r in doc["workers"] if r["stream"] == chosen)


def read_current(path: Path) -> RoutingTable:
    """The routing table of a ``--current`` document."""
    doc = read_json(path)
    needed = ("stream", "strategy", "hash", "num_key_groups", "workers", "key_group_worker")
    missing = [k for k in needed if k not in doc] if isinstance(doc, dict) else list(needed)
    if missing:
        raise InputError(f"{path}: not a routing-table document (no {', '.join(missing)})")
    with reading(path):
        try:
            return RoutingTable.from_document(doc)
        except (KeyError, TypeError, AttributeError) as err:
            raise InputError(f"{path}: not a routing-table document ({err!r})") from None


def cmd_plan(args: argparse.Namespace) -> int:
    from routeplan.planning.registry import get_strategy

    params = check_strategy_params(args.strategy, dict(args.param))
    snapshot, owners = read_loads(Path(args.loads), args.stream, args.num_key_groups)
    if args.flow:
        flow, anchors = read_flow(Path(args.flow), snapshot.num_key_groups)
        snapshot = LoadSnapshot(
            snapshot.stream,
            snapshot.key_group_load,
            distinct_keys=snapshot.distinct_keys,
            key_group_resources=snapshot.key_group_resources,
            key_group_flow=flow,
            flow_anchors=anchors,
        )
    workers = read_workers_arg(args.workers, args.stream)
    current = None
    if args.current:
        current = read_current(Path(args.current))
        if current.num_key_groups != snapshot.num_key_groups:
            raise InputError(
                f"{args.current}: the table has {current.num_key_groups} key groups, the loads "
                f"{snapshot.num_key_groups} (pass --num-key-groups {current.num_key_groups})"
            )
    elif owners:
        if len(owners) != snapshot.num_key_groups:
            raise InputError(
                f"{args.loads}: names a worker for {len(owners)} of "
                f"{snapshot.num_key_groups} key groups only (all or none)"
            )
        current = observed_table(snapshot, owners, workers)
    budget = Budget(
        max_moves=args.max_moves,
        max_migrated_load_share=args.max_migrated_load_share,
        time_limit_s=args.time_limit,
    )
    strategy = get_strategy(args.strategy, **params)
    started = time.perf_counter()
    plan = strategy.plan(snapshot, current, workers, budget)
    seconds = time.perf_counter() - started
    if args.out:
        Path(args.out).write_text(json_text(plan.table.to_document(), indent=1) + "\n")
    summary = plan_summary(plan, seconds)
    summary["out"] = args.out
    if args.json:
        print(json_text(summary))
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
    metrics, state = plan.predicted, plan.table.strategy_state
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


def add_parser(sub: Any) -> None:
    """Register ``routeplan plan`` on the CLI's subparsers."""
    p = sub.add_parser("plan", help="plan key groups onto workers from a file of loads")
    p.add_argument("--loads", required=True, help="CSV or JSON Lines: key_group, load, …")
    p.add_argument(
        "--strategy", required=True, type=strategy_name, help="any strategy name (kg, cg, milp, …)"
    )
    p.add_argument("--current", help="current routing-table document (JSON)")
    p.add_argument("--workers", required=True, help="N equal workers, or a workers file")
    p.add_argument("--flow", help="messages between key groups (for albic)")
    p.add_argument(
        "--stream", default="default", type=stream_name, help="stream name (workers file entry)"
    )
    p.add_argument(
        "--num-key-groups",
        type=key_group_count,
        help=f"default: the largest key_group + 1 (at most {MAX_NUM_KEY_GROUPS})",
    )
    p.add_argument(
        "--param", type=param_pair, action="append", default=[], metavar="K=V", help="repeatable"
    )
    p.add_argument("--max-moves", type=nonnegative_int, help="most key groups a plan may move")
    p.add_argument("--max-migrated-load-share", type=probability, help="0..1")
    p.add_argument("--time-limit", type=positive_float, default=30.0, help="solver seconds")
    p.add_argument("--out", help="write the new routing-table document here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plan)
