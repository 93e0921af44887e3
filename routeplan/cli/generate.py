"""``routeplan generate``: sample stream logs in a landing directory, and their workers file.

The landing directory and the workers file may be object-store URIs (``ROUTEPLAN_HOME=s3://…``):
the files are generated in a temporary folder, then uploaded through fsspec.

``--follow`` closes the loop plan → publish → producers → logs: each stream with a LATEST in the
routing store is routed as its producers would route it, through the producer client
(``routeplan_client``): a ``Router`` over LATEST's key_routing table (one producer per
stream, its messages in time order, so split keys spread by the router's own local loads) or
the consumer an ``Assignment`` gives each partition. The generator below the client only gets a
``FollowedTable`` (a route callable and the version).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from routeplan import storage
from routeplan.cli import progress
from routeplan.errors import UsageError
from routeplan.files import json_text
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.parsing import iso_date, name_list, stream_name
from routeplan.publishing.store import RoutingStore
from routeplan.simulation import scenarios
from routeplan.simulation.generate import (
    DRIFT_ORIGIN,
    FORMATS,
    SPEC_FIELDS,
    FollowedTable,
    GeneratorConfig,
    default_day,
    generate,
)
from routeplan_client import Assignment, Router

DESCRIPTION = f"""\
Write a day of synthetic stream logs (Zipf-distributed keys whose popularity drifts hour by hour)
into <landing>/<date>/, and the workers file the nightly jobs read (some workers faster than the
others). Streams are routed by hash key grouping; with --follow, a stream with a published table
is routed as producers following the routing store's LATEST route it (the producer client's
Router for key_routing, split keys by its local loads; the Assignment's consumer of each
partition for partition_assignment), each event stamped with routing_version. Consecutive days
continue each other: the hourly drift is one chain from {DRIFT_ORIGIN} (walked from there, no
state kept), so day D starts where day D-1 ended and the same arguments write the same files.
--scenario adds the day's events; --malformed and --duplicates add the dirt ingest must
quarantine or drop.

Scenarios (each for that day only, on every stream; repeatable):
{scenarios.help_text()}"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser(
        "generate",
        help="write sample stream logs into a landing directory",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan generate --date 2026-01-05
  routeplan generate --date 2026-01-06 --follow --scenario slow-worker:w3 --scenario hot-key
  routeplan generate --landing /tmp/landing --workers-out /tmp/workers.json --streams clicks \\
      --events 1000000 --zipf 1.4 --format csv --gzip --malformed 0.01""",
    )
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
    g.add_argument(
        "--drift",
        type=f["drift"],
        default=0.05,
        help="share of the top 1000 ranks swapped each hour",
    )
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
    g.add_argument(
        "--follow",
        action="store_true",
        help="route each stream as producers following its LATEST table (stream without one: "
        "hash key grouping); events carry routing_version",
    )
    g.add_argument(
        "--routing",
        help="the routing store --follow reads (default $ROUTEPLAN_ROUTING, else "
        "$ROUTEPLAN_HOME/routing)",
    )
    g.add_argument(
        "--scenario",
        type=scenarios.scenario,
        action="append",
        default=[],
        metavar="NAME[:ARG]",
        help=f"an event of the day: {', '.join(scenarios.SCENARIOS)} (see above)",
    )
    g.add_argument("--json", action="store_true")
    progress.add_flag(g)
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from routeplan import settings

    landing = args.landing or settings.landing_root()
    workers_out = args.workers_out or settings.workers_file()
    with (
        local_copy(landing, "landing") as local_landing,
        local_copy(workers_out, "workers.json") as local_workers,
    ):
        summary = _generate(args, local_landing, local_workers)
    summary.update(landing=str(landing), workers_file=str(workers_out))
    if args.json:
        print(json_text(summary, indent=1))
    else:
        for stream, counts in summary["streams"].items():
            routed = (
                f", routed by LATEST v{counts['routing_version']}"
                if "routing_version" in counts
                else ""
            )
            print(
                f"{stream}: {counts['lines']} lines in {counts['files']} files "
                f"({counts['malformed']} malformed, {counts['duplicates']} duplicates){routed}"
            )
        print(f"landing: {summary['landing']}/{summary['day']}  workers: {summary['workers_file']}")
    return 0


@contextlib.contextmanager
def local_copy(location: str, name: str) -> Iterator[Path]:
    """``location`` itself when local; else a temporary path whose content is uploaded to
    ``location`` when the block ends without an error."""
    if not storage.is_remote(location):
        yield Path(location)
        return
    with tempfile.TemporaryDirectory(prefix="routeplan-generate-") as tmp:
        local = Path(tmp, name)
        yield local
        fs, remote = storage.filesystem(location)
        if local.is_dir():
            for path in sorted(p for p in local.rglob("*") if p.is_file()):
                fs.put_file(str(path), f"{remote}/{path.relative_to(local).as_posix()}")
        elif local.is_file():
            fs.put_file(str(local), remote)


def _generate(args: argparse.Namespace, landing: Path, workers_out: Path) -> dict:
    config = GeneratorConfig(
        landing=landing,
        workers_out=workers_out,
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
        scenarios=tuple(dict.fromkeys(args.scenario)),
    )
    with contextlib.ExitStack() as stack:
        follow = _followed(args, stack) if args.follow else {}
        with progress.bar(args, "generate", args.events * len(args.streams)) as on_step:
            return generate(config, on_step=on_step, follow=follow)


def _followed(args: argparse.Namespace, stack: contextlib.ExitStack) -> dict[str, FollowedTable]:
    """Each stream with a LATEST in the routing store: the producer client over that version
    (pinned: the day is routed by one version), as the generator's ``FollowedTable``."""
    from routeplan import settings

    root = args.routing or settings.routing_root()
    store = RoutingStore(root)
    follow = {}
    for stream in args.streams:
        version = store.checked_latest(stream)
        if version is None:
            continue  # never planned: hash key grouping
        table = store.load(stream, version)
        if isinstance(table, RoutingTable):
            router = stack.enter_context(Router.open(root, stream, version=version))
            follow[stream] = FollowedTable(version, table.kind, table.workers, _route_keys(router))
        elif isinstance(table, PartitionAssignment):
            assignment = stack.enter_context(Assignment.open(root, stream, version=version))
            follow[stream] = FollowedTable(
                version, table.kind, table.consumers, _consumers(assignment, args.partitions)
            )
    return follow


def _route_keys(router: Router):
    """Keys in time order → the router's workers: ``route_many``, the same decisions (and local
    loads) as one ``route`` per message."""

    def route(keys: np.ndarray, partitions: np.ndarray) -> np.ndarray:
        return np.asarray(router.route_many(keys.tolist()), dtype=object)

    return route


def _consumers(assignment: Assignment, partitions: int):
    """Partitions → the consumer the assignment gives each; ``UsageError`` when it does not
    cover the ``partitions`` the events are spread over."""
    table = assignment.table
    missing = sorted(set(range(partitions)) - set(table.partition_consumer))
    if missing:
        raise UsageError(
            f"stream {table.stream!r}: LATEST v{table.version} assigns no consumer to "
            f"partition {missing[0]} ({len(missing)} of --partitions {partitions} unassigned)"
        )
    consumer = np.array([assignment.consumer(p) for p in range(partitions)], dtype=object)

    def route(keys: np.ndarray, partition: np.ndarray) -> np.ndarray:
        return consumer[partition]

    return route
