"""Rack-aware partition plans (KIP-881): cross-rack bytes against balance.

    .venv/bin/python bench/racks.py            # ≈ 1 min on 2 cores; writes bench/results/racks.*
    .venv/bin/python bench/racks.py --short    # a few seconds, prints only (what the test runs)

Generated clusters: ``--racks`` racks (availability zones), ``--consumers`` consumers spread over
them in turn, ``--partitions`` partitions each with 2 or 3 replicas on distinct random racks
(leader first), skewed write rates (log-normal, σ = 1) summing to ``--fill`` of the group's
capacity; C̄ = 1000 bytes/s, C = 5/6·C̄ (paper 002 §VI-C). Every assignor plans the same
clusters from nothing:

* ``kafka_range``: Kafka's RangeAssignor, blind to racks (the whole group, equal counts);
* ``kafka_range_racks``: the same with the consumers' ``client.rack`` — KIP-881's rack-aware
  range (``heuristics.kafka_range``: in-rack partitions first, each consumer up to its quota,
  then the standard range pass; Kafka's RangeAssignor since 3.5);
* ``bfd``/``wfd`` without racks (``rack_weight=0``, paper 002's packers as before) and with
  them (``rack_weight=1``: an in-rack consumer first among those a partition fits);
* ``binpack_milp`` without and with racks (time-limited; left out by ``--short``);
* the next day (loads drifted by ±30 %): ``mwf`` re-planning from the rack-blind plan, without
  and with racks, for the moves it costs.

Per assignor, the mean over ``--seeds`` clusters of: the cross-rack share of the bytes
(KIP-881's measure: the consumer's rack is not among the partition's replica racks), the
consumers used, the most loaded consumer over the mean of the used ones, the consumers above C
holding several partitions (``overloaded``), and the partitions moved. A table, a verdict
computed from the numbers, and ``bench/results/racks.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.packing import bin_capacity, pack
from routeplan.planning.partitions.racks import cross_rack

RESULTS = Path(__file__).resolve().parent / "results"
CONSUMER_CAPACITY = 1000.0  # C̄, bytes/s


def cluster(
    seed: int, racks: int, consumers: int, partitions: int, fill: float
) -> tuple[list[str], list[tuple[str, ...]], np.ndarray]:
    """Consumers' racks (consumer ``i`` in rack ``i mod racks``), each partition's replica racks
    (2 or 3 distinct, leader first) and its rate (log-normal, the total ``fill`` × the group's
    capacity)."""
    rng = np.random.default_rng(seed)
    names = [f"az{r + 1}" for r in range(racks)]
    consumer_racks = [names[i % racks] for i in range(consumers)]
    replicas = [
        tuple(
            str(r)
            for r in rng.choice(names, size=min(int(rng.integers(2, 4)), racks), replace=False)
        )
        for _ in range(partitions)
    ]
    rates = rng.lognormal(0.0, 1.0, partitions)
    rates *= fill * consumers * bin_capacity(CONSUMER_CAPACITY) / rates.sum()
    return consumer_racks, replicas, rates


def measure(
    assignment: np.ndarray,
    rates: np.ndarray,
    consumer_racks: list[str],
    replicas: list[tuple[str, ...]],
    previous: np.ndarray | None = None,
) -> dict[str, float]:
    """The figures of one assignment (consumer ids index ``consumer_racks``; higher ids, a
    consumer the packer created, have no rack)."""
    capacity = bin_capacity(CONSUMER_CAPACITY)
    readers = [consumer_racks[c] if c < len(consumer_racks) else None for c in assignment]
    cross, known = cross_rack(rates, readers, replicas)
    _, loads, _ = bm.consumer_loads(assignment, rates)
    return {
        "cross_rack_fraction": cross / known if known > 0 else float("nan"),
        "cross_rack_bytes": cross,
        "consumers": float(bm.consumers(assignment)),
        "max_over_mean": float(loads.max() / loads.mean()) if loads.size else float("nan"),
        "overloaded": float(bm.overloaded(assignment, rates, capacity)),
        "moves": float(bm.moved(previous, assignment).sum()),
    }


def assignors(
    rates: np.ndarray,
    consumer_racks: list[str],
    replicas: list[tuple[str, ...]],
    exact: bool,
    time_limit_s: float,
) -> dict[str, np.ndarray]:
    """Each assignor's plan of one cluster from nothing (see the module docstring)."""
    capacity = bin_capacity(CONSUMER_CAPACITY)
    n, p = len(consumer_racks), rates.size
    racks = {"consumer_racks": consumer_racks, "partition_racks": replicas}
    plans = {
        "kafka_range": heuristics.kafka_range(p, n),
        "kafka_range_racks": heuristics.kafka_range(p, n, consumer_racks, replicas),
    }
    names = ["bfd", "wfd"] + (["binpack_milp"] if exact else [])
    for name in names:
        for weight, label in ((0.0, name), (1.0, f"{name}_racks")):
            plans[label] = pack(
                name, rates, capacity, None, rack_weight=weight, time_limit_s=time_limit_s, **racks
            ).assignment
    return plans


def next_day(
    seed: int,
    rates: np.ndarray,
    consumer_racks: list[str],
    replicas: list[tuple[str, ...]],
    previous: np.ndarray,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The next day's rates (each ×U(0.7, 1.3)) and ``mwf``'s re-plans from ``previous``."""
    drifted = rates * np.random.default_rng(seed + 10_000).uniform(0.7, 1.3, rates.size)
    capacity = bin_capacity(CONSUMER_CAPACITY)
    racks = {"consumer_racks": consumer_racks, "partition_racks": replicas}
    plans = {
        label: pack("mwf", drifted, capacity, previous, rack_weight=weight, **racks).assignment
        for weight, label in ((0.0, "mwf_next_day"), (1.0, "mwf_next_day_racks"))
    }
    return drifted, plans


def run(
    seeds: int, racks: int, consumers: int, partitions: int, fill: float, exact: bool, limit: float
) -> dict[str, dict[str, float]]:
    """Mean figures per assignor over ``seeds`` clusters (and the planning seconds)."""
    rows: dict[str, list[dict[str, float]]] = {}
    for seed in range(seeds):
        consumer_racks, replicas, rates = cluster(seed, racks, consumers, partitions, fill)
        for name, assignment in assignors(rates, consumer_racks, replicas, exact, limit).items():
            rows.setdefault(name, []).append(measure(assignment, rates, consumer_racks, replicas))
        blind = pack("bfd", rates, bin_capacity(CONSUMER_CAPACITY), None).assignment
        drifted, plans = next_day(seed, rates, consumer_racks, replicas, blind)
        for name, assignment in plans.items():
            rows.setdefault(name, []).append(
                measure(assignment, drifted, consumer_racks, replicas, blind)
            )
    return {
        name: {k: float(np.nanmean([r[k] for r in found])) for k in found[0]}
        for name, found in rows.items()
    }


def verdict(means: dict[str, dict[str, float]]) -> str:
    """What the numbers say: rack-aware packing against the rack-blind packer and Kafka."""
    blind, aware = means["bfd"], means["bfd_racks"]
    kafka, kafka_racks = means["kafka_range"], means["kafka_range_racks"]
    cut = 1 - aware["cross_rack_fraction"] / blind["cross_rack_fraction"]
    same_bins = aware["consumers"] <= blind["consumers"] and aware["overloaded"] == 0
    parts = [
        f"bfd with racks reads {aware['cross_rack_fraction']:.1%} of the bytes across racks "
        f"against {blind['cross_rack_fraction']:.1%} without ({cut:.0%} less), with "
        f"{aware['consumers']:.1f} consumers against {blind['consumers']:.1f} and "
        f"{aware['overloaded']:.1f} overloaded"
        + ("" if same_bins else " — MORE consumers or an overloaded one: racks cost balance"),
        f"Kafka's rack-aware range (KIP-881) reads {kafka_racks['cross_rack_fraction']:.1%} "
        f"across racks (plain range {kafka['cross_rack_fraction']:.1%}) on all "
        f"{kafka_racks['consumers']:.0f} consumers with {kafka_racks['overloaded']:.1f} overloaded "
        f"(max/mean {kafka_racks['max_over_mean']:.2f}: equal counts, blind to rates)",
    ]
    if "binpack_milp_racks" in means:
        exact = means["binpack_milp_racks"]
        parts.append(
            f"binpack_milp with racks {exact['cross_rack_fraction']:.1%} on "
            f"{exact['consumers']:.1f} consumers (the heuristic's gap to the exact plan)"
        )
    nd, nd_racks = means["mwf_next_day"], means["mwf_next_day_racks"]
    parts.append(
        f"next day, mwf from the rack-blind plan: {nd_racks['cross_rack_fraction']:.1%} with "
        f"racks vs {nd['cross_rack_fraction']:.1%} ({nd_racks['moves']:.1f} vs "
        f"{nd['moves']:.1f} moves): Algorithm 1 keeps partitions in place, so racks only steer "
        "the ones that move"
    )
    better = cut > 0 and same_bins
    head = "racks pay" if better else "racks do NOT pay here"
    return f"{head}: " + "; ".join(parts)


COLUMNS = ("cross_rack_fraction", "cross_rack_bytes", "consumers", "max_over_mean", "overloaded")


def table(means: dict[str, dict[str, float]]) -> str:
    """A Markdown table of the means."""
    lines = [
        "| assignor | cross-rack share | cross-rack bytes/s | consumers | max/mean load "
        "| overloaded | moves |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in means.items():
        lines.append(
            f"| {name} | {m['cross_rack_fraction']:.1%} | {m['cross_rack_bytes']:.0f} "
            f"| {m['consumers']:.1f} | {m['max_over_mean']:.2f} | {m['overloaded']:.2f} "
            f"| {m['moves']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="3 seeds, no MILP, no files")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--racks", type=int, default=3)
    parser.add_argument("--consumers", type=int, default=12)
    parser.add_argument("--partitions", type=int, default=96)
    parser.add_argument("--fill", type=float, default=0.6, help="Σ rates / the group's capacity")
    parser.add_argument("--time-limit", type=float, default=5.0, help="binpack_milp, seconds")
    args = parser.parse_args(argv)
    seeds = 3 if args.short else args.seeds
    started = time.perf_counter()
    means = run(
        seeds,
        args.racks,
        args.consumers,
        args.partitions,
        args.fill,
        not args.short,
        args.time_limit,
    )
    said = verdict(means)
    setup = {
        "seeds": seeds,
        "racks": args.racks,
        "consumers": args.consumers,
        "partitions": args.partitions,
        "fill": args.fill,
        "consumer_capacity": CONSUMER_CAPACITY,
        "bin_capacity": bin_capacity(CONSUMER_CAPACITY),
        "binpack_milp_time_limit_s": None if args.short else args.time_limit,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(table(means))
    print()
    print("verdict:", said)
    result = {"setup": setup, "means": means, "verdict": said}
    if not args.short:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "racks.json").write_text(json.dumps(result, indent=2) + "\n")
        settings = ", ".join(f"{k} {v}" for k, v in setup.items())
        (RESULTS / "racks.md").write_text(
            "# Rack-aware partition plans (bench/racks.py)\n\n"
            f"{settings}\n\n{table(means)}\n\n**Verdict:** {said}\n"
        )
    return result


if __name__ == "__main__":
    main()
