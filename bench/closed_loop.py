"""The closed loop over many nights, every publishing policy side by side in one run.

    .venv/bin/python bench/closed_loop.py                  # 14 nights, 100k and 10M events a day
    .venv/bin/python bench/closed_loop.py --nights 5 --volumes 100000 --scenarios stationary

Each named scenario generates N days of one keyed stream (Zipf keys, 1,024 key groups, 16
workers, 24 hourly windows; per-window counts drawn at the day's volume, so how many events a key
group sees per window decides how noisy one window is). Each day's traffic is routed by the
version in force that day — the night before published it from the logs up to that night (the
first day is only planned from) — exactly as producers following LATEST route it: a key
group's load goes to the table's worker, a split key's load is divided by the table's weights.
Every night plans with
the library's own use case (``routeplan.streams.service.plan_stream``, the stream's policy:
``cg`` on the busiest window, as the nightly job does by default; ``--strategy milp`` plans with
the MILP, which also holds every window of the day the forecast gives — results then in
``closed_loop_milp.*``).

Policies, on the same days:

* ``every_night`` — re-plan every night and publish whenever the plan routes differently from
  the version in force (the nightly job's rule before a gate);
* ``gate`` — routeplan's gate (``routeplan.streams.gate``): plans on a forecast of every window
  of the last 7 days (``routeplan.streams.forecast``), scores the version in force and a plan
  fitted on the days before on each new day (out of sample), and publishes only what pays, with
  hysteresis;
* ``static`` — the first night's version, never re-planned;
* ``oracle`` — one static plan fitted in hindsight on every day's total load (what one map could
  have done, knowing the future; not a bound on the peak).

Scenarios: ``stationary`` (one popularity law), ``drift`` (each night two of the 200 most
popular keys swap their popularity with random keys), ``daily_cycle`` (half of the keys peak in
the morning, half in the evening), and from night ``k`` on: ``new_hot_key`` (a new key carries
5 % of the stream), ``drained_worker`` (w0 drains), ``capacity_change`` (w1 becomes twice as
fast).

Per scenario, volume and policy (the days after the first): mean and p95 of the realized **peak
excess** (``routeplan.planning.metrics.peak_excess``: the largest load any worker carried in any
window over its capacity, relative to the busiest window's fair share, minus 1) and of the **day
imbalance**, the largest share of a day's load left on a draining worker, the moves and the
share of the load they moved, and the versions published.
Results: ``bench/results/closed_loop.json`` and ``closed_loop.png`` (realized peak excess per
night per policy).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from routeplan.model.hashing import key_groups
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import imbalance, peak_excess
from routeplan.streams.forecast import (
    DEFAULT_DECAY,
    DEFAULT_HISTORY_DAYS,
    DEFAULT_QUANTILE,
    ForecastRules,
)
from routeplan.streams.history import History, on_workers, window_loads
from routeplan.streams.policy import StreamPolicy
from routeplan.streams.rebalance import plan_night
from routeplan.streams.service import plan_stream

OUT = Path("bench/results")
SCENARIOS = (
    "stationary",
    "drift",
    "daily_cycle",
    "new_hot_key",
    "drained_worker",
    "capacity_change",
)
POLICIES = ("every_night", "gate", "static", "oracle")
GROUPS, WORKERS, WINDOWS, KEYS = 1024, 16, 24, 20_000
TRACKED = 64  # the most popular keys, counted one by one (split-key candidates)
HOT_SHARE = 0.001  # the policies' hot_key_min_share
DRIFT_SWAPS = 2  # drift: popular keys (of the top 200) swapped with random ones each night
POLICY = StreamPolicy("s")  # the stream's policy: cg, as the nightly job by default


@dataclass(frozen=True)
class Day:
    """One day of the stream: per window the load of every key group and of the tracked keys."""

    group_load: np.ndarray  # windows × key groups
    key_load: dict[str, np.ndarray]  # tracked key → load per window
    workers: Workers


class World:
    """A scenario's stream, day by day (seeded: the same arguments give the same days)."""

    def __init__(self, scenario: str, volume: int, nights: int, seed: int = 7) -> None:
        self.scenario, self.volume, self.nights = scenario, volume, nights
        self.change = max(2, nights // 2)  # the night a change happens
        self.rng = np.random.default_rng(seed)
        self.keys = np.array([f"k{i}" for i in range(KEYS)] + ["hot-new"])
        self.groups = key_groups(self.keys, GROUPS)
        ranks = np.arange(1, KEYS + 1, dtype=float)
        self.popularity = np.append(1.0 / ranks, 0.0)
        self.rng.shuffle(self.popularity[:KEYS])
        self.phase = self.rng.integers(0, 2, KEYS + 1) * 12  # morning or evening keys

    def workers(self, day: int) -> Workers:
        items = [Worker(f"w{i}") for i in range(WORKERS)]
        if self.scenario == "drained_worker" and day >= self.change:
            items[0] = Worker("w0", state="draining")
        if self.scenario == "capacity_change" and day >= self.change:
            items[1] = Worker("w1", capacity=2.0)
        return Workers(tuple(items))

    def day(self, day: int) -> Day:
        p = self.popularity.copy()
        if self.scenario == "drift" and day > 0:
            for _ in range(day):  # the same chain whatever was asked before
                top = np.argsort(-p[:KEYS])[:200]
                swap = self.rng.choice(top, DRIFT_SWAPS, replace=False)
                other = self.rng.integers(0, KEYS, DRIFT_SWAPS)
                p[swap], p[other] = p[other], p[swap].copy()
        if self.scenario == "new_hot_key" and day >= self.change:
            p[-1] = 0.05 / 0.95 * p[:KEYS].sum()
        hours = np.arange(WINDOWS)
        volume_by_hour = 1.0 + 0.5 * np.sin(2 * np.pi * (hours - 8) / WINDOWS)
        volume_by_hour = self.volume * volume_by_hour / volume_by_hour.sum()
        tracked = np.argsort(-p)[:TRACKED]
        group_load = np.zeros((WINDOWS, GROUPS))
        key_load = {self.keys[k]: np.zeros(WINDOWS) for k in tracked}
        for h in hours:
            weight = p
            if self.scenario == "daily_cycle":
                weight = p * (1.0 + 0.9 * np.cos(2 * np.pi * (h - self.phase) / WINDOWS))
            counts = self.rng.multinomial(int(volume_by_hour[h]), weight / weight.sum())
            group_load[h] = np.bincount(self.groups, weights=counts, minlength=GROUPS)
            for k in tracked:
                key_load[self.keys[k]][h] = counts[k]
        return Day(group_load, key_load, self.workers(day))


def realized(table: RoutingTable, day: Day) -> tuple[float, float, float]:
    """Peak excess, day imbalance and the share of the load left on draining workers of
    ``day`` routed by ``table``, with the day's workers."""
    loads, every = on_workers(table, window_loads(table, day.group_load, day.key_load), day.workers)
    caps, active = every.capacities, every.is_active
    drained = float(loads[:, ~active].sum() / max(loads.sum(), 1e-12))
    return peak_excess(loads, caps, active), imbalance(loads.sum(axis=0), caps, active), drained


def snapshot(day: Day, window: int | None) -> LoadSnapshot:
    """The planning loads: the busiest window (by messages), or every window summed (None)."""
    groups = day.group_load.sum(axis=0) if window is None else day.group_load[window]
    keys = {k: float(v.sum() if window is None else v[window]) for k, v in day.key_load.items()}
    total = groups.sum()
    hot = {k: v for k, v in keys.items() if total > 0 and v / total >= HOT_SHARE}
    return LoadSnapshot("s", groups, hot)


def plan(
    day: Day, current: RoutingTable | None, whole: bool = False, policy: StreamPolicy = POLICY
) -> RoutingTable:
    """The nightly use case on ``day``: the policy's strategy on the busiest window (``whole``:
    the day)."""
    window = None if whole else int(day.group_load.sum(axis=1).argmax())
    decided = plan_stream(policy, snapshot(day, window), current, day.workers)
    return decided.selected.plan.table


def history_of(days: Sequence[Day]) -> History:
    """The days as the nightly job reads them (``routeplan.streams.history.History``): every
    window's key-group loads, and the loads of the keys hot in any window."""
    keys = sorted(
        k
        for k in {k for d in days for k in d.key_load}
        if any(
            (d.key_load[k] / np.maximum(d.group_load.sum(axis=1), 1e-12) >= HOT_SHARE).any()
            for d in days
            if k in d.key_load
        )
    )
    return History(
        tuple(str(i) for i in range(len(days))),
        np.stack([d.group_load for d in days]),
        {k: np.stack([d.key_load.get(k, np.zeros(WINDOWS)) for d in days]) for k in keys},
    )


def moved(old: RoutingTable, new: RoutingTable, day: Day) -> tuple[int, float]:
    """Key groups whose worker changed, and the share of ``day``'s load they carry."""
    changed = np.array(old.key_group_worker) != np.array(new.key_group_worker)
    load = day.group_load.sum(axis=0)
    return int(changed.sum()), float(load[changed].sum() / max(load.sum(), 1e-12))


def run(
    world: World,
    policies: Sequence[str],
    knobs: tuple[float, float] = (DEFAULT_QUANTILE, DEFAULT_DECAY),
    stream: StreamPolicy = POLICY,
) -> dict[str, dict]:
    """Every policy on the same days of ``world`` (the first day's logs routed by hash: the
    first night plans from them, and the days after are measured), planned by ``stream``'s
    strategy."""
    days = [world.day(d) for d in range(world.nights)]
    found = {}
    for policy in policies:
        started = time.perf_counter()
        nightly: list[dict] = []
        if policy == "oracle":
            total = Day(
                np.array([sum(d.group_load.sum(axis=0) for d in days)]),
                {
                    k: np.array([sum(d.key_load.get(k, np.zeros(1)).sum() for d in days)])
                    for k in days[-1].key_load
                },  # fmt: skip
                days[-1].workers,
            )
            oracle = plan(total, None, whole=True, policy=stream)
        in_force = None
        versions = moves = 0
        migrated = 0.0
        predicted = None  # the gate's prediction for the next day
        for d, day in enumerate(days):
            note = ""
            if d > 0:  # the day under the version the night before published
                peak, whole, drained = realized(in_force, day)
                nightly.append(
                    {"night": d, "peak_excess": peak, "day_imbalance": whole, "drained": drained}
                )
                if predicted is not None:  # what the night before predicted for this day
                    nightly[-1]["predicted"] = predicted.document()
                    nightly[-1]["band"] = predicted.verdict(peak)
            if policy == "oracle":
                candidate = oracle
            elif policy == "static" and in_force is not None:
                candidate = in_force
            elif policy == "gate":
                history = history_of(days[max(0, d + 1 - DEFAULT_HISTORY_DAYS) : d + 1])
                rules = ForecastRules(quantile=knobs[0], decay=knobs[1])
                night = plan_night(
                    replace(stream, forecast=rules), history, snapshot(day, None), in_force,
                    day.workers,
                )  # fmt: skip
                decision, predicted = night.decision, night.prediction
                candidate = night.plan.selected.plan.table if decision.publish else in_force
                note = decision.reason
            else:
                candidate = plan(day, in_force, policy=stream)
            if nightly and note:
                nightly[-1]["gate"] = note
            if in_force is None or not candidate.same_routing(in_force):
                if in_force is not None:
                    count, share = moved(in_force, candidate, day)
                    moves, migrated = moves + count, migrated + share
                versions += 1
                in_force = replace(candidate, version=versions)
        peaks = np.array([n["peak_excess"] for n in nightly])
        judged = [n for n in nightly if "band" in n]
        imbalances = np.array([n["day_imbalance"] for n in nightly])
        found[policy] = {
            "peak_excess_mean": float(peaks.mean()),
            "peak_excess_p95": float(np.percentile(peaks, 95)),
            "day_imbalance_mean": float(imbalances.mean()),
            "day_imbalance_p95": float(np.percentile(imbalances, 95)),
            "drained_load_share_max": max(n["drained"] for n in nightly),
            "versions": versions,
            "moves": moves,
            "migrated_load_share": migrated,
            "band_coverage": (
                sum(n["band"] == "inside" for n in judged) / len(judged) if judged else None
            ),
            "point_within": (  # max(0.03, 50 %) of the realized
                sum(
                    abs(n["predicted"]["point"] - n["peak_excess"])
                    <= max(0.03, 0.5 * n["peak_excess"])
                    for n in judged
                )
                / len(judged)
                if judged
                else None
            ),  # fmt: skip
            "nights": nightly,
            "seconds": time.perf_counter() - started,
        }
    return found


def table_lines(results: dict) -> list[str]:
    head = (
        f"{'scenario':<16} {'events/day':>10} {'policy':<12} {'peak mean':>9} {'peak p95':>9} "
        f"{'day mean':>9} {'drained':>7} {'versions':>8} {'moves':>6} {'migrated':>9} "
        f"{'in band':>7} {'point ok':>8}"
    )
    lines = [head]
    for name, by_volume in results.items():
        for volume, by_policy in by_volume.items():
            for policy, r in by_policy.items():
                lines.append(
                    f"{name:<16} {int(volume):>10} {policy:<12} {r['peak_excess_mean']:>9.4f} "
                    f"{r['peak_excess_p95']:>9.4f} {r['day_imbalance_mean']:>9.4f} "
                    f"{r['drained_load_share_max']:>7.3f} "
                    f"{r['versions']:>8} {r['moves']:>6} {r['migrated_load_share']:>9.3f} "
                    f"{_share(r['band_coverage']):>7} {_share(r['point_within']):>8}"
                )
    return lines


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [(s, v) for s, by_volume in results.items() for v in by_volume]
    cols = 2
    rows = (len(cells) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.6 * rows), squeeze=False)
    for ax, (scenario, volume) in zip(axes.flat, cells, strict=False):
        for policy, r in results[scenario][volume].items():
            nights = [n["night"] for n in r["nights"]]
            ax.plot(nights, [n["peak_excess"] for n in r["nights"]], marker=".", label=policy)
        ax.set_title(f"{scenario}, {int(volume):,} events/day", fontsize=9)
        ax.set_ylabel("peak excess", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(cells) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    axes.flat[min(len(cells), len(axes.flat)) - 1].set_xlabel("night")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--volumes", default="100000,10000000")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--out", default=str(OUT), help="where the JSON and the plot go")
    parser.add_argument("--quantile", type=float, default=DEFAULT_QUANTILE, help="the forecast's")
    parser.add_argument("--decay", type=float, default=DEFAULT_DECAY, help="the forecast's")
    parser.add_argument(
        "--strategy", default=POLICY.strategy, help="the stream's (results: closed_loop_<it>.*)"
    )
    parser.add_argument("--time-limit", type=float, default=2.0, help="a plan's, seconds")
    ns = parser.parse_args(argv)
    stream = StreamPolicy("s", strategy=ns.strategy, budget=Budget(time_limit_s=ns.time_limit))
    if ns.nights < 3:
        parser.error("--nights must be at least 3")
    scenarios = [s for s in ns.scenarios.split(",") if s]
    unknown = sorted(set(scenarios) - set(SCENARIOS)) + sorted(
        set(ns.policies.split(",")) - set(POLICIES)
    )
    if unknown:
        parser.error(f"unknown scenario or policy: {', '.join(unknown)}")
    results: dict = {}
    for scenario in scenarios:
        for volume in (int(v) for v in ns.volumes.split(",")):
            started = time.perf_counter()
            world = World(scenario, volume, ns.nights)
            results.setdefault(scenario, {})[str(volume)] = run(
                world, ns.policies.split(","), (ns.quantile, ns.decay), stream
            )
            print(
                f"{scenario} at {volume:,} events/day: {time.perf_counter() - started:.1f} s",
                flush=True,
            )
    for line in table_lines(results):
        print(line)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "closed_loop" + ("" if ns.strategy == POLICY.strategy else f"_{ns.strategy}")
    (out / f"{name}.json").write_text(
        json.dumps({"nights": ns.nights, "strategy": ns.strategy, "results": results}, indent=1)
        + "\n"
    )
    plot(results, out / f"{name}.png")
    return results


if __name__ == "__main__":
    main()
