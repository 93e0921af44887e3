"""Per-stream planning policies: which strategy plans each stream, with what parameters, budget
and thresholds, read from one YAML file per deployment (``schemas/streams.schema.json``; the jobs
read ``$ROUTEPLAN_HOME/config/streams.yaml``).

The file is checked whole when it is loaded, so a mistake stops the run before any planning
instead of failing one stream at night: YAML syntax (with line and column), then the schema, then
what a schema cannot know — the strategy exists and plans the stream's kind, takes the given
parameters (and builds with them), honours every budget limit set; for ``auto`` the candidates
are of the stream's kind and each honours the budget; inline workers are unique with one active.
Every error is a ``PolicyError`` (an ``InputError``, so the command line and the jobs print it as
one line) naming the file, the line, the stream and the field.

Merging: ``defaults`` applies to every stream and a stream's entry overrides it field by field;
``budget``, ``thresholds``, ``rebalance`` and ``planning`` merge key by key (``null`` removes a
default's limit); ``params``
belong to a strategy, so a stream inherits the defaults' ``params`` only when it keeps the
defaults' strategy. A stream the file does not list is planned with the defaults.

``workers`` lists a stream's workers inline (instead of the deployment's workers file); a
capacity of ``auto`` (or none) is kept as ``WorkerSpec.capacity = None``, a marker for the
capacity learnt from the logs (``StreamPolicy.to_workers`` fills it).
"""

from __future__ import annotations

import math
import os
import types
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from routeplan import storage
from routeplan.errors import InputError
from routeplan.files import reading
from routeplan.model.names import is_valid_name, name_rule
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.budget import BUDGET_FIELDS
from routeplan.planning.contract import KINDS
from routeplan.planning.registry import (
    get_strategy,
)
from routeplan.streams.forecast import ForecastRules
from routeplan.streams.gate import GateRules
from routeplan.streams.policy_file import check_schema, parse_yaml
from routeplan.streams.policy_strategies import (
    AUTO,
    auto_candidates,
    check_honoured,
    check_params,
    check_strategy,
    read_policy_budget,
)
from routeplan.streams.thresholds import PLANNING, REBALANCE, checked_thresholds
from routeplan.streams.thresholds import RANGES as THRESHOLDS

__all__ = [
    "AUTO",
    "Policies",
    "PolicyError",
    "StreamPolicy",
    "WorkerSpec",
    "load_policies",
    "planned_metric",
    "policy_from_overrides",
]

LOAD_METRICS = ("messages", "bytes", "cost_ms")


def planned_metric(kind: str, load_metric: str) -> str:
    """The load a table of ``kind`` is planned on: a partition assignment always on bytes (a
    consumer's capacity is bytes/s), key routing on the policy's ``load_metric``."""
    return "bytes" if kind == "partition_assignment" else load_metric


# forecast: every window of the last days (routeplan.streams.forecast); peak: the busiest window
# of the interval; interval: the whole interval
PLANNING_WINDOWS = ("forecast", "peak", "interval")
# sections merged key by key over the defaults
SECTIONS = ("budget", "thresholds", "rebalance", "planning")
# what a night does when the version in force regressed (routeplan.streams.outcomes)
ON_REGRESSION = ("rollback", "alert", "hold")
# The soft goals of ``auto`` (routeplan.streams.auto.GOALS, repeated here so that reading a
# policy does not import the chooser; a test keeps the two equal).
GOALS = ("imbalance", "moves", "migrated_load", "workers", "memory")
DEFAULT_GOALS = ("imbalance", "moves", "memory")
# goals renamed (old → new), still read for one release with a deprecation warning
RENAMED_GOALS = {"migrations": "moves"}
DEFAULTS: Mapping[str, Any] = {
    "kind": "key_routing",
    "strategy": "lpt",
    "params": {},
    "budget": {},
    "load_metric": "messages",
    "planning_window": "forecast",
    "planning": dict(vars(ForecastRules())),
    "rebalance": dict(vars(GateRules())),
    "thresholds": {
        "imbalance_tolerance": 0.10,
        "hot_key_min_share": 0.001,
        "regression_tolerance": 0.10,
        "regression_days": 1,
        "regression_window": 7,
        "cooldown": 7,
        "capacity_tolerance": 0.05,
    },
    "on_regression": "rollback",
    "goals": list(DEFAULT_GOALS),
}


class PolicyError(InputError):
    """A planning policy that cannot be used; the message names the file (and line), the stream
    and the field."""


@dataclass(frozen=True)
class WorkerSpec:
    """One inline worker of a policy; ``capacity`` None = learnt from the logs (``auto``)."""

    name: str
    capacity: float | None = None
    state: str = "active"
    rack: str | None = None  # KIP-881: the worker's (consumer's) rack; None: unknown


@dataclass(frozen=True)
class StreamPolicy:
    """How one stream is planned. For ``auto``, ``params`` maps each candidate to its
    parameters; otherwise it holds the strategy's parameters."""

    stream: str
    kind: str = "key_routing"
    strategy: str = "lpt"
    params: Mapping[str, Any] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    load_metric: str = "messages"
    planning_window: str = "forecast"
    forecast: ForecastRules = field(default_factory=ForecastRules)  # section planning
    rebalance: GateRules = field(default_factory=GateRules)
    imbalance_tolerance: float = 0.10
    hot_key_min_share: float = 0.001
    regression_tolerance: float = 0.10
    regression_days: int = 1
    regression_window: int = 7  # nights: a second regression within them holds the stream
    cooldown: int = 7  # nights a rolled-back routing is not published again
    capacity_tolerance: float = 0.05  # capacities within it route alike (Workers.routes_like)
    on_regression: str = "rollback"  # one of ON_REGRESSION
    candidates: tuple[str, ...] = ()
    goals: tuple[str, ...] = DEFAULT_GOALS
    workers: tuple[WorkerSpec, ...] | None = None
    # partition_assignment: partition → the racks of its replicas, leader first (KIP-881)
    partition_racks: Mapping[int, tuple[str, ...]] | None = None

    def racks_for(self, num_partitions: int) -> tuple[tuple[tuple[str, ...], ...] | None, str]:
        """The replica racks of partitions ``0 … num_partitions − 1`` for a ``PartitionLoad``
        (a partition the policy leaves out: unknown, ``()``), and a note naming the listed
        partitions the stream does not have ("" when none); None without racks."""
        if self.partition_racks is None:
            return None, ""
        racks = tuple(self.partition_racks.get(p, ()) for p in range(num_partitions))
        beyond = sorted(p for p in self.partition_racks if p >= num_partitions)
        note = (
            f"{self.stream}: partition_racks lists partitions the loads do not have "
            f"({', '.join(map(str, beyond[:5]))}{' …' if len(beyond) > 5 else ''}): not used"
            if beyond
            else ""
        )
        return racks, note

    @property
    def is_auto(self) -> bool:
        """Whether each run chooses among ``candidates`` (``routeplan.streams.auto``)."""
        return self.strategy == AUTO

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategies a run plans with: the candidates for ``auto``, else the one strategy."""
        return self.candidates if self.is_auto else (self.strategy,)

    def params_of(self, strategy: str) -> dict[str, Any]:
        """The parameters ``strategy`` (the strategy, or one of auto's candidates) is built with."""
        if self.is_auto:
            return dict(self.params.get(strategy, {}))
        if strategy != self.strategy:
            raise KeyError(f"stream {self.stream!r} is planned with {self.strategy!r}")
        return dict(self.params)

    def build(self) -> dict[str, Any]:
        """Each strategy of ``strategies`` built with its parameters (name → ``Strategy``)."""
        return {name: get_strategy(name, **self.params_of(name)) for name in self.strategies}

    @property
    def learns_capacity(self) -> bool:
        """Whether an inline worker's capacity is to be learnt from the logs."""
        return any(w.capacity is None for w in self.workers or ())

    def to_workers(
        self, learnt: Mapping[str, float] | None = None, fallback: float | None = None
    ) -> Workers | None:
        """The inline workers as ``Workers`` (None when the stream uses the workers file). A
        capacity marked ``auto`` takes ``learnt[worker]``, else ``fallback``; ValueError naming
        the worker when neither is known."""
        if self.workers is None:
            return None
        learnt = learnt or {}
        items = []
        for spec in self.workers:
            capacity = spec.capacity
            if capacity is None:
                capacity = learnt.get(spec.name, fallback)
            if capacity is None:
                raise ValueError(
                    f"stream {self.stream!r}: worker {spec.name!r} has capacity auto and no "
                    "capacity was learnt for it"
                )
            items.append(Worker(spec.name, float(capacity), spec.state, spec.rack))
        return Workers(tuple(items))


@dataclass(frozen=True)
class Policies:
    """The policies of one file: the defaults and each listed stream's policy."""

    path: str
    defaults: StreamPolicy
    streams: Mapping[str, StreamPolicy]

    def for_stream(self, name: str) -> StreamPolicy:
        """``name``'s policy; a stream the file does not list gets the defaults (the caller
        logs that, ``is_listed`` tells)."""
        if name in self.streams:
            return self.streams[name]
        return replace(self.defaults, stream=name)

    def is_listed(self, name: str) -> bool:
        return name in self.streams

    def check_streams(self, names: Iterable[str]) -> None:
        """PolicyError naming every stream of ``names`` the file does not list (for a run that
        names its streams, e.g. the Trigger form, where a typo must not plan with defaults)."""
        missing = [n for n in names if n not in self.streams]
        if missing:
            listed = ", ".join(sorted(self.streams)) or "none"
            raise PolicyError(
                f"{self.path}: stream {', '.join(map(repr, missing))} not listed under streams "
                f"(listed: {listed})"
            )


# ------------------------------------------------------------------------------- reading


def renamed_goal(stream: str, goal: object) -> object:
    """``goal`` under its current name; an old one (``RENAMED_GOALS``) with a deprecation
    warning naming the stream."""
    if isinstance(goal, str) and goal in RENAMED_GOALS:
        new = RENAMED_GOALS[goal]
        warnings.warn(
            f"stream {stream}: goal {goal!r} is now {new!r} (the old name is read for one more "
            "release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return new
    return goal


def load_policies(path: str | os.PathLike[str]) -> Policies:
    """The policies in the YAML file at ``path`` (a local path or a URI, ``routeplan.storage``),
    checked whole (``PolicyError`` otherwise)."""
    where = os.fspath(path)
    with reading(path):
        text = storage.read_bytes(path).decode("utf-8")
    doc, lines = parse_yaml(text, where, PolicyError)
    if doc is None:
        doc = {}
    check_schema(doc, where, lines, PolicyError)
    defaults_doc = {**DEFAULTS, **doc.get("defaults", {})}
    for section in SECTIONS:
        defaults_doc[section] = _merged(DEFAULTS[section], doc.get("defaults", {}).get(section))
    context = _Context(where, lines, ("defaults",), "defaults")
    defaults = _policy("defaults", defaults_doc, context)
    streams = {}
    for name, entry in (doc.get("streams") or {}).items():
        merged = _merge(defaults_doc, entry)
        streams[name] = _policy(
            name, merged, _Context(where, lines, ("streams", name), None, frozenset(entry))
        )
    return Policies(where, defaults, types.MappingProxyType(streams))


def policy_from_overrides(
    base: StreamPolicy,
    strategy: str | None = None,
    params: Mapping[str, Any] | None = None,
    budget: Budget | Mapping[str, Any] | None = None,
    where: str = "run overrides",
) -> StreamPolicy:
    """``base`` with one run's overrides (the DAG's Trigger form), checked as a file would be.

    A new ``strategy`` drops ``base``'s parameters (they are another strategy's) unless
    ``params`` are given; ``params`` for the same strategy update ``base``'s key by key;
    ``budget`` (a ``Budget``, or budget fields) updates ``base``'s budget field by field."""
    doc: dict[str, Any] = {
        "kind": base.kind,
        "strategy": base.strategy,
        "params": {k: dict(v) if isinstance(v, Mapping) else v for k, v in base.params.items()},
        "budget": _budget_doc(base.budget),
        "load_metric": base.load_metric,
        "planning_window": base.planning_window,
        "planning": vars(base.forecast),
        "rebalance": vars(base.rebalance),
        "thresholds": {name: getattr(base, name) for name in THRESHOLDS},
        "goals": list(base.goals),
        "on_regression": base.on_regression,
    }
    if base.is_auto:
        doc["candidates"] = list(base.candidates)
    if base.workers is not None:
        doc["workers"] = [
            {"worker": w.name, "capacity": w.capacity or "auto", "state": w.state}
            | ({} if w.rack is None else {"rack": w.rack})
            for w in base.workers
        ]
    if base.partition_racks is not None:
        doc["partition_racks"] = {p: list(r) for p, r in base.partition_racks.items()}
    if strategy is not None and strategy != base.strategy:
        doc["strategy"] = strategy
        doc["params"] = {}
        doc.pop("candidates", None)
    if params is not None:
        doc["params"] = (
            {**doc["params"], **params} if strategy in (None, base.strategy) else {**params}
        )
    if budget is not None:
        fields = _budget_doc(budget) if isinstance(budget, Budget) else dict(budget)
        unknown = sorted(set(fields) - set(BUDGET_FIELDS))
        if unknown:
            raise PolicyError(
                f"{where}: stream {base.stream!r}: budget.{unknown[0]}: not a budget field "
                f"(one of {', '.join(BUDGET_FIELDS)})"
            )
        doc["budget"] = {**doc["budget"], **fields}
    return _policy(base.stream, doc, _Context(where, {}, (), None, frozenset(doc)))


def _budget_doc(budget: Budget) -> dict[str, Any]:
    return {k: getattr(budget, k) for k in BUDGET_FIELDS}


def _merged(base: Mapping[str, Any], over: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**base, **(over or {})}


def _merge(defaults: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    """A stream's entry over the defaults: field by field, the ``SECTIONS`` key by key,
    params only while the stream keeps the defaults' strategy and kind."""
    merged = {**defaults, **entry}
    for section in SECTIONS:
        merged[section] = _merged(defaults[section], entry.get(section))
    same = merged["strategy"] == defaults["strategy"] and merged["kind"] == defaults["kind"]
    if "params" not in entry and not same:
        merged["params"] = {}
    return merged


@dataclass(frozen=True)
class _Context:
    """Where a policy comes from, for messages: the file, its key lines, the YAML path of the
    entry and how the entry is named (``defaults`` or ``stream 'x'``)."""

    where: str
    lines: Mapping[tuple[Any, ...], int]
    path: tuple[Any, ...]
    label: str | None
    given: frozenset[str] = frozenset()  # the fields the entry itself sets

    def error(self, stream: str, field_path: str, message: str) -> PolicyError:
        """``file:line: stream 'x': field: message`` (the line of the field, else the entry)."""
        keys = (
            tuple(int(p) if p.isdigit() else p for p in field_path.split(".")) if field_path else ()
        )
        line = None
        for n in range(len(keys), -1, -1):
            line = self.lines.get((*self.path, *keys[:n]))
            if line is not None:
                break
        at = f"{self.where}:{line}" if line else self.where
        who = self.label or f"stream {stream!r}"
        return PolicyError(f"{at}: {who}: {field_path + ': ' if field_path else ''}{message}")


# ------------------------------------------------------------------------------- checking


def _policy(stream: str, doc: Mapping[str, Any], ctx: _Context) -> StreamPolicy:
    """A merged entry as a ``StreamPolicy``, after the checks a schema cannot make."""
    kind = doc["kind"]
    if kind not in KINDS:
        raise ctx.error(stream, "kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    strategy = doc["strategy"]
    thresholds = checked_thresholds(doc["thresholds"], _section_error(ctx, stream, "thresholds"))
    sections = {
        name: checked_thresholds(doc[name], _section_error(ctx, stream, name), ranges)
        for name, ranges in (("rebalance", REBALANCE), ("planning", PLANNING))
    }
    if doc["on_regression"] not in ON_REGRESSION:
        raise ctx.error(stream, "on_regression", f"must be one of {', '.join(ON_REGRESSION)}")
    if doc["load_metric"] not in LOAD_METRICS:
        raise ctx.error(stream, "load_metric", f"must be one of {', '.join(LOAD_METRICS)}")
    if doc["planning_window"] not in PLANNING_WINDOWS:
        raise ctx.error(stream, "planning_window", f"must be one of {', '.join(PLANNING_WINDOWS)}")
    budget = read_policy_budget(stream, doc["budget"], ctx)
    goals = tuple(renamed_goal(stream, g) for g in doc.get("goals") or DEFAULT_GOALS)
    for i, goal in enumerate(goals):
        if goal not in GOALS:
            raise ctx.error(
                stream, f"goals.{i}", f"unknown goal {goal!r}; goals: {', '.join(GOALS)}"
            )
    if len(set(goals)) != len(goals):
        raise ctx.error(stream, "goals", "a goal is listed twice")
    params = doc.get("params") or {}
    if strategy == AUTO:
        candidates, params = auto_candidates(
            stream, kind, doc.get("candidates"), params, budget, ctx
        )
    else:
        if doc.get("candidates") is not None:
            raise ctx.error(stream, "candidates", "only strategy auto has candidates")
        check_strategy(stream, kind, strategy, "strategy", ctx)
        params = check_params(stream, strategy, params, "params", ctx)
        check_honoured(stream, strategy, budget, ctx)
        candidates = ()
    return StreamPolicy(
        stream=stream,
        kind=kind,
        strategy=strategy,
        params=types.MappingProxyType(params),
        budget=budget,
        load_metric=doc["load_metric"],
        planning_window=doc["planning_window"],
        forecast=ForecastRules(**sections["planning"]),
        rebalance=GateRules(**sections["rebalance"]),
        **thresholds,
        on_regression=doc["on_regression"],
        candidates=candidates,
        goals=goals,
        workers=_workers(stream, doc.get("workers"), ctx),
        partition_racks=_partition_racks(stream, kind, doc.get("partition_racks"), ctx),
    )


def _section_error(ctx: _Context, stream: str, section: str):
    return lambda name, message: ctx.error(stream, f"{section}.{name}", message)


def _workers(stream: str, records: Any, ctx: _Context) -> tuple[WorkerSpec, ...] | None:
    if records is None:
        return None
    specs = []
    seen: set[str] = set()
    for i, record in enumerate(records):
        name = record["worker"]
        if name in seen:
            raise ctx.error(stream, f"workers.{i}.worker", f"worker {name!r} is listed twice")
        seen.add(name)
        capacity = record.get("capacity", "auto")
        if capacity != "auto" and (
            isinstance(capacity, bool)
            or not isinstance(capacity, int | float)
            or not math.isfinite(capacity)
            or capacity <= 0
        ):
            raise ctx.error(stream, f"workers.{i}.capacity", "must be a number > 0 or auto")
        state = record.get("state", "active")
        if state not in ("active", "draining"):
            raise ctx.error(stream, f"workers.{i}.state", "must be active or draining")
        rack = record.get("rack")
        if rack is not None and not is_valid_name(rack):
            raise ctx.error(stream, f"workers.{i}.rack", f"invalid rack {rack!r}: {name_rule()}")
        capacity = None if capacity == "auto" else float(capacity)
        specs.append(WorkerSpec(name, capacity, state, rack))
    if not any(s.state == "active" for s in specs):
        raise ctx.error(stream, "workers", "at least one worker must be active")
    return tuple(specs)


def _partition_racks(
    stream: str, kind: str, given: Any, ctx: _Context
) -> Mapping[int, tuple[str, ...]] | None:
    """``partition_racks`` (a list by partition, or a mapping partition → racks) as partition →
    replica racks; PolicyError naming the field for another kind, a partition that is not an
    integer >= 0, an empty list or a rack that is not a valid name."""
    if given is None:
        return None
    if kind != "partition_assignment":
        raise ctx.error(
            stream, "partition_racks", "only a partition_assignment stream has partitions"
        )
    if not isinstance(given, list | Mapping):
        raise ctx.error(stream, "partition_racks", "must be a list or a mapping of partitions")
    pairs = list(enumerate(given)) if isinstance(given, list) else list(given.items())
    found: dict[int, tuple[str, ...]] = {}
    for key, racks in pairs:
        partition = key if isinstance(key, int) and not isinstance(key, bool) else None
        if isinstance(key, str) and key.isdigit():
            partition = int(key)
        if partition is None or partition < 0:
            raise ctx.error(stream, "partition_racks", f"{key!r} is not a partition (>= 0)")
        if partition in found:
            raise ctx.error(stream, f"partition_racks.{partition}", "partition listed twice")
        if isinstance(racks, str) or not isinstance(racks, list) or not racks:
            raise ctx.error(stream, f"partition_racks.{partition}", "must list the replicas' racks")
        for rack in racks:
            if not is_valid_name(rack):
                raise ctx.error(
                    stream,
                    f"partition_racks.{partition}",
                    f"invalid rack {rack!r}: {name_rule()}",
                )
        found[partition] = tuple(racks)
    return types.MappingProxyType(found)
