"""``auto``: choose among candidate plans of one stream by goals in priority order.

The caller plans the stream with every candidate strategy on the same loads, current table,
workers and budget (``StreamPolicy.build``), and ``choose`` ranks the plans. Choosing is kept
apart from planning so that it is a pure function of the plans: a run can record every
candidate's figures and say in one sentence why the winner won.

**Hard goals** (``HARD_GOALS``) — a plan that breaks one never wins:

* ``budget``: its predicted ``moves``, ``migrated_load_share`` and ``migration_cost`` within the
  budget's limits. Forced moves are excepted as the strategies count them: a key-routing plan may
  move ``max(max_moves, forced_moves)`` units, and when ``forced_moves`` > 0 the load and cost
  limits are not checked (the forced load is not reported apart); a partition plan's moves off a
  worker that is draining or no longer listed are forced.
* ``draining``: no load on a draining worker. When the budget sets a limit and a current table is
  given, a key-routing plan may keep on draining workers what the current table has there (the
  load leaves as the budget allows), never more.
* ``capacity``: a partition plan has no consumer over its bin capacity with more than one
  partition (predicted ``overloaded``). Key-routing plans have no capacity figure: skipped.

**Soft goals** (``GOALS``), lexicographic in the order given: at each goal only the candidates as
good as the best stay (equal within a relative ``TIE``), the first goal that leaves one candidate
decides (``Choice.decided_by``); when several survive every goal the first in candidate order
wins (``decided_by="order"``).

* ``imbalance``: every candidate within ``imbalance_tolerance`` is equally good; when none is,
  the lowest imbalance;
* ``moves``: fewest predicted moves (``migrations``, its old name, is still read);
* ``migrated_load``: lowest predicted migrated load share;
* ``workers``: fewest workers carrying load (consumers, for partitions);
* ``memory``: least memory (key routing: the predicted ``memory`` when the loads have distinct
  key counts, else the replication — extra workers of split hot keys); partition plans have no
  memory figure and the goal is skipped for them.

When every candidate breaks a hard goal, ``choose`` raises ``NoCandidateError`` naming each
candidate and the goal it breaks: planning with a plan that breaks a limit is never silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.model.plan import Budget, Plan
from routeplan.model.table import PartitionAssignment, RoutingTable, Table
from routeplan.model.workers import Workers
from routeplan.planning.metrics import worker_load

__all__ = [
    "DEFAULT_GOALS",
    "GOALS",
    "HARD_GOALS",
    "Choice",
    "NoCandidateError",
    "Verdict",
    "choose",
]

GOALS = ("imbalance", "moves", "migrated_load", "workers", "memory")
DEFAULT_GOALS = ("imbalance", "moves", "memory")
HARD_GOALS = ("capacity", "budget", "draining")
TIE = 1e-6  # relative difference below which two values of a goal are equal
_EPS = 1e-9


class NoCandidateError(ValueError):
    """Every candidate plan breaks a hard goal."""


@dataclass(frozen=True)
class Verdict:
    """One candidate's plan judged: whether it keeps the hard goals (``failed`` says which one
    it breaks, and how) and its value for each soft goal that has one."""

    strategy: str
    hard_ok: bool
    failed: str | None
    values: Mapping[str, float]


@dataclass(frozen=True)
class Choice:
    """The winner, why (one sentence), the goal that decided, and every candidate ranked:
    the winner first, then the other candidates that keep the hard goals in the order they would
    win, then those that break one (in candidate order)."""

    winner: str
    reason: str
    decided_by: str
    ranking: tuple[Verdict, ...]

    def to_record(self) -> dict[str, Any]:
        """A plain dict for logs and run records."""
        return {
            "winner": self.winner,
            "reason": self.reason,
            "decided_by": self.decided_by,
            "ranking": [
                {
                    "strategy": v.strategy,
                    "hard_ok": v.hard_ok,
                    "failed": v.failed,
                    "values": dict(v.values),
                }
                for v in self.ranking
            ],
        }


def choose(
    plans: Mapping[str, Plan],
    *,
    goals: Sequence[str] = DEFAULT_GOALS,
    imbalance_tolerance: float = 0.10,
    budget: Budget | None = None,
    workers: Workers | None = None,
    current: Table | None = None,
) -> Choice:
    """The best of ``plans`` (candidate name → its plan, in candidate order) by the hard goals,
    then ``goals`` in priority order.

    ``budget`` and ``workers`` are what the candidates were planned with (``workers`` gives the
    draining workers; without it the plan's own table says), ``current`` the table they were
    planned against. ``Choice.decided_by`` is the soft goal that left one candidate, ``order``
    (tied on every goal: the first wins), ``hard goals`` (the others broke one) or ``only
    candidate``. Raises ``NoCandidateError`` when every plan breaks a hard goal and ValueError
    for no plans or an unknown goal."""
    if not plans:
        raise ValueError("no candidate plans to choose from")
    unknown = [g for g in goals if g not in GOALS]
    if unknown:
        raise ValueError(f"unknown goal {unknown[0]!r}; goals: {', '.join(GOALS)}")
    budget = budget or Budget()
    values = _soft_values(plans)
    verdicts = {}
    for name, plan in plans.items():
        failed = _hard_failure(plan, budget, workers, current)
        verdicts[name] = Verdict(name, failed is None, failed, values[name])
    eligible = [n for n in plans if verdicts[n].hard_ok]
    if not eligible:
        raise NoCandidateError(
            "every candidate breaks a hard goal: "
            + "; ".join(f"{n} ({verdicts[n].failed})" for n in plans)
        )
    winner, decided_by, steps = _lexicographic(eligible, verdicts, goals, imbalance_tolerance)
    ranking = [winner]
    rest = [n for n in eligible if n != winner]
    while rest:
        best = _lexicographic(rest, verdicts, goals, imbalance_tolerance)[0]
        ranking.append(best)
        rest.remove(best)
    ranking += [n for n in plans if not verdicts[n].hard_ok]
    if len(plans) == 1:
        decided_by = "only candidate"
    elif len(eligible) == 1:
        decided_by = "hard goals"
    reason = _reason(winner, decided_by, steps, verdicts, imbalance_tolerance, eligible, plans)
    return Choice(winner, reason, decided_by, tuple(verdicts[n] for n in ranking))


# ---------------------------------------------------------------------------------- hard goals


def _hard_failure(
    plan: Plan, budget: Budget, workers: Workers | None, current: Table | None
) -> str | None:
    """The first hard goal ``plan`` breaks, as ``goal: how``, or None."""
    predicted = plan.predicted
    table = plan.table
    if isinstance(table, PartitionAssignment) and predicted.get("overloaded", 0.0) > 0:
        return f"capacity: {predicted['overloaded']:g} consumers over the bin capacity"
    broken = _budget_failure(plan, budget, workers)
    if broken:
        return f"budget: {broken}"
    broken = _draining_failure(plan, budget, workers, current)
    if broken:
        return f"draining: {broken}"
    return None


def _budget_failure(plan: Plan, budget: Budget, workers: Workers | None) -> str | None:
    predicted = plan.predicted
    moves = predicted.get("moves", float(len(plan.moves)))
    if isinstance(plan.table, PartitionAssignment):
        forced = float(_forced_partition_moves(plan, workers))
    else:
        forced = float(predicted.get("forced_moves", 0.0))
    if budget.max_moves is not None and moves > max(budget.max_moves, forced) + _EPS:
        return f"{moves:g} moves > max_moves {budget.max_moves}"
    if forced > 0:
        return None
    share = predicted.get("migrated_load_share")
    limit = budget.max_migrated_load_share
    if limit is not None and share is not None and share > limit * (1 + _EPS) + _EPS:
        return f"migrated load share {share:.3g} > max_migrated_load_share {limit:g}"
    cost = predicted.get("migration_cost")
    limit = budget.max_migration_cost
    if limit is not None and cost is not None and cost > limit * (1 + _EPS) + _EPS:
        return f"migration cost {cost:g} > max_migration_cost {limit:g}"
    return None


def _forced_partition_moves(plan: Plan, workers: Workers | None) -> int:
    """Partition moves off a worker that is draining or no longer listed (no plan avoids them)."""
    if workers is None:
        return 0
    active = {w.name for w in workers.active}
    return sum(1 for m in plan.moves if not set(m.from_workers) & active)


def _draining(plan: Plan, workers: Workers | None) -> set[str]:
    listed = workers if workers is not None else getattr(plan.table, "workers", None)
    if listed is None:
        return set()
    return {w.name for w in listed.items if w.state != "active"}


def _draining_failure(
    plan: Plan, budget: Budget, workers: Workers | None, current: Table | None
) -> str | None:
    draining = _draining(plan, workers)
    if not draining:
        return None
    table = plan.table
    if isinstance(table, PartitionAssignment):
        held = sorted({c for c in table.partition_consumer.values() if c in draining})
        return f"partitions on draining {', '.join(held)}" if held else None
    if not isinstance(table, RoutingTable):
        return None
    snapshot = table.planning_snapshot()
    if snapshot is None:  # no loads recorded: any key group on a draining worker counts
        held = sorted(draining & set(table.key_group_worker))
        return f"key groups on draining {', '.join(held)}" if held else None
    load = _draining_load(table, snapshot, draining)
    allowed = 0.0
    if (
        budget.limits()
        and isinstance(current, RoutingTable)
        and current.num_key_groups == snapshot.num_key_groups
    ):
        allowed = _draining_load(current, snapshot, draining)
    total = max(snapshot.total, _EPS)
    if load > allowed + 1e-6 * total:
        return f"load {load / total:.3g} of the total on draining workers" + (
            f" (the current table has {allowed / total:.3g})" if allowed else ""
        )
    return None


def _draining_load(table: RoutingTable, snapshot: Any, draining: set[str]) -> float:
    loads = worker_load(table, snapshot)
    return float(
        sum(x for name, x in zip(table.workers.names, loads, strict=True) if name in draining)
    )


# ---------------------------------------------------------------------------------- soft goals


def _soft_values(plans: Mapping[str, Plan]) -> dict[str, dict[str, float]]:
    """Each plan's value for each soft goal it has a figure for."""
    with_memory = all("memory" in p.predicted for p in plans.values())
    result = {}
    for name, plan in plans.items():
        predicted = plan.predicted
        values: dict[str, float] = {}
        for goal, key in (
            ("imbalance", "imbalance"),
            ("moves", "moves"),
            ("migrated_load", "migrated_load_share"),
        ):
            if key in predicted:
                values[goal] = float(predicted[key])
        table = plan.table
        if isinstance(table, PartitionAssignment):
            if "consumers" in predicted:
                values["workers"] = float(predicted["consumers"])
        elif isinstance(table, RoutingTable):
            values["workers"] = float(_workers_used(table))
            if with_memory:
                values["memory"] = float(predicted["memory"])
            else:
                values["memory"] = float(sum(len(t) - 1 for t in table.hot_keys.values()))
        result[name] = values
    return result


def _workers_used(table: RoutingTable) -> int:
    """Workers that carry load in ``table`` (with its planning loads), else that it routes to."""
    snapshot = table.planning_snapshot()
    if snapshot is not None:
        return int(np.count_nonzero(worker_load(table, snapshot) > 0))
    used = set(table.key_group_worker)
    for targets in table.hot_keys.values():
        used.update(w for w, weight in targets if weight > 0)
    return len(used)


@dataclass(frozen=True)
class _Step:
    """One goal applied: the candidates before it and those that stayed."""

    goal: str
    before: tuple[str, ...]
    kept: tuple[str, ...]
    within: bool = False  # imbalance: the kept ones are all within the tolerance


def _lexicographic(
    names: Sequence[str],
    verdicts: Mapping[str, Verdict],
    goals: Sequence[str],
    tolerance: float,
) -> tuple[str, str, list[_Step]]:
    """The winner among ``names``, the goal that decided and the steps taken."""
    survivors = list(names)
    steps: list[_Step] = []
    for goal in goals:
        if len(survivors) == 1:
            break
        if any(goal not in verdicts[n].values for n in survivors):
            continue  # no figure for every candidate: the goal cannot rank them
        value = {n: verdicts[n].values[goal] for n in survivors}
        within = False
        if goal == "imbalance":
            inside = [n for n in survivors if value[n] <= tolerance + _EPS]
            within = bool(inside)
        kept = inside if within else _as_good_as_best(survivors, value)
        steps.append(_Step(goal, tuple(survivors), tuple(kept), within))
        survivors = kept
        if len(survivors) == 1:
            return survivors[0], goal, steps
    return survivors[0], "order", steps


def _as_good_as_best(names: Sequence[str], value: Mapping[str, float]) -> list[str]:
    best = min(value[n] for n in names)
    slack = TIE * max(abs(best), 1.0)
    return [n for n in names if value[n] <= best + slack]


# ---------------------------------------------------------------------------------- reason

_PHRASES = {
    "moves": ("fewest moves", "moves"),
    "migrated_load": ("least migrated load share", "migrated load share"),
    "workers": ("fewest workers", "workers"),
    "memory": ("least memory", "memory"),
    "imbalance": ("lowest imbalance", "imbalance"),
}


def _show(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _reason(
    winner: str,
    decided_by: str,
    steps: Sequence[_Step],
    verdicts: Mapping[str, Verdict],
    tolerance: float,
    eligible: Sequence[str],
    plans: Mapping[str, Plan],
) -> str:
    """One sentence: what each goal applied said about the winner, then who was excluded."""
    mine = verdicts[winner].values
    parts = []
    for step in steps:
        others = [n for n in step.before if n != winner]
        dropped = [n for n in step.before if n not in step.kept]
        alike = [n for n in step.kept if n != winner]
        value = mine[step.goal]
        if step.goal == "imbalance" and step.within:
            part = f"imbalance {_show(value)} within tolerance {tolerance:.2f}"
            if alike:
                part += " like " + _names(alike)
            if dropped:
                part += " (not " + _versus(dropped, verdicts, step.goal) + ")"
        elif dropped:
            best, label = _PHRASES[step.goal]
            part = f"{best} ({_show(value)} vs {_versus(dropped, verdicts, step.goal)})"
            if alike:
                part += " like " + _names(alike)
        else:
            label = _PHRASES[step.goal][1]
            part = f"{label} {_show(value)} like " + _names(others)
        parts.append(part)
    if decided_by == "order":
        tied = [n for n in (steps[-1].kept if steps else eligible) if n != winner]
        parts.append("first in candidate order before " + _names(tied))
    excluded = [n for n in plans if not verdicts[n].hard_ok]
    if excluded:
        parts.append("excluded " + _names([f"{n} ({verdicts[n].failed})" for n in excluded]))
    if decided_by == "only candidate" and not parts:
        parts.append("the only candidate")
    return f"{winner}: " + "; ".join(parts)


def _names(names: Sequence[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names``, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _versus(names: Sequence[str], verdicts: Mapping[str, Verdict], goal: str) -> str:
    shown = ", ".join(f"{n} {_show(verdicts[n].values[goal])}" for n in names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
