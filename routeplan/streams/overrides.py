"""One run's overrides of the streams' policies: what the DAG's Trigger form, the plan job's flags
and ``routeplan plan --policies``'s flags change, read and applied one way.

``read_overrides`` checks them before anything is planned (an unknown strategy, parameters
without a strategy, a budget limit the strategy does not honour: ``ValueError`` saying what to
change) and reads the budget through ``routeplan.planning.budget`` (old spellings become notes).
``policy_for`` gives a stream its policy for the run: the policy file's (or, without a file, the
override's strategy, default ``cg``), with the overrides applied and checked as a file would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from routeplan.model.plan import Budget
from routeplan.planning.budget import read_budget
from routeplan.planning.contract import check_budget
from routeplan.planning.registry import get_strategy, strategy_names
from routeplan.streams.policy import DEFAULT_GOALS, Policies, StreamPolicy, policy_from_overrides

DEFAULT_STRATEGY = "cg"  # without a policy file and without --strategy


@dataclass(frozen=True)
class RunOverrides:
    """What one run changes of every stream's policy; None or empty: the policy's own."""

    strategy: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)  # the limits the run sets
    planning_window: str | None = None
    load_metric: str | None = None
    hot_key_min_share: float = 0.001  # without a policy file (a policy's threshold otherwise)
    notes: tuple[str, ...] = ()  # deprecated spellings read (the caller warns)


def read_overrides(
    strategy: str | None = None,
    params: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    planning_window: str | None = None,
    load_metric: str | None = None,
    hot_key_min_share: float = 0.001,
) -> RunOverrides:
    """The run's overrides, checked. ``params`` are strategy parameters (old budget spellings
    among them move into the budget); ``budget`` maps budget fields to values (text allowed:
    empty means no limit). ValueError with one sentence on a mistake."""
    strategy = strategy or None
    if strategy is not None and strategy not in strategy_names():
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(strategy_names())}")
    reading = read_budget(budget, params)
    if reading.params and strategy is None:
        raise ValueError(
            "strategy parameters were given without a strategy: "
            + ", ".join(sorted(reading.params))
            + " (set the strategy too, or put them in the stream's policy)"
        )
    if strategy is not None:
        check_budget(get_strategy(strategy, **reading.params), reading.budget)
    return RunOverrides(
        strategy=strategy,
        params=dict(reading.params),
        budget=reading.budget,
        planning_window=planning_window or None,
        load_metric=load_metric or None,
        hot_key_min_share=hot_key_min_share,
        notes=reading.notes,
    )


def policy_for(overrides: RunOverrides, policies: Policies | None, stream: str) -> StreamPolicy:
    """``stream``'s policy for this run: the file's (or, without one, the overrides' strategy),
    with the run's strategy and its parameters, budget limits, window and metric applied."""
    if policies is None:
        name = overrides.strategy or DEFAULT_STRATEGY
        policy = StreamPolicy(
            stream=stream,
            kind=type(get_strategy(name)).kind,
            strategy=name,
            params=dict(overrides.params),
            budget=overrides.budget,
            hot_key_min_share=overrides.hot_key_min_share,
            candidates=(),
            goals=DEFAULT_GOALS,
            workers=None,
        )
    else:
        policy = policies.for_stream(stream)
        limits: dict[str, Any] = dict(overrides.budget.limits())
        if "max_migration_cost" in limits:
            limits["migration_cost_unit"] = overrides.budget.migration_cost_unit
        if overrides.strategy or overrides.params or limits:
            policy = policy_from_overrides(
                policy,
                strategy=overrides.strategy,
                params=dict(overrides.params) or None,
                budget=limits or None,
                where=f"this run's overrides for stream {stream!r}",
            )
    return replace(
        policy,
        planning_window=overrides.planning_window or policy.planning_window,
        load_metric=overrides.load_metric or policy.load_metric,
    )
