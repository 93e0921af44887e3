"""``routeplan plan``: plan key groups onto workers from a file of loads, with any strategy.

    routeplan plan --loads loads.csv --strategy milp --current v7.json --workers workers.json \\
        --max-moves 13 --out v8.json --json

``--loads``: CSV (header row) or JSON Lines, one row per key group: ``key_group``, ``load`` and
optionally ``worker`` (its current worker, used when there is no ``--current``),
``distinct_keys`` (the state-size proxy: ``--migration-cost-unit distinct_keys``; the old column
names ``keys`` and ``state_size`` are read with a warning), and any other numeric column as a
resource (e.g. ``bytes``, ``cost_ms``, for ``resource_bounds``).
The budget: ``--max-moves``, ``--max-migrated-load-share``, ``--max-migration-cost`` in
``--migration-cost-unit`` (``moves``, ``distinct_keys`` or ``load``) and ``--time-limit``. The old
``--param max_migrations=N`` / ``migration_cost=U`` / ``max_migration_cost=C`` and a strategy's
renamed parameters (milp's ``bound``) are still read, each with a warning on stderr.
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
import time
from pathlib import Path
from typing import Any

from routeplan import storage
from routeplan.cli import progress
from routeplan.cli.plan_inputs import (
    read_current,
    read_flow,
    read_loads,
    read_workers_arg,
    strategy_and_budget,
)
from routeplan.cli.strategies import key_routing_strategy_name
from routeplan.errors import InputError, UsageError
from routeplan.files import json_text
from routeplan.model.hashing import MAX_NUM_KEY_GROUPS
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import MIGRATION_COST_UNITS
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers
from routeplan.parsing import (
    key_group_count,
    nonnegative_float,
    nonnegative_int,
    param_pair,
    positive_float,
    probability,
    stream_name,
)
from routeplan.planning.budget import UNIT_SPELLINGS


def cmd_plan(args: argparse.Namespace) -> int:
    if args.policies:  # the stream's policy decides, as in the nightly run
        from routeplan.cli.plan_stream import cmd_plan_stream

        return cmd_plan_stream(args)
    if not args.strategy or not args.workers:
        given = (("--strategy", args.strategy), ("--workers", args.workers))
        missing = " and ".join(flag for flag, value in given if not value)
        raise UsageError(f"{missing} needed (or --policies FILE: plan by the stream's policy)")
    strategy, budget = strategy_and_budget(args)
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
    started = time.perf_counter()
    with progress.bar(args, f"planning with {args.strategy}", None):
        plan = strategy.plan(snapshot, current, workers, budget)
    seconds = time.perf_counter() - started
    if args.out:
        storage.write_text(args.out, json_text(plan.table.to_document(), indent=1) + "\n")
    summary = plan_summary(plan, seconds)
    summary["out"] = args.out
    if args.plot:
        from routeplan.plots import worker_load_png, worker_loads

        title = f"{args.stream}: {args.strategy} plan"
        png = worker_load_png(worker_loads(plan.table, current, snapshot, title=title))
        summary["plot"] = storage.write_bytes(args.plot, png)
    if args.json:
        print(json_text(summary))
        return 0
    status = summary["solver_status"] or "-"
    gap = "-" if summary["mip_gap"] is None else f"{summary['mip_gap']:.4g}"
    bound = summary["load_distance_bound"]
    print(
        f"{args.strategy}: load distance {summary['load_distance']:.4%}"
        + ("" if bound is None else f" (lower bound {bound:.4%})")
        + f", imbalance {summary['imbalance']:.4f}, {summary['moves']:.0f} moves "
        f"(migration cost {summary['migration_cost']:.6g} {budget.migration_cost_unit}), "
        f"solver {status}, gap {gap}, {summary['solver_seconds']:.2f} s"
    )
    if summary["collocation_factor"] is not None:
        print(f"  collocation factor {summary['collocation_factor']:.2%}")
    if args.out:
        print(f"  table: {args.out}")
    if args.plot:
        print(f"  plot: {summary['plot']}")
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
        "moves": metrics["moves"],
        "migration_cost": metrics.get("migration_cost", metrics["moves"]),
        "migrated_load_share": metrics["migrated_load_share"],
        "collocation_factor": metrics.get("collocation_factor"),
        "solver_status": state.get("solver_status"),
        "mip_gap": metrics.get("mip_gap"),
        "load_distance_bound": metrics.get("load_distance_bound"),
        "solver_seconds": metrics.get("solver_seconds", seconds),
        "predicted": dict(metrics),
        "strategy_state": {k: v for k, v in state.items() if k != "virtual_worker_worker"},
    }


DESCRIPTION = """\
Plan key groups onto workers with any key-routing strategy, from a file of loads (one row per
key group: key_group, load, and optionally its current worker), within a budget of moves. Prints
the predicted imbalance and moves; --out writes the new routing-table document, --plot a PNG of
each worker's load before and after. Partitions onto consumers: routeplan binpack.

With --policies, the stream is planned by its policy exactly as the nightly run plans it (the
same library function): every candidate of auto, the winner and why, the baseline of its kind,
and the rerun rule (LATEST kept on the same loads) — from the planning inputs the plan job
wrote (reports/<day>/plan-inputs/<stream>.json) and the store's LATEST. Nothing is published."""


def add_parser(sub: Any) -> None:
    """Register ``routeplan plan`` on the CLI's subparsers."""
    p = sub.add_parser(
        "plan",
        help="plan key groups onto workers from a file of loads",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan plan --loads loads.csv --workers 8 --strategy kg
  routeplan plan --loads loads.csv --workers workers.json --stream clicks --strategy milp \\
      --current v7.json --max-moves 13 --out v8.json --plot v8.png
  # what tonight's run would choose for views (its policy, auto's candidates, the baseline):
  routeplan plan --policies $ROUTEPLAN_HOME/config/streams.yaml --stream views \\
      --loads $ROUTEPLAN_HOME/reports/2026-11-20/plan-inputs/views.json""",
    )
    p.add_argument(
        "--loads",
        required=True,
        help="CSV or JSON Lines: key_group, load, …; with --policies also a stream's planning "
        "inputs (.json, as the plan job writes them under reports/<day>/plan-inputs/)",
    )
    p.add_argument(
        "--policies",
        metavar="FILE",
        help="plan by the stream's policy in this file (config/streams.yaml) as the nightly run "
        "does; --strategy, --param and the budget flags then override it",
    )
    p.add_argument(
        "--strategy",
        type=key_routing_strategy_name,
        help="a key-routing strategy (kg, cg, milp, …); partitions: routeplan binpack",
    )
    p.add_argument(
        "--current",
        help="current routing-table document (JSON); with --policies default: the store's LATEST",
    )
    p.add_argument(
        "--routing", help="with --policies: the routing store (default $ROUTEPLAN_ROUTING)"
    )
    p.add_argument(
        "--workers", help="N equal workers, or a workers file (with --policies: the inputs')"
    )
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
    p.add_argument(
        "--max-moves", type=nonnegative_int, help="most key groups and hot keys a plan may move"
    )
    p.add_argument("--max-migrated-load-share", type=probability, help="0..1")
    p.add_argument(
        "--max-migration-cost",
        type=nonnegative_float,
        help="most summed migration cost, in --migration-cost-unit",
    )
    p.add_argument(
        "--migration-cost-unit",
        choices=UNIT_SPELLINGS,
        metavar="UNIT",
        help=f"what one move costs: {', '.join(MIGRATION_COST_UNITS)} (default moves; keys, "
        "deprecated: distinct_keys)",
    )
    p.add_argument(
        "--time-limit",
        type=positive_float,
        help="solver seconds (default 30; with --policies the policy's)",
    )
    p.add_argument("--out", help="write the new routing-table document here")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="write a PNG of each worker's load before (current or logged routing) and after",
    )
    p.add_argument("--json", action="store_true")
    progress.add_flag(p)
    p.set_defaults(func=cmd_plan)
