"""The main job: sample logs → routeplan_nightly through Airflow, night after night → a summary.

    make demo                                   # three nights of sample data, ending yesterday
    make demo DEMO_ARGS="--scenario regression" # … and a bad table published by hand: rolled back
    make demo DEMO_ARGS="--landing /data/logs --workers /data/workers.json --date 2026-11-20"

Runs the real DAG with ``airflow dags test``, once per night; its Spark tasks run the jobs on
Delta Lake as clients of one Spark Connect server started for the run (``--spark submit``: each
task a spark-submit of its own, as on a cluster). The first night's sample logs are routed by
hash key grouping; every later night's by producers that follow the routing table the previous
night published (``routeplan generate --follow``: the real client, each event stamped with the
version it was routed by), so each night measures what the previous plan did
(``gold.plan_outcomes``). ``--scenario regression``
publishes a deliberately bad table by hand before the last night (every key group of clicks on
its slowest worker) and adds a night: the night whose logs followed it rolls it back by itself,
and the one after plans again from the restored table. Other ``--scenario`` values
(``slow-worker:W``, ``hot-key``, ``remove-worker:W``) go to the generator for the last night.
The summary shows, per night and stream, the version in force, its predicted and realized
numbers, and what the night published. Needs the environment ``make`` exports (AIRFLOW_HOME,
ROUTEPLAN_HOME, …).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import spark_connect  # scripts/, beside this file

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
        help="the last night's day (UTC) (default: yesterday)",
    )
    parser.add_argument(
        "--nights",
        type=int,
        default=None,
        help="nights to run, ending on --date (default 3 on sample data, 1 on your own logs)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME[:ARG]",
        help="regression: a bad table published by hand before the last night (and a night "
        "more); slow-worker:W, hot-key[:SHARE], remove-worker:W: the generator's, last night",
    )
    parser.add_argument("--landing", help="your own landing directory: <landing>/<YYYY-MM-DD>/*")
    parser.add_argument("--workers", help="your workers file (schemas/worker.schema.json)")
    parser.add_argument("--events", type=int, default=100_000, help="sample events per stream")
    parser.add_argument(
        "--drift",
        type=float,
        default=0.01,
        help="sample data: share of the top key ranks swapped each hour, one chain across the "
        "nights (default 0.01: yesterday's popularity mostly holds today; 0.05 and more turns "
        "the hot keys over within a day, and plans of yesterday's peak hour miss)",
    )
    parser.add_argument(
        "--strategy",
        default="",
        help="plan every stream with this strategy (default: each "
        "stream's policy in $ROUTEPLAN_HOME/config/streams.yaml)",
    )
    parser.add_argument(
        "--spark",
        choices=("connect", "submit"),
        default="connect",
        help="connect (default): one local Spark Connect server for the run, every Spark task "
        "its client; submit: every task a spark-submit of its own, as on a cluster (~2x "
        "slower). ROUTEPLAN_SPARK_CONNECT_CONN or ROUTEPLAN_SPARK_CONN set in the environment "
        "is used as it is",
    )
    parser.add_argument(
        "--policies",
        help="your streams' policies (schemas/streams.schema.json); default: "
        "$ROUTEPLAN_HOME/config/streams.yaml, installed from config/streams.yaml if missing",
    )
    args = parser.parse_args()
    regression = "regression" in args.scenario
    generated = [s for s in args.scenario if s != "regression"]
    if args.landing and (regression or generated):
        parser.error("--scenario needs the sample data (it is played by the generator)")
    nights = args.nights or (1 if args.landing else 3)
    if nights < 1:
        parser.error("--nights must be at least 1")
    nights += regression  # the night after the bad one plans again from the restored table
    home = settings.home()
    if not storage.is_remote(home):
        home = str(Path(home).resolve())
    base = {}
    if args.strategy:
        base["strategy"] = args.strategy
    if args.policies:
        base["policies_path"] = str(Path(args.policies).resolve())
    else:
        install_policies(home)
    if args.landing:
        base["landing_path"] = str(Path(args.landing).resolve())
        if args.workers:
            base["workers_path"] = str(Path(args.workers).resolve())
    days = [args.date - timedelta(days=nights - 1 - i) for i in range(nights)]
    with spark_for_tasks(args.spark, home) as env:
        if not run_nights(args, home, base, days, env):
            return 1
    print_nights(home, days)
    return 0


@contextmanager
def spark_for_tasks(spark: str, home: str) -> Iterator[dict[str, str]]:
    """The environment of the DAG runs: with ``spark`` "connect", a local Spark connection
    (``spark_local``) and no Spark Connect server named in this one, a server started for the
    block (``scripts/spark_connect.py``) and named for the runs' tasks. A Spark connection
    you named (``ROUTEPLAN_SPARK_CONN``, e.g. a cluster) is used as it is."""
    current = settings.current()
    if spark != "connect" or current.spark_connect_conn or current.spark_conn != "spark_local":
        yield dict(os.environ)
        return
    log_path = Path(local_dir(home)) / "logs" / "spark-connect.log"
    print(f"==> Spark Connect server for the nights' tasks (log: {log_path})", flush=True)
    with spark_connect.server(log_path) as port:
        yield {**os.environ, **spark_connect.airflow_env(port)}


def local_dir(home: str) -> str:
    """Where the demo's own logs go: the home, or ``$AIRFLOW_HOME`` when it is remote."""
    return home if not storage.is_remote(home) else os.environ.get("AIRFLOW_HOME", "var")


def run_nights(
    args: argparse.Namespace, home: str, base: dict, days: list[date], env: dict[str, str]
) -> bool:
    """Each night of ``days``: its sample logs (unless --landing), then routeplan_nightly."""
    generated = [s for s in args.scenario if s != "regression"]
    bad_night = days[-2] if "regression" in args.scenario else None
    for i, day in enumerate(days):
        if day == bad_night:  # published during the day before: its logs follow it
            publish_bad_table(home, "clicks")
        if not args.landing:
            last = day == (bad_night or days[-1])
            scenarios = generated if last else []
            generate(day, args.events, args.drift, follow=i > 0, scenarios=scenarios)
        if run_night(home, day, {**base, "date": day.isoformat()}, env) != 0:
            return False
    return True


def generate(day: date, events: int, drift: float, follow: bool, scenarios: list[str]) -> None:
    """The day's sample logs (routed by hash, or following LATEST)."""
    how = "following LATEST" if follow else "routed by hash key grouping"
    print(f"==> sample logs for {day}, {how}", flush=True)
    command = ["routeplan", "generate", "--date", day.isoformat(), "--events", str(events)]
    command += ["--drift", str(drift)]
    command += ["--malformed", "0.001", "--duplicates", "0.001", "--no-progress"]
    command += ["--follow"] if follow else []
    for scenario in scenarios:
        command += ["--scenario", scenario]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def publish_bad_table(home: str, stream: str) -> None:
    """A table that puts every key group of ``stream`` on its worker of the smallest capacity
    (the worst routing there is), published by hand (as a mistaken operator or a broken
    strategy might): the next night's logs follow it."""
    from routeplan.model.table import RoutingTable
    from routeplan.publishing.store import RoutingStore

    store = RoutingStore(settings.routing_root(home))
    latest = store.load(stream)
    if not isinstance(latest, RoutingTable):
        print(f"==> --scenario regression: {stream} has no key-routing table to spoil", flush=True)
        return
    first = latest.workers.names[int(latest.workers.capacities.argmin())]
    bad = RoutingTable(
        stream=stream,
        strategy="kg",
        workers=latest.workers,
        key_group_worker=tuple(first for _ in latest.key_group_worker),
        hash_seed=latest.hash_seed,
        predicted={"imbalance": 0.0},
    )
    published = store.publish(bad, reason=f"demo --scenario regression: every key group on {first}")
    print(f"==> --scenario regression: published a bad {stream} v{published.version} by hand "
          f"(every key group on {first})", flush=True)  # fmt: skip


def run_night(home: str, day: date, conf: dict, env: dict[str, str]) -> int:
    """``airflow dags test routeplan_nightly`` for ``day`` in ``env``, its progress lines
    shown."""
    log_dir = Path(local_dir(home)) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"demo-{day}.log"
    logical = (day + timedelta(days=1)).isoformat()
    print(f"==> airflow dags test routeplan_nightly {logical}  (full log: {log_path})", flush=True)
    command = ["airflow", "dags", "test", "routeplan_nightly", logical, "--conf", json.dumps(conf)]
    with (
        log_path.open("w") as log,
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            found = PROGRESS.search(line)
            if found:
                print("   ", found.group(0)[:150], flush=True)
    report = storage.join(settings.reports_root(home), day.isoformat(), "publish.json")
    if proc.returncode != 0 or not storage.exists(report):
        print(f"routeplan_nightly failed (exit {proc.returncode}); see {log_path}", file=sys.stderr)
        return 1
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
    """One night's publish report (``make cluster-demo``)."""
    print(f"\nrouteplan_nightly {report['interval_start']}: routing tables in {home}/routing")
    print(
        f"{'stream':<10} {'kind':<21} {'strategy':<9} {'version':<8} {'action':<10} "
        f"{'imbalance today':>16} {'predicted':>10}  reason"
    )
    for s in report["streams"]:
        print(
            f"{s['stream']:<10} {s.get('kind') or '':<21} {s.get('strategy') or '':<9} "
            f"v{s['version']:<7} {s['action']:<10} {_number(s.get('observed_imbalance')):>16} "
            f"{_number(s.get('predicted_imbalance')):>10}  {s['reason']}"
        )
    for s in report["streams"]:
        if (s.get("choice") or "").startswith("auto"):
            print(f"{s['stream']}: {s['choice']}")
    print("\nimbalance = max over workers of load/capacity relative to the fair share, minus 1")
    print(f"next: {next_steps}")


def print_nights(home: str, days: list[date], next_steps: str = NEXT) -> None:
    """Per night and stream: the version in force that day, its headline measure predicted and
    realized (and the day before it, under its predecessor), the verdict, and what the night
    published — so the imbalance falling after the first plan, and how close the predictions
    were, read down a column."""
    print(f"\nrouteplan_nightly, {len(days)} night(s): routing tables in {home}/routing")
    head = (
        f"{'night':<11} {'stream':<8} {'in force':<9} {'measure':<10} {'predicted':>9} "
        f"{'realized':>9} {'day':>7} {'before':>7} {'peak excess':<16} {'verdict':<15} "
        f"{'published':<15} reason"
    )
    print(head)
    details, guarded = [], []
    for day in days:
        outcomes = _report(home, day, "outcomes") or {}
        published = {
            s["stream"]: s for s in (_report(home, day, "publish") or {}).get("streams", [])
        }
        seen = {o["stream"]: o for o in outcomes.get("outcomes", [])}
        planned = (_report(home, day, "plan") or {}).get("streams", {})
        for stream in sorted(set(published) | set(seen)):
            o, p = seen.get(stream), published.get(stream, {})
            peak = "-"
            if o is None:  # no version in force yet: the logs' own routing
                force, measure, verdict = "(logs)", "imbalance", "-"
                predicted, realized = None, p.get("observed_imbalance")
                day_level = before = None
            else:
                force, measure, verdict = f"v{o['version']}", o["measure"], o["verdict"]
                predicted, realized = o["predicted"], o["realized"]
                day_level, before = o["realized_day"], o["previous_realized_day"]
                if o.get("realized_peak_excess") is not None:  # and where its band put it
                    peak = _number(o["realized_peak_excess"], 3) + (
                        f" {o['band']}" if o.get("band") else ""
                    )
                if o["measure"] == "overload" and o["consumers"] is not None:
                    details.append(
                        f"{day} {stream}: v{o['version']} used {o['consumers']} consumers (lower "
                        f"bound {o['lower_bound']}), {o['overloaded']} overloaded; imbalance "
                        f"{_number(o['realized_imbalance'])} (predicted "
                        f"{_number(o['predicted_imbalance'])})"
                    )
            action = f"v{p['version']} {p['action']}" if p else "-"
            reason = p.get("reason", "") if p else ""
            band = ((planned.get(stream) or {}).get("gate") or {}).get("predicted")
            if p.get("action") == "published" and band and not band.get("out_of_sample", True):
                reason += (  # fitted on the day it was planned from: not a prediction
                    f" (fitted on its own day: peak excess {_number(band['point'], 3)}; "
                    "no prediction yet)"
                )
            elif p.get("action") == "published" and band:
                reason += (
                    f" (predicts peak excess {_number(band['point'], 3)}, "
                    f"{_number(band['low'], 3)}–{_number(band['high'], 3)}"
                    + (
                        f"; imbalance {_number(band['imbalance'], 3)}"
                        if band.get("imbalance") is not None
                        else ""
                    )
                    + ")"
                )
            elif p.get("predicted_imbalance") is not None and p.get("action") == "published":
                reason += f" (predicts imbalance {_number(p['predicted_imbalance'])})"
            print(
                f"{day!s:<11} {stream:<8} {force:<9} {measure:<10} {_number(predicted):>9} "
                f"{_number(realized):>9} {_number(day_level, 3):>7} {_number(before, 3):>7} "
                f"{peak:<16} {verdict:<15} {action:<15} {reason}"
            )
        details += [  # milp, albic: how far from the best plan the solver could prove
            f"{day} {name}: {p['strategy']} load distance {q['load_distance']:.4f}, lower bound "
            f"{q['load_distance_bound']:.4f} (at most {_above_bound(q)} above the best plan), "
            f"relative MIP gap {_number(q['mip_gap'], 3)}"
            for name, p in planned.items()
            if (q := p.get("solver"))
        ]
        details += [
            f"{day} {name}: {p['choice']}"
            for name, p in published.items()
            if p.get("action") == "published" and (p.get("choice") or "").startswith("auto")
        ]
        regressed = {s for s, o in seen.items() if o["verdict"] == "regressed"}
        guarded += [  # what the guard did, and why it did nothing about a regression
            f"{day} {g['stream']}: {g['action'] or 'no action'}: {g['reason']}"
            for g in (_report(home, day, "guard") or {}).get("guard", [])
            if g.get("action") or g["stream"] in regressed
        ]
    for line in details:
        print(line)
    for line in guarded:
        print(f"regression guard, {line}")
    print(
        "\nimbalance = max over workers of load/capacity relative to the fair share, minus 1; "
        "overload = share of the load above C on consumers reading several partitions. "
        "predicted / realized: in the planning window (the day, for a plan on the forecast; the "
        "busiest window for one with planning_window peak); day / before: over the whole day and "
        "the day "
        "before the version came into force, which the verdict weighs; peak excess = the most any "
        "worker carried in any window over the busiest window's fair share, minus 1, and where it "
        "fell against the band its version predicted"
    )
    print(f"next: routeplan outcomes   |   {next_steps}")


def _report(home: str, day: date, stage: str) -> dict | None:
    path = storage.join(settings.reports_root(home), day.isoformat(), f"{stage}.json")
    return json.loads(storage.read_bytes(path)) if storage.exists(path) else None


def _above_bound(solver: dict) -> str:
    """How much worse than the best plan the plan may be: its load distance minus the proven
    lower bound (the relative gap alone reads 1.0 for any plan once the bound is 0)."""
    return _number(max(0.0, solver["load_distance"] - solver["load_distance_bound"]))


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
