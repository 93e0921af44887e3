"""What ``routeplan plan`` reads — a file of loads, a flow file, the workers, a current table,
the strategy and its budget — for both of its ways to plan: one strategy
(``routeplan.cli.plan``) and a stream's policy (``routeplan.cli.plan_stream``). Formats and
limits: ``routeplan.cli.plan``'s docstring."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from routeplan.cli.strategies import check_strategy_params
from routeplan.errors import InputError, UsageError
from routeplan.files import (
    Row,
    read_json,
    read_rows,
    read_rows_with,
    read_workers_and_learn,
    reading,
    where,
)
from routeplan.model.flow import flow_arrays
from routeplan.model.hashing import MAX_NUM_KEY_GROUPS
from routeplan.model.loads import LoadSnapshot
from routeplan.model.names import is_valid_name, name_rule
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.parsing import (
    MAX_WORKERS,
    checked,
    worker_count,
)
from routeplan.planning.budget import read_budget

KNOWN_COLUMNS = {"key_group", "load", "worker", "distinct_keys", "keys", "state_size", "stream"}
DISTINCT_KEYS_ALIASES = ("keys", "state_size")  # old names of the distinct_keys column


def warn(message: str) -> None:
    """A deprecation or other note, on stderr."""
    print(f"routeplan plan: warning: {message}", file=sys.stderr)


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
    rows = read_rows_with(path, ("key_group", "load"), "key groups")
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
    state_column = next(
        (c for c in ("distinct_keys", *DISTINCT_KEYS_ALIASES) if rows[0].get(c) not in (None, "")),
        "",
    )
    if state_column in DISTINCT_KEYS_ALIASES:
        warn(f"{path}: column {state_column} is deprecated: call it distinct_keys")
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
    by_stream, learn = read_workers_and_learn(path)
    only = next(iter(by_stream)) if len(by_stream) == 1 else None
    chosen = stream if stream in by_stream else only
    if chosen is None:
        raise InputError(f"{path}: no workers for stream {stream!r} (it has {sorted(by_stream)})")
    if learn.get(chosen):
        print(
            f"note: {path}: capacity auto for {', '.join(sorted(learn[chosen]))}: planned at "
            "capacity 1 (the nightly jobs learn it from the logs, silver.worker_capacity)",
            file=sys.stderr,
        )
    return by_stream[chosen]


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


def strategy_and_budget(args: argparse.Namespace) -> tuple[Any, Budget]:
    """The strategy of ``--strategy`` / ``--param`` and the budget of the budget flags, read by
    ``routeplan.planning.budget``: old spellings (budget limits given as ``--param``, the unit
    ``keys``) and a strategy's renamed parameters are converted with a warning each."""
    from routeplan.planning.registry import get_strategy

    try:
        reading = read_budget(budget_flags(args, time_limit=True), dict(args.param))
    except ValueError as err:
        raise UsageError(f"--param: {err}") from None
    for note in reading.notes:
        warn(note)
    with warnings.catch_warnings(record=True) as caught:  # renamed parameters (milp's bound)
        warnings.simplefilter("always", DeprecationWarning)
        params = check_strategy_params(args.strategy, reading.params)
        strategy = get_strategy(args.strategy, **params)
    said = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    for note in dict.fromkeys(said):
        warn(note)
    return strategy, reading.budget


def budget_flags(args: argparse.Namespace, time_limit: bool) -> dict[str, Any]:
    """The budget flags as budget fields (None: not given)."""
    flags = {
        "max_moves": args.max_moves,
        "max_migrated_load_share": args.max_migrated_load_share,
        "max_migration_cost": args.max_migration_cost,
        "migration_cost_unit": args.migration_cost_unit,
    }
    if time_limit:
        flags["time_limit_s"] = args.time_limit
    return flags
