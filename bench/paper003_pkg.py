"""Paper 003 (Partial Key Grouping) reproduced in the simulator: KG vs PKG vs SG, and more choices.

    .venv/bin/python bench/paper003_pkg.py                     # 1M messages per stream (~4 min)
    .venv/bin/python bench/paper003_pkg.py --messages 10000000

Streams: paper 003's datasets are not redistributable; each is stood in for by a Zipf stream with
its Table I key count and top-key share p1 (bench/streams.py ``stand_in``): WP 2.9M keys, 9.32 %;
TW 31M keys, 2.67 %; CT, LJ, SL1, SL2, LN1, LN2 likewise. The metric is the paper's "fraction of
average imbalance": the mean over time of I(t)/t with I(t) = max − avg load (§2). PKG with one
source is the paper's global oracle G, with five sources its local estimation L5 (§6.2 Q1, Q2).
PKG's two choices are two independent hashes that may coincide (§5), as in the paper;
``distinct_choices`` (ours) is measured beside it on the same streams.

1. Table II: W = 5, 10, 50, 100 on WP and TW, paper vs ours with a verdict.
2. Fig. 4 (every Table I dataset): G vs L5 — the paper's claim that local estimation stays close
   to the global oracle.
3. Fig. 7: imbalance of KG, PKG, SG against W on Zipf streams of growing skew.
4. Fig. 9 (Q4): Zipf z = 1.2, K = 1M — PKG with a larger uniform d (the paper's answer), and
   ``dchoices`` (ours: more choices for head keys only) beside it.
5. Q5 (Storm: +175 % throughput, −45 % latency) needs a Storm cluster: not reproduced.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from streams import TABLE_I, stand_in, zipf, zipf_drawn

from routeplan.simulation.replay import simulate

OUT = Path("bench/results")
WORKERS = (5, 10, 50, 100)

# Paper 003 Table II, "Fraction of average imbalance with different numbers of workers for the
# WP and TW datasets" (W = 5, 10, 50, 100). The paper's pkg row is its L5 (§6.2 Q2).
PAPER_TABLE_II = {
    "WP": {"pkg": (3.7e-8, 1.3e-7, 2.7e-2, 3.7e-2), "kg": (6.4e-2, 7.8e-2, 9.2e-2, 9.2e-2)},
    "TW": {"pkg": (3.4e-10, 1.4e-9, 2.3e-9, 3.4e-3), "kg": (3.5e-2, 3.2e-2, 2.0e-2, 2.8e-2)},
}
# §6.2 Q4: "load balance in the system can be restored if the number of choices is increased:
# from two to four when the workers are five, or to nine when the workers are forty."
PAPER_FIG9_CHOICES = {5: 4, 40: 9}
FIG9_CHOICES = (2, 3, 4, 6, 9, 12, 16, 24)
# Tolerances of the verdicts. Below BALANCED a replay of 1M messages is at its noise floor
# (the paper's 1e-8 … 1e-10 come from 22M … 1.2G messages: I(t)/t shrinks with t), so two values
# both below it agree; above it ours must be within a factor FACTOR of the paper's.
BALANCED = 1e-4
FACTOR = 2.0
STORM = (
    "Q5 (Storm, TW top-k word count: pkg +175 % throughput over kg, −45 % latency) needs a "
    "Storm cluster and is NOT reproduced here."
)


def fraction(result, workers: int) -> float:
    """Paper 003's imbalance: mean over time of (max − avg load) / messages so far."""
    return float(np.mean(result.series["imbalance"])) / workers


def agree(ours: float, paper: float) -> bool:
    """Both at the noise floor, or within a factor ``FACTOR``."""
    if ours <= BALANCED and paper <= BALANCED:
        return True
    return paper > 0 and 1 / FACTOR <= ours / paper <= FACTOR


def verdict(ours: float, paper: float) -> str:
    if agree(ours, paper):
        return "ok"
    if ours <= BALANCED < paper:
        return "off: ours balanced"
    if paper <= BALANCED < ours:
        return "off: ours imbalanced"
    return f"off: x{ours / paper:.1f}"


def table_ii(streams: dict) -> dict:
    rows: dict = {}
    print(
        f"\nTable II — fraction of average imbalance; verdict 'ok' = both ≤ {BALANCED:g} (the "
        f"noise floor of this replay) or within ×{FACTOR:g} of the paper"
    )
    schemes = (
        ("pkg (G)", "pkg", 1, {}),
        ("pkg (L5)", "pkg", 5, {}),
        ("pkg (L5) distinct (ours)", "pkg", 5, {"distinct_choices": True}),
        ("kg", "kg", 1, {}),
        ("sg", "sg", 5, {}),
    )
    print(f"{'stream':<7}{'scheme':<26}{'W':>4}{'ours':>10}{'paper':>10}  verdict")
    for name in ("WP", "TW"):
        stream = streams[name]
        for label, strategy, sources, params in schemes:
            ours = [
                fraction(simulate(stream, strategy, np.ones(w), sources, params), w)
                for w in WORKERS
            ]
            # the paper's pkg row is L5; its G is in Fig. 4 only
            paper = PAPER_TABLE_II[name].get(strategy) if label in ("pkg (L5)", "kg") else None
            rows[f"{name}/{label}"] = {"ours": ours, "paper": paper}
            for i, w in enumerate(WORKERS):
                p = paper[i] if paper else None
                cell = f"{p:>10.1e}  {verdict(ours[i], p)}" if p is not None else f"{'-':>10}"
                print(f"{name:<7}{label:<26}{w:>4}{ours[i]:>10.1e}{cell}")
        # §5: "if p1 > 2/n, the expected imbalance at time m will be lower bounded by
        # (p1/2 − 1/n)·m … irrespective of the placement scheme used" (d = 2)
        p1 = stream.top_share()
        bound = [max(0.0, p1 / 2 - 1 / w) for w in WORKERS]
        print(
            f"{name:<6}{'§5 bound p1/2 − 1/W':<26}"
            + " ".join(f"W={w}:{b:.1e}" for w, b in zip(WORKERS, bound, strict=True))
        )
    print(
        "  an 'off' kg cell: kg's imbalance at a given W is set by where the few heaviest keys "
        "hash (which of them share a worker), not by p1 alone — one hash draw of a stand-in "
        "whose keys below the top one follow Zipf, not the real dataset's"
    )
    return rows


def fig4(streams: dict) -> dict:
    """Every Table I dataset: PKG's local estimation L5 against the global oracle G."""
    print(
        "\nFig. 4 — pkg G vs L5 on every Table I stand-in (the paper: 'the imbalance of local "
        "estimation is very close to the global oracle'); verdict: L5 agrees with G"
    )
    print(f"{'data':<5}{'keys':>11}{'p1':>7}{'W':>5}{'G':>10}{'L5':>10}{'kg':>10}  verdict")
    rows = {}
    for name, stream in streams.items():
        data = TABLE_I[name]
        for w in WORKERS:
            g = fraction(simulate(stream, "pkg", np.ones(w), 1), w)
            local = fraction(simulate(stream, "pkg", np.ones(w), 5), w)
            kg = fraction(simulate(stream, "kg", np.ones(w), 1), w)
            ok = "ok" if agree(local, g) else f"off: x{local / max(g, 1e-300):.1f}"
            rows[f"{name}/W={w}"] = {"G": g, "L5": local, "kg": kg, "agree": agree(local, g)}
            print(
                f"{name:<5}{data.keys:>11,}{stream.top_share():>7.2%}{w:>5}"
                f"{g:>10.1e}{local:>10.1e}{kg:>10.1e}  {ok}"
            )
    print("  (LJ, SL1, SL2 in Fig. 8 split the stream to the sources by key, skewing the sources;")
    print("   here every source gets every S-th message: that skew is not reproduced)")
    return rows


def skew_sweep(messages: int, keys: int) -> dict:
    exponents = (0.8, 1.0, 1.2, 1.4)
    sweep_workers = (5, 10, 20, 50, 100)
    print("\nFig. 7 sweep — final imbalance (max u − 1) vs W on Zipf streams, 5 sources")
    print(f"{'z':>4} {'p1':>6} {'scheme':<6}" + "".join(f"{f'W={w}':>10}" for w in sweep_workers))
    rows = {}
    for z in exponents:
        stream = zipf(messages, keys, z, seed=2)
        for strategy in ("kg", "pkg", "sg"):
            ours = [
                simulate(stream, strategy, np.ones(w), sources=5).imbalance for w in sweep_workers
            ]
            rows[f"z={z}/{strategy}"] = ours
            print(
                f"{z:>4} {stream.top_share():>6.1%} {strategy:<6}"
                + "".join(f"{x:>10.2e}" for x in ours)
            )
    return rows


def fig9(messages: int) -> dict:
    stream = zipf_drawn(messages, 1_000_000, 1.2, seed=3)
    fig_workers = (5, 10, 20, 40, 50, 100)
    print(
        f"\nFig. 9 (Q4) — Zipf z = 1.2, K = 1M keys, p1 = {stream.top_share():.1%}; fraction of "
        "average imbalance, 5 sources: pkg with a uniform d (paper 003), dchoices (ours)"
    )
    head = "".join(f"{f'd={d}':>9}" for d in FIG9_CHOICES)
    print(f"{'W':>4}{head}{'dchoices':>10}{'rep.':>6}")
    rows = {}
    for w in fig_workers:
        cells = [
            fraction(simulate(stream, "pkg", np.ones(w), 5, {"d": d}), w) if d <= w else None
            for d in FIG9_CHOICES
        ]
        dch = simulate(stream, "dchoices", np.ones(w), sources=5)
        rows[w] = {"pkg": cells, "dchoices": fraction(dch, w), "replication": dch.replication}
        print(
            f"{w:>4}"
            + "".join(f"{c:>9.1e}" if c is not None else f"{'-':>9}" for c in cells)
            + f"{fraction(dch, w):>10.1e}{dch.replication:>6.2f}"
        )
    print(
        f"smallest d that restores balance (fraction ≤ {BALANCED:g}); verdict 'ok' = the same d "
        f"or the next one on our grid {FIG9_CHOICES}"
    )
    for w, row in rows.items():
        valid = [(d, c) for d, c in zip(FIG9_CHOICES, row["pkg"], strict=True) if c is not None]
        enough = next((d for d, c in valid if c <= BALANCED), None)
        row["smallest_d"] = enough
        paper = PAPER_FIG9_CHOICES.get(w)
        shown = str(enough) if enough is not None else f">{valid[-1][0]}"
        if paper is None:
            print(f"  W={w:<4} ours d={shown:<4} paper -")
            continue
        step = FIG9_CHOICES.index(paper)
        near = set(FIG9_CHOICES[max(0, step - 1) : step + 2])
        row["paper_d"], row["verdict"] = paper, "ok" if enough in near else "off"
        print(f"  W={w:<4} ours d={shown:<4} paper {paper:<4} {row['verdict']}")
    print(
        f"  p1 = {stream.top_share():.1%} < 2/W at W = 5, so §5's bound already holds with d = 2 "
        "there: the paper's 'four at five workers' reads as a stricter notion of balanced than "
        f"our noise floor {BALANCED:g}; dchoices (ours) balances every W with replication ~1.2"
    )
    return rows


def plot(table: dict, sweep: dict, choices: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for label, row in table.items():
        axes[0].plot(WORKERS, np.maximum(row["ours"], 1e-12), marker="o", label=label)
        if row["paper"]:
            axes[0].plot(WORKERS, row["paper"], "x--", label=f"{label} paper")
    axes[0].set(xlabel="workers W", ylabel="fraction of average imbalance", yscale="log")
    axes[0].set_title("Table II: WP and TW stand-ins (Table I p1, keys)")
    for label, ys in sweep.items():
        axes[1].plot((5, 10, 20, 50, 100), np.maximum(ys, 1e-6), marker=".", label=label)
    axes[1].set(xlabel="workers W", ylabel="imbalance (max u − 1)", yscale="log")
    axes[1].set_title("Fig. 7 sweep: KG, PKG, SG")
    for w, row in choices.items():
        pairs = [(d, c) for d, c in zip(FIG9_CHOICES, row["pkg"], strict=True) if c is not None]
        axes[2].plot(
            [d for d, _ in pairs],
            np.maximum([c for _, c in pairs], 1e-12),
            marker="o",
            label=f"W={w}",
        )
    axes[2].set(xlabel="choices d", ylabel="fraction of average imbalance", yscale="log")
    axes[2].set_title("Fig. 9: z = 1.2, K = 1M, pkg with d")
    for ax in axes:
        ax.legend(fontsize=6)
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "paper003_pkg.png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000, help="Zipf keys of the Fig. 7 sweep")
    ns = parser.parse_args()
    streams = {name: stand_in(name, ns.messages, seed=1) for name in TABLE_I}
    for name, stream in streams.items():
        data = TABLE_I[name]
        print(
            f"{name:<4} stand-in: {stream.messages:,} messages, {data.keys:,} keys "
            f"({stream.distinct:,} drawn), p1 = {stream.top_share():.2%} "
            f"(Table I: {data.top_share:.2%})"
        )
    table = table_ii(streams)
    others = fig4(streams)
    sweep = skew_sweep(ns.messages, ns.keys)
    choices = fig9(ns.messages)
    print(f"\n{STORM}")
    plot(table, sweep, choices)
    OUT.mkdir(parents=True, exist_ok=True)
    stand_ins = {
        name: {
            "keys": TABLE_I[name].keys,
            "p1_table_i": TABLE_I[name].top_share,
            "p1_drawn": s.top_share(),
            "messages": s.messages,
        }
        for name, s in streams.items()
    }
    result = {
        "stand_ins": stand_ins,
        "tolerance": {"balanced": BALANCED, "factor": FACTOR},
        "table_ii": table,
        "fig4": others,
        "fig7_sweep": sweep,
        "fig9": choices,
        "not_reproduced": STORM,
    }
    (OUT / "paper003_pkg.json").write_text(json.dumps(result, indent=1))
    print(f"written {OUT / 'paper003_pkg.png'} and paper003_pkg.json")


if __name__ == "__main__":
    main()
