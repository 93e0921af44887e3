"""``routeplan`` command line: sample logs, planning, and the published routing tables."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from routeplan.arguments import (
    check_strategy_params,
    integer,
    iso_date,
    name_list,
    nonnegative_int,
    online_strategy_list,
    online_strategy_name,
    param_pair,
    positive_float,
    positive_int,
    stream_name,
    version_number,
    worker_count,
)
from routeplan.errors import InputError, OutputError, UsageError
from routeplan.generate import FORMATS, SPEC_FIELDS, GeneratorConfig, default_day, generate
from routeplan.inputs import json_text, reading
from routeplan.store import BrokenLatestError, RoutingStore, StaleLatestError, default_root


def home() -> Path:
    """Data root: ``$ROUTEPLAN_HOME`` or ``./var``."""
    return Path(os.environ.get("ROUTEPLAN_HOME", "var"))


def cmd_generate(args: argparse.Namespace) -> int:
    config = GeneratorConfig(
        landing=Path(args.landing or home() / "landing"),
        workers_out=Path(args.workers_out or home() / "config" / "workers.json"),
        day=args.date,
        streams=args.streams,
        events=args.events,
        keys=args.keys,
        zipf=args.zipf,
        drift=args.drift,
        workers=args.workers,
        fast_workers=args.fast_workers,
        speedup=args.speedup,
        partitions=args.partitions,
        files_per_stream=args.files,
        fmt=args.format,
        gzip=args.gzip,
        malformed=args.malformed,
        duplicates=args.duplicates,
        seed=args.seed,
        upstream=args.upstream,
    )
    summary = generate(config)
    if args.json:
        print(json_text(summary, indent=1))
    else:
        for stream, counts in summary["streams"].items():
            print(
                f"{stream}: {counts['lines']} lines in {counts['files']} files "
                f"({counts['malformed']} malformed, {counts['duplicates']} duplicates)"
            )
        print(f"landing: {summary['landing']}/{summary['day']}  workers: {summary['workers_file']}")
    return 0


def table_summary(doc: dict) -> dict:
    """The fields of a routing-table document a person looks at first."""
    return {
        "stream": doc["stream"],
        "version": doc["version"],
        "parent_version": doc["parent_version"],
        "created_at": doc["created_at"],
        "strategy": doc["strategy"],
        "kind": doc["kind"],
        "num_key_groups": doc["num_key_groups"],
        "hot_keys": len(doc["hot_keys"]),
        "partitions": len(doc.get("partition_consumer", {})),
        "consumers": len(set(doc.get("partition_consumer", {}).values())),
        "workers": doc["workers"],
        "predicted": doc["predicted"],
        "params": doc["params"],
        "reason": doc.get("reason"),
        "restored_version": doc.get("restored_version"),
    }


def cmd_show(args: argparse.Namespace) -> int:
    store = RoutingStore(args.routing or default_root())
    try:
        with reading(store.root / args.stream):  # a corrupt stored file: exit code 1
            doc = store.read_document(args.stream, args.version)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"{err} (looked in {store.root})") from None
    summary = table_summary(doc)
    if args.json:
        print(json_text(summary, indent=1))
        return 0
    predicted = summary["predicted"]
    parent = summary["parent_version"]
    print(
        f"{summary['stream']} v{summary['version']} ({summary['kind']}, strategy "
        f"{summary['strategy']}, {f'parent v{parent}' if parent else 'first version'}) "
        f"published {summary['created_at']}"
    )
    if summary["reason"]:
        print(f"  reason: {summary['reason']}")
    routed = (
        f"{summary['partitions']} partitions on {summary['consumers']} consumers"
        if summary["kind"] == "partition_assignment"
        else f"{summary['hot_keys']} hot keys routed on their own"
    )
    print(
        f"  predicted imbalance {predicted.get('imbalance', float('nan')):.4f}, "
        f"moves {predicted.get('moves', 0):.0f}, "
        f"migrated load share {predicted.get('migrated_load_share', 0):.4f}, {routed}"
    )
    for w in summary["workers"]:
        print(f"  {w['worker']:<12} capacity {w['capacity']:<8g} {w['state']}")
    return 0


def _simulation_inputs(args: argparse.Namespace):
    from routeplan.simulator import events_from_spec, parse_capacities

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


def cmd_simulate(args: argparse.Namespace) -> int:
    from routeplan.simulator import simulate

    params = check_strategy_params(args.strategy, dict(args.param))
    stream, capacities, options = _simulation_inputs(args)
    result = simulate(stream, args.strategy, capacities, params=params, **options)
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


def cmd_compare(args: argparse.Namespace) -> int:
    from routeplan.simulator import ONLINE, compare, plot
    from routeplan.strategies import strategy_parameters

    names = args.strategies or tuple(ONLINE)
    params: dict[str, dict] = {n: {} for n in names}
    for key, value in args.param:
        target, dot, name = key.rpartition(".")
        for n in [target] if dot else [n for n in names if name in strategy_parameters(n)]:
            if n not in params:
                raise UsageError(f"--param {key}: {n!r} is not compared ({', '.join(names)})")
            params[n][name] = value
    params = {n: check_strategy_params(n, p) for n, p in params.items()}
    stream, capacities, options = _simulation_inputs(args)
    results = compare(stream, names, capacities, params=params, **options)
    out = plot(results, args.plot, title=f"{stream.messages} messages, {args.workers} workers")
    docs = [r.summary() for r in results]
    if args.json:
        print(json_text({"plot": str(out), "results": docs}))
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


def _add_simulation_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--events",
        required=True,
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


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are ``UsageError``\\ s: ``main`` prints them on one line
    (subparsers are of the same class, so they name the subcommand)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, prog=self.prog)


def package_version() -> str:
    """routeplan's installed version (``unknown`` when it runs from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("routeplan")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="routeplan", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write sample stream logs into a landing directory")
    g.add_argument("--landing", help="landing directory (default $ROUTEPLAN_HOME/landing)")
    g.add_argument(
        "--workers-out", help="workers file to write (default <home>/config/workers.json)"
    )
    g.add_argument("--date", type=iso_date, default=default_day(), help="day (UTC)")
    g.add_argument("--streams", type=name_list, default=("clicks", "orders", "views"))
    f = SPEC_FIELDS  # the same types as the generate: spec of simulate/compare --events
    g.add_argument("--events", type=f["events"], default=200_000, help="events per stream")
    g.add_argument("--keys", type=f["keys"], default=20_000, help="distinct keys per stream")
    g.add_argument("--zipf", type=f["zipf"], default=1.1, help="Zipf exponent of key popularity")
    g.add_argument("--drift", type=f["drift"], default=0.05, help="share of top ranks swapped")
    g.add_argument("--workers", type=f["workers"], default=8)
    g.add_argument(
        "--fast-workers", type=f["fast_workers"], default=2, help="y workers are z times faster"
    )
    g.add_argument("--speedup", type=f["speedup"], default=4.0, help="z")
    g.add_argument("--partitions", type=f["partitions"], default=16)
    g.add_argument("--files", type=f["files_per_stream"], default=4, help="files per stream")
    g.add_argument("--format", choices=FORMATS, default="jsonl")
    g.add_argument("--gzip", action="store_true")
    g.add_argument("--malformed", type=f["malformed"], default=0.0, help="share of broken lines")
    g.add_argument("--duplicates", type=f["duplicates"], default=0.0, help="share repeated")
    g.add_argument("--seed", type=f["seed"], default=42)
    g.add_argument(
        "--upstream",
        type=stream_name,
        metavar="STREAM",
        help="the other streams' events derive from this one's (upstream_stream/upstream_key)",
    )
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_generate)

    s = sub.add_parser("show", help="summary of a published routing table (LATEST by default)")
    s.add_argument("--stream", required=True, type=stream_name)
    s.add_argument("--version", type=version_number, help="default: LATEST")
    s.add_argument("--routing", help="routing directory (default $ROUTEPLAN_HOME/routing)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)

    from routeplan.binpack import command as binpack_command

    binpack_command.add_parser(sub)  # routeplan binpack: partitions onto consumers (paper 002)

    from routeplan import plan_command

    plan_command.add_parser(sub, param_pair)  # routeplan plan: any batch strategy on a loads file

    from routeplan import versions_command

    versions_command.add_parsers(sub)  # routeplan diff / rollback / versions / serve

    from routeplan import doctor_command

    doctor_command.add_parser(sub)  # routeplan doctor: a store's state after faults, --fix

    sim = sub.add_parser("simulate", help="replay a stream through a key-routing strategy")
    _add_simulation_arguments(sim)
    sim.add_argument(
        "--strategy",
        required=True,
        type=online_strategy_name,
        help="kg, sg, potc, pkg, dchoices, porc, chbl, cg or ring",
    )
    sim.add_argument("--series", action="store_true", help="add the metrics over time")
    sim.set_defaults(func=cmd_simulate)

    cmp = sub.add_parser("compare", help="simulate several strategies on one stream, plot them")
    _add_simulation_arguments(cmp)
    cmp.add_argument("--strategies", type=online_strategy_list, help="default: every strategy")
    cmp.add_argument("--plot", default="compare.png", help="PNG to write")
    cmp.set_defaults(func=cmd_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; a bad input is one line on stderr and exit code 2 (the command line is
    wrong: ``UsageError``, any other ``ValueError``) or 1 (an input file, the store or the
    output: ``InputError``, missing or undecodable files, ``OSError``), never a traceback."""
    prog = "routeplan"
    try:
        args = build_parser().parse_args(argv)
        prog = f"routeplan {args.command}"
        return args.func(args)
    except UsageError as err:
        return _fail(err.prog or prog, err, 2)
    except (
        InputError,
        UnicodeDecodeError,
        OutputError,
        OSError,
        StaleLatestError,
        BrokenLatestError,
    ) as err:
        return _fail(prog, err, 1)
    except MemoryError as err:  # a size no limit caught: numpy names what it could not allocate
        return _fail(prog, str(err) or "out of memory", 1)
    except ValueError as err:
        return _fail(prog, err, 2)


def _fail(prog: str, err: object, code: int) -> int:
    """Print ``prog: error: message`` as one line on stderr; return ``code``."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    message = lines[0] if lines else type(err).__name__
    for line in lines[1:]:  # e.g. a schema's violations, one a line
        message += (" " if message.endswith(":") else "; ") + line
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
