"""Paper 002 (Landau et al., consumer-group autoscaling by bin packing): its experiments, ours
beside the paper's numbers.

    .venv/bin/python bench/paper002_binpack.py            # ≈ 3 min on 2 cores
    .venv/bin/python bench/paper002_binpack.py --iterations 100    # quicker

1. Figs. 9–11: CBS (Eq. 28) and mean Rscore (Eq. 11) of the 12 heuristics on streams of
   200 partitions × 500 measurements (Eq. 15, C = 100, random initial rates) for
   δ ∈ {0, 5, …, 25}; online algorithms see the partitions in a new random order every
   iteration, as the authors' code does. The paper's figures are plots: its numbers here are
   computed from the authors' raw results (github.com/landaudiogo/thesis_data,
   ``Reassign Algorithm/uniform_start.csv``, the file their Fig. 9–11 script reads).
2. Fig. 12: Pareto fronts of (CBS, mean Rscore) for δ = 5 and 25.
3. §VI-E: MWF's Rscore against the best classic heuristic and its extra consumers (= CBS).
4. §VI-C: latency of MWF against Kafka's assignment with a fixed group (kd_N: round robin over
   a random partition order, never rebalanced) on 32 partitions, 100 measurements, δ = 5,
   C̄ = 120, C = 5/6·C̄ = 100; Kafka over 100 random assignments (the paper shows one each),
   with where the paper's p90 falls among them and why the Kafka rows differ.
5. Each heuristic against ``binpack_milp`` and the lower bound ⌈Σ rate / C⌉ (32 partitions).
6. Planning time for 32, 1 000 and 10 000 partitions.

Plots (PNG) and all numbers (JSON) go to ``bench/results/`` (committed, so a reader sees them
without running anything).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from routeplan.planning.partitions import heuristics
from routeplan.planning.partitions import scores as bm
from routeplan.planning.partitions.latency import latency_samples, latency_summary, queue_segments
from routeplan.planning.partitions.measurements import measurement_stream
from routeplan.planning.partitions.packing import ADAPTED, KAFKA, MODIFIED, bin_capacity
from routeplan.planning.partitions.replay import replay

HEURISTICS = ADAPTED + MODIFIED
DELTAS = (0, 5, 10, 15, 20, 25)
C = 100.0  # bin capacity of §VI-B/§VI-E (the authors' ALGO_CAPACITY)
RESULTS = Path(__file__).resolve().parent / "results"

# From the authors' uniform_start.csv (200 partitions, 501 measurements, integer rates 0–100):
# Eq. 28 over the 12 algorithms, and the mean of column Rscore_Algorithm_Capacity, per δ.
PAPER_CBS = {
    "nf": (0.2475, 0.2833, 0.2895, 0.2788, 0.2644, 0.2640),
    "ff": (0.0690, 0.0811, 0.0780, 0.0711, 0.0629, 0.0624),
    "bf": (0.0225, 0.0369, 0.0385, 0.0355, 0.0334, 0.0324),
    "wf": (0.1122, 0.1351, 0.1322, 0.1228, 0.1152, 0.1125),
    "nfd": (0.2143, 0.2380, 0.2409, 0.2240, 0.2090, 0.2058),
    "ffd": (0.0000, 0.0005, 0.0010, 0.0004, 0.0003, 0.0004),
    "bfd": (0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000),
    "wfd": (0.0000, 0.0019, 0.0041, 0.0020, 0.0011, 0.0016),
    "mwf": (0.0000, 0.1181, 0.1147, 0.1049, 0.0935, 0.0881),
    "mbf": (0.0000, 0.0377, 0.0321, 0.0257, 0.0218, 0.0183),
    "mwfp": (0.0000, 0.1233, 0.1244, 0.1109, 0.0938, 0.0846),
    "mbfp": (0.0000, 0.0016, 0.0034, 0.0019, 0.0015, 0.0014),
}
PAPER_RSCORE = {
    "nf": (30.18, 31.50, 31.98, 31.48, 31.49, 31.90),
    "ff": (24.10, 26.62, 28.30, 28.40, 29.32, 30.36),
    "bf": (25.22, 29.61, 30.52, 30.85, 31.51, 32.85),
    "wf": (23.13, 25.53, 26.68, 26.88, 27.52, 28.47),
    "nfd": (0.00, 20.54, 21.49, 20.60, 19.90, 19.73),
    "ffd": (0.00, 24.04, 25.41, 25.52, 25.73, 26.28),
    "bfd": (0.00, 24.16, 25.53, 25.47, 25.80, 26.44),
    "wfd": (0.00, 24.12, 25.24, 25.34, 25.47, 26.21),
    "mwf": (0.04, 9.20, 11.79, 12.83, 13.83, 14.99),
    "mbf": (0.00, 16.04, 18.88, 19.88, 20.61, 21.48),
    "mwfp": (0.37, 16.90, 16.96, 17.20, 17.82, 18.55),
    "mbfp": (0.00, 23.09, 24.21, 24.00, 23.80, 24.09),
}
# §VI-E and §VI-C as printed
PAPER_CLAIMS = {25: (-0.23, 0.088), 5: (-0.55, 0.118)}  # δ: (Rscore change, extra consumers)
PAPER_LATENCY_P90 = {"mwf": 4.52, 15: 217.0, 24: 2.70, 30: 1.11, 31: 0.0, 32: 0.0}


def nfd_as_in_the_authors_code(rates: np.ndarray) -> float:
    """Mean Rscore of NFD as the authors' ``NextFit.run`` does it: the first bin is opened as
    consumer 0 (Eq. 12) before any partition, later ones by Eq. 14. The paper's §VI-E
    reductions are against this NFD."""
    previous, scores = None, []
    for rate in rates:
        rate, prior = heuristics._inputs(rate, C, previous)
        bins = heuristics._Bins(rate, C, prior)
        bins.open_id(0)
        for j in heuristics.decreasing(rate).tolist():
            b = bins.choose(j, "next")
            bins.put(b if b is not None else bins.open(j), j)
        scores.append(bm.rscore(rate, C, previous, bins.assignment))
        previous = bins.assignment
    return float(np.mean(scores))


def figures_9_to_11(partitions: int, iterations: int, seed: int) -> dict:
    """CBS and mean Rscore of every heuristic per δ (Eq. 28, 29)."""
    out = {}
    for delta in DELTAS:
        rates = measurement_stream(partitions, iterations, delta, C, seed=seed + delta)
        rng = np.random.default_rng(seed + 1000 + delta)
        orders = np.array([rng.permutation(partitions) for _ in range(iterations)])
        runs = {name: replay(name, rates, C, orders=orders) for name in HEURISTICS}
        assert all(not run.overloaded.any() for run in runs.values())
        cbs = bm.cbs({name: run.consumers for name, run in runs.items()})
        bound = np.array([bm.lower_bound(r, C) for r in rates])
        out[delta] = {
            name: {
                "cbs": cbs[name],
                "rscore": float(run.rscore.mean()),
                "consumers": float(run.consumers.mean()),
                "lower_bound_gap": float(np.mean((run.consumers - bound) / bound)),
            }
            for name, run in runs.items()
        }
        out[delta]["nfd (authors' code)"] = {"rscore": nfd_as_in_the_authors_code(rates)}
        print(f"  δ={delta:>2}: {len(runs)} algorithms × {iterations} iterations done", flush=True)
    return out


def print_grid(title: str, ours: dict, key: str, paper: dict, digits: int) -> None:
    print(f"\n{title} — ours / paper (authors' data)")
    print(f"{'algorithm':<7}" + "".join(f"{'δ=' + str(d):>17}" for d in DELTAS))
    for name in HEURISTICS:
        cells = [
            f"{ours[d][name][key]:.{digits}f} / {paper[name][i]:.{digits}f}"
            for i, d in enumerate(DELTAS)
        ]
        print(f"{name:<7}" + "".join(f"{c:>17}" for c in cells))


def pareto(points: dict) -> list[str]:
    return bm.pareto_front({n: (p[0], p[1]) for n, p in points.items()})


def claims(ours: dict) -> dict:
    """§VI-E: MWF's Rscore change against the classic heuristic with the lowest mean Rscore,
    and its extra consumers against the fewest per iteration (its CBS)."""
    result = {}
    print("\n§VI-E claims: MWF against the best classic heuristic by Rscore")
    print(f"{'δ':>3} {'':>27}{'Rscore change':>15}{'consumers':>11}{'best classic':>14}")
    for delta, (paper_rscore, paper_consumers) in PAPER_CLAIMS.items():
        i = DELTAS.index(delta)
        classic = min(ADAPTED, key=lambda n: PAPER_RSCORE[n][i])
        data_change = PAPER_RSCORE["mwf"][i] / PAPER_RSCORE[classic][i] - 1
        best = min(ADAPTED, key=lambda n: ours[delta][n]["rscore"])
        our_change = ours[delta]["mwf"]["rscore"] / ours[delta][best]["rscore"] - 1
        authors_nfd = ours[delta]["nfd (authors' code)"]["rscore"]
        rows = [
            ("paper (text)", paper_rscore, paper_consumers, "—"),
            ("paper (authors' data)", data_change, PAPER_CBS["mwf"][i], classic),
            ("ours", our_change, ours[delta]["mwf"]["cbs"], best),
            (
                "ours, NFD as authors' code",
                ours[delta]["mwf"]["rscore"] / authors_nfd - 1,
                ours[delta]["mwf"]["cbs"],
                "nfd*",
            ),
        ]
        for label, change, extra, against in rows:
            print(f"{delta:>3} {label:<27}{change:>+15.1%}{extra:>+11.1%}{against:>14}")
        result[delta] = {"rscore_change": our_change, "extra_consumers": ours[delta]["mwf"]["cbs"]}
    print("  nfd*: the authors' NextFit opens consumer 0 before any partition (Eq. 12, not 14)")
    return result


def latency_experiment(seed: int, orders: int = 100) -> dict:
    """§VI-C: MWF (C = 100) against Kafka's fixed groups of N consumers, read at C̄ = 120 (the
    paper's C = 5/6·C̄) and at C̄ = 133 (the authors' code: CONSUMER_CAPACITY = 133).

    Kafka's assignment is random (§VI-C) and the paper reports one draw per N; we report the
    median over ``orders`` draws, the 5th–95th percentile range, and where the paper's number
    falls among our draws (its percentile rank)."""
    partitions, iterations, capacity = 32, 100, C
    readers = (capacity / bin_capacity(1.0), 133.0)  # C̄ = 120 (C = 5/6·C̄), 133
    rates = measurement_stream(partitions, iterations, 5, capacity, seed=seed)
    mwf = replay("mwf", rates, capacity)
    rng = np.random.default_rng(seed)
    groups = sorted({15, 20, 24, 27, 30, 31, 32, round(float(mwf.consumers.mean()))})
    kafka = {
        n: [
            replay(
                "kafka_roundrobin",
                rates,
                capacity,
                consumers=n,
                orders=rng.permutation(partitions)[None, :],
            )
            for _ in range(orders)  # the paper's Kafka assignment is random: one draw per N
        ]
        for n in groups
    }

    def latency(runs, reader):
        found = [latency_summary(queue_segments(rates, run.assignments, reader)) for run in runs]
        out = {k: float(np.median([f[k] for f in found])) for k in found[0]}
        p90 = np.array([f["p90"] for f in found])
        out["p90_draws"] = p90.tolist()
        out["p90_p5"], out["p90_p95"] = (float(x) for x in np.percentile(p90, (5, 95)))
        out["overloaded_consumers"] = float(
            np.median([_overloaded_consumers(rates, run.assignments[0], reader) for run in runs])
        )
        return out

    table = {"mwf": [latency([mwf], r) for r in readers]}
    table.update({f"kd_{n}": [latency(kafka[n], r) for r in readers] for n in groups})
    print(
        f"\n§VI-C latency: 32 partitions, 100 iterations of 30 s, 5 s rebalance, δ=5, "
        f"C={capacity:g}; p90 of the delayed bytes (Fig. 8); Kafka: median [5th–95th percentile] "
        f"of {orders} random assignments; rank = share of our draws at or below the "
        "paper's value; verdict: median within 10% of the paper's p90 (the paper states no "
        "tolerance), else whether the paper's single draw lies within our 5th–95th percentiles"
    )
    print(
        f"{'':<7}{'':>6}{'--------------- C̄ = 120 (paper) ----------------':>51}"
        f"{'--- C̄ = 133 (code) ---':>25}{'paper':>8}"
    )
    print(
        f"{'':<7}{'cons.':>6}{'delayed':>8}{'over':>5}{'p90 s':>9}{'[5th–95th]':>19}{'p99 s':>9}"
        f"{'rank':>6}{'delayed':>9}{'p90 s':>9}{'rank':>7}{'p90 s':>8}  verdict (C̄ = 120)"
    )
    verdicts = {}
    for label, (paper_c, code_c) in table.items():
        consumers = float(mwf.consumers.mean()) if label == "mwf" else float(label[3:])
        paper = PAPER_LATENCY_P90.get("mwf" if label == "mwf" else int(label[3:]))
        ranks = ["—", "—"]
        verdict = "—"
        if paper is not None:
            if label != "mwf":
                ranks = [
                    f"{np.mean(np.array(c['p90_draws']) <= paper):.0%}" for c in (paper_c, code_c)
                ]
            close = abs(paper_c["p90"] - paper) <= 0.1 * max(paper, 0.1)
            inside = paper_c["p90_p5"] <= paper <= paper_c["p90_p95"]
            verdict = (
                "matches"
                if close
                else "one draw: within our 5th–95th"
                if inside
                else "differs (see below)"
            )
            verdicts[label] = verdict
        spread = f"[{paper_c['p90_p5']:.2f}–{paper_c['p90_p95']:.2f}]"
        print(
            f"{label:<7}{consumers:>6.2f}{paper_c['delayed_share']:>8.3f}"
            f"{paper_c['overloaded_consumers']:>5.0f}{paper_c['p90']:>9.2f}{spread:>19}"
            f"{paper_c['p99']:>9.2f}{ranks[0]:>6}{code_c['delayed_share']:>9.3f}"
            f"{code_c['p90']:>9.2f}{ranks[1]:>7}{'—' if paper is None else f'{paper:g}':>8}"
            f"  {verdict}"
        )
    same = kafka[round(float(mwf.consumers.mean()))]
    worse = np.mean(
        [
            latency_summary(queue_segments(rates, run.assignments, readers[0]))["p90"]
            > 10 * table["mwf"][0]["p90"]
            for run in same
        ]
    )
    print(LATENCY_EXPLANATION.format(mwf=float(mwf.consumers.mean()), worse=worse))
    kd27 = kafka[27][0]
    for row in table.values():
        for cell in row:
            cell.pop("p90_draws")
    return {
        "table": {k: {"cbar_120": v[0], "cbar_133": v[1]} for k, v in table.items()},
        "paper_p90": {str(k): v for k, v in PAPER_LATENCY_P90.items()},
        "verdict": verdicts,
        "mwf_consumers": float(mwf.consumers.mean()),
        "segments": tuple(
            queue_segments(rates, run.assignments, readers[0]) for run in (mwf, kd27)
        ),
    }


LATENCY_EXPLANATION = """\
  over: consumers whose partitions' summed rate exceeds C̄ in the first iteration (median draw);
  MWF uses {mwf:.2f} consumers on our stream, 15 on the paper's; kd_27 is Fig. 5's histogram.
  Why the Kafka rows differ (MWF matches): Kafka never rebalances a fixed group (§VI-C), so
  under Eq. 20–22 a consumer whose partitions write W > C̄ carries its backlog from one
  iteration to the next (b = the last byte's latency, Eq. 20) for the whole 3 000 s: its last
  byte waits 3000·(W/C̄ − 1) s, 900 s at W = 1.3·C̄. With 32 partitions of rates drawn in
  [0, 100] and two or three partitions per consumer, some pair exceeds C̄ in nearly every
  draw, hence p90s of hundreds of seconds. The paper's kd_N are one random assignment each
  (Fig. 7 is not monotone in N: kd_24 has fewer delayed samples than MWF, kd_27 more); its
  2.70 s at 24 and 1.11 s at 30 consumers need an assignment where almost no consumer stays
  above C̄ for long, and its 217 s at 15 is below nearly all our draws (rank: share of our
  draws at or below the paper's p90), at either C̄. The paper publishes neither the
  assignments nor its latency code, so the gap cannot be closed by construction; our
  Eq. 16–27 model reproduces the MWF value (whose latency the model bounds at 5 s plus the
  catch-up), and the paper's conclusion holds: Kafka with as many consumers as MWF (here
  {mwf:.2f}, paper 15) has a p90 over 10× MWF's in {worse:.0%} of our draws."""


def _overloaded_consumers(rates: np.ndarray, assignment: np.ndarray, reader: float) -> int:
    """Consumers of ``assignment`` whose partitions write more than ``reader`` in the first
    measurement."""
    return int(np.sum(np.bincount(assignment, weights=rates[0]) > reader))


def milp_gaps(seed: int, iterations: int, time_limit_s: float) -> dict:
    """Each heuristic and ``binpack_milp`` over the same 32-partition stream (δ = 5)."""
    rates = measurement_stream(32, iterations, 5, C, seed=seed)
    runs = {
        name: replay(name, rates, C, time_limit_s=time_limit_s)
        for name in (*HEURISTICS, "binpack_milp")
    }
    exact = runs["binpack_milp"]
    bound = np.array([bm.lower_bound(r, C) for r in rates])
    statuses = [s["solver_status"] for s in exact.solver]
    gaps = [s["mip_gap"] for s in exact.solver if s["mip_gap"] is not None]
    print(
        f"\nAgainst binpack_milp and the lower bound: 32 partitions, {iterations} iterations, "
        f"δ=5, C={C:g}; MILP (HiGHS, {time_limit_s:g} s per iteration): "
        f"{statuses.count('optimal')} optimal, {statuses.count('time_limit')} at the time limit, "
        f"mean MIP gap {np.mean(gaps) if gaps else float('nan'):.2%}, "
        f"{exact.seconds.mean():.2f} s per plan"
    )
    print(
        f"{'algorithm':<13}{'consumers':>10}{'vs MILP':>9}{'vs bound':>10}{'rscore':>9}"
        f"{'vs MILP':>9}"
    )
    out = {}
    for name, run in runs.items():
        vs_exact = float(np.mean((run.consumers - exact.consumers) / exact.consumers))
        vs_bound = float(np.mean((run.consumers - bound) / bound))
        rscore = float(run.rscore.mean())
        print(
            f"{name:<13}{run.consumers.mean():>10.2f}{vs_exact:>+9.1%}{vs_bound:>+10.1%}"
            f"{rscore:>9.3f}{rscore - exact.rscore.mean():>+9.3f}"
        )
        out[name] = {
            "consumers_vs_milp": vs_exact,
            "consumers_vs_bound": vs_bound,
            "rscore": rscore,
        }
    print(
        "  (each algorithm follows its own trajectory: MILP minimises consumers, then Rscore, "
        "one iteration at a time)"
    )
    return {"algorithms": out, "milp_status": statuses, "mip_gap": gaps}


def planning_times(seed: int, time_limit_s: float) -> dict:
    """Milliseconds per plan (iterations 2–3, from the previous plan; best of a few runs)."""
    sizes = (32, 1_000, 10_000)
    names = (*HEURISTICS, *KAFKA, "binpack_milp")
    table: dict[str, dict[int, float | None]] = {n: {} for n in names}
    for size in sizes:
        rates = measurement_stream(size, 3, 5, C, seed=seed)
        group = bm.lower_bound(rates[0], C)
        for name in names:
            if name == "binpack_milp" and size > 32:
                table[name][size] = None
                continue
            repeats = 1 if name == "binpack_milp" else (5 if size < 10_000 else 2)
            best = min(
                replay(name, rates, C, consumers=group, time_limit_s=time_limit_s)
                .seconds[1:]
                .mean()
                for _ in range(repeats)
            )
            table[name][size] = float(best * 1000)
    print("\nPlanning time per plan (ms; δ=5, from the previous plan)")
    print(f"{'algorithm':<17}" + "".join(f"{f'P={s}':>12}" for s in sizes))
    for name in names:
        cells = ["—" if table[name][s] is None else f"{table[name][s]:.2f}" for s in sizes]
        print(f"{name:<17}" + "".join(f"{c:>12}" for c in cells))
    print(f"  (binpack_milp only on small instances: P=32, time limit {time_limit_s:g} s)")
    return table


def plots(fig: dict, latency: dict, times: dict, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []

    def series(names, key, name_suffix, ylabel, paper):
        f, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        for ax, source in zip(axes, ("ours", "paper (authors' data)"), strict=True):
            for i, name in enumerate(names):
                ys = [fig[d][name][key] for d in DELTAS] if source == "ours" else list(paper[name])
                ax.plot(DELTAS, ys, marker="osv^<>pP*Xdh"[i % 12], label=name, alpha=0.8)
            ax.set_title(source)
            ax.set_xlabel("δ")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel(ylabel)
        axes[1].legend(ncol=2, fontsize=8)
        path = out / f"paper002_{name_suffix}.png"
        f.tight_layout()
        f.savefig(path, dpi=110)
        plt.close(f)
        written.append(path)

    series(HEURISTICS, "cbs", "fig09_cbs", "CBS", PAPER_CBS)
    series(("mwf", "mbf", "mwfp", "mbfp", "bfd"), "cbs", "fig10_cbs_modified", "CBS", PAPER_CBS)
    series(HEURISTICS, "rscore", "fig11_rscore", "mean Rscore", PAPER_RSCORE)

    f, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, delta in zip(axes, (5, 25), strict=True):
        points = {n: (fig[delta][n]["cbs"], fig[delta][n]["rscore"]) for n in HEURISTICS}
        front = pareto(points)
        for name, (x, y) in points.items():
            ax.scatter(x, y, marker="o" if name in front else "x", color="k")
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        xs, ys = zip(*sorted(points[n] for n in front), strict=True)
        ax.step(xs, ys, where="post", alpha=0.5)
        ax.set_title(f"Pareto front, δ = {delta} (ours)")
        ax.set_xlabel("CBS")
        ax.set_ylabel("mean Rscore")
        ax.grid(alpha=0.3)
    path = out / "paper002_fig12_pareto.png"
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)
    written.append(path)

    f, ax = plt.subplots(figsize=(7, 4.5))
    samples = [latency_samples(segments) for segments in latency["segments"]]
    top = max(float(values.max(initial=1.0)) for values, _ in samples)
    bins = np.geomspace(0.01, top, 60)
    for label, (values, weights) in zip(("MWF", "kd_27 (one draw)"), samples, strict=True):
        delayed = values > 0
        ax.hist(values[delayed], bins=bins, weights=weights[delayed], alpha=0.6, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("latency (s) of delayed bytes, C̄ = 120")
    ax.set_ylabel("bytes")
    ax.legend()
    ax.set_title("§VI-C latency (Fig. 5): MWF vs Kafka with 27 consumers")
    path = out / "paper002_fig05_latency.png"
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)
    written.append(path)

    f, ax = plt.subplots(figsize=(7, 4.5))
    for name, by_size in times.items():
        sizes = [s for s, v in by_size.items() if v is not None]
        ax.plot(sizes, [by_size[s] for s in sizes], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions")
    ax.set_ylabel("ms per plan")
    ax.legend(ncol=2, fontsize=7)
    ax.grid(alpha=0.3)
    path = out / "paper002_planning_time.png"
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)
    written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--milp-iterations", type=int, default=20)
    parser.add_argument("--milp-time-limit", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()

    print(f"Figs. 9–11: {args.partitions} partitions, {args.iterations} measurements per δ")
    fig = figures_9_to_11(args.partitions, args.iterations, args.seed)
    print_grid("CBS (Figs. 9, 10)", fig, "cbs", PAPER_CBS, 4)
    print_grid("Mean Rscore (Fig. 11)", fig, "rscore", PAPER_RSCORE, 2)
    print("\nConsumers above the lower bound ⌈Σ rate / C⌉ (mean relative gap, ours)")
    print(f"{'algorithm':<7}" + "".join(f"{'δ=' + str(d):>9}" for d in DELTAS))
    for name in HEURISTICS:
        print(f"{name:<7}" + "".join(f"{fig[d][name]['lower_bound_gap']:>+9.1%}" for d in DELTAS))

    print("\nFig. 12: Pareto fronts of (CBS, mean Rscore)")
    fronts = {}
    for delta in (5, 25):
        i = DELTAS.index(delta)
        ours = pareto({n: (fig[delta][n]["cbs"], fig[delta][n]["rscore"]) for n in HEURISTICS})
        paper = pareto({n: (PAPER_CBS[n][i], PAPER_RSCORE[n][i]) for n in HEURISTICS})
        print(f"  δ={delta:>2} ours : {', '.join(ours)}")
        print(f"  δ={delta:>2} paper: {', '.join(paper)}  (text: MWF, MBF, MBFP always on it)")
        fronts[delta] = {"ours": ours, "paper": paper}

    summary = claims(fig)
    latency = latency_experiment(args.seed)
    gaps = milp_gaps(args.seed, args.milp_iterations, args.milp_time_limit)
    times = planning_times(args.seed, 10.0)
    written = plots(fig, latency, times, args.out)
    latency.pop("segments")
    report = {
        "figures_9_11": {str(d): v for d, v in fig.items()},
        "pareto": {str(d): v for d, v in fronts.items()},
        "claims": {str(d): v for d, v in summary.items()},
        "latency": latency,
        "milp": gaps,
        "planning_ms": {n: {str(s): v for s, v in t.items()} for n, t in times.items()},
    }
    (args.out / "paper002.json").write_text(json.dumps(report, indent=1))
    print(f"\nplots: {', '.join(p.name for p in written)} and paper002.json in {args.out}")
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
