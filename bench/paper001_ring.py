"""Paper 001 (consistent-hash ring, token halving / doubling) reproduced.

    .venv/bin/python bench/paper001_ring.py              # seconds
    .venv/bin/python bench/paper001_ring.py --messages 1000000

Part 1 replays workloads in the spirit of the paper's WL1–WL5 (§6.2: 100 letters, the task is a
count per letter, 4 mappers and 4 reducers, τ = 0.2) through a small event model of its Ray
system: each of the four mappers fetches the next item and pushes it, one per tick, to the
reducer the ring names; each reducer serves one item every
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
import textwrap
from collections import deque
from pathlib import Path

import numpy as np
from streams import zipf

from routeplan.planning.keyrouting.ring import HashRing, redistribute, triggered
from routeplan.planning.metrics import skew
from routeplan.planning.registry import get_strategy
from routeplan.simulation.replay import simulate

OUT = Path("bench/results")
REDUCERS = [str(i) for i in range(4)]  # token labels token-{i}-{j} (§4.2)
TAU = 0.2
MAPPERS = 4  # §6: "we fix the number of mappers and reducers to four"
CANDIDATES = 100
TOLERANCE = 0.05  # the paper gives none; it reports "very small" variance over three runs
# event-model timings the paper does not give: ticks per item per reducer, ticks between checks
TIMINGS = tuple(itertools.product((1, 2, 4), (1, 5, 10, 20)))

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


def ring_of(method: str, initial_tokens: int, reducers: list[str] = REDUCERS):
    strategy = get_strategy("ring", method=method, initial_tokens=initial_tokens)
    return strategy, strategy.initial(reducers)


def owners(letters, method: str, initial_tokens: int) -> dict[str, str]:
    _, tokens = ring_of(method, initial_tokens)
    ring = HashRing.build(tokens)
    return {x: ring.lookup_key(x) for x in letters}


def counts_skew(counts: dict[str, int], owner: dict[str, str]) -> float:
    load = dict.fromkeys(REDUCERS, 0)
    for x, c in counts.items():
        load[owner[x]] += c
    return skew(np.array(list(load.values()), dtype=float))


def build_workloads(
    initial_tokens: int, seed: int, alternatives: dict[str, list[list[str]]] | None = None
) -> dict[str, list[str]]:
    """WL1–WL5 with the paper's 'No LB' skew on our rings (§6.2); ``alternatives`` receives,
    for WL4 and WL5, the other workloads whose no-LB skews are within 0.02 of the paper's."""
    alternatives = {} if alternatives is None else alternatives
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

    # WL4, WL5: random letter counts whose (S halving, S doubling) is nearest the paper's; the
    # other candidates within 0.02 of it are kept (the paper does not publish its letters)
    for name, goal in (("WL4", (0.80, 0.49)), ("WL5", (0.20, 0.55))):
        best, best_gap, close = None, np.inf, []
        for _ in range(60_000):
            k = int(rng.integers(2, len(letters) + 1))  # 2 to 26 letters, more or less even
            chosen = rng.choice(letters, size=k, replace=False)
            split = rng.multinomial(100, rng.dirichlet(np.full(k, rng.choice((0.3, 0.7, 2.0)))))
            counts = {x: int(c) for x, c in zip(chosen, split, strict=True) if c}
            gap = max(
                abs(counts_skew(counts, half) - goal[0]), abs(counts_skew(counts, double) - goal[1])
            )
            if gap < best_gap:
                best, best_gap = counts, gap
            if gap <= 0.02 and len(close) < CANDIDATES:
                close.append(counts)
        work[name] = best
        alternatives[name] = [sequence(c, rng) for c in close]
    return {name: sequence(counts, rng) for name, counts in work.items()}


def sequence(counts: dict[str, int], rng: np.random.Generator) -> list[str]:
    """The items of a workload in a random order."""
    seq = [x for x, c in counts.items() for _ in range(c)]
    rng.shuffle(seq)
    return seq


def replay(
    items: list[str],
    method: str,
    max_rounds: int,
    initial_tokens: int,
    service: int,
    check_every: int,
    mappers: int = MAPPERS,
    reducers: list[str] = REDUCERS,
) -> float:
    """S over processed items, with forwarding (paper 001 §3–§4)."""
    strategy, tokens = ring_of(method, initial_tokens, reducers)
    ring = HashRing.build(tokens)
    queues = {r: deque() for r in reducers}
    processed = dict.fromkeys(reducers, 0)
    rounds = dict.fromkeys(reducers, 0)
    tick, pushed = 0, 0
    while pushed < len(items) or any(queues.values()):
        for _ in range(mappers):  # each mapper fetches the next item and pushes it (§3)
            if pushed < len(items):
                queues[ring.lookup_key(items[pushed])].append(items[pushed])
                pushed += 1
        if tick % service == 0:
            for r in reducers:
                while queues[r]:
                    item = queues[r].popleft()
                    owner = ring.lookup_key(item)
                    if owner == r:
                        processed[r] += 1
                        break
                    queues[owner].append(item)  # forwarded, processed by its new owner
        if tick % check_every == 0:
            lengths = np.array([len(queues[r]) for r in reducers], dtype=float)
            x = triggered(lengths, TAU)
            relieve = x is not None and rounds[reducers[x]] < max_rounds
            if relieve and redistribute(tokens, reducers[x], method):
                rounds[reducers[x]] += 1
                ring = HashRing.build(tokens)
        tick += 1
    return skew(np.array(list(processed.values()), dtype=float))


def table_1(workloads: dict, alternatives: dict, opts: dict) -> dict:
    """Table 1 beside the paper's, a verdict per row and, for each row that differs, why."""
    print(
        f"Paper 001 Table 1 (one round of LB, τ = {TAU}, 4 reducers, {opts['mappers']} mappers, "
        f"a reducer serves an item every {opts['service']} ticks, LB checks every "
        f"{opts['check_every']} ticks): S ours | paper; verdict: both S within {TOLERANCE} of "
        "the paper's (it states no tolerance)"
    )
    print(
        f"{'WL':<4} {'method':<9} {'no LB':>6} {'LB':>6} {'Δ':>6} | {'no LB':>6} {'LB':>6} "
        f"{'Δ':>6}  {'LB range':>11}  verdict"
    )
    table, notes = {}, []
    for (name, method), (p0, p1) in PAPER_TABLE_1.items():
        s0 = replay(workloads[name], method, 0, **opts)
        s1 = replay(workloads[name], method, 1, **opts)
        # the timings the paper does not give, one or four mappers: the LB S they reach
        spread = [
            replay(workloads[name], method, 1, opts["initial_tokens"], sv, ce, m)
            for sv, ce in TIMINGS
            for m in (1, MAPPERS)
        ]
        lo, hi = min(spread), max(spread)
        row = {"no_lb": s0, "lb": s1, "paper": [p0, p1], "lb_range_timings": [lo, hi]}
        # WL4, WL5: the other workloads with the paper's no-LB S
        found = [replay(items, method, 1, **opts) for items in alternatives.get(name, [])]
        if found:
            row["lb_over_workloads"] = found
        if abs(s0 - p0) <= TOLERANCE and abs(s1 - p1) <= TOLERANCE:
            verdict = "matches"
        elif lo - TOLERANCE <= p1 <= hi + TOLERANCE:
            verdict = "differs: within the timing range"
        elif found and min(found) - TOLERANCE <= p1 <= max(found) + TOLERANCE:
            verdict = "differs: within the workloads' range"
        else:
            verdict = "differs"
        print(
            f"{name:<4} {method:<9} {s0:>6.2f} {s1:>6.2f} {s0 - s1:>6.2f} | "
            f"{p0:>6.2f} {p1:>6.2f} {p0 - p1:>6.2f}  {f'{lo:.2f}–{hi:.2f}':>11}  {verdict}"
        )
        if verdict != "matches":
            note = why(name, method, p1, workloads, alternatives, opts, row)
            notes.append(
                textwrap.fill(
                    f"{name} {method}: {note}",
                    width=100,
                    initial_indent="  ",
                    subsequent_indent="    ",
                )
            )
        row["verdict"] = verdict
        table[f"{name}/{method}"] = row
    print("  LB range: S with LB over one or four mappers × service 1, 2, 4 ticks × checks every")
    print("  1, 5, 10, 20 ticks — the paper gives neither timing. Workloads' range: S with LB over")
    print("  the other workloads with the paper's no-LB S (WL4, WL5). Rows that differ:")
    print("\n".join(notes))
    return table


def why(name, method, paper_lb, workloads, alternatives, opts, row) -> str:
    """One row's explanation, from facts measured here."""
    if name == "WL3":
        _, tokens = ring_of(method, opts["initial_tokens"])
        before = HashRing.build(tokens).lookup_key("a")
        redistribute(tokens, before, method)
        after = HashRing.build(tokens).lookup_key("a")
        labels = [str(i + 1) for i in range(4)]
        _, other = ring_of(method, opts["initial_tokens"], labels)
        first = HashRing.build(other).lookup_key("a")
        redistribute(other, first, method)
        moved = HashRing.build(other).lookup_key("a")
        shifted = replay(workloads[name], method, 1, **opts, reducers=labels)
        spread = [
            replay(workloads[name], method, 1, opts["initial_tokens"], sv, ce, m, labels)
            for sv, ce in TIMINGS
            for m in (1, MAPPERS)
        ]
        row["reducers_1_to_4"] = {"lb": shifted, "lb_range_timings": [min(spread), max(spread)]}
        return (
            f"one key: S changes only if 'a' changes owner. On our ring (token-{{0..3}}-{{j}}) "
            f"'a' is on reducer {before} and one {method} round for it leaves it on {after}, so "
            f"S stays 1. Reducers labelled 1–4 move 'a' from {first} to {moved} and give "
            f"S = {shifted:.2f} ({min(spread):.2f}–{max(spread):.2f} over the timings; paper "
            f"{paper_lb:.2f}); the paper does not say how it numbers its reducers (its §6.1.1 "
            "counts them from 1), and relabelling changes every letter's owner, so WL1, WL2, "
            "WL4, WL5 would be other letters: we keep 0–3."
        )
    if name in ("WL4", "WL5"):
        found = row["lb_over_workloads"]
        near = np.mean(np.abs(np.array(found) - paper_lb) <= TOLERANCE)
        return (
            f"the paper's letters are not published; over the {len(found)} workloads with its "
            f"no-LB S (±0.02) on our ring, S with LB is {min(found):.2f}–{max(found):.2f} "
            f"(median {np.median(found):.2f}; {near:.0%} within {TOLERANCE} of the paper's "
            f"{paper_lb:.2f}): which letters share a reducer decides whether one round moves the "
            f"heavy ones (timing range {row['lb_range_timings'][0]:.2f}–"
            f"{row['lb_range_timings'][1]:.2f})."
        )
    return (
        "our workload is built to the paper's no-LB S on our ring (the paper's letters are "
        "not published); with LB, S depends on when the first check sees the queues "
        f"(range {row['lb_range_timings'][0]:.2f}–{row['lb_range_timings'][1]:.2f})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial-tokens", type=int, default=8, help="halving's N (power of 2)")
    parser.add_argument("--service", type=int, default=2, help="ticks per item per reducer")
    parser.add_argument("--check-every", type=int, default=10, help="ticks between LB checks")
    parser.add_argument("--mappers", type=int, default=MAPPERS, help="items pushed per tick")
    parser.add_argument("--messages", type=int, default=200_000, help="part 2 stream size")
    parser.add_argument("--seed", type=int, default=1)
    ns = parser.parse_args()
    opts = {
        "initial_tokens": ns.initial_tokens,
        "service": ns.service,
        "check_every": ns.check_every,
        "mappers": ns.mappers,
    }
    alternatives: dict[str, list[list[str]]] = {}
    workloads = build_workloads(ns.initial_tokens, ns.seed, alternatives)
    table = table_1(workloads, alternatives, opts)

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
