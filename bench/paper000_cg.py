"""Paper 000 (Consistent Grouping) reproduced in the simulator.

    .venv/bin/python bench/paper000_cg.py                     # 1M messages (a few minutes)
    .venv/bin/python bench/paper000_cg.py --quick             # 200k messages
    .venv/bin/python bench/paper000_cg.py --messages 10000000 --slots 1000
    .venv/bin/python bench/paper000_cg.py --planned           # only the planned tables (~30 s)

The paper's WP dataset (22M visits, p1 = 9.32 %) is replaced by a Zipf stream with the same top
share (bench/streams.py). Its simulation results are figures without numbers, so each part
prints our numbers and checks the paper's stated findings (quoted) against them:

* Figs. 7–8: imbalance and memory of KG, PKG, PoTC, CH, SG, PoRC, CG for 5, 10, 50, 100 workers,
  10 virtual workers per worker, ε = 0.01, one source — twice: the tables routeplan plans on the
  stream's aggregated loads (what it publishes; memory = Σ over workers of distinct keys, so the
  copies a split hot key adds), and message by message in the simulator.
* Fig. 9: queue length, latency and utilisation (max − min) over time, 10 equal workers, at 80 %
  utilisation under SG (§VII Q2), KG vs CG.
* Fig. 10: the same on a heterogeneous cluster, y = 3 machines z = 5 times faster: KG, SG, CG.
* Fig. 12: CG with 5 … 100 virtual workers per worker on that cluster.
* Fig. 13: capacities change after 6/22 and 12/22 of the stream ({y, z} = {3, 5} → {5, 4} →
  {2, 10}, same total capacity).

CG uses the paper's simulation thresholds: idle below 0.75, busy above 0.85 of capacity at 80 %
utilisation, i.e. θ_i = 0.9375 and θ_b = 1.0625 of the fair share (§VII-A "Monitoring"). ``cg``
is the paper's pairing (§V-B: binary busy/idle signals in FCFS queues, one virtual worker per
busy–idle pair); ``cg-exact`` our named variant (``pairing="exact"``: exact load ratios and
capacities, best virtual worker, non-busy receivers, at most one move per busy worker and slot),
shown beside it on Figs. 7, 8, 12 and 13. A time slot (§V-B t_0) is 1/``--slots`` of the
stream (default 500): the paper's WP day (22M messages in 24 h) with slots "on the order of
minutes" has ~10³ of them. FCFS pairing moves one virtual worker per busy–idle pair and slot, so
at α = 100 the 3 fast workers need ~130 slots to reach their share: with 100 slots (the
simulator's default) Fig. 12's α trend comes out reversed for want of time, not of balance.
The Storm results (CG 3.44× better latency, 2× throughput than KG, §VII Q4) come from a real
cluster and are not reproduced here.

In the planned tables CG's memory is below CH's (issue 32: a hot key fills the virtual workers of
as few workers as its load needs, ⌈p1·W/(1+ε)⌉; its ⌈p1·V/(1+ε)⌉ virtual-worker pieces used to
land on as many workers, 149 and 350 extra copies at W = 50 and 100 against CH's 48 and 96).
Why CG's memory stays above CH's in the simulator (the two simulated CG findings marked [✗]): the
workers signal on the load of the last time slot. A slot of a 1M-message stream gives each of 10
workers ~200 messages, whose noise (±7 %) crosses θ_b, θ_i (±6.25 %) all the time, so virtual
workers move on noise and each move leaves a key's partial state on its old worker too (§V-B: CG
migrates no state; periodic aggregation merges partial results) — replication rises with the
moves. Signalling on §IV's ``U_w(t)`` (messages assigned since the start ÷ capacity), the other
reading of §VII-A "Monitoring", was measured (200k messages, 2026-11): no move on equal workers
and CG's replication equal to CH's (1.42, 1.52, 1.80, 1.84 vs 1.44, 1.49, 1.73, 1.85 for
W = 5 … 100), but cumulative signals react so late that heterogeneous and changing clusters
lose (Fig. 10 queue spread 60 vs 2, Fig. 13 no longer adapts). The simulator keeps per-slot
signals; a real deployment signals on a queue-length window (§VII-A), which is per-slot.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from streams import exponent_for_top_share, snapshot_of, words, wp_like, zipf

from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.registry import get_strategy
from routeplan.simulation.events import parse_capacities
from routeplan.simulation.replay import simulate

OUT = Path("bench/results")
WORKERS = (5, 10, 50, 100)
CG = {
    "epsilon": 0.01,
    "virtual_workers_per_worker": 10,
    "theta_busy": 0.85 / 0.8,
    "theta_idle": 0.75 / 0.8,
}
CG_EXACT = {**CG, "pairing": "exact"}
# label → (strategy, parameters)
SCHEMES = {
    "kg": ("kg", None),
    "pkg": ("pkg", None),
    "potc": ("potc", None),
    "chbl": ("chbl", {"epsilon": 0.01}),
    "sg": ("sg", None),
    "porc": ("porc", {"epsilon": 0.01}),
    "cg": ("cg", CG),
    "cg-exact": ("cg", CG_EXACT),
}
SLOTS = 500


def check(claim: str, ok: bool, detail: str) -> bool:
    print(f"  [{'✓' if ok else '✗'}] {claim}  — ours: {detail}")
    return ok


# Fig. 8 (§VII Q2): "CH provides bounded imbalance and reduces the memory footprint compared to
# PoTC and SG. CG provides the bounded imbalance and improves the memory footprint compared to
# CH." The figure is a log-scale plot without numbers: its ordering is what we compare.
PAPER_FIG8 = "CG: bounded imbalance, memory below CH's"
PLANNED = ("kg", "pkg", "chbl", "porc", "cg", "cg-exact")


def planned_figs_7_8(stream) -> dict:
    """Figs. 7–8 on the tables the planners publish: each plans on the stream's aggregated loads
    (1024 key groups, hot keys ≥ 0.1 % of the messages); memory counts a split key once per
    worker it goes to."""
    snap = snapshot_of(stream)
    keys = float(snap.distinct_keys.sum())
    top = max(snap.hot_key_load, key=lambda k: (snap.hot_key_load[k], k))
    p1 = snap.hot_key_load[top] / snap.total
    print(
        f"\nFigs. 7–8, planned tables: imbalance / extra copies (memory − distinct keys) / "
        f"workers of the top key (p1 = {p1:.2%}); paper (Fig. 8): {PAPER_FIG8}"
    )
    head = "".join(f"{f'W={w} imb.':>12}{'copies':>7}{'top':>5}" for w in WORKERS)
    print(f"{'scheme':<9}{head}")
    res = {}
    for label in PLANNED:
        name, params = SCHEMES[label]
        plans = [
            get_strategy(name, **(params or {})).plan(snap, None, Workers.homogeneous(w), Budget())
            for w in WORKERS
        ]
        res[label] = {
            "imbalance": [p.predicted["imbalance"] for p in plans],
            "replication": [p.predicted["memory"] / keys for p in plans],
            "extra_copies": [p.predicted["memory"] - keys for p in plans],
            "top_key_workers": [len(p.table.hot_keys.get(top, ((top, 1.0),))) for p in plans],
        }
        r = res[label]
        print(
            f"{label:<9}"
            + "".join(
                f"{i:>12.2e}{c:>7.0f}{t:>5}"
                for i, c, t in zip(
                    r["imbalance"], r["extra_copies"], r["top_key_workers"], strict=True
                )
            )
        )
    ch = np.array(res["chbl"]["extra_copies"])
    need = [int(np.ceil(p1 * w / 1.01 - 1e-9)) for w in WORKERS]
    for label in ("cg", "cg-exact"):
        copies = np.array(res[label]["extra_copies"])
        res[label]["verdict"] = check(
            f'[{label}, planned] "CG provides the bounded imbalance and improves the memory '
            'footprint compared to CH"',
            bool(
                max(res[label]["imbalance"]) <= 2 * 0.01 + 1e-9
                and np.all(copies <= ch)
                and np.any(copies < ch)
            ),
            f"imbalance ≤ {max(res[label]['imbalance']):.4f}; extra copies "
            f"{copies.astype(int).tolist()} vs CH {ch.astype(int).tolist()} (replication "
            f"{np.round(res[label]['replication'], 4).tolist()} vs "
            f"{np.round(res['chbl']['replication'], 4).tolist()}); top key on "
            f"{res[label]['top_key_workers']} workers, ⌈p1·W/(1+ε)⌉ = {need}",
        )
    return res


def top_key_spread(messages: int) -> dict:
    """Issue 32's targets at W = 50 on an English word stream (wordfreq, p1 ≈ 5.4 %, the
    issue's real one had 5.6 %) and a Zipf stream with a 24 % top key, for ε = 0.01, 0.1,
    0.5: the top key on at most ⌈p1·W/(1+ε)⌉ + 1 workers, the imbalance within 2ε, and a
    plan again on the same loads moving nothing."""
    print("\nTop key's workers at W = 50 (target ≤ ⌈p1·W/(1+ε)⌉ + 1, imbalance ≤ 2ε, stable)")
    res = {}
    for name, stream in (
        ("words", words(messages)),
        ("zipf 24 %", zipf(messages, 100_000, exponent_for_top_share(0.24, 100_000))),
    ):
        snap = snapshot_of(stream)
        top = max(snap.hot_key_load, key=lambda k: (snap.hot_key_load[k], k))
        p1 = snap.hot_key_load[top] / snap.total
        for eps in (0.01, 0.1, 0.5):
            cg = get_strategy("cg", **{**CG, "epsilon": eps})
            plan = cg.plan(snap, None, Workers.homogeneous(50), Budget())
            again = cg.plan(snap, plan.table, Workers.homogeneous(50), Budget())
            spread = len(plan.table.hot_keys.get(top, ((top, 1.0),)))
            target = int(np.ceil(p1 * 50 / (1 + eps) - 1e-9)) + 1
            imbalance = plan.predicted["imbalance"]
            res[f"{name} ε={eps}"] = {"top_key_workers": spread, "imbalance": imbalance}
            check(
                f"{name} (p1 = {p1:.1%}) ε = {eps}: top key on ≤ {target} workers, "
                f"imbalance ≤ {2 * eps:g}, re-plan moves nothing",
                spread <= target
                and imbalance <= 2 * eps + 1e-9
                and again.table.same_routing(plan.table),
                f"{spread} workers, imbalance {imbalance:.4f}",
            )
    return res


def figs_7_8(stream, slot: int) -> dict:
    print(
        "\nFigs. 7–8, simulated: final imbalance / replication (memory ÷ distinct keys), one source"
    )
    print(f"{'scheme':<9}" + "".join(f"{f'W={w} imb.':>12}{'repl.':>7}" for w in WORKERS))
    res = {}
    for label, (name, params) in SCHEMES.items():
        row = [
            simulate(stream, name, np.ones(w), params=params, report_every=slot) for w in WORKERS
        ]
        res[label] = {
            "imbalance": [r.imbalance for r in row],
            "replication": [r.replication for r in row],
        }
        print(f"{label:<9}" + "".join(f"{r.imbalance:>12.2e}{r.replication:>7.2f}" for r in row))
    imb = {n: np.array(v["imbalance"]) for n, v in res.items()}
    rep = {n: np.array(v["replication"]) for n, v in res.items()}
    print("paper 000's findings (Fig. 8, §VII Q2; Fig. 7, Q1):")
    check(
        '"KG performs the worst in terms of the imbalance while generating the optimal memory"',
        all(imb["kg"][i] >= max(imb[n][i] for n in SCHEMES) for i in range(len(WORKERS)))
        and bool(np.all(rep["kg"] == 1.0)),
        f"KG imbalance {np.round(imb['kg'], 2).tolist()}, replication 1.0",
    )
    check(
        '"PKG … nearly perfect imbalance … for 5 and 10 workers. However, the imbalance grows '
        'as the number of workers increase"',
        bool(imb["pkg"][:2].max() < 0.01 and imb["pkg"][-1] > 10 * imb["pkg"][1]),
        f"PKG {np.array2string(imb['pkg'], precision=4)}",
    )
    check(
        '"PoTC and SG … nearly perfect imbalance and generate higher memory footprint"',
        bool(
            max(imb["potc"].max(), imb["sg"].max()) < 0.01
            and np.all(  # at every number of workers, above the schemes that bound a key's workers
                np.minimum(rep["potc"], rep["sg"])
                > np.max([rep[n] for n in ("kg", "pkg", "porc", "chbl")], axis=0)
            )
        ),
        f"PoTC/SG replication {rep['potc'].round(2).tolist()} / {rep['sg'].round(2).tolist()}",
    )
    check(
        '"CH provides bounded imbalance and reduces the memory footprint compared to PoTC and SG"',
        bool(imb["chbl"].max() <= 0.011 and np.all(rep["chbl"] < rep["potc"])),
        f"CH imbalance ≤ {imb['chbl'].max():.4f}, replication {rep['chbl'].round(2).tolist()}",
    )
    for label in ("cg", "cg-exact"):
        check(
            f'[{label}] "CG provides the bounded imbalance and improves the memory footprint '
            'compared to CH"',
            bool(imb[label].max() <= 0.02 and np.all(rep[label] < rep["chbl"])),
            f"imbalance ≤ {imb[label].max():.4f}, replication {rep[label].round(2).tolist()} "
            f"vs CH {rep['chbl'].round(2).tolist()}",
        )
    check(
        '"PORC achieves bounded imbalance while keeping the memory footprint as low as PKG"',
        bool(imb["porc"].max() <= 0.011 and np.all(rep["porc"] <= 1.25 * rep["pkg"])),
        f"PoRC replication {rep['porc'].round(2).tolist()} vs PKG {rep['pkg'].round(2).tolist()}",
    )
    return res


def over_time(stream, capacities, schemes, slot: int, changes=()) -> dict:
    results = {}
    for label, name, params in schemes:
        results[label] = simulate(
            stream, name, capacities, params=params, capacity_changes=changes, report_every=slot
        )
    print(
        f"{'scheme':<16}{'imbalance':>10}{'queue':>10}{'max queue':>10}{'latency':>10}"
        f"{'util.':>8}{'moves':>7}{'repl.':>7}"
    )
    for label, r in results.items():
        half = len(r.series["messages"]) // 2
        print(
            f"{label:<16}{r.imbalance:>10.4f}{r.series['queue_spread'][-1]:>10.0f}"
            f"{r.series['queue_spread'].max():>10.0f}{r.series['latency_spread'][-1]:>10.0f}"
            f"{r.series['utilisation_spread'][half:].mean():>8.3f}{r.moves:>7}"
            f"{r.replication:>7.2f}"
        )
    return results


def tail_queue(r, share: float = 0.25) -> float:
    """Mean queue spread (max − min) over the last ``share`` of the stream: the steady state."""
    q = r.series["queue_spread"]
    return float(q[int(len(q) * (1 - share)) :].mean())


def plot_series(panels: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("queue_spread", "latency_spread", "utilisation_spread")
    fig, axes = plt.subplots(len(panels), 3, figsize=(15, 3.2 * len(panels)), squeeze=False)
    for row, (title, results) in enumerate(panels.items()):
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            for label, r in results.items():
                ax.plot(r.series["messages"], r.series[metric], label=label)
            ax.set(title=f"{title}: {metric.replace('_', ' ')} (max − min)", xlabel="messages")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_figs_7_8(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for name, v in res.items():
        axes[0].plot(WORKERS, np.maximum(v["imbalance"], 1e-6), marker="o", label=name)
        axes[1].plot(WORKERS, v["replication"], marker="o", label=name)
    axes[0].set(xlabel="workers", ylabel="imbalance (max u − 1)", yscale="log", xscale="log")
    axes[1].set(xlabel="workers", ylabel="memory / distinct keys", xscale="log")
    axes[0].legend(fontsize=7)
    fig.suptitle("paper 000 Figs. 7–8 (WP-like stream)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fig_12_verdict(fig12: dict, alphas: tuple[int, ...], prefix: str) -> None:
    tail = {a: tail_queue(fig12[f"{prefix} α={a}"]) for a in alphas}
    best = min(tail, key=tail.get)
    check(
        f'[{prefix}] "setting the number of virtual workers to a value of 5 does not provide '
        'desired results … the execution using 100 virtual workers generate the best results"',
        bool(tail[5] >= max(tail.values()) - 1e-9 and tail[100] <= min(tail.values()) + 1.0),
        "steady-state queue spread (last quarter) "
        + ", ".join(f"α={a}: {v:.1f}" for a, v in tail.items())
        + f"; best α={best}",
    )


def fig_13_verdict(fig13: dict, label: str, changes) -> None:
    u = fig13[label].series["utilisation_spread"]
    t = fig13[label].series["messages"]
    after = [int(np.searchsorted(t, c, side="right")) for c, _ in changes]
    window = max(1, len(u) // 50)
    recovered = [u[a + 5 * window : a + 10 * window].mean() for a in after]
    check(
        f'[{label}] "CG adapts very efficiently to the change in resources"',
        bool(all(r < u[a] / 2 for r, a in zip(recovered, after, strict=True))),
        "utilisation spread just after each change "
        + ", ".join(f"{u[a]:.2f}" for a in after)
        + "; 5–10 % of the stream later "
        + ", ".join(f"{r:.2f}" for r in recovered)
        + f"; at the end {u[-window:].mean():.2f} "
        f"(SG {fig13['sg'].series['utilisation_spread'][-1]:.2f})",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="200k messages")
    parser.add_argument("--slots", type=int, default=SLOTS, help="time slots (t_0) in the stream")
    parser.add_argument("--planned", action="store_true", help="only Figs. 7–8 planned tables")
    ns = parser.parse_args()
    messages = 200_000 if ns.quick else ns.messages
    slot = max(1, messages // ns.slots)
    OUT.mkdir(parents=True, exist_ok=True)
    stream = wp_like(messages, seed=11)
    print(
        f"WP-like stream: {stream.messages:,} messages, {stream.distinct:,} keys, "
        f"p1 = {stream.top_share():.2%}; time slot {slot:,} messages"
    )
    print("paper 000 gives figures, not numbers: each check quotes its finding, [✓] or [✗]")
    planned = planned_figs_7_8(stream)
    planned["top_key_spread"] = top_key_spread(messages)
    if ns.planned:
        (OUT / "paper000_planned.json").write_text(json.dumps(planned, indent=1, default=float))
        print(f"\nwritten {OUT}/paper000_planned.json")
        return
    res = figs_7_8(stream, slot)
    plot_figs_7_8(res, OUT / "paper000_figs7_8.png")

    ten = np.ones(10)
    hetero = parse_capacities("y=3,z=5", 10)
    print("\nFig. 9: 10 equal workers at 80 % utilisation (final spreads; util. = mean, 2nd half)")
    fig9 = over_time(stream, ten, [("kg", "kg", None), ("cg", "cg", CG)], slot)
    ok = fig9["kg"].series["queue_spread"][-1] > 10 * max(fig9["cg"].series["queue_spread"][-1], 1)
    check(
        '"the difference between the maximum and minimum queue length and execution latency '
        'increases over time using KG, whereas CG keeps both … very low"',
        bool(ok and np.all(np.diff(fig9["kg"].series["queue_spread"][10:]) >= 0)),
        f"queue spread KG {fig9['kg'].series['queue_spread'][-1]:.0f}, "
        f"CG {fig9['cg'].series['queue_spread'][-1]:.0f}",
    )

    print("\nFig. 10: y = 3 machines z = 5 times faster")
    fig10 = over_time(
        stream, hetero, [("kg", "kg", None), ("sg", "sg", None), ("cg", "cg", CG)], slot
    )
    q = {k: r.series["queue_spread"][-1] for k, r in fig10.items()}
    check(
        '"queue length and execution latency grow for KG and SG … CG provides the lower queue '
        'length and execution latency. Also, it keeps the imbalance close to zero"',
        bool(min(q["kg"], q["sg"]) > 10 * max(q["cg"], 1) and fig10["cg"].imbalance < 0.05),
        f"queue KG {q['kg']:.0f}, SG {q['sg']:.0f}, CG {q['cg']:.0f}; "
        f"CG imbalance {fig10['cg'].imbalance:.4f}",
    )

    print("\nFig. 12: CG virtual workers per worker, y = 3, z = 5")
    alphas = (5, 10, 20, 50, 100)
    fig12 = over_time(
        stream,
        hetero,
        [
            (f"{label} α={a}", "cg", {**params, "virtual_workers_per_worker": a})
            for label, params in (("cg", CG), ("cg-exact", CG_EXACT))
            for a in alphas
        ],
        slot,
    )
    for label in ("cg", "cg-exact"):
        fig_12_verdict(fig12, alphas, label)

    print("\nFig. 13: capacities change after 6/22 and 12/22 of the stream (same total), α = 100")
    total = hetero.sum()
    later = [parse_capacities(s, 10) for s in ("y=5,z=4", "y=2,z=10")]
    changes = [
        (messages * 6 // 22, later[0] * total / later[0].sum()),
        (messages * 12 // 22, later[1] * total / later[1].sum()),
    ]
    alpha100 = {"virtual_workers_per_worker": 100}
    fig13 = over_time(
        stream,
        hetero,
        [
            ("kg", "kg", None),
            ("sg", "sg", None),
            ("cg", "cg", {**CG, **alpha100}),
            ("cg-exact", "cg", {**CG_EXACT, **alpha100}),
        ],
        slot,
        changes,
    )
    for label in ("cg", "cg-exact"):
        fig_13_verdict(fig13, label, changes)
    plot_series(
        {"Fig. 9 homogeneous": fig9, "Fig. 10 y=3 z=5": fig10, "Fig. 12": fig12, "Fig. 13": fig13},
        OUT / "paper000_queues.png",
    )
    summary = {
        "messages": messages,
        "slot": slot,
        "figs_7_8": res,
        "figs_7_8_planned": planned,
        **{
            name: {k: r.summary() for k, r in results.items()}
            for name, results in (
                ("fig9", fig9),
                ("fig10", fig10),
                ("fig12", fig12),
                ("fig13", fig13),
            )
        },
    }
    (OUT / "paper000_cg.json").write_text(json.dumps(summary, indent=1, default=float))
    print(f"\nwritten {OUT}/paper000_figs7_8.png, paper000_queues.png, paper000_cg.json")


if __name__ == "__main__":
    main()
