"""Simulator throughput: messages/s of every key-routing scheme on this machine.

    .venv/bin/python bench/simulator_speed.py                      # 1M messages
    .venv/bin/python bench/simulator_speed.py --messages 10000000  # the papers' ZF size

A Zipf stream (z = 1.1, 100k keys; paper 003's ZF is 10M messages) replayed by 5 sources onto 10
workers, 3 of them 5× faster (paper 000 §VII). ``messages/s`` covers the whole replay: hash
precomputation, routing, metrics every 1 % of the stream.

Measured on this machine (2 cores, Python 3.11, 10M messages, one run):

    strategy   seconds   messages/s
    kg             4.6    2,151,574
    sg             5.1    1,948,891
    potc           8.0    1,242,945
    pkg            6.0    1,656,900
    dchoices      10.6      944,957
    porc          11.3      887,441
    chbl           7.0    1,424,238
    cg            14.3      697,552
    ring           3.6    2,769,806
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from streams import zipf

from routeplan.simulation.events import parse_capacities
from routeplan.simulation.online import ONLINE_SCHEMES
from routeplan.simulation.replay import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--strategies", default=",".join(ONLINE_SCHEMES))
    parser.add_argument("--out", default="bench/results/simulator_speed.json")
    ns = parser.parse_args()
    started = time.perf_counter()
    stream = zipf(ns.messages, ns.keys, 1.1, seed=1)
    took = time.perf_counter() - started
    print(f"stream: {ns.messages:,} messages, {ns.keys:,} keys ({took:.1f} s)")
    capacities = parse_capacities("y=3,z=5", 10)
    rows = []
    print(f"{'strategy':<9} {'seconds':>8} {'messages/s':>12} {'imbalance':>10}")
    for name in ns.strategies.split(","):
        result = simulate(stream, name, capacities, sources=5)
        rows.append(
            {
                "strategy": name,
                "messages": ns.messages,
                "seconds": result.elapsed_s,
                "messages_per_s": result.messages_per_s,
                "imbalance": result.imbalance,
            }
        )
        print(
            f"{name:<9} {result.elapsed_s:>8.1f} {result.messages_per_s:>12,.0f} "
            f"{result.imbalance:>10.4f}"
        )
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
