"""``routeplan binpack``: partitions onto consumers from measured write rates (paper 002).

    routeplan binpack --rates rates.csv --consumer-capacity 2000000 --strategies mwf,bfd --json

Each strategy is the registered one ``routeplan plan`` and the DAG run (``get_strategy``),
replayed over the measurements (``replay_strategy``), each plan from the last. ``--algorithm``
and ``--capacity`` are the deprecated spellings of ``--strategies`` and ``--consumer-capacity``.

``--rates``: CSV (header) or JSON Lines with ``partition`` and ``rate`` (bytes/s) and, for a
stream of measurements, ``iteration``; a partition missing from an iteration writes 0 there.
``--current``: the assignment before the first measurement: CSV ``partition,consumer``, a JSON
object ``{"partition": "consumer"}`` or a routing-table document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from routeplan import storage
from routeplan.cli import progress
from routeplan.errors import InputError, UsageError
from routeplan.files import Row, json_text, read_json, read_rows, read_rows_with, where
from routeplan.model.names import is_valid_name, name_rule
from routeplan.model.plan import Budget
from routeplan.parsing import (
    MAX_PARTITIONS,
    TypeFunction,
    comma_list,
    integer,
    nonnegative_float,
    positive_float,
    worker_count,
)
from routeplan.planning.partitions.consumers import ConsumerNames
from routeplan.planning.partitions.packing import ALGORITHMS, KAFKA, bin_capacity
from routeplan.planning.partitions.replay import replay_strategy, summarize
from routeplan.planning.registry import get_strategy, strategy_parameters

MAX_RATE_CELLS = 2**26  # iterations × partitions of a rates file (512 MiB of float64)

_PARTITION = integer(0, MAX_PARTITIONS - 1)
_ITERATION = integer(0)


def _cell(row: Row, column: str, path: Path, parse: TypeFunction, default: str = "") -> Any:
    """``parse`` of the row's ``column`` (``default`` when blank), or ``InputError`` at its line."""
    raw = row.get(column)
    text = ("" if raw is None else str(raw).strip()) or default
    try:
        return parse(text)
    except argparse.ArgumentTypeError as err:
        raise InputError(f"{where(path, row)}: {column}: {err}") from None


def read_rates(path: Path) -> np.ndarray:
    """``iterations × partitions`` write rates from a file of (iteration, partition, rate) rows.

    Partitions are numbered 0..``MAX_PARTITIONS`` − 1 and the table may hold at most
    ``MAX_RATE_CELLS`` numbers, checked before it is allocated."""
    rows = read_rows_with(path, ("partition", "rate"), "measurements")
    cells = [
        (
            _cell(r, "iteration", path, _ITERATION, default="0"),
            _cell(r, "partition", path, _PARTITION),
            _cell(r, "rate", path, nonnegative_float),
            r,
        )
        for r in rows
    ]
    iterations = sorted({i for i, *_ in cells})
    at = {i: k for k, i in enumerate(iterations)}
    partitions = max(p for _, p, _, _ in cells) + 1
    if len(iterations) * partitions > MAX_RATE_CELLS:
        raise InputError(
            f"{path}: {len(iterations)} iterations × {partitions} partitions is more than "
            f"{MAX_RATE_CELLS} rates"
        )
    rates = np.zeros((len(iterations), partitions))
    seen: dict[tuple[int, int], int] = {}
    for i, p, rate, row in cells:
        if (i, p) in seen:
            raise InputError(
                f"{where(path, row)}: partition {p} measured twice in iteration {i} "
                f"(first on line {seen[(i, p)]})"
            )
        seen[(i, p)] = row.line
        rates[at[i], p] = rate
    return rates


def _consumer(name: object, at: str) -> str:
    if not is_valid_name(name):
        raise InputError(f"{at}: invalid consumer name {name!r}: {name_rule()}")
    return str(name)


def read_assignment(path: Path) -> dict[int, str]:
    """Partition → consumer from CSV, a JSON object or a routing-table document."""
    if path.suffix == ".json":
        doc = read_json(path)
        mapping = doc.get("partition_consumer", doc) if isinstance(doc, dict) else None
        if not isinstance(mapping, dict):
            raise InputError(f"{path}: expected a JSON object partition → consumer")
        out = {}
        for p, c in mapping.items():
            try:
                partition = _PARTITION(str(p))
            except argparse.ArgumentTypeError as err:
                raise InputError(f"{path}: partition {p!r}: {err}") from None
            out[partition] = _consumer(c, f"{path}: partition {p}")
        return out
    return {
        _cell(r, "partition", path, _PARTITION): _consumer(r.get("consumer"), where(path, r))
        for r in read_rows(path)
    }


def strategy_list(text: str) -> list[str]:
    """``--strategies``: one or several bin-packing strategies, comma-separated."""
    names = list(dict.fromkeys(comma_list(text)))
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown bin-packing strategy {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(ALGORITHMS)}"
        )
    return names


def _deprecated(args: argparse.Namespace) -> tuple[list[str], float]:
    """The strategies and C̄, from the flags or their deprecated spellings (warned on stderr)."""
    for old, new, value in (
        ("--algorithm", "--strategies", args.algorithm),
        ("--capacity", "--consumer-capacity", args.capacity),
    ):
        if value is not None:
            print(f"routeplan binpack: warning: {old} is deprecated, use {new}", file=sys.stderr)
    if args.strategies is not None and args.algorithm is not None:
        raise UsageError("give --strategies or its old name --algorithm, not both")
    if args.consumer_capacity is not None and args.capacity is not None:
        raise UsageError("give --consumer-capacity or its old name --capacity, not both")
    names = args.strategies if args.strategies is not None else args.algorithm
    capacity = args.consumer_capacity if args.consumer_capacity is not None else args.capacity
    if names is None:
        raise UsageError("the following arguments are required: --strategies")
    if capacity is None:
        raise UsageError("the following arguments are required: --consumer-capacity")
    return list(dict.fromkeys(names)), capacity


def cmd_binpack(args: argparse.Namespace) -> int:
    names, consumer_capacity = _deprecated(args)
    if any(n in KAFKA for n in names) and args.consumers is None:
        raise UsageError("Kafka's assignors need --consumers")
    if args.rebalance_s >= args.iteration_s:
        raise UsageError(
            f"--rebalance-s {args.rebalance_s:g} must be below --iteration-s {args.iteration_s:g}"
        )
    rates = read_rates(Path(args.rates))
    capacity = bin_capacity(consumer_capacity, args.iteration_s, args.rebalance_s)
    current = read_assignment(Path(args.current)) if args.current else {}
    if current:
        partitions = max(max(current) + 1, rates.shape[1])
        rates = np.pad(rates, ((0, 0), (0, partitions - rates.shape[1])))
    consumers = ConsumerNames(sorted(set(current.values()), key=lambda n: (len(n), n)))
    previous = consumers.encode([current.get(p) for p in range(rates.shape[1])])
    given = {
        "consumer_capacity": consumer_capacity,
        "iteration_s": args.iteration_s,
        "rebalance_s": args.rebalance_s,
        "consumers": args.consumers,
    }
    runs, tables = [], {}
    budget = Budget(time_limit_s=args.time_limit)
    with progress.bar(args, "bin packing", len(names) * rates.shape[0]) as on_step:
        for name in names:
            accepted = strategy_parameters(name)
            strategy = get_strategy(name, **{k: v for k, v in given.items() if k in accepted})
            run, planned = replay_strategy(
                strategy, rates, consumers, previous, budget=budget, on_step=on_step
            )
            runs.append(run)
            tables[name] = planned
    out = summarize(
        runs,
        rates,
        capacity,
        consumer_capacity,
        iteration_s=args.iteration_s,
        rebalance_s=args.rebalance_s,
        previous=previous,
    )
    if rates.shape[0] == 1:
        for name, planned in tables.items():
            out["algorithms"][name]["partition_consumer"] = {
                str(p): c for p, c in planned[0].partition_consumer.items()
            }
    if args.plot:
        from routeplan.plots import pareto_png

        out["plot"] = storage.write_bytes(args.plot, pareto_png(out))
    if args.json:
        print(json_text(out))
        return 0
    print(
        f"{out['partitions']} partitions, {out['iterations']} iterations, "
        f"C̄ {consumer_capacity:g}, C {capacity:g}; "
        f"lower bound {np.mean(out['lower_bound']):.2f} consumers on average"
    )
    print(
        f"{'strategy':<17} {'consumers':>9} {'rscore':>8} {'cbs':>7} "
        f"{'delayed':>8} {'p90 s':>8} {'p99 s':>8} {'ms':>7}"
    )
    for name, a in out["algorithms"].items():
        cbs = f"{a['cbs']:>7.4f}" if "cbs" in a else f"{'-':>7}"  # not for overloading plans
        print(
            f"{name:<17} {a['mean_consumers']:>9.2f} {a['mean_rscore']:>8.3f} "
            f"{cbs} {a['latency']['delayed_share']:>8.4f} "
            f"{a['latency']['p90']:>8.2f} {a['latency']['p99']:>8.2f} {a['planning_ms']:>7.2f}"
        )
    if "pareto_front" in out:
        print(f"Pareto front (CBS, mean Rscore): {', '.join(out['pareto_front'])}")
    if args.plot:
        print(f"plot: {out['plot']}")
    return 0


DESCRIPTION = """\
Assign a topic's partitions to as few consumers as their measured write rates allow (paper 002),
with one or several bin-packing strategies, each replayed over the measurements from its last
assignment. Prints consumers, Rscore (load rebalanced), CBS, latency and planning time per
strategy and their Pareto front; --plot draws consumers against Rscore."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``binpack`` subcommand."""
    b = sub.add_parser(
        "binpack",
        help="assign partitions to consumers by bin packing (paper 002)",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan binpack --rates rates.csv --consumer-capacity 2000000 --strategies mwf
  routeplan binpack --rates rates.csv --consumer-capacity 2000000 \\
      --strategies nf,ff,bf,wf,mwf,bfd,binpack_milp --current assignment.csv --plot front.png""",
    )
    b.add_argument("--rates", required=True, help="rows of (iteration,) partition, rate")
    b.add_argument(
        "--consumer-capacity", type=positive_float, help="consumer capacity C̄, bytes/s (required)"
    )
    b.add_argument(
        "--capacity", type=positive_float, help="deprecated spelling of --consumer-capacity"
    )
    b.add_argument(
        "--strategies",
        type=strategy_list,
        help=f"one or several of {', '.join(ALGORITHMS)}, comma-separated (required)",
    )
    b.add_argument("--algorithm", type=strategy_list, help="deprecated spelling of --strategies")
    b.add_argument("--iteration-s", type=positive_float, default=30.0, help="iteration length T")
    b.add_argument("--rebalance-s", type=nonnegative_float, default=5.0, help="rebalance time R")
    b.add_argument("--current", help="assignment before the first measurement")
    b.add_argument("--consumers", type=worker_count, help="group size of the Kafka assignors")
    b.add_argument(
        "--time-limit",
        type=positive_float,
        default=10.0,
        help="binpack_milp: seconds per iteration",
    )
    b.add_argument("--plot", metavar="FILE", help="write a PNG of consumers vs Rscore per strategy")
    b.add_argument("--json", action="store_true")
    progress.add_flag(b)
    b.set_defaults(func=cmd_binpack)
