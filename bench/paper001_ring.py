"""Paper 001 (consistent-hash ring, token halving / doubling) reproduced.

    .venv/bin/python bench/paper001_ring.py              # seconds
    .venv/bin/python bench/paper001_ring.py --messages 1000000

Part 1 replays workloads in the spirit of the paper's WL1–WL5 (§6.2: 100 letters, the task is a
count per letter, 4 reducers, τ = 0.2) through a small event model of its Ray system: one mapper
pushes an item per tick to the reducer the ring names; each reducer serves one item every
``--service`` ticks; every ``--check-every`` ticks the load balancer reads the queue lengths and,
if ``Q_max > Q_second·(1+τ)``, relieves the longest queue by halving or doubling (at most
``max_rounds`` times per reducer); a reducer that dequeues a key it no longer owns forwards it
(§3 "input forwarding"). S = (W − U)/(M − U) over the items each reducer processed (§6.1.1).
The ring, trigger, redistribution and S are routeplan's (``routeplan.planning.keyrouting.ring``,
``routeplan.planning.metrics.skew``). Our WL1–WL5 are searched so that their S before load balancing
matches the paper's "No LB" column on our Murmur3 ring; the items' order is shuffled.

Part 2 runs the same ring in routeplan's stream simulator on Zipf streams (4 workers).
"""

from __future__ import annotations

import argparse
import itertools
import json
import string
from collections import deque
from pathlib import Path

import numpy as np
from streams import zipf

from routeplan.planning.keyrouting.ring import HashRing, redistribute, triggered
from routeplan.planning.metrics import skew
from routeplan.planning.registry import get_strategy
from routeplan.simulation.replay import simulate

OUT = Path("bench/results")
REDUCERS = [str(i) for i in range(4)]
TAU = 0.2

# Paper 001 Table 1 ("Experiment 1 results"): S without and with one round of LB.
PAPER_TABLE_1 = {
    ("WL1", "halving"): (0.00, 0.08),
    ("WL1", "doubling"): (1.00, 0.20),
    ("WL2", "halving"): (0.00, 0.00),
    ("WL2", "doubling"): (0.00, 0.08),
    ("WL3", "halving"): (1.00, 1.00),
    ("WL3", "doubling"): (1.00, 0.75),
    ("WL4", "halving"): (0.80, 0.52),
    ("WL4", "doubling"): (0.49, 0.11),
    ("WL5", "halving"): (0.20, 0.20),
    ("WL5", "doubling"): (0.55, 0.12),
}


def ring_of(method: str, initial_tokens: int):
    strategy = get_strategy("ring", method=method, initial_tokens=initial_tokens)
    return strategy, strategy.initial(REDUCERS)


def owners(letters, method: str, initial_tokens: int) -> dict[str, str]:
    _, tokens = ring_of(method, initial_tokens)
    ring = HashRing.build(tokens)
    return {x: ring.lookup_key(x) for x in letters}


def counts_skew(counts: dict[str, int], owner: dict[str, str]) -> float:
    load = dict.fromkeys(REDUCERS, 0)
    for x, c in counts.items():
        load[owner[x]] += c
    return skew(np.array(list(load.values()), dtype=float))


def build_workloads(initial_tokens: int, seed: int) -> dict[str, list[str]]:
    """WL1–WL5 with the paper's 'No LB' skew on our rings (§6.2)."""
    letters = list(string.ascii_lowercase)
    pool = letters + [a + b for a in letters for b in letters]
    half = owners(pool, "halving", initial_tokens)
    double = owners(pool, "doubling", initial_tokens)
    rng = np.random.default_rng(seed)
    work: dict[str, dict[str, int]] = {}

    # WL1: uniform over the halving ring, every item on one reducer of the doubling ring
    def spread(r: str) -> dict[str, list[str]]:
        return {h: [x for x in pool if double[x] == r and half[x] == h][:3] for h in REDUCERS}

    by_half = max((spread(r) for r in REDUCERS), key=lambda g: sum(bool(xs) for xs in g.values()))
    work["WL1"] = {
        x: 25 // len(xs) + (i < 25 % len(xs)) for xs in by_half.values() for i, x in enumerate(xs)
    }

    # WL2: uniform over both rings: 25 items per reducer of each, through cells (h, d) that hold
    # letters — two permutations of the 4×4 table, 13 + 12 items each
    cell = {(half[x], double[x]): x for x in reversed(pool)}
    perms = list(itertools.permutations(REDUCERS))
    for p, q in itertools.product(perms, perms):
        if all((h, p[i]) in cell and (h, q[i]) in cell for i, h in enumerate(REDUCERS)):
            wl2: dict[str, int] = {}
            for i, h in enumerate(REDUCERS):
                for d, n in ((p[i], 13), (q[i], 12)):
                    wl2[cell[(h, d)]] = wl2.get(cell[(h, d)], 0) + n
            work["WL2"] = wl2
            break

    work["WL3"] = {"a": 100}

    # WL4, WL5: random letter counts whose (S halving, S doubling) is nearest the paper's
    for name, goal in (("WL4", (0.80, 0.49)), ("WL5", (0.20, 0.55))):
        best, best_gap = None, np.inf
        for _ in range(20_000):
            k = int(rng.integers(2, 8))
            chosen = rng.choice(letters, size=k, replace=False)
            split = rng.multinomial(100, rng.dirichlet(np.full(k, 0.7)))
            counts = {x: int(c) for x, c in zip(chosen, split, strict=True) if c}
            gap = abs(counts_skew(counts, half) - goal[0]) + abs(
                counts_skew(counts, double) - goal[1]
            )
            if gap < best_gap:
                best, best_gap = counts, gap
        work[name] = best
    items = {}
    for name, counts in work.items():
        seq = [x for x, c in counts.items() for _ in range(c)]
        rng.shuffle(seq)
        items[name] = seq
    return items


def replay(
    items: list[str],
    method: str,
    max_rounds: int,
    initial_tokens: int,
    service: int,
    check_every: int,
) -> float:
    """S over processed items, with forwarding (paper 001 §3–§4)."""
    strategy, tokens = ring_of(method, initial_tokens)
    ring = HashRing.build(tokens)
    queues = {r: deque() for r in REDUCERS}
    processed = dict.fromkeys(REDUCERS, 0)
    rounds = dict.fromkeys(REDUCERS, 0)
    tick, pushed = 0, 0
    while pushed < len(items) or any(queues.values()):
        if pushed < len(items):
            queues[ring.lookup_key(items[pushed])].append(items[pushed])
            pushed += 1
        if tick % service == 0:
            for r in REDUCERS:
                while queues[r]:
                    item = queues[r].popleft()
                    owner = ring.lookup_key(item)
                    if owner == r:
                        processed[r] += 1
                        break
                    queues[owner].append(item)  # forwarded, processed by its new owner
        if tick % check_every == 0:
            lengths = np.array([len(queues[r]) for r in REDUCERS], dtype=float)
            x = triggered(lengths, TAU)
            relieve = x is not None and rounds[REDUCERS[x]] < max_rounds
            if relieve and redistribute(tokens, REDUCERS[x], method):
                rounds[REDUCERS[x]] += 1
                ring = HashRing.build(tokens)
        tick += 1
    return skew(np.array(list(processed.values()), dtype=float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial-tokens", type=int, default=8, help="halving's N (power of 2)")
    parser.add_argument("--service", type=int, default=2, help="ticks per item per reducer")
    parser.add_argument("--check-every", type=int, default=10, help="ticks between LB checks")
    parser.add_argument("--messages", type=int, default=200_000, help="part 2 stream size")
    parser.add_argument("--seed", type=int, default=1)
    ns = parser.parse_args()
    opts = {
        "initial_tokens": ns.initial_tokens,
        "service": ns.service,
        "check_every": ns.check_every,
    }
    workloads = build_workloads(ns.initial_tokens, ns.seed)
    print("Paper 001 Table 1 (one round of LB, τ = 0.2, 4 reducers): S ours | paper")
    print(
        f"{'WL':<4} {'method':<9} {'no LB':>6} {'LB':>6} {'Δ':>6} | {'no LB':>6} {'LB':>6} {'Δ':>6}"
    )
    table = {}
    for (name, method), (p0, p1) in PAPER_TABLE_1.items():
        s0 = replay(workloads[name], method, 0, **opts)
        s1 = replay(workloads[name], method, 1, **opts)
        table[f"{name}/{method}"] = {"no_lb": s0, "lb": s1, "paper": [p0, p1]}
        print(
            f"{name:<4} {method:<9} {s0:>6.2f} {s1:>6.2f} {s0 - s1:>6.2f} | "
            f"{p0:>6.2f} {p1:>6.2f} {p0 - p1:>6.2f}"
        )

    rounds = range(1, 6)
    print("\nPaper 001 Experiment 2 (Fig. 3): S against the maximum rounds per reducer")
    print(f"{'WL':<4} {'method':<9}" + "".join(f"{f'r={r}':>7}" for r in rounds))
    fig3 = {}
    for name, method in PAPER_TABLE_1:
        row = [replay(workloads[name], method, r, **opts) for r in rounds]
        fig3[f"{name}/{method}"] = row
        print(f"{name:<4} {method:<9}" + "".join(f"{s:>7.2f}" for s in row))

    print(
        f"\nThe ring in routeplan's simulator: Zipf, {ns.messages:,} messages, 4 workers, "
        "utilisation 1.2 (mappers faster than reducers, as in §1)"
    )
    print(f"{'z':>4} {'method':<9} {'S no LB':>8} {'S LB':>8} {'rounds':>7}")
    zipf_rows = {}
    for z in (0.5, 0.8, 1.0):
        stream = zipf(ns.messages, 10_000, z, seed=ns.seed)
        for method in ("halving", "doubling"):
            base, lb = (
                simulate(
                    stream,
                    "ring",
                    np.ones(4),
                    params={"method": method, "initial_tokens": ns.initial_tokens, "max_rounds": r},
                    utilisation=1.2,
                )
                for r in (0, 3)
            )
            s0, s1 = skew(base.worker_load), skew(lb.worker_load)
            zipf_rows[f"z={z}/{method}"] = [s0, s1]
            print(f"{z:>4} {method:<9} {s0:>8.3f} {s1:>8.3f} {lb.moves:>7}")

    plot(fig3, rounds)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "paper001_ring.json").write_text(
        json.dumps(
            {"table_1": table, "fig3": fig3, "zipf": zipf_rows, "workloads": workloads}, indent=1
        )
    )
    print(f"\nwritten {OUT}/paper001_ring.png and paper001_ring.json")


def plot(fig3: dict, rounds) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(18, 3.5), sharey=True)
    for i, name in enumerate(("WL1", "WL2", "WL3", "WL4", "WL5")):
        for method in ("halving", "doubling"):
            axes[i].plot(list(rounds), fig3[f"{name}/{method}"], marker="o", label=method)
        axes[i].set(title=name, xlabel="max rounds", ylim=(-0.05, 1.05))
    axes[0].set_ylabel("skew S")
    axes[0].legend()
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "paper001_ring.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
