"""The main job: sample logs → routeplan_nightly through Airflow → a summary per stream.

    make demo                                   # fresh sample data for yesterday (UTC)
    make demo DEMO_ARGS="--landing /data/logs --workers /data/workers.json --date 2026-11-20"

Runs the real DAG with ``airflow dags test`` (every task a real spark-submit on Delta Lake) and
prints, per stream, the version published, the imbalance the logs show and the plan's predicted
imbalance. Needs the environment ``make`` exports (AIRFLOW_HOME, ROUTEPLAN_HOME, …).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

from routeplan import settings, storage
from routeplan.simulation.generate import default_day

REPO = Path(__file__).resolve().parents[1]
PROGRESS = re.compile(
    r"\[routeplan [a-z]+\].*?(?=\s+\[airflow\.|$)|\[DAG TEST\] end task task_id=\w+"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--date",
        type=date.fromisoformat,
        default=default_day(),
        help="day (UTC) to generate and process (default: yesterday)",
    )
    parser.add_argument("--landing", help="your own landing directory: <landing>/<YYYY-MM-DD>/*")
    parser.add_argument("--workers", help="your workers file (schemas/worker.schema.json)")
    parser.add_argument("--events", type=int, default=100_000, help="sample events per stream")
    parser.add_argument(
        "--strategy",
        default="",
        help="plan every stream with this strategy (default: each "
        "stream's policy in $ROUTEPLAN_HOME/config/streams.yaml)",
    )
    parser.add_argument(
        "--policies",
        help="your streams' policies (schemas/streams.schema.json); default: "
        "$ROUTEPLAN_HOME/config/streams.yaml, installed from config/streams.yaml if missing",
    )
    args = parser.parse_args()
    home = settings.home()
    if not storage.is_remote(home):
        home = str(Path(home).resolve())

    conf = {"date": args.date.isoformat()}
    if args.strategy:
        conf["strategy"] = args.strategy
    if args.policies:
        conf["policies_path"] = str(Path(args.policies).resolve())
    else:
        install_policies(home)
    if args.landing:
        conf["landing_path"] = str(Path(args.landing).resolve())
        if args.workers:
            conf["workers_path"] = str(Path(args.workers).resolve())
    else:
        print(f"==> generating sample logs for {args.date} under {home}/landing", flush=True)
        subprocess.run(
            [
                "routeplan",
                "generate",
                "--date",
                args.date.isoformat(),
                "--events",
                str(args.events),
                "--malformed",
                "0.001",
                "--duplicates",
                "0.001",
            ],
            check=True,
        )

    local = home if not storage.is_remote(home) else os.environ.get("AIRFLOW_HOME", "var")
    log_dir = Path(local) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"demo-{args.date}.log"
    logical = (args.date + timedelta(days=1)).isoformat()
    print(f"==> airflow dags test routeplan_nightly {logical}  (full log: {log_path})", flush=True)
    command = ["airflow", "dags", "test", "routeplan_nightly", logical, "--conf", json.dumps(conf)]
    with (
        log_path.open("w") as log,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            found = PROGRESS.search(line)
            if found:
                print("   ", found.group(0)[:150], flush=True)
    report = storage.join(settings.reports_root(home), args.date.isoformat(), "publish.json")
    if proc.returncode != 0 or not storage.exists(report):
        print(f"routeplan_nightly failed (exit {proc.returncode}); see {log_path}", file=sys.stderr)
        return 1
    print_summary(json.loads(storage.read_bytes(report)), home)
    return 0


def install_policies(home: str) -> None:
    """The sample planning policies (``config/streams.yaml``) as the deployment's, unless it has
    its own."""
    target = settings.policies_file(home)
    if storage.exists(target):
        print(f"==> planning policies: {target}", flush=True)
        return
    storage.write_text(target, (REPO / "config" / "streams.yaml").read_text())
    print(f"==> planning policies: {target} (the sample config/streams.yaml)", flush=True)


NEXT = "routeplan show --stream <stream>   |   make airflow  (UI on http://localhost:8080)"


def print_summary(report: dict, home: str, next_steps: str = NEXT) -> None:
    print(f"\nrouteplan_nightly {report['interval_start']}: routing tables in {home}/routing")
    print(
        f"{'stream':<10} {'kind':<21} {'strategy':<9} {'version':<8} {'action':<10} "
        f"{'imbalance today':>16} {'predicted':>10}  reason"
    )
    for s in report["streams"]:
        print(
            f"{s['stream']:<10} {s.get('kind', ''):<21} {s['strategy']:<9} v{s['version']:<7} "
            f"{s['action']:<10} {s['observed_imbalance']:>16.4f} "
            f"{s['predicted_imbalance']:>10.4f}  {s['reason']}"
        )
    for s in report["streams"]:
        if (s.get("choice") or "").startswith("auto"):
            print(f"{s['stream']}: {s['choice']}")
    print("\nimbalance = max over workers of load/capacity relative to the fair share, minus 1")
    print(f"next: {next_steps}")


if __name__ == "__main__":
    sys.exit(main())
