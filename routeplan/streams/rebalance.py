"""The night's rebalancing of one stream: plan on a forecast, score out of sample, publish only
what pays, and move only what buys the gain.

``plan_night(policy, history, base, current, workers)`` is the use case the nightly plan job, the
closed-loop benchmark (``bench/closed_loop.py``) and ``routeplan plan`` share. From the stream's
``History`` (the windows of its last ``planning.history_days`` days, the newest last):

1. **plan on the forecast** of every unit and on the day's window profile
   (``routeplan.streams.forecast``: ``key_group_windows`` / ``partition_windows``, which lpt,
   milp, cg and the bin packers hold window by window; ``base`` gives the planning loads' other
   fields: distinct keys, resources, flow) —
   ``routeplan.streams.service.plan_stream``, the policy's strategy or ``auto``'s candidates;
2. **score out of sample** — every candidate fitted the same way on the days before the newest,
   scored on the newest day (``history.day_score``): what re-planning would have bought today.
   ``auto`` chooses by that score (its goals' winner is kept unless another candidate scores
   ``rebalance.min_gain`` better); the version in force is scored on the newest day too, and on
   the days before it for the persistence rule (``nights_over``);
3. **the gate** (``routeplan.streams.gate``) decides: publish the plan or keep the version in
   force, with a reason; when the out-of-sample evidence decided and tonight's plan scores worse
   on the newest day than the plan that gave the evidence, that plan is published instead;
4. **prune** — a key-routing plan the gate publishes against a version in force gives back the
   moves that do not pay (``prune``): smallest gain per migrated load first, while the plan
   stays within ``min_gain`` of its full gain on the history's windows, still pays, and is not
   pushed over the threshold;
5. **predict** — the measure (and the day imbalance) the version in force tomorrow is expected
   to realize, with a p10–p90 band (``routeplan.streams.prediction``): a table published
   tonight, its out-of-sample score as the point (``predict``; a table fitted on its own day is
   flagged ``out_of_sample`` false: no prediction); a table kept, the mean of its days since it
   came into force with Student's band (``predict_kept``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.plan import Plan
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan
from routeplan.planning.metrics import peak_excess
from routeplan.planning.registry import kept_home
from routeplan.streams.forecast import (
    Profile,
    Score,
    forecast,
    planned_windows,
    profile,
    window_profile,
)
from routeplan.streams.gate import GateDecision, GateRules, day_noise, gate
from routeplan.streams.history import History, day_score, on_workers, window_loads
from routeplan.streams.policy import StreamPolicy
from routeplan.streams.prediction import (
    Prediction,
    headlines,
    predict,
    predict_kept,
)
from routeplan.streams.service import Candidate, StreamPlan, plan_stream


@dataclass(frozen=True)
class NightPlan:
    """What the night decided for one stream: the plans (the selected one pruned when
    published), the gate's decision, the scores it decided on, the prediction for tomorrow."""

    plan: StreamPlan
    decision: GateDecision
    in_force: Score | None
    held_out: Score | None
    refit: Score
    prediction: Prediction
    pruned_moves: int = 0
    held_out_scores: Mapping[str, Score] | None = None
    shrinkage: float | None = None  # how far the units' profiles were pulled to the common shape

    def document(self) -> dict[str, Any]:
        """The decision as plain JSON values (``gold.plans.gate``, the plan report)."""

        def score(s: Score | None) -> dict[str, float] | None:
            return None if s is None else {"peak_excess": s.peak_excess, "day": s.day_imbalance}

        return {
            "publish": self.decision.publish,
            "rule": self.decision.rule,
            "reason": self.decision.reason,
            "nights_over": self.decision.nights_over,
            "in_force": score(self.in_force),
            "held_out": score(self.held_out),
            "refit": score(self.refit),
            "pruned_moves": self.pruned_moves,
            "predicted": self.prediction.document(),
            "reference_imbalance": self.reference_imbalance,
            "shrinkage": self.shrinkage,
        }

    @property
    def reference_imbalance(self) -> float | None:
        """What runs without the night's plan, on the same (forecast) loads: LATEST's
        imbalance, else the baseline's (the hash routing a stream has before its first
        version) — what validate bounds the plan's predicted imbalance by. A plan the gate
        publishes on out-of-sample evidence (rule ``held_out``: a lower worst window on a day it
        was not fitted on) is bounded by its own fitted imbalance at the least: the mean
        imbalance on the forecast must not veto what the held-out day showed."""
        reference = self.plan.current_imbalance
        if reference is None:
            baseline = self.plan.candidate(self.plan.baseline).plan.predicted.get("imbalance")
            reference = None if baseline is None else float(baseline)
        fitted = self.plan.selected.plan.predicted.get("imbalance")
        if reference is not None and self.decision.rule == "held_out" and fitted is not None:
            return max(reference, float(fitted))
        return reference


def forecast_loads(
    history: History,
    base: Loads,
    quantile: float,
    decay: float,
    hot_keys: tuple[str, ...] = (),
    fitted: Profile | None = None,
) -> Loads:
    """``base`` with the forecast load of every unit of ``history`` (and of the hot keys
    ``hot_keys``, default every hot key of the history) and the day's window profile
    (``fitted``: the key groups' ``profile`` of ``history`` when the caller has it already).

    Key routing balances expected loads: each key group's and hot key's ``profile`` (its
    decayed mean in every window of the day, shrunk as far as held-out days say it helps) and,
    as its load, the profile's mean over the windows — a high quantile per unit would weigh
    small, noisy units up against the big ones. With weekdays and weekend days in the history
    the windows are each kind's (``kind_windows``): the plan holds both. A partition assignment
    fills consumers up to a capacity: each partition's decayed ``quantile``, over the day and
    per window."""
    if isinstance(base, PartitionLoad):
        units = forecast(history.units, quantile, decay)
        windows = window_profile(history.units, decay, quantile)
        racks = base.partition_racks  # the history may know more (or fewer) partitions
        if racks is not None:
            racks = (*racks, *(((),) * units.size))[: units.size]
        return replace(base, partition_load=units, partition_windows=windows, partition_racks=racks)
    keys = list(hot_keys or history.hot_keys)
    sets = [(history.units, fitted)]
    if keys:
        sets.append((np.stack([history.hot_keys[k] for k in keys], axis=2), None))
    (windows, load), *hot = planned_windows(sets, decay, history.days)
    hot_load, hot_windows = {}, {}
    for own, own_load in hot:  # the hot keys' set, when there is one
        for i, k in enumerate(keys):
            if own[:, i].sum() > 0:
                hot_load[k], hot_windows[k] = float(own_load[i]), own[:, i]
    return replace(
        base,
        key_group_load=load,
        hot_key_load=hot_load,
        key_group_windows=windows,
        hot_key_windows=hot_windows,
    )


def daily_scores(table: Table, history: History, workers: Workers) -> list[Score]:
    """``table``'s score on every day of ``history``, oldest first."""
    return [day_score(table, history, i, workers) for i in range(len(history.days))]


def nights_over(scores: list[Score], threshold: float) -> int:
    """Days in a row before the newest (the last of ``scores``, a table's ``daily_scores``) on
    which the table scored over ``threshold``: the gate's persistence count, read from the loads
    (a rerun counts the same)."""
    count = 0
    for value in headlines(scores)[-2::-1]:
        if value <= threshold:
            break
        count += 1
    return count


def routing_change(table: Table, workers: Workers, tolerance: float) -> str | None:
    """How ``workers`` changed for the version in force ``table``, in a few words, or None: for
    key routing ``workers_change`` of its workers; for a partition assignment, whose consumers
    a packer opens as the load needs, only a consumer it reads partitions with that is no
    longer active."""
    if isinstance(table, PartitionAssignment):
        used = set(table.partition_consumer.values())
        state = {w.name: w.state for w in workers.items}
        said = [f"{n} {state[n]}" for n in sorted(used) if state.get(n, "active") != "active"]
        return ", ".join(said) or None
    return workers_change(table.workers_of(), workers, tolerance)


def fitted_before(table: Table, day: str) -> bool:
    """Whether ``table`` was published before ``day`` ended — so ``day``'s windows are out of
    its sample (a night publishes after the day it plans from: a version created on a date
    after ``day`` may have been fitted on it). True when either date is unknown."""
    from datetime import date, datetime

    try:
        created = datetime.fromisoformat(str(table.created_at)).date()
        return created <= date.fromisoformat(day)
    except ValueError:
        return True


def workers_change(old: Workers, new: Workers, tolerance: float) -> str | None:
    """How ``new`` differs from the workers of the version in force, in a few words (None when
    they route alike: ``Workers.routes_like`` with the capacity ``tolerance``)."""
    if old.routes_like(new, tolerance):
        return None
    before = {w.name: w for w in old.items}
    after = {w.name: w for w in new.items}
    said = [f"{n} added" for n in after if n not in before]
    said += [f"{n} removed" for n in before if n not in after]
    for name in (n for n in after if n in before):
        a, b = before[name], after[name]
        if a.state != b.state:
            said.append(f"{name} {b.state}")
        elif abs(a.capacity - b.capacity) > tolerance * max(a.capacity, b.capacity):
            said.append(f"{name} capacity {a.capacity:g} → {b.capacity:g}")
    return ", ".join(said) or "the workers' order changed"


def prune(
    plan: Plan,
    current: RoutingTable,
    loads: LoadSnapshot,
    history: History,
    workers: Workers,
    rules: GateRules,
) -> tuple[Plan, int]:
    """``plan`` without the key-group moves that do not pay, and how many were given back.

    On every window of the history (``routeplan.planning.metrics.peak_excess`` with
    ``workers``), each moved key group is priced by what the plan loses when that move alone
    is undone, per unit of load it migrates; moves are undone cheapest first while the plan
    stays within ``min_gain`` of its full gain, still pays against ``current``, and stays within
    the threshold when it was. Hot keys' moves and moves back to a worker the plan does not
    have are kept. A pruned plan never moves more than ``plan``."""
    table = plan.table
    if not isinstance(table, RoutingTable) or table.num_key_groups != current.num_key_groups:
        return plan, 0
    present = ~np.isnan(history.units).all(axis=2)
    units = np.nan_to_num(history.units[present])  # every window of every day
    hot = {k: np.nan_to_num(v[present]) for k, v in history.hot_keys.items()}
    loads_now, every = on_workers(table, window_loads(table, units, hot), workers)
    caps, active = every.capacities, every.is_active
    before, then = on_workers(current, window_loads(current, units, hot), workers)
    full = peak_excess(loads_now, caps, active)
    base = peak_excess(before, then.capacities, then.is_active)
    allowed = min(full + rules.min_gain, base - max(rules.min_gain, rules.min_relative_gain * base))
    if full <= rules.threshold:
        allowed = min(allowed, rules.threshold)
    if allowed <= full:
        return plan, 0
    index = every.index()
    groups = units.copy()  # what a key group carries besides the plan's split keys
    for key in table.hot_keys:  # the pruned table splits these; any other key moves with its group
        if key in hot:
            g = loads.hot_key_group(key)
            groups[:, g] = np.maximum(groups[:, g] - hot[key], 0.0)
    moved = [
        g
        for g in np.flatnonzero(
            np.array(table.key_group_worker) != np.array(current.key_group_worker)
        )
        if current.key_group_worker[g] in table.workers_of().index()
    ]

    def undone(matrix: np.ndarray, g: int) -> np.ndarray:
        out = matrix.copy()
        out[:, index[table.key_group_worker[g]]] -= groups[:, g]
        out[:, index[current.key_group_worker[g]]] += groups[:, g]
        return out

    def price(g: int) -> float:
        lost = peak_excess(undone(loads_now, g), caps, active) - full
        return lost / max(float(groups[:, g].sum()), 1e-12)

    owner = list(table.key_group_worker)
    given_back = []
    for g in sorted(moved, key=price):
        trial = undone(loads_now, g)
        if peak_excess(trial, caps, active) <= allowed:
            loads_now, owner[g] = trial, current.key_group_worker[g]
            given_back.append(int(g))
    if not given_back:
        return plan, 0
    state = kept_home(table.strategy, dict(table.strategy_state), given_back)
    pruned = replace(table, key_group_worker=tuple(owner), strategy_state=state)
    check, _ = on_workers(pruned, window_loads(pruned, units, hot), workers)
    if peak_excess(check, caps, active) > allowed + 1e-9:  # the accounting disagrees: keep all
        return plan, 0
    extra = {k: v for k, v in plan.predicted.items() if k not in plan.table.predicted}
    return finish_plan(pruned, loads, current, {**extra, "pruned_moves": float(len(given_back))}), (
        len(given_back)
    )


def choose_out_of_sample(
    decided: StreamPlan, scores: Mapping[str, Score], rules: GateRules
) -> StreamPlan:
    """``auto``'s plans with the winner chosen by the out-of-sample ``scores``: its goals'
    winner, unless a candidate that broke no hard goal scores ``rules.min_gain`` lower."""
    if decided.auto is None or decided.winner not in scores:
        return decided
    failed = {v.strategy for v in decided.auto.ranking if v.failed}
    eligible = {s: v.peak_excess for s, v in scores.items() if s not in failed}
    best = min(eligible, key=lambda s: eligible[s], default=decided.winner)
    if best == decided.winner or eligible[decided.winner] - eligible[best] < rules.min_gain:
        return decided
    why = (
        f"auto: {best} scores {eligible[best]:.4f} peak excess out of sample against "
        f"{decided.winner}'s {eligible[decided.winner]:.4f} (its goals' winner)"
    )
    return replace(
        decided,
        candidates=tuple(
            replace(
                c,
                selected=c.strategy == best,
                choice=why
                if c.strategy == best
                else (
                    f"auto candidate, beaten out of sample ({best} won)"
                    if c.strategy in eligible
                    else c.choice
                ),
            )
            for c in decided.candidates
        ),
    )


def with_selected(decided: StreamPlan, plan: Plan, note: str) -> StreamPlan:
    """``decided`` whose selected candidate is ``plan`` (its choice saying ``note``)."""
    return replace(
        decided,
        candidates=tuple(
            Candidate(c.strategy, plan, True, f"{c.choice}; {note}") if c.selected else c
            for c in decided.candidates
        ),
    )


def plan_night(
    policy: StreamPolicy,
    history: History,
    base: Loads,
    current: Table | None,
    workers: Workers,
    logged: Mapping[str, float] | None = None,
) -> NightPlan:
    """The night's plans and decision for ``policy.stream`` (see the module docstring)."""
    rules, knobs = policy.rebalance, (policy.forecast.quantile, policy.forecast.decay)
    in_force = current if current is not None and current.kind == policy.kind else None
    fitted = profile(history.units, knobs[1]) if isinstance(base, LoadSnapshot) else None
    loads = forecast_loads(history, base, *knobs, fitted=fitted)
    decided = plan_stream(policy, loads, current, workers, logged)
    newest = len(history.days) - 1
    held: dict[str, Score] = {}
    earlier = None
    if newest >= 1:
        earlier = plan_stream(
            policy,
            forecast_loads(history.first(newest), base, *knobs, tuple(history.hot_keys)),
            in_force,
            workers,
        )
        held = {
            c.strategy: day_score(c.plan.table, history, newest, workers)
            for c in earlier.candidates
            if c.strategy in policy.strategies
        }
        decided = choose_out_of_sample(decided, held, rules)
    selected = decided.selected.plan
    refit = day_score(selected.table, history, newest, workers)
    in_force_days = daily_scores(in_force, history, workers) if in_force is not None else []
    now = in_force_days[-1] if in_force_days else None
    decision = gate(
        now,
        held.get(decided.winner),
        refit,
        nights_over(in_force_days, rules.threshold) if in_force_days else 0,
        rules,
        routing_change(in_force, workers, policy.capacity_tolerance)
        if in_force is not None
        else None,
        in_force.version if in_force is not None else None,
        day_noise(headlines(in_force_days)[:-1]),  # the days before the one judged
        decided.kept,
    )
    held_out = held.get(decided.winner)
    evidence = decision.rule == "held_out" and held_out is not None and earlier is not None
    if evidence and held_out.peak_excess < refit.peak_excess:  # the evidence is the plan
        proven = earlier.candidate(decided.winner).plan.table
        note = (
            f"the plan fitted on the days before ({held_out.peak_excess:.4f} on the newest "
            f"day) published instead of tonight's ({refit.peak_excess:.4f})"
        )
        decided = with_selected(decided, finish_plan(proven, loads, current), note)
        refit = held_out
    pruned = 0
    if (
        decision.publish
        and isinstance(in_force, RoutingTable)
        and isinstance(base, LoadSnapshot)
        and decided.kept is None
    ):
        assert isinstance(loads, LoadSnapshot)
        plan, pruned = prune(decided.selected.plan, in_force, loads, history, workers, rules)
        if pruned:
            decided = with_selected(decided, plan, f"{pruned} moves that did not pay given back")
            refit = day_score(plan.table, history, newest, workers)
    rerun = decision.rule == "rerun"
    recorded = Prediction.recorded(in_force) if rerun and in_force is not None else None
    if recorded is not None:  # a rerun: what the night predicted when it first ran
        prediction = recorded
    elif decision.publish:  # the score the gate published on: out of sample when it was one
        point = held.get(decided.winner) if decision.rule == "held_out" else None
        table = decided.selected.plan.table
        scores = daily_scores(table, history, workers)
        score = point or refit
        prediction = predict(
            scores, score.peak_excess, point is not None, table.kind, score.day_imbalance,
            in_force_days,
        )  # fmt: skip
    else:
        assert now is not None and in_force is not None
        unseen = fitted_before(in_force, history.days[-1])
        since = [
            score
            for score, day in zip(in_force_days, history.days, strict=True)
            if fitted_before(in_force, day)
        ]
        prediction = predict_kept(in_force_days, since, unseen, in_force.kind)
    shrinkage = fitted.shrinkage if fitted is not None else None
    return NightPlan(
        decided,
        decision,
        now,
        held.get(decided.winner),
        refit,
        prediction,
        pruned,
        held or None,
        shrinkage,
    )


__all__ = [
    "NightPlan",
    "daily_scores",
    "forecast_loads",
    "nights_over",
    "plan_night",
    "prune",
    "routing_change",
    "workers_change",
]
