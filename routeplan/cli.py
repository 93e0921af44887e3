"""``routeplan`` command line: generate sample logs, show published routing tables."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import date
from pathlib import Path

from routeplan.generate import FORMATS, GeneratorConfig, default_day, generate
from routeplan.store import RoutingStore


def home() -> Path:
    """Data root: ``$ROUTEPLAN_HOME`` or ``./var``."""
    return Path(os.environ.get("ROUTEPLAN_HOME", "var"))


def _csv(text: str) -> tuple[str, ...]:
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


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
    )
    summary = generate(config)
    if args.json:
        print(json.dumps(summary, indent=1))
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
        "workers": doc["workers"],
        "predicted": doc["predicted"],
        "params": doc["params"],
    }


def cmd_show(args: argparse.Namespace) -> int:
    store = RoutingStore(args.routing or home() / "routing")
    try:
        doc = store.read_document(args.stream, args.version)
    except FileNotFoundError as err:
        print(f"routeplan show: {err} (looked in {store.root})", file=sys.stderr)
        return 1
    summary = table_summary(doc)
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    predicted = summary["predicted"]
    parent = summary["parent_version"]
    print(
        f"{summary['stream']} v{summary['version']} ({summary['kind']}, strategy "
        f"{summary['strategy']}, {f'parent v{parent}' if parent else 'first version'}) "
        f"published {summary['created_at']}"
    )
    print(
        f"  predicted imbalance {predicted.get('imbalance', float('nan')):.4f}, "
        f"moves {predicted.get('moves', 0):.0f}, "
        f"migrated load share {predicted.get('migrated_load_share', 0):.4f}, "
        f"{summary['hot_keys']} hot keys routed on their own"
    )
    for w in summary["workers"]:
        print(f"  {w['worker']:<12} capacity {w['capacity']:<8g} {w['state']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="routeplan", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write sample stream logs into a landing directory")
    g.add_argument("--landing", help="landing directory (default $ROUTEPLAN_HOME/landing)")
    g.add_argument(
        "--workers-out", help="workers file to write (default <home>/config/workers.json)"
    )
    g.add_argument("--date", type=date.fromisoformat, default=default_day(), help="day (UTC)")
    g.add_argument("--streams", type=_csv, default=("clicks", "orders", "views"))
    g.add_argument("--events", type=int, default=200_000, help="events per stream")
    g.add_argument("--keys", type=int, default=20_000, help="distinct keys per stream")
    g.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of key popularity")
    g.add_argument("--drift", type=float, default=0.05, help="share of top ranks swapped hourly")
    g.add_argument("--workers", type=int, default=8)
    g.add_argument("--fast-workers", type=int, default=2, help="y workers are z times faster")
    g.add_argument("--speedup", type=float, default=4.0, help="z")
    g.add_argument("--partitions", type=int, default=16)
    g.add_argument("--files", type=int, default=4, help="files per stream")
    g.add_argument("--format", choices=FORMATS, default="jsonl")
    g.add_argument("--gzip", action="store_true")
    g.add_argument("--malformed", type=float, default=0.0, help="share of broken lines")
    g.add_argument("--duplicates", type=float, default=0.0, help="share of repeated events")
    g.add_argument("--seed", type=int, default=42)
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_generate)

    s = sub.add_parser("show", help="summary of a published routing table (LATEST by default)")
    s.add_argument("--stream", required=True)
    s.add_argument("--version", type=int)
    s.add_argument("--routing", help="routing directory (default $ROUTEPLAN_HOME/routing)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"routeplan {args.command}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
