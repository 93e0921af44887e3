"""``routeplan generate``: sample stream logs in a landing directory, and their workers file.

The landing directory and the workers file may be object-store URIs (``ROUTEPLAN_HOME=s3://…``):
the files are generated in a temporary folder, then uploaded through fsspec.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from routeplan import settings, storage
from routeplan.cli import progress
from routeplan.files import json_text
from routeplan.parsing import iso_date, name_list, stream_name
from routeplan.simulation.generate import (
    FORMATS,
    SPEC_FIELDS,
    GeneratorConfig,
    default_day,
    generate,
)

DESCRIPTION = """\
Write a day of synthetic stream logs (Zipf-distributed keys whose popularity drifts hour by hour,
routed today by hash key grouping) into <landing>/<date>/, and the workers file the nightly jobs
read (some workers faster than the others). --malformed and --duplicates add the dirt ingest
must quarantine or drop."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser(
        "generate",
        help="write sample stream logs into a landing directory",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan generate --date 2026-01-05
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
    progress.add_flag(g)
    g.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
            print(
                f"{stream}: {counts['lines']} lines in {counts['files']} files "
                f"({counts['malformed']} malformed, {counts['duplicates']} duplicates)"
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
    )
    with progress.bar(args, "generate", args.events * len(args.streams)) as on_step:
        return generate(config, on_step=on_step)
