"""Pipeline benchmark: events/s of every stage at growing sizes, and what each spark-submit
pays before its first row, on this machine.

    python bench/pipeline.py                                  # 1M and 10M events
    python bench/pipeline.py --sizes 200000 --submit-events 3000

1. **Fixed cost per task**: each stage run as the DAG runs it — one ``spark-submit`` with the
   jobs' ``submit_conf`` on ``local[2]`` — on a tiny day (``--submit-events``), beside a probe
   that only starts Python, the JVM and the Spark session and runs one job: the seconds a task
   pays whatever the data.
2. **How cost grows**: sample logs (3 streams) at each size through ingest, windows, plan,
   validate and publish in one warm local session; seconds and events/s per stage, and from
   the smallest to the largest size the growth of the cost per event (above 1: a stage is slower
   per event on more data).
3. **What the forecast adds**: the plan stage on the busiest window alone (``plan-peak``) beside
   the default plan on the forecast of every window (``plan``: its history read, the held-out
   plan and the gate), on the same day before anything is published.
4. **The backtest's cost**: once LATEST is published, plan again with another strategy (``kg``)
   so that the plan job routes the day through the candidate and LATEST (``jobs/backtest.py``);
   its seconds (the plan job's own measurement, summed over the streams) beside the windows
   stage's, and the ratio against the target: at most 30 % of the windows stage.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from jobs import ingest, plan, publish, validate, windows
from jobs.common import JOBS_DIR, spark_defaults_file, spark_session, submit_conf
from routeplan.simulation.generate import GeneratorConfig, generate

DAY = date(2026, 11, 20)
STREAMS = ("clicks", "orders", "views")
STAGES = ("ingest", "windows", "plan", "validate", "publish")
BACKTEST_TARGET = 0.30  # the backtest may add at most this share of the windows stage
PROBE = """from jobs.common import spark_session
spark_session("probe").range(1).count()
"""


def generate_sample(events: int, home: Path) -> dict:
    """The benchmarks' sample day under ``home``: ``events`` over 3 streams of JSON Lines,
    100,000 keys per stream, 8 files per stream, 0.05 % malformed lines and 0.05 % duplicates."""
    return generate(
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


def run_size(events: int, root: Path, spark) -> list[tuple[str, int, float]]:
    home = root / f"n{events}"
    started = time.perf_counter()
    generate_sample(events, home)
    rows = [("generate", events, time.perf_counter() - started)]
    args = ["--home", str(home), "--interval-start", DAY.isoformat()]
    stages = (
        ("ingest", ingest, []),
        ("windows", windows, []),
        ("plan-peak", plan, ["--planning-window", "peak"]),  # replaced by the next
        ("plan", plan, []),
        ("validate", validate, []),
        ("publish", publish, []),
    )
    for name, job, extra in stages:
        started = time.perf_counter()
        job.main([*args, *extra])
        rows.append((name, events, time.perf_counter() - started))
    # the backtest: a candidate other than the LATEST just published, so both are routed
    report = plan.main([*args, "--strategy", "kg"])
    seconds = sum(s["backtest_seconds"] or 0.0 for s in report["streams"].values())
    rows.append(("backtest", events, seconds))
    return rows


def seconds_of(results: list[tuple[str, int, float]], stage: str, events: int) -> float:
    return next(sec for name, n, sec in results if (name, n) == (stage, events))


def backtest_ratios(results: list[tuple[str, int, float]]) -> dict[int, float]:
    """Events → the backtest's seconds over the windows stage's."""
    seconds = {(name, n): sec for name, n, sec in results}
    return {
        n: seconds[("backtest", n)] / seconds[("windows", n)]
        for name, n, _ in results
        if name == "backtest"
    }


def submit_seconds(application: Path, args: list[str]) -> float:
    """Wall seconds of one ``spark-submit`` of ``application`` as the DAG's tasks run it
    (``submit_conf``, ``local[2]``); its output is shown only when it fails."""
    spark_submit = shutil.which("spark-submit") or str(Path(sys.executable).parent / "spark-submit")
    conf = [f"--conf={key}={value}" for key, value in submit_conf().items()]
    conf += ["--properties-file", str(spark_defaults_file())]
    started = time.perf_counter()
    done = subprocess.run(
        [spark_submit, "--master", "local[2]", *conf, str(application), *args],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"spark-submit {application.name} failed:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - started


def submit_costs(events: int, root: Path) -> dict[str, float]:
    """Seconds of a spark-submit per stage on a tiny day of ``events``, and of the probe."""
    home = root / "submit"
    generate_sample(events, home)
    probe = root / "probe.py"
    probe.write_text(PROBE)
    costs = {"session only (probe)": submit_seconds(probe, [])}
    args = ["--home", str(home), "--interval-start", DAY.isoformat()]
    for stage in STAGES:
        costs[stage] = submit_seconds(JOBS_DIR / f"{stage}.py", args)
        print(f"  spark-submit {stage}: {costs[stage]:.1f} s", flush=True)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="total events per run")
    parser.add_argument(
        "--submit-events", type=int, default=3000, help="the tiny day of the fixed-cost runs"
    )
    parser.add_argument("--out", default="bench/results/pipeline.json")
    ns = parser.parse_args()
    sizes = [int(s) for s in ns.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="routeplan-bench-") as tmp:
        print(f"fixed cost per task: spark-submit on {ns.submit_events:,} events", flush=True)
        costs = submit_costs(ns.submit_events, Path(tmp))
        spark = spark_session("bench")
        results = []
        for size in sizes:
            results += run_size(size, Path(tmp), spark)
    print(f"\nfixed cost per task (spark-submit, local[2], {ns.submit_events:,} events):")
    for name, seconds in costs.items():
        print(f"  {name:<22} {seconds:6.1f} s")
    print(f"  {'the five stages':<22} {sum(costs[s] for s in STAGES):6.1f} s")
    print(f"\n{'stage':<10}" + "".join(f"{f'{s:,} events':>26}" for s in sizes))
    print(f"{'':<10}" + "".join(f"{'seconds':>12}{'events/s':>14}" for _ in sizes))
    for stage in dict.fromkeys(r[0] for r in results):
        cells = [(sec, n / sec) for name, n, sec in results if name == stage]
        print(f"{stage:<10}" + "".join(f"{sec:>12.1f}{rate:>14,.0f}" for sec, rate in cells))
    growth = {}
    if len(sizes) > 1:
        print(f"\ncost per event from {sizes[0]:,} to {sizes[-1]:,} events (target: no growth):")
        for stage in dict.fromkeys(r[0] for r in results):
            first, *_, last = [(n, sec) for name, n, sec in results if name == stage]
            growth[stage] = (last[1] / last[0]) / (first[1] / first[0])
            verdict = "met" if growth[stage] <= 1.0 else "MISSED (slower per event)"
            print(f"  {stage:<10} {growth[stage]:6.2f}×  {verdict}")
    print("\nthe plan stage on the forecast beside the busiest window alone:")
    for n in sizes:
        forecast, peak = seconds_of(results, "plan", n), seconds_of(results, "plan-peak", n)
        print(f"  {n:>12,} events  peak {peak:6.1f} s  forecast {forecast:6.1f} s  "
              f"{forecast / peak:5.2f}×")  # fmt: skip
    ratios = backtest_ratios(results)
    print(f"\nbacktest beside windows (target: at most {BACKTEST_TARGET:.0%} of windows):")
    seconds = {(name, n): sec for name, n, sec in results}
    for n, ratio in ratios.items():
        verdict = "met" if ratio <= BACKTEST_TARGET else "MISSED"
        print(
            f"  {n:>12,} events  windows {seconds[('windows', n)]:6.1f} s  backtest "
            f"{seconds[('backtest', n)]:6.1f} s  {ratio:6.1%}  {verdict}"
        )
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = [dict(zip(("stage", "events", "seconds"), r, strict=True)) for r in results]
    out.write_text(
        json.dumps(
            {
                "submit_seconds": costs,
                "runs": rows,
                "per_event_growth": growth,
                "backtest_over_windows": {str(n): r for n, r in ratios.items()},
            },
            indent=1,
        )
        + "\n"
    )
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
