"""The closed loop over many nights, every publishing policy side by side on the same days.

    .venv/bin/python bench/closed_loop.py                  # the default run (held-out seeds)
    .venv/bin/python bench/closed_loop.py --nights 5 --volumes 100000 --families stationary
    .venv/bin/python bench/closed_loop.py --seeds 1,2 --families stationary,drift,daily_cycle
    .venv/bin/python bench/closed_loop.py --docs     # and rewrite docs/performance.md's table

Each **family** generates N days of one keyed stream (keys hashed into 1,024 key groups, 24
hourly windows; per-window counts drawn multinomially at the day's volume, so how many events a
key group sees per window decides how noisy one window is), once per **seed**. Each day's
traffic is routed by the version in force that day — the night before published it from the
logs up to that night (the first day is only planned from) — exactly as producers following
LATEST route it: a key group's load goes to the table's worker, a split key's load is divided by
the table's weights. Every policy is scored by the same function (``realized``) on the same
days: the day's windows routed through the table in force, with the day's workers.

Families (20,000 Zipf keys on 16 workers unless said):

* ``stationary`` — one popularity law;
* ``drift`` — a chain: day d is day d−1 with ``DRIFT_SWAPS`` keys of the 200 most popular
  swapping their popularity with as many other keys, drawn from a generator seeded by
  (seed, d): consecutive days differ by exactly 2 · ``DRIFT_SWAPS`` keys;
* ``daily_cycle`` — half of the keys peak in the morning, half in the evening;
* from night ``k`` = N // 2 on: ``new_hot_key`` (a new key carries 5 % of the stream),
  ``drained_worker`` (w0 drains), ``capacity_change`` (w1 becomes twice as fast);
* ``own_hours`` — "a real week": ~100 keys (Zipf exponent 0.3) on 8 workers, every key its own
  daily bump (phase uniform over the day; width 1.5–6 h, the sd of a wrapped Gaussian; a flat
  share 0.05–0.5 of its day; a weekend factor 0.3–1.5 on days d % 7 in (5, 6)) — strong
  per-key timing, the case a plan of one busy hour loses;
* ``own_hours_zipf`` — the same shapes on 20,000 keys (Zipf 1.0) and 16 workers.

Policies, on the same days (the stream's strategy is ``lpt``; ``--strategy cg`` / ``milp``
writes ``closed_loop_<strategy>.*``; ``make bench`` runs the MILP on 100,000 events a day only,
~8 minutes — both volumes, by that, over 15):

* ``every_night`` — re-plan every night on the busiest window and publish whenever the plan
  routes differently (the nightly job's rule before a gate);
* ``gate`` — routeplan's night (``routeplan.streams.rebalance.plan_night``): plans on a forecast
  of every window of the last 7 days, scores the version in force and a plan fitted on the days
  before on the newest day (out of sample), publishes only what pays, with hysteresis, and
  predicts a band for the next day's peak excess;
* ``gate_first`` — the gate's first version, kept;
* ``static`` — the first night's busiest-window plan (``every_night``'s first), kept;
* ``greedy`` — the twenty-line floor, written here, independent of routeplan's strategies:
  each night, key groups heaviest first (keys whole), each onto the worker whose worst window
  of the summed window profile of the past days (up to 7, no hindsight) rises least;
* ``mean_lpt`` — each night plain LPT of each key group's mean day load over the past days (up
  to 7), heaviest first onto the least loaded worker by capacity;
* ``oracle`` — a perfect forecast, judged on the measure it is compared by: ``lpt`` on every
  window of every scored day stacked (one plan per run of days with the same workers),
  whatever ``--strategy``, fitted on the loads the days were drawn from (the generator's law:
  what a forecast could at best know) and scored on the realized days like every policy —
  the yardstick of the gate's ``ratio_to_oracle``;
* ``hindsight`` — the same plan fitted on the realized windows themselves, noise included:
  with 1,024 key groups and a few events per group and window it places the noise too, a
  floor no forecast reaches (``ratio_to_hindsight``); with ~100 keys at real volumes the two
  coincide.

Measures, per family, volume, seed and policy (the days after the first): mean and p95 of the
realized **peak excess** (``routeplan.planning.metrics.peak_excess``: the largest load any
worker carried in any window over its capacity, relative to the busiest window's fair share,
minus 1) and of the **day imbalance**, the largest share of a day's load left on a draining
worker, versions published, key groups moved (and the share of the load they carried), and for
the gate **band coverage** (share of nights whose realized peak excess fell inside the band the
night before predicted) and **point within** (|predicted point − realized| ≤ max(0.03, 50 % of
the realized)). Per family × volume × policy the summary gives the median over seeds and the
spread (min–max), and for the gate ``ratio_to_oracle`` and ``ratio_to_hindsight`` (its mean
peak excess over theirs) and ``moves_share_of_every_night``. Band coverage and point within
count the out-of-sample predictions only (a first version's numbers are fitted on its own day:
``in_sample_predictions``).

Tuning and held out: the gate's and the forecast's knobs (threshold, gains, persistence, the
day-to-day noise's level, the newest day's jump, ``lpt``'s ``keep_within``) were tuned on
seeds 1–2 of the families in ``TUNING``; seeds 3–5 of every family are held out
(``HELD_OUT``), and ``drained_worker`` and ``own_hours_zipf`` were never tuned on. The default
run is 14 nights at 100,000 and 10,000,000 events a day on the held-out seeds 3–5
(``DEFAULT_SEEDS``; ~16 minutes measured on 2 shared cores, the gate's nightly planning most
of it; ``--seeds`` to change). The JSON records the split; the printed and the Markdown tables
mark held-out rows.

Results: ``bench/results/closed_loop.json`` and ``closed_loop.png`` (realized peak excess per
night per policy, the first seed); ``--docs`` rewrites the table between the
``closed-loop`` markers of ``docs/performance.md`` (``markdown_table``).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import date, timedelta
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
DOCS = Path("docs/performance.md")
FAMILIES = (
    "stationary",
    "drift",
    "daily_cycle",
    "new_hot_key",
    "drained_worker",
    "capacity_change",
    "own_hours",
    "own_hours_zipf",
)
SCENARIOS = FAMILIES  # the name the tests and older scripts use
# keys, workers and Zipf exponent of a family (the others: KEYS, WORKERS, 1.0)
SHAPES = {"own_hours": (100, 8, 0.3), "own_hours_zipf": (20_000, 16, 1.0)}
POLICIES = (
    "every_night",
    "gate",
    "gate_first",
    "static",
    "greedy",
    "mean_lpt",
    "oracle",
    "hindsight",
)
TUNING = {
    "seeds": (1, 2),
    "families": (
        "stationary",
        "drift",
        "daily_cycle",
        "new_hot_key",
        "capacity_change",
        "own_hours",
    ),
}
HELD_OUT = {"seeds": (3, 4, 5), "families": FAMILIES}
DEFAULT_SEEDS = (3, 4, 5)  # the held-out seeds
GROUPS, WORKERS, WINDOWS, KEYS = 1024, 16, 24, 20_000
TRACKED = 64  # the most popular keys, counted one by one (split-key candidates)
HOT_SHARE = 0.001  # the policies' hot_key_min_share
DRIFT_SWAPS = 2  # drift: popular keys (of the top 200) swapped with other keys each night
POLICY = StreamPolicy("s", strategy="lpt")  # the stream's policy
ORACLE = StreamPolicy("s", strategy="lpt")  # the hindsight plan's: the best planner
PAST_DAYS = 7  # what greedy and mean_lpt read (no hindsight)


@dataclass(frozen=True)
class Day:
    """One day of the stream: per window the load of every key group and of the tracked keys."""

    group_load: np.ndarray  # windows × key groups
    key_load: dict[str, np.ndarray]  # tracked key → load per window
    workers: Workers
    expected_group_load: np.ndarray | None = None  # the law the counts were drawn from
    expected_key_load: dict[str, np.ndarray] | None = None
    counts: np.ndarray | None = None  # windows × every key: what a router splits, tracked or not
    key_index: Mapping[str, int] | None = None  # a key's column in ``counts``

    def routed_key_load(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Each of ``keys``' own load per window: what a table's split keys carry on the day,
        whether or not the day's top keys included them (a router splits a key the table
        names whatever the windows job tracked)."""
        if self.counts is None or self.key_index is None:
            return {k: v for k, v in self.key_load.items() if k in set(keys)}
        return {
            k: self.counts[:, self.key_index[k]].astype(float) for k in keys if k in self.key_index
        }


class World:
    """A family's stream, day by day. Seeded: the same arguments give the same days, whatever
    was asked before (day d draws from a generator seeded by (seed, d)). ``keys`` and
    ``workers`` default to the family's (``SHAPES``)."""

    def __init__(
        self,
        scenario: str,
        volume: int,
        nights: int,
        seed: int = 7,
        keys: int | None = None,
        workers: int | None = None,
    ) -> None:
        if scenario not in FAMILIES:
            raise ValueError(f"unknown family {scenario!r}")
        self.scenario, self.volume, self.nights, self.seed = scenario, volume, nights, seed
        default_keys, default_workers, zipf = SHAPES.get(scenario, (KEYS, WORKERS, 1.0))
        self.num_keys = keys or default_keys
        self.num_workers = workers or default_workers
        self.change = max(2, nights // 2)  # the night a change happens
        rng = np.random.default_rng(seed)
        n = self.num_keys
        self.keys = np.array([f"k{i}" for i in range(n)] + ["hot-new"])
        self.groups = key_groups(self.keys, GROUPS)
        self.index = {str(k): i for i, k in enumerate(self.keys)}
        self.popularity = np.append(1.0 / np.arange(1, n + 1, dtype=float) ** zipf, 0.0)
        rng.shuffle(self.popularity[:n])
        self.phase = rng.integers(0, 2, n + 1) * 12  # daily_cycle: morning or evening keys
        if scenario.startswith("own_hours"):  # each key its own daily bump
            self.bump_phase = rng.uniform(0, WINDOWS, n)
            self.width = rng.uniform(1.5, 6.0, n)  # hours: the sd of a wrapped Gaussian
            self.flat = rng.uniform(0.05, 0.5, n)  # the share of a key's day that is flat
            self.weekend = rng.uniform(0.3, 1.5, n)  # on days d % 7 in (5, 6)
        self._chain = [self.popularity]  # drift: day d's popularity

    def workers(self, day: int) -> Workers:
        items = [Worker(f"w{i}") for i in range(self.num_workers)]
        if self.scenario == "drained_worker" and day >= self.change:
            items[0] = Worker("w0", state="draining")
        if self.scenario == "capacity_change" and day >= self.change:
            items[1] = Worker("w1", capacity=2.0)
        return Workers(tuple(items))

    def popularity_of(self, day: int) -> np.ndarray:
        """Every key's popularity on ``day`` (the last: the new hot key's)."""
        p = self.popularity
        if self.scenario == "drift":
            while len(self._chain) <= day:  # day d = day d − 1 + DRIFT_SWAPS swaps
                d = len(self._chain)
                p = self._chain[-1].copy()
                rng = np.random.default_rng((self.seed, d))
                top = np.argsort(-p[: self.num_keys], kind="stable")[:200]
                swap = rng.choice(top, DRIFT_SWAPS, replace=False)
                rest = np.setdiff1d(np.arange(self.num_keys), swap)
                other = rng.choice(rest, DRIFT_SWAPS, replace=False)
                p[swap], p[other] = p[other], p[swap].copy()
                self._chain.append(p)
            p = self._chain[day]
        if self.scenario == "new_hot_key" and day >= self.change:
            p = p.copy()
            p[-1] = 0.05 / 0.95 * p[:-1].sum()
        return p

    def shapes(self, day: int) -> np.ndarray:
        """own_hours: every key's expected share of the day per window (windows × keys)."""
        hours = np.arange(WINDOWS)[:, None] + 0.5
        off = (hours - self.bump_phase[None, :] + WINDOWS / 2) % WINDOWS - WINDOWS / 2
        bump = np.exp(-0.5 * (off / self.width[None, :]) ** 2)
        bump /= bump.sum(axis=0)
        shape = self.flat / WINDOWS + (1.0 - self.flat) * bump
        weekend = day % 7 in (5, 6)
        return shape * self.popularity[: self.num_keys] * (self.weekend if weekend else 1.0)

    def day(self, day: int) -> Day:
        rng = np.random.default_rng((self.seed, day, 1))
        if self.scenario.startswith("own_hours"):
            x = self.shapes(day)
            counts = rng.multinomial(self.volume, (x / x.sum()).ravel()).reshape(x.shape)
            counts = np.concatenate([counts, np.zeros((WINDOWS, 1), dtype=counts.dtype)], 1)
            law = np.concatenate([self.volume * x / x.sum(), np.zeros((WINDOWS, 1))], 1)
        else:
            p = self.popularity_of(day)
            hours = np.arange(WINDOWS)
            by_hour = 1.0 + 0.5 * np.sin(2 * np.pi * (hours - 8) / WINDOWS)
            by_hour = self.volume * by_hour / by_hour.sum()
            counts = np.zeros((WINDOWS, p.size), dtype=np.int64)
            law = np.zeros((WINDOWS, p.size))
            for h in hours:
                weight = p
                if self.scenario == "daily_cycle":
                    weight = p * (1.0 + 0.9 * np.cos(2 * np.pi * (h - self.phase) / WINDOWS))
                counts[h] = rng.multinomial(int(by_hour[h]), weight / weight.sum())
                law[h] = int(by_hour[h]) * weight / weight.sum()
        group_load, expected = np.zeros((WINDOWS, GROUPS)), np.zeros((WINDOWS, GROUPS))
        for h in range(WINDOWS):
            group_load[h] = np.bincount(self.groups, weights=counts[h], minlength=GROUPS)
            expected[h] = np.bincount(self.groups, weights=law[h], minlength=GROUPS)
        tracked = np.argsort(-counts.sum(axis=0), kind="stable")[:TRACKED]
        key_load = {str(self.keys[k]): counts[:, k].astype(float) for k in tracked}
        expected_keys = {str(self.keys[k]): law[:, k] for k in tracked}
        return Day(
            group_load, key_load, self.workers(day), expected, expected_keys, counts, self.index
        )

    def days(self) -> list[Day]:
        return [self.day(d) for d in range(self.nights)]


def realized(table: RoutingTable, day: Day) -> tuple[float, float, float]:
    """Peak excess, day imbalance and the share of the load left on draining workers of
    ``day`` routed by ``table``, with the day's workers: the one score every policy gets."""
    split = day.routed_key_load(table.hot_keys)
    loads, every = on_workers(table, window_loads(table, day.group_load, split), day.workers)
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


def hot_windows(days: Sequence[Day]) -> dict[str, np.ndarray]:
    """The keys hot (≥ ``HOT_SHARE`` of a window's load) in some window of ``days``, each with
    its load in every window of every day (days × windows; 0 where it was not tracked)."""
    found = {}
    for k in sorted({k for d in days for k in d.key_load}):
        own = np.stack([d.key_load.get(k, np.zeros(d.group_load.shape[0])) for d in days])
        totals = np.stack([d.group_load.sum(axis=1) for d in days])
        if (own / np.maximum(totals, 1e-12) >= HOT_SHARE).any():
            found[k] = own
    return found


FIRST_DAY = date(2026, 1, 5)  # day 0's date (a Monday): days and versions carry dates


def day_name(day: int) -> str:
    """Day ``day``'s date, ISO: what the nightly job names a day by."""
    return (FIRST_DAY + timedelta(days=day)).isoformat()


def history_of(days: Sequence[Day], first: int = 0) -> History:
    """The days as the nightly job reads them (``routeplan.streams.history.History``), named
    by their dates (``first``: the first one's index): every window's key-group loads, and the
    loads of the keys hot in any window."""
    return History(
        tuple(day_name(first + i) for i in range(len(days))),
        np.stack([d.group_load for d in days]),
        hot_windows(days),
    )


def hindsight(
    days: Sequence[Day], stream: StreamPolicy = ORACLE, expected: bool = True
) -> RoutingTable:
    """``stream``'s plan of every window of ``days`` stacked (the days' workers, the same on
    every day), each hot key with its own windows: on the loads the days were drawn from
    (``expected``: a perfect forecast of them, the oracle) or on the realized loads (their
    noise included: ``hindsight``, a floor no forecast reaches)."""
    if expected:
        days = [
            replace(d, group_load=d.expected_group_load, key_load=d.expected_key_load) for d in days
        ]
    windows = np.concatenate([d.group_load for d in days])
    hot = {k: v.ravel() for k, v in hot_windows(days).items()}
    loads = LoadSnapshot(
        "s",
        windows.mean(axis=0),
        {k: float(v.mean()) for k, v in hot.items()},
        key_group_windows=windows,
        hot_key_windows=hot,
    )
    return plan_stream(stream, loads, None, days[0].workers).selected.plan.table


def oracle_plans(
    days: Sequence[Day], stream: StreamPolicy = ORACLE, expected: bool = True
) -> list[RoutingTable]:
    """The oracle's table for each scored day (``days[1:]``): one ``hindsight`` plan per run
    of days with the same workers."""
    tables: list[RoutingTable] = []
    start = 1
    for end in range(2, len(days) + 1):
        if end == len(days) or days[end].workers != days[start].workers:
            table = hindsight(days[start:end], stream, expected)
            tables += [table] * (end - start)
            start = end
    return tables


def _stay(owner: np.ndarray, load: np.ndarray, current: RoutingTable | None, workers: Workers):
    """A key group without load keeps the worker ``current`` gives it (if active)."""
    if current is None or current.num_key_groups != owner.size:
        return owner
    index, active = workers.index(), workers.is_active
    for g in np.flatnonzero(load <= 0):
        w = index.get(current.key_group_worker[g])
        if w is not None and active[w]:
            owner[g] = w
    return owner


def greedy(past: Sequence[Day], workers: Workers, current: RoutingTable | None = None):
    """The floor: key groups heaviest first (keys whole), each onto the active worker whose
    worst window of the summed window profile of ``past`` rises least (by capacity; ties: the
    lower day load, then the lower index)."""
    profile = sum(d.group_load for d in past)  # windows × key groups
    cap, active = workers.capacities, workers.is_active
    loads = np.zeros((profile.shape[0], cap.size))
    owner = np.zeros(profile.shape[1], dtype=np.int64)
    for g in np.argsort(-profile.sum(axis=0), kind="stable"):
        peak = np.where(active, ((loads + profile[:, [g]]) / cap).max(axis=0), np.inf)
        day = (loads.sum(axis=0) + profile[:, g].sum()) / cap
        best = np.flatnonzero(peak <= peak.min() * (1 + 1e-12))
        owner[g] = best[np.argmin(day[best])]
        loads[:, owner[g]] += profile[:, g]
    owner = _stay(owner, profile.sum(axis=0), current, workers)
    return RoutingTable("s", "greedy", workers, tuple(workers.names[w] for w in owner))


def mean_lpt(past: Sequence[Day], workers: Workers, current: RoutingTable | None = None):
    """Plain LPT of each key group's mean day load over ``past``: heaviest first onto the
    active worker least loaded by capacity (ties: the lower index)."""
    mean = np.mean([d.group_load.sum(axis=0) for d in past], axis=0)
    cap, active = workers.capacities, workers.is_active
    loads = np.zeros(cap.size)
    owner = np.zeros(mean.size, dtype=np.int64)
    for g in np.argsort(-mean, kind="stable"):
        owner[g] = int(np.argmin(np.where(active, (loads + mean[g]) / cap, np.inf)))
        loads[owner[g]] += mean[g]
    owner = _stay(owner, mean, current, workers)
    return RoutingTable("s", "mean_lpt", workers, tuple(workers.names[w] for w in owner))


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
    given: Mapping[str, RoutingTable] | None = None,
) -> dict[str, dict]:
    """Every policy on the same days of ``world`` (the first day's logs routed by hash: the
    first night plans from them, and the days after are scored by ``realized``), planned by
    ``stream``'s strategy. ``given``: more policies, each a table kept from the first night
    (e.g. the oracle's, to check that it scores the same as a candidate)."""
    days = world.days()
    given = dict(given or {})
    found = {}
    for policy in (*policies, *given):
        started = time.perf_counter()
        nightly: list[dict] = []
        oracle = (
            oracle_plans(days, expected=policy == "oracle")
            if policy in ("oracle", "hindsight")
            else None
        )
        in_force = None
        versions = moves = 0
        migrated = 0.0
        predicted = None  # the gate's prediction for the next day
        for d, day in enumerate(days):
            if d > 0:  # the day under the version the night before published
                peak, whole, drained = realized(in_force, day)
                nightly.append(
                    {"night": d, "peak_excess": peak, "day_imbalance": whole, "drained": drained}
                )
                if predicted is not None:  # what the night before predicted for this day
                    nightly[-1]["predicted"] = predicted.document()
                    nightly[-1]["band"] = predicted.verdict(peak)
            if d == len(days) - 1:
                break  # no day left to route
            past = days[max(0, d + 1 - PAST_DAYS) : d + 1]
            note = ""
            if policy in given:
                candidate = given[policy]
            elif oracle is not None:
                candidate = oracle[d]  # the plan of the day it will route (hindsight)
            elif policy in ("static", "gate_first") and in_force is not None:
                candidate = in_force
            elif policy in ("gate", "gate_first"):
                first = max(0, d + 1 - DEFAULT_HISTORY_DAYS)
                history = history_of(days[first : d + 1], first)
                rules = ForecastRules(quantile=knobs[0], decay=knobs[1])
                night = plan_night(
                    replace(stream, forecast=rules), history, snapshot(day, None), in_force,
                    day.workers,
                )  # fmt: skip
                decision = night.decision
                predicted = night.prediction if policy == "gate" else None
                candidate = night.plan.selected.plan.table if decision.publish else in_force
                note = decision.reason
            elif policy == "greedy":
                candidate = greedy(past, day.workers, in_force)
            elif policy == "mean_lpt":
                candidate = mean_lpt(past, day.workers, in_force)
            else:  # every_night, and static's first night
                candidate = plan(day, in_force, policy=stream)
            if nightly and note:
                nightly[-1]["gate"] = note
            if in_force is None or not candidate.same_routing(in_force):
                if in_force is not None:
                    count, share = moved(in_force, candidate, day)
                    moves, migrated = moves + count, migrated + share
                versions += 1
                # published the night after day d: on day d + 1's date
                in_force = replace(candidate, version=versions, created_at=day_name(d + 1))
        found[policy] = measures(nightly) | {
            "versions": versions,
            "moves": moves,
            "migrated_load_share": migrated,
            "nights": nightly,
            "seconds": time.perf_counter() - started,
        }
    return found


def measures(nightly: list[dict]) -> dict:
    """The realized measures of a policy's nights."""
    peaks = np.array([n["peak_excess"] for n in nightly])
    imbalances = np.array([n["day_imbalance"] for n in nightly])
    judged = [n for n in nightly if "band" in n and n["predicted"]["out_of_sample"]]
    within = [
        abs(n["predicted"]["point"] - n["peak_excess"]) <= max(0.03, 0.5 * n["peak_excess"])
        for n in judged
    ]
    return {
        "peak_excess_mean": float(peaks.mean()),
        "peak_excess_p95": float(np.percentile(peaks, 95)),
        "day_imbalance_mean": float(imbalances.mean()),
        "day_imbalance_p95": float(np.percentile(imbalances, 95)),
        "drained_load_share_max": max(n["drained"] for n in nightly),
        "band_coverage": (
            sum(n["band"] == "inside" for n in judged) / len(judged) if judged else None
        ),
        "point_within": sum(within) / len(judged) if judged else None,
        "in_sample_predictions": sum("band" in n for n in nightly) - len(judged),
    }


SUMMARIZED = (
    "peak_excess_mean",
    "day_imbalance_mean",
    "versions",
    "moves",
    "band_coverage",
    "point_within",
    "drained_load_share_max",
)
DRAINED = 0.01  # a day with more of its load on a draining worker counts in drained_nights


def spread(values: Sequence[float | None]) -> dict[str, float] | None:
    """Median and min–max over seeds (None when no seed has a value)."""
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    return {"median": float(np.median(known)), "min": min(known), "max": max(known)}


def summarize(runs: Mapping[str, Mapping[str, Mapping[str, dict]]]) -> dict:
    """Per family × volume × policy, the median and spread over seeds of ``SUMMARIZED``; for
    the gate also ``ratio_to_oracle`` and ``moves_share_of_every_night``; ``drained_nights``:
    the nights that left more than ``DRAINED`` of the day's load on draining workers;
    ``held_out``: every seed held out, ``family_tuned``: the family was tuned on."""
    summary: dict = {}
    for family, by_volume in runs.items():
        for volume, by_seed in by_volume.items():
            seeds = sorted(by_seed, key=int)
            rows: dict = {}
            for policy in next(iter(by_seed.values())):
                found = [by_seed[s][policy] for s in seeds]
                row = {m: spread([r[m] for r in found]) for m in SUMMARIZED}
                row["drained_nights"] = spread(
                    [sum(n["drained"] > DRAINED for n in r["nights"]) for r in found]
                )
                for floor in ("oracle", "hindsight"):
                    if policy == "gate" and floor in by_seed[seeds[0]]:
                        row[f"ratio_to_{floor}"] = spread(
                            [
                                by_seed[s]["gate"]["peak_excess_mean"]
                                / max(by_seed[s][floor]["peak_excess_mean"], 1e-12)
                                for s in seeds
                            ]
                        )
                if policy == "gate" and "every_night" in by_seed[seeds[0]]:
                    row["moves_share_of_every_night"] = spread(
                        [
                            by_seed[s]["gate"]["moves"] / by_seed[s]["every_night"]["moves"]
                            if by_seed[s]["every_night"]["moves"]
                            else None
                            for s in seeds
                        ]
                    )
                rows[policy] = row
            summary.setdefault(family, {})[volume] = {
                "seeds": [int(s) for s in seeds],
                "held_out": all(int(s) in HELD_OUT["seeds"] for s in seeds),
                "family_tuned": family in TUNING["families"],
                "policies": rows,
            }
    return summary


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _cell(s: dict | None, fmt, ranged: bool = True) -> str:
    if s is None:
        return "-"
    if not ranged or s["min"] == s["max"]:
        return fmt(s["median"])
    return f"{fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])})"


def _int(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def table_lines(doc: dict) -> list[str]:
    """The console table: one line per family × volume × policy, held-out rows marked ``H``
    (``H*``: a family never tuned on either)."""
    head = (
        f"{'':2} {'family':<16} {'events/day':>10} {'policy':<11} {'peak excess':>22} "
        f"{'day imbalance':>22} {'versions':>10} {'moves':>14} {'in band':>7} {'point':>6} "
        f"{'÷ oracle':>9} {'moves ÷ e_n':>11}"
    )
    lines = [head]
    for family, by_volume in doc["summary"].items():
        for volume, cell in by_volume.items():
            mark = ("H" + ("" if cell["family_tuned"] else "*")) if cell["held_out"] else ""
            for policy, r in cell["policies"].items():
                ratio, share = r.get("ratio_to_oracle"), r.get("moves_share_of_every_night")
                lines.append(
                    f"{mark:2} {family:<16} {int(volume):>10} {policy:<11} "
                    f"{_cell(r['peak_excess_mean'], _num):>22} "
                    f"{_cell(r['day_imbalance_mean'], _num):>22} "
                    f"{_cell(r['versions'], _int):>10} {_cell(r['moves'], _int):>14} "
                    f"{_share(r['band_coverage'] and r['band_coverage']['median']):>7} "
                    f"{_share(r['point_within'] and r['point_within']['median']):>6} "
                    f"{_num(ratio and ratio['median'], 2):>9} "
                    f"{_share(share and share['median']):>11}"
                )
    return lines


def markdown_table(doc: dict) -> str:
    """The results as the Markdown table of docs/performance.md: per family × volume, each
    policy's mean peak excess (median over seeds; the gate's and the oracle's with their
    min–max), the gate's versions and moves (medians), its moves as a share of
    ``every_night``'s, its mean peak excess over the oracle's, and its band coverage and point
    within (medians). † marks a policy that left load (more than ``DRAINED`` of a day's) on a
    draining worker after the first day it drained (``drained_nights`` > 1): its peak excess
    counts that load against the active workers' capacity only."""
    found = [p for p in POLICIES if any(p in c["policies"] for v in doc["summary"].values()
                                        for c in v.values())]  # fmt: skip
    head = ["family", "events/day", "seeds", *found]
    head += ["gate ÷ oracle", "gate ÷ hindsight", "gate versions", "gate moves"]
    head += ["moves ÷ every_night"]
    head += ["in band", "point within"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for family, by_volume in doc["summary"].items():
        for volume, cell in by_volume.items():
            seeds = cell["seeds"]
            mark = ", ".join(str(s) for s in seeds) + (" (held out)" if cell["held_out"] else "")
            rows = cell["policies"]
            row = [family.replace("_", "\\_"), f"{int(volume):,}", mark]
            for policy in found:
                r = rows.get(policy)
                ranged = policy in ("gate", "oracle", "hindsight")
                value = "-" if r is None else _cell(r["peak_excess_mean"], _num, ranged)
                if r is not None and r["drained_nights"]["median"] > 1:
                    value += " †"
                row.append(f"**{value}**" if policy == "gate" else value)
            gate = rows.get("gate", {})
            ratio, share = gate.get("ratio_to_oracle"), gate.get("moves_share_of_every_night")
            row += [
                _cell(ratio, lambda v: _num(v, 2)),
                _cell(gate.get("ratio_to_hindsight"), lambda v: _num(v, 2)),
                _cell(gate.get("versions"), _int, False),
                _cell(gate.get("moves"), _int, False),
                _share(share and share["median"]),
                _share(gate.get("band_coverage") and gate["band_coverage"]["median"]),
                _share(gate.get("point_within") and gate["point_within"]["median"]),
            ]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def label(doc: dict) -> str:
    """A results document's label: the one it was run with (``--label``), else its strategy
    unless that is the default (then none)."""
    if doc.get("label") is not None:
        return doc["label"]
    return "" if doc["strategy"] == POLICY.strategy else doc["strategy"]


def marker(doc: dict) -> str:
    """The name of the docs block a results document's table goes in."""
    return "closed-loop" + (f"-{label(doc)}" if label(doc) else "")


def docs_block(text: str, name: str) -> str:
    """The text between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    found = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    if found is None:
        raise ValueError(f"no {name} block")
    return found.group(1)


def write_docs(doc: dict, path: Path = DOCS) -> None:
    """``markdown_table(doc)`` into ``path``'s block for the run's strategy."""
    name, text = marker(doc), path.read_text()
    old = docs_block(text, name)
    start = text.index(f"<!-- {name}:begin -->\n") + len(f"<!-- {name}:begin -->\n")
    path.write_text(text[:start] + markdown_table(doc) + text[start + len(old) :])


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = doc["runs"]
    cells = [(f, v) for f, by_volume in runs.items() for v in by_volume]
    cols = 2
    rows = (len(cells) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.6 * rows), squeeze=False)
    for ax, (family, volume) in zip(axes.flat, cells, strict=False):
        seed = min(runs[family][volume], key=int)
        for policy, r in runs[family][volume][seed].items():
            nights = [n["night"] for n in r["nights"]]
            ax.plot(nights, [n["peak_excess"] for n in r["nights"]], marker=".", label=policy)
        ax.set_title(f"{family}, {int(volume):,} events/day, seed {seed}", fontsize=9)
        ax.set_ylabel("peak excess", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(cells) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    axes.flat[min(len(cells), len(axes.flat)) - 1].set_xlabel("night")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def one_cell(
    cell: tuple[str, int, int],
    nights: int,
    policies: Sequence[str],
    knobs: tuple[float, float],
    stream: StreamPolicy,
) -> tuple[dict, float]:
    """``run`` on one family, volume and seed, and the seconds it took."""
    started = time.perf_counter()
    found = run(World(cell[0], cell[1], nights, cell[2]), policies, knobs, stream)
    return found, time.perf_counter() - started


def render(path: Path, docs: bool) -> dict:
    """``path``'s summary made again from its runs (written back), its table printed, and with
    ``docs`` written into docs/performance.md."""
    doc = json.loads(path.read_text())
    doc["summary"] = summarize(doc["runs"])
    path.write_text(json.dumps(doc, indent=1) + "\n")
    for line in table_lines(doc):
        print(line)
    if docs:
        write_docs(doc)
    return doc


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=14)
    parser.add_argument("--volumes", default="100000,10000000")
    parser.add_argument("--families", "--scenarios", default=",".join(FAMILIES))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)))
    parser.add_argument("--out", default=str(OUT), help="where the JSON and the plot go")
    parser.add_argument("--quantile", type=float, default=DEFAULT_QUANTILE, help="the forecast's")
    parser.add_argument("--decay", type=float, default=DEFAULT_DECAY, help="the forecast's")
    parser.add_argument(
        "--strategy", default=POLICY.strategy, help="the stream's (results: closed_loop_<it>.*)"
    )
    parser.add_argument("--time-limit", type=float, default=2.0, help="a plan's, seconds")
    parser.add_argument("--jobs", type=int, default=2, help="processes (cells in parallel)")
    parser.add_argument(
        "--label",
        help="names the results (closed_loop_<label>.*) and their docs block, e.g. `before` "
        "for a run of an earlier release's routeplan (on PYTHONPATH); default: the strategy "
        "unless it is the default",
    )
    parser.add_argument(
        "--render", metavar="JSON", help="no run: summarize a results file's runs again"
    )
    parser.add_argument("--docs", action="store_true", help=f"rewrite {DOCS}'s table")
    ns = parser.parse_args(argv)
    if ns.render:
        return render(Path(ns.render), ns.docs)
    stream = StreamPolicy("s", strategy=ns.strategy, budget=Budget(time_limit_s=ns.time_limit))
    if ns.nights < 3:
        parser.error("--nights must be at least 3")
    families = [s for s in ns.families.split(",") if s]
    policies = [p for p in ns.policies.split(",") if p]
    unknown = sorted(set(families) - set(FAMILIES)) + sorted(set(policies) - set(POLICIES))
    if unknown:
        parser.error(f"unknown family or policy: {', '.join(unknown)}")
    seeds = [int(s) for s in ns.seeds.split(",") if s]
    cells = [
        (family, int(volume), seed)
        for family in families
        for volume in ns.volumes.split(",")
        for seed in seeds
    ]
    args = (ns.nights, policies, (ns.quantile, ns.decay), stream)
    runs: dict = {}
    started_all = time.perf_counter()
    with ProcessPoolExecutor(ns.jobs) if ns.jobs > 1 else nullcontext() as pool:
        done = (pool.map if pool else map)(one_cell, cells, *zip(*[args] * len(cells), strict=True))
        for (family, volume, seed), (found, seconds) in zip(cells, done, strict=True):
            runs.setdefault(family, {}).setdefault(str(volume), {})[str(seed)] = found
            print(f"{family} at {volume:,} events/day, seed {seed}: {seconds:.1f} s", flush=True)
    doc = {
        "nights": ns.nights,
        "strategy": ns.strategy,
        "label": ns.label,
        "time_limit_s": ns.time_limit,
        "seeds": seeds,
        "split": {
            "tuning": {k: list(v) for k, v in TUNING.items()},
            "held_out": {k: list(v) for k, v in HELD_OUT.items()},
        },
        "seconds": time.perf_counter() - started_all,
        "summary": summarize(runs),
        "runs": runs,
    }
    for line in table_lines(doc):
        print(line)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "closed_loop" + (f"_{label(doc)}" if label(doc) else "")
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    plot(doc, out / f"{name}.png")
    if ns.docs:
        write_docs(doc)
    return doc


if __name__ == "__main__":
    main()
