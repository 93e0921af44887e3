"""``routeplan simulate`` and ``routeplan compare``: replay a stream through online key-routing
strategies, one or several (with a plot)."""

from __future__ import annotations

import argparse

from routeplan import storage
from routeplan.cli import progress
from routeplan.cli.strategies import (
    check_strategy_params,
    online_strategy_list,
    online_strategy_name,
)
from routeplan.errors import UsageError
from routeplan.files import json_text
from routeplan.parsing import (
    integer,
    nonnegative_int,
    param_pair,
    positive_float,
    positive_int,
    stream_name,
    worker_count,
)

SIMULATE = """\
Replay a stream message by message through one online key-routing strategy (papers 000, 001,
003) and print its imbalance, memory (key → worker pairs), replication and queues. The events
are a file or folder of stream logs, or a synthetic stream (zipf: or generate:)."""

COMPARE = """\
Replay one stream through several online key-routing strategies (default: all of them) on the
same workers, print a table of their metrics and draw imbalance and queues over time into a PNG
(--plot)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser(
        "simulate",
        help="replay a stream through a key-routing strategy",
        description=SIMULATE,
        epilog="""\
Examples:
  routeplan simulate --events zipf:messages=1000000,keys=100000,z=1.2 --workers 8 --strategy pkg
  routeplan simulate --events var/landing/2026-01-05 --stream clicks --workers 8 \\
      --capacities y=2,z=4 --strategy cg --param epsilon=0.05 --json""",
    )
    _add_simulation_arguments(sim)
    sim.add_argument(
        "--strategy",
        required=True,
        type=online_strategy_name,
        help="kg, sg, potc, pkg, dchoices, porc, chbl, cg or ring",
    )
    sim.add_argument("--series", action="store_true", help="add the metrics over time")
    sim.set_defaults(func=run_simulate)

    cmp = sub.add_parser(
        "compare",
        help="simulate several strategies on one stream, plot them",
        description=COMPARE,
        epilog="""\
Examples:
  routeplan compare --events zipf:messages=200000,keys=10000,z=1.4 --workers 8 \\
      --strategies kg,pkg,dchoices,cg --plot compare.png
  routeplan compare --events zipf:messages=200000,keys=10000 --workers 4 --param cg.epsilon=0.05""",
    )
    _add_simulation_arguments(cmp)
    cmp.add_argument("--strategies", type=online_strategy_list, help="default: every strategy")
    cmp.add_argument("--plot", default="compare.png", help="PNG to write (default compare.png)")
    cmp.set_defaults(func=run_compare)


def _simulation_inputs(args: argparse.Namespace):
    from routeplan.simulation.events import events_from_spec, parse_capacities

    stream = events_from_spec(args.events, args.stream)
    if args.messages is not None:
        stream = stream.head(args.messages)
    capacities = parse_capacities(args.capacities, args.workers)
    options = {
        "sources": args.sources,
        "report_every": args.report_every,
        "utilisation": args.utilisation,
        "seed": args.seed,
    }
    return stream, capacities, options


def run_simulate(args: argparse.Namespace) -> int:
    from routeplan.simulation.replay import simulate

    params = check_strategy_params(args.strategy, dict(args.param))
    stream, capacities, options = _simulation_inputs(args)
    with progress.bar(args, f"simulate {args.strategy}", stream.messages) as on_step:
        result = simulate(
            stream, args.strategy, capacities, params=params, on_step=on_step, **options
        )
    doc = result.summary(series=args.series)
    if args.json:
        print(json_text(doc))
        return 0
    print(
        f"{doc['strategy']}: {doc['messages']} messages, {doc['distinct_keys']} keys, "
        f"{doc['workers']} workers, {doc['sources']} sources"
    )
    for name in ("imbalance", "max_imbalance", "memory", "replication", "moves", "queue_spread"):
        print(f"  {name:<14} {doc[name]:.6g}")
    print(f"  {doc['messages_per_s']:.0f} messages/s")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from routeplan.planning.registry import strategy_parameters
    from routeplan.plots import compare_png
    from routeplan.simulation.online import ONLINE_SCHEMES
    from routeplan.simulation.replay import compare

    names = args.strategies or tuple(ONLINE_SCHEMES)
    params: dict[str, dict] = {n: {} for n in names}
    for key, value in args.param:
        target, dot, name = key.rpartition(".")
        for n in [target] if dot else [n for n in names if name in strategy_parameters(n)]:
            if n not in params:
                raise UsageError(f"--param {key}: {n!r} is not compared ({', '.join(names)})")
            params[n][name] = value
    params = {n: check_strategy_params(n, p) for n, p in params.items()}
    stream, capacities, options = _simulation_inputs(args)
    total = stream.messages * len(names)
    with progress.bar(args, f"compare {len(names)} strategies", total) as on_step:
        results = compare(stream, names, capacities, params=params, on_step=on_step, **options)
    title = f"{stream.messages} messages, {args.workers} workers"
    out = storage.write_bytes(args.plot, compare_png(results, title=title))
    docs = [r.summary() for r in results]
    if args.json:
        print(json_text({"plot": out, "results": docs}))
        return 0
    print(
        f"{'strategy':<9} {'imbalance':>10} {'max_imb':>10} {'memory':>10} {'replic.':>8} "
        f"{'queue':>10} {'latency':>10} {'moves':>6} {'msg/s':>10}"
    )
    for d in docs:
        print(
            f"{d['strategy']:<9} {d['imbalance']:>10.4g} {d['max_imbalance']:>10.4g} "
            f"{d['memory']:>10} {d['replication']:>8.3f} {d['queue_spread']:>10.4g} "
            f"{d['latency_spread']:>10.4g} {d['moves']:>6} {d['messages_per_s']:>10}"
        )
    print(f"plot: {out}")
    return 0


def events_spec(text: str) -> str:
    """``--events``: not blank (a blank path would read the working directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "expected an events file or folder, 'zipf:…' or 'generate:…', got ''"
        )
    return text


def _add_simulation_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--events",
        required=True,
        type=events_spec,
        help="events file or directory (jsonl/csv/parquet[.gz]), "
        "'zipf:messages=N,keys=K,z=Z[,seed=S]' or 'generate:events=N,keys=K,zipf=Z,…'",
    )
    p.add_argument("--stream", type=stream_name, help="only events of this stream")
    p.add_argument("--messages", type=positive_int, help="replay only the first N messages")
    p.add_argument("--workers", type=worker_count, required=True)
    p.add_argument(
        "--sources",
        type=integer(1, 4096),
        default=1,
        help="sources, each with local load estimates (at most 4096)",
    )
    p.add_argument(
        "--capacities", help="'y=3,z=5' (y workers z times faster) or one value per worker"
    )
    p.add_argument(
        "--param",
        type=param_pair,
        action="append",
        default=[],
        metavar="K=V",
        help="strategy parameter (repeatable); compare also takes NAME.K=V",
    )
    p.add_argument(
        "--report-every", type=positive_int, help="time slot in messages (default 1/100)"
    )
    p.add_argument(
        "--utilisation", type=positive_float, default=0.8, help="arrival rate / capacity, > 0"
    )
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--json", action="store_true")
    progress.add_flag(p)
