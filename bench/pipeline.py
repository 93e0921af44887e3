"""Pipeline benchmark: events/s of every stage at growing sizes, on this machine.

    make bench                                   # 1M and 10M events
    make bench BENCH_ARGS="--sizes 200000"

Generates sample logs (3 streams), then runs ingest, windows, plan, validate and publish in one
local Spark session (as the tests do; spark-submit adds a fixed ~10 s per stage) and prints a
table of seconds and events/s per stage, so later work can see how cost grows with data.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import date
from pathlib import Path

from jobs import ingest, plan, publish, validate, windows
from jobs.common import spark_session
from routeplan.simulation.generate import GeneratorConfig, generate

DAY = date(2026, 11, 20)
STREAMS = ("clicks", "orders", "views")


def run_size(events: int, root: Path, spark) -> list[tuple[str, int, float]]:
    home = root / f"n{events}"
    started = time.perf_counter()
    generate(
        GeneratorConfig(
            landing=home / "landing",
            workers_out=home / "config" / "workers.json",
            day=DAY,
            streams=STREAMS,
            events=events // len(STREAMS),
            keys=100_000,
            files_per_stream=8,
            malformed=0.0005,
            duplicates=0.0005,
        )
    )
    rows = [("generate", events, time.perf_counter() - started)]
    args = ["--home", str(home), "--interval-start", DAY.isoformat()]
    for name, job in (
        ("ingest", ingest),
        ("windows", windows),
        ("plan", plan),
        ("validate", validate),
        ("publish", publish),
    ):
        started = time.perf_counter()
        job.main(args)
        rows.append((name, events, time.perf_counter() - started))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="total events per run")
    parser.add_argument("--out", default="bench/results/pipeline.json")
    ns = parser.parse_args()
    sizes = [int(s) for s in ns.sizes.split(",")]
    spark = spark_session("bench")
    results = []
    with tempfile.TemporaryDirectory(prefix="routeplan-bench-") as tmp:
        for size in sizes:
            results += run_size(size, Path(tmp), spark)
    print(f"\n{'stage':<10}" + "".join(f"{f'{s:,} events':>26}" for s in sizes))
    print(f"{'':<10}" + "".join(f"{'seconds':>12}{'events/s':>14}" for _ in sizes))
    for stage in dict.fromkeys(r[0] for r in results):
        cells = [(sec, n / sec) for name, n, sec in results if name == stage]
        print(f"{stage:<10}" + "".join(f"{sec:>12.1f}{rate:>14,.0f}" for sec, rate in cells))
    if len(sizes) > 1:
        ratio = sizes[-1] / sizes[0]
        print(f"\ncost growth from {sizes[0]:,} to {sizes[-1]:,} events ({ratio:.0f}× the data):")
        for stage in dict.fromkeys(r[0] for r in results):
            secs = [sec for name, _, sec in results if name == stage]
            print(f"  {stage:<10} {secs[-1] / secs[0]:6.1f}× the time")
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            [dict(zip(("stage", "events", "seconds"), r, strict=True)) for r in results], indent=1
        )
    )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
