"""Plan one stream by its policy: the decision the nightly run, ``routeplan plan --policies`` and
the HTTP API's dry run share.

``plan_stream(policy, loads, current, workers, logged)`` takes plain values — the stream's
policy (``routeplan.streams.policy``), the loads of its planning window, its LATEST table (or
None), its workers and the load each worker was logged with — and returns a ``StreamPlan``:

1. **the policy's strategy**, or every candidate of ``auto`` ranked by the policy's goals
   (``routeplan.streams.auto.choose``), each with the policy's budget;
2. **the rerun rule** — LATEST is selected as it is when it was planned by one of the policy's
   strategies with the same parameters on the same loads and workers (``rerun_of``): a rerun of
   a night must not publish again, and a strategy applied to its own result may move more
   (paper 002's MWF and paper 004's one-pass Flux are not fixed points). That strategy's
   candidate is then LATEST itself (no moves); every other candidate is still planned, with its
   numbers, and its ``choice`` says LATEST was kept: a rerun records the same candidates as the
   run it repeats;
3. **the baseline of its kind** (``kg`` for key routing, ``kafka_range`` for partitions), planned
   without budget limits (it honours none), for comparison;
4. the observed imbalance (logged loads) and LATEST's imbalance on these loads.

Every candidate carries its plan and ``choice``, a sentence saying why it was or was not chosen.
A LATEST of the other kind is not planned from (``notes`` say so). When every ``auto``
candidate breaks a hard goal, ``PlanRefusedError`` says which goal each broke.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.errors import InputError
from routeplan.model.loads import Loads, LoadSnapshot
from routeplan.model.plan import Budget, Plan
from routeplan.model.table import RoutingTable, Table, planning_load
from routeplan.model.workers import Workers
from routeplan.planning.contract import finish_plan, parameters
from routeplan.planning.metrics import observed_imbalance, table_imbalance
from routeplan.planning.registry import get_strategy, strategy_parameters
from routeplan.streams.auto import Choice, NoCandidateError, choose
from routeplan.streams.policy import StreamPolicy

# planned beside the policy's strategy, by its kind; without budget limits (they honour none)
BASELINES: Mapping[str, str] = {"key_routing": "kg", "partition_assignment": "kafka_range"}


class PlanRefusedError(InputError):
    """No plan of the stream's policy may be used (every ``auto`` candidate breaks a hard goal)."""


@dataclass(frozen=True)
class Candidate:
    """One plan of the stream: a strategy of the policy, or the baseline."""

    strategy: str
    plan: Plan
    selected: bool
    choice: str  # why it was, or was not, chosen


@dataclass(frozen=True)
class StreamPlan:
    """What planning one stream decided.

    ``candidates`` holds the policy's plans (every candidate of ``auto``) and the baseline's, in
    that order, on a rerun as on the run it repeats; exactly one is ``selected``. ``kept`` is the
    rerun rule's sentence when LATEST is kept as it is (the selected plan is then LATEST itself),
    else None."""

    stream: str
    kind: str
    policy: StreamPolicy
    candidates: tuple[Candidate, ...]
    baseline: str
    current_version: int | None
    observed_imbalance: float | None
    current_imbalance: float | None
    kept: str | None = None
    auto: Choice | None = None
    notes: tuple[str, ...] = ()

    @property
    def selected(self) -> Candidate:
        return next(c for c in self.candidates if c.selected)

    @property
    def winner(self) -> str:
        return self.selected.strategy

    def candidate(self, strategy: str) -> Candidate:
        return next(c for c in self.candidates if c.strategy == strategy)

    def summary(self) -> dict[str, Any]:
        """The decision as plain JSON values (what ``routeplan plan --json`` and the API print)."""
        return {
            "stream": self.stream,
            "kind": self.kind,
            "policy": self.policy.strategy,
            "strategy": self.winner,
            "baseline": self.baseline,
            "current_version": self.current_version,
            "kept": self.kept,
            "observed_imbalance": self.observed_imbalance,
            "current_imbalance": self.current_imbalance,
            "budget": self.policy.budget.limits(),
            "notes": list(self.notes),
            "candidates": [
                {
                    "strategy": c.strategy,
                    "selected": c.selected,
                    "choice": c.choice,
                    "moves": len(c.plan.moves),
                    "predicted": dict(c.plan.predicted),
                    "params": dict(c.plan.table.params),
                }
                for c in self.candidates
            ],
        }


def plan_stream(
    policy: StreamPolicy,
    loads: Loads,
    current: Table | None,
    workers: Workers,
    logged: Mapping[str, float] | None = None,
) -> StreamPlan:
    """Plan ``policy.stream`` on ``loads`` against ``current`` (its LATEST, or None) with
    ``workers``; ``logged`` is the load per worker the logs name in the planning window (for the
    observed imbalance; None: unknown). See the module docstring for what is decided."""
    kind = policy.kind
    notes = []
    planned_from = current if current is not None and current.kind == kind else None
    if current is not None and planned_from is None:
        notes.append(f"LATEST v{current.version} is a {current.kind} table: planning anew")
    plans, winner, reasons, choice, kept = _policy_plans(policy, loads, planned_from, workers)
    if kept is not None:
        notes.append(kept)
    baseline = BASELINES[kind]
    if baseline not in plans:
        # the baseline takes the policy's parameters it has (e.g. consumer_capacity)
        accepted = strategy_parameters(baseline)
        given = policy.params_of(winner) if winner in policy.strategies else {}
        params = {k: v for k, v in given.items() if k in accepted}
        unlimited = Budget(time_limit_s=policy.budget.time_limit_s)
        plans[baseline] = get_strategy(baseline, **params).plan(
            loads, planned_from, workers, unlimited
        )
        reasons[baseline] = f"the {kind} baseline, planned for comparison"
    return StreamPlan(
        stream=policy.stream,
        kind=kind,
        policy=policy,
        candidates=tuple(
            Candidate(name, plan, name == winner, reasons.get(name, ""))
            for name, plan in plans.items()
        ),
        baseline=baseline,
        current_version=current.version if current is not None else None,
        observed_imbalance=observed_imbalance(logged, workers) if logged is not None else None,
        current_imbalance=_current_imbalance(planned_from, loads),
        kept=kept,
        auto=choice,
        notes=tuple(notes),
    )


def _policy_plans(
    policy: StreamPolicy, loads: Loads, current: Table | None, workers: Workers
) -> tuple[dict[str, Plan], str, dict[str, str], Choice | None, str | None]:
    """The policy's plans (every candidate of ``auto``), the winner, why each was or was not
    chosen, ``auto``'s choice, and the rerun rule's sentence when LATEST is kept."""
    built = policy.build()
    kept = rerun_of(current, loads, workers, built)
    plans = {
        name: finish_plan(current, loads, current)
        if kept is not None and current is not None and name == current.strategy
        else strategy.plan(loads, current, workers, policy.budget)
        for name, strategy in built.items()
    }
    if kept is not None:  # every candidate planned all the same: a rerun loses none
        assert current is not None
        reasons = {
            name: kept if name == current.strategy else f"auto candidate, not chosen: {kept}"
            for name in plans
        }
        return plans, current.strategy, reasons, None, kept
    if not policy.is_auto:
        return plans, policy.strategy, {policy.strategy: "the stream's policy names it"}, None, None
    try:
        choice = choose(
            plans,
            goals=policy.goals,
            imbalance_tolerance=policy.imbalance_tolerance,
            budget=policy.budget,
            workers=workers,
            current=current,
        )
    except NoCandidateError as err:
        raise PlanRefusedError(f"stream {policy.stream!r}: {err}") from None
    return plans, choice.winner, choice_reasons(choice), choice, None


def rerun_of(current: Table | None, loads: Loads, workers: Workers, built: dict) -> str | None:
    """Why LATEST is kept as it is when this run repeats the one that planned it — same loads
    (its ``planning_load``), same workers, a strategy of the policy with the same parameters —
    else None."""
    if current is None or current.strategy not in built:
        return None
    if not same_loads(current.planning_load, planning_load(loads)):
        return None
    if isinstance(current, RoutingTable) and current.workers != workers:
        return None
    given = parameters(built[current.strategy])  # None: derived when planning (e.g. C̄)
    if any(v is not None and current.params.get(k) != v for k, v in given.items()):
        return None
    return (
        f"LATEST v{current.version} was planned by {current.strategy} on these same loads, "
        "workers and parameters: kept"
    )


def same_loads(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two ``planning_load`` documents hold the same loads (to float rounding)."""
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            if set(x) != set(y) or not np.allclose([x[k] for k in x], [y[k] for k in x]):
                return False
        elif len(x) != len(y) or not np.allclose(x, y):
            return False
    return True


def choice_reasons(choice: Choice) -> dict[str, str]:
    """Why each ``auto`` candidate was or was not chosen: the winner's reason, the others' (a
    hard goal broken, or beaten)."""
    reasons = {choice.winner: f"auto: {choice.reason}"}
    for verdict in choice.ranking:
        if verdict.strategy != choice.winner:
            why = f"broke a hard goal, {verdict.failed}" if verdict.failed else "beaten"
            reasons[verdict.strategy] = f"auto candidate, {why} ({choice.winner} won)"
    return reasons


def _current_imbalance(current: Table | None, loads: Loads) -> float | None:
    """LATEST's imbalance on these loads (key routing with the same key-group space), or None."""
    if (
        isinstance(current, RoutingTable)
        and isinstance(loads, LoadSnapshot)
        and current.num_key_groups == loads.num_key_groups
    ):
        return table_imbalance(current, loads)
    return None
