"""``routeplan binpack``: partitions onto consumers from measured write rates (paper 002).

    routeplan binpack --rates rates.csv --capacity 2000000 --algorithm mwf,bfd --json

``--rates``: CSV (header) or JSON Lines with ``partition`` and ``rate`` (bytes/s) and, for a
stream of measurements, ``iteration``; a partition missing from an iteration writes 0 there.
``--current``: the assignment before the first measurement: CSV ``partition,consumer``, a JSON
object ``{"partition": "consumer"}`` or a routing-table document.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from routeplan.binpack import ALGORITHMS, KAFKA, bin_capacity
from routeplan.binpack.names import ConsumerNames
from routeplan.binpack.replay import replay, summarize


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = path.read_text()
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return list(csv.DictReader(text.splitlines()))


def read_rates(path: Path) -> np.ndarray:
    """``iterations × partitions`` write rates from a file of (iteration, partition, rate) rows."""
    rows = _rows(path)
    if not rows:
        raise ValueError(f"{path}: no measurements")
    try:
        cells = [
            (int(r.get("iteration", 0) or 0), int(r["partition"]), float(r["rate"])) for r in rows
        ]
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: rows need partition and rate (and iteration): {err}") from None
    iterations = sorted({i for i, _, _ in cells})
    at = {i: k for k, i in enumerate(iterations)}
    partitions = max(p for _, p, _ in cells) + 1
    if min(p for _, p, _ in cells) < 0 or any(not np.isfinite(r) or r < 0 for *_, r in cells):
        raise ValueError(f"{path}: partitions and rates must be >= 0")
    rates = np.zeros((len(iterations), partitions))
    seen = set()
    for i, p, rate in cells:
        if (i, p) in seen:
            raise ValueError(f"{path}: partition {p} measured twice in iteration {i}")
        seen.add((i, p))
        rates[at[i], p] = rate
    return rates


def read_assignment(path: Path) -> dict[int, str]:
    """Partition → consumer from CSV, a JSON object or a routing-table document."""
    if path.suffix == ".json":
        doc = json.loads(path.read_text())
        mapping = doc.get("partition_consumer", doc) if isinstance(doc, dict) else None
        if not isinstance(mapping, dict):
            raise ValueError(f"{path}: expected a JSON object partition → consumer")
        return {int(p): str(c) for p, c in mapping.items()}
    return {int(r["partition"]): str(r["consumer"]) for r in _rows(path)}


def cmd_binpack(args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(args.algorithm))
    unknown = [n for n in names if n not in ALGORITHMS]
    if unknown:
        raise ValueError(f"unknown algorithms {unknown}; known: {', '.join(ALGORITHMS)}")
    if any(n in KAFKA for n in names) and args.consumers is None:
        raise ValueError("Kafka's assignors need --consumers")
    rates = read_rates(Path(args.rates))
    capacity = bin_capacity(args.capacity, args.iteration_s, args.rebalance_s)
    current = read_assignment(Path(args.current)) if args.current else {}
    if current:
        partitions = max(max(current) + 1, rates.shape[1])
        rates = np.pad(rates, ((0, 0), (0, partitions - rates.shape[1])))
    consumers = ConsumerNames(sorted(set(current.values()), key=lambda n: (len(n), n)))
    previous = consumers.encode([current.get(p) for p in range(rates.shape[1])])
    runs = [
        replay(
            name,
            rates,
            capacity,
            previous,
            consumers=args.consumers,
            time_limit_s=args.time_limit,
        )
        for name in names
    ]
    out = summarize(
        runs,
        rates,
        capacity,
        args.capacity,
        iteration_s=args.iteration_s,
        rebalance_s=args.rebalance_s,
        previous=previous,
    )
    if rates.shape[0] == 1:
        for run in runs:
            out["algorithms"][run.name]["partition_consumer"] = {
                str(p): c for p, c in enumerate(consumers.decode(run.assignments[0]))
            }
    if args.json:
        print(json.dumps(out))
        return 0
    print(
        f"{out['partitions']} partitions, {out['iterations']} iterations, C̄ {args.capacity:g}, "
        f"C {capacity:g}; lower bound {np.mean(out['lower_bound']):.2f} consumers on average"
    )
    print(
        f"{'algorithm':<17} {'consumers':>9} {'rscore':>8} {'cbs':>7} "
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
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``binpack`` subcommand."""
    b = sub.add_parser("binpack", help="assign partitions to consumers by bin packing (paper 002)")
    b.add_argument("--rates", required=True, help="rows of (iteration,) partition, rate")
    b.add_argument("--capacity", type=float, required=True, help="consumer capacity C̄, bytes/s")
    b.add_argument(
        "--algorithm",
        required=True,
        type=lambda text: [s.strip() for s in text.split(",") if s.strip()],
        help=f"one or several of {', '.join(ALGORITHMS)} (comma-separated)",
    )
    b.add_argument("--iteration-s", type=float, default=30.0, help="iteration length T")
    b.add_argument("--rebalance-s", type=float, default=5.0, help="rebalance time R")
    b.add_argument("--current", help="assignment before the first measurement")
    b.add_argument("--consumers", type=int, help="group size of the Kafka assignors")
    b.add_argument(
        "--time-limit", type=float, default=10.0, help="binpack_milp: seconds per iteration"
    )
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_binpack)
