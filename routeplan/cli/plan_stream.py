"""``routeplan plan --policies``: what the nightly run would choose for a stream, without Spark.

    routeplan plan --policies streams.yaml --stream views \\
        --loads var/reports/2026-11-20/plan-inputs/views.json

plans the stream by its policy exactly as the plan job does — it calls the same
``routeplan.streams.service.plan_stream`` — and prints every candidate with its predicted
numbers, the winner and why, the baseline and the rerun rule. ``--loads`` is the stream's
planning inputs as the plan job writes them (``<home>/reports/<day>/plan-inputs/<stream>.json``:
loads, workers, logged loads; ``schemas/stream_inputs.schema.json``) or a file of key-group loads
(CSV / JSON Lines, then ``--workers`` is needed). The current table is the routing store's
LATEST for the stream (``$ROUTEPLAN_ROUTING``, or ``--routing``), or ``--current FILE``.
``--strategy``, ``--param`` and the budget flags override the policy as the DAG's Trigger form
does (``routeplan.streams.overrides``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from routeplan import storage
from routeplan.cli.plan_inputs import budget_flags, read_loads, read_workers_arg
from routeplan.errors import InputError, UsageError
from routeplan.files import json_text, read_json
from routeplan.model.table import Table, table_from_document
from routeplan.publishing.store import RoutingStore
from routeplan.streams.inputs import StreamInputs, inputs_from_document
from routeplan.streams.overrides import policy_for, read_overrides
from routeplan.streams.policy import load_policies
from routeplan.streams.service import PlanRefusedError, StreamPlan, plan_stream


def cmd_plan_stream(args: argparse.Namespace) -> int:
    """Plan ``--stream`` by its policy in ``--policies`` (``routeplan plan --policies``)."""
    if args.flow:
        raise UsageError("--flow: with --policies the flow comes in the --loads inputs document")
    if args.time_limit is not None:
        raise UsageError("--time-limit: with --policies the policy's budget.time_limit_s applies")
    policies = load_policies(args.policies)
    policies.check_streams([args.stream])
    try:
        overrides = read_overrides(
            strategy=args.strategy,
            params=dict(args.param),
            budget=budget_flags(args, time_limit=False),
        )
        policy = policy_for(overrides, policies, args.stream)
    except ValueError as err:  # PolicyError (an InputError) passes through as it is
        if isinstance(err, InputError):
            raise
        raise UsageError(str(err)) from None
    for note in overrides.notes:
        print(f"routeplan plan: warning: {note}", file=sys.stderr)
    inputs = stream_inputs(args)
    if inputs.stream != args.stream:
        raise InputError(
            f"{args.loads}: the inputs of stream {inputs.stream!r}, not {args.stream!r}"
        )
    if inputs.kind != policy.kind:
        raise InputError(
            f"{args.loads}: {inputs.kind} loads, but stream {args.stream!r} is planned as "
            f"{policy.kind} by {args.policies}"
        )
    current = current_table(args)
    try:
        decided = plan_stream(policy, inputs.loads, current, inputs.workers, inputs.logged)
    except PlanRefusedError as err:
        raise InputError(f"plan refused: {err}") from None
    if args.out:
        storage.write_text(args.out, json_text(decided.selected.plan.table.to_document(), 1) + "\n")
    if args.json:
        print(json_text({**decided.summary(), "out": args.out}))
    else:
        print(render(decided))
        if args.out:
            print(f"  table: {args.out}")
    return 0


def stream_inputs(args: argparse.Namespace) -> StreamInputs:
    """The planning inputs of ``--loads``: an inputs document (its workers unless ``--workers``
    is given), or a key-group loads file with ``--workers``."""
    if Path(args.loads).suffix == ".json":
        inputs = inputs_from_document(read_json(args.loads), args.loads)
        if args.workers:
            inputs = StreamInputs(
                inputs.stream,
                inputs.loads,
                read_workers_arg(args.workers, args.stream),
                inputs.logged,
                inputs.interval_start,
                inputs.window,
            )
        return inputs
    if not args.workers:
        raise UsageError("--workers is needed with a key-group loads file")
    snapshot, _owners = read_loads(Path(args.loads), args.stream, args.num_key_groups)
    return StreamInputs(args.stream, snapshot, read_workers_arg(args.workers, args.stream))


def current_table(args: argparse.Namespace) -> Table | None:
    """``--current``'s table, else the stream's LATEST in the routing store (None: none yet)."""
    if args.current:
        doc = read_json(args.current)
        try:
            return table_from_document(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InputError(f"{args.current}: not a routing-table document ({err!r})") from None
    from routeplan import settings

    return RoutingStore(args.routing or settings.routing_root()).load(args.stream)


def render(decided: StreamPlan) -> str:
    """The decision as a person reads it: one line per candidate, then the notes."""
    head = (
        f"{decided.stream} ({decided.kind}, policy {decided.policy.strategy}): "
        f"{decided.winner}" + (f" — LATEST v{decided.current_version} kept" if decided.kept else "")
    )
    lines = [head, f"  {'':1} {'strategy':<12} {'imbalance':>10} {'moves':>6}  why"]
    for c in decided.candidates:
        mark = "*" if c.selected else " "
        imbalance = c.plan.predicted["imbalance"]
        lines.append(
            f"  {mark} {c.strategy:<12} {imbalance:>10.4f} {len(c.plan.moves):>6}  {c.choice}"
        )
    figures: list[Any] = []
    if decided.observed_imbalance is not None:
        figures.append(f"observed imbalance {decided.observed_imbalance:.4f}")
    if decided.current_imbalance is not None:
        figures.append(f"LATEST's on these loads {decided.current_imbalance:.4f}")
    if figures:
        lines.append("  " + ", ".join(figures))
    lines += [f"  note: {n}" for n in decided.notes]
    return "\n".join(lines)
