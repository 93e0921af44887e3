"""A policy's strategy checked: it exists and plans the stream's kind, takes the given
parameters (of the right types, and builds with them), honours every budget limit set; for
``auto`` the candidates (default: every strategy of the kind that honours the budget) and their
parameters by candidate. Each check raises the error its ``ErrorContext`` makes (``PolicyError``
from ``routeplan.streams.policy``, naming the file, line, stream and field).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from typing import Any, Protocol

from routeplan.model.plan import BUDGET_LIMITS, Budget
from routeplan.parsing import fits_type
from routeplan.planning.budget import BUDGET_FIELDS, OLD_PARAMETERS, read_budget
from routeplan.planning.contract import KINDS, UnhonouredLimitError, check_budget
from routeplan.planning.registry import (
    get_strategy,
    strategy_names,
    strategy_parameter_types,
    strategy_parameters,
)

AUTO = "auto"


class ErrorContext(Protocol):
    """Where a policy entry comes from (``routeplan.streams.policy``'s context)."""

    where: str
    label: str | None
    given: frozenset[str]

    def error(self, stream: str, field_path: str, message: str) -> Exception: ...


def read_policy_budget(stream: str, fields: Mapping[str, Any], ctx: ErrorContext) -> Budget:
    unknown = sorted(set(fields) - set(BUDGET_FIELDS))
    if unknown:
        raise ctx.error(
            stream,
            f"budget.{unknown[0]}",
            f"not a budget field (one of {', '.join(BUDGET_FIELDS)})",
        )
    if "time_limit_s" in fields and fields["time_limit_s"] is None:
        raise ctx.error(stream, "budget.time_limit_s", "must be a number > 0, not null")
    try:
        reading = read_budget(fields)
    except ValueError as err:
        name = next((k for k in BUDGET_FIELDS if str(err).startswith(k)), None)
        raise ctx.error(stream, f"budget.{name}" if name else "budget", str(err)) from None
    for note in reading.notes:
        warnings.warn(f"{ctx.where}: stream {stream!r}: {note}", DeprecationWarning, stacklevel=2)
    return reading.budget


def check_strategy(stream: str, kind: str, name: Any, field_path: str, ctx: ErrorContext) -> None:
    known = strategy_names()
    if name not in known:
        raise ctx.error(
            stream,
            field_path,
            f"unknown strategy {name!r}; strategies of kind {kind}: "
            f"{', '.join(strategy_names(kind))}, or auto",
        )
    if name not in strategy_names(kind):
        other = next(k for k in KINDS if name in strategy_names(k))
        inherited = ""
        if field_path == "strategy" and ctx.label is None and "strategy" not in ctx.given:
            inherited = "; the stream inherits the strategy from defaults: set its own"
        raise ctx.error(
            stream,
            field_path,
            f"strategy {name!r} plans {other}, but the stream's kind is {kind} "
            f"(strategies of kind {kind}: {', '.join(strategy_names(kind))}){inherited}",
        )


def check_params(
    stream: str, strategy: str, params: Any, field_path: str, ctx: ErrorContext
) -> dict[str, Any]:
    """``params`` if ``strategy`` takes each of them, with values of the right type, and builds
    with them; a budget limit among them points to ``budget:``."""
    if not isinstance(params, Mapping):
        raise ctx.error(stream, field_path, f"must be a mapping of {strategy}'s parameters")
    accepted = strategy_parameters(strategy)
    types_ = strategy_parameter_types(strategy)
    renamed = {
        old: new for old, new in getattr(type(get_strategy(strategy)), "renamed", {}).items()
    }
    for key, value in params.items():
        where = f"{field_path}.{key}"
        if key in accepted:
            if not fits_type(value, types_.get(key)):
                raise ctx.error(
                    stream,
                    where,
                    f"{value!r} is not a {_type_name(types_.get(key))} "
                    f"(parameter of strategy {strategy!r})",
                )
            continue
        if key in OLD_PARAMETERS or key in BUDGET_FIELDS:
            budget_field = OLD_PARAMETERS.get(key, key)
            raise ctx.error(
                stream,
                where,
                f"{key} is a budget limit, not a parameter of strategy {strategy!r}; "
                f"set it as budget: {{{budget_field}: {value!r}}}",
            )
        if key in renamed:
            raise ctx.error(stream, where, f"strategy {strategy!r} renamed {key} to {renamed[key]}")
        raise ctx.error(
            stream,
            where,
            f"strategy {strategy!r} has no parameter {key!r}; its parameters: "
            f"{', '.join(accepted) or 'none'}",
        )
    try:
        get_strategy(strategy, **params)
    except (TypeError, ValueError) as err:
        name = next((k for k in params if k in str(err)), None)
        raise ctx.error(
            stream, f"{field_path}.{name}" if name else field_path, f"{strategy}: {err}"
        ) from None
    return dict(params)


def _type_name(annotation: Any) -> str:
    if annotation is None:
        return "value"
    if isinstance(annotation, type):
        return {"float": "number", "int": "integer", "str": "string", "bool": "boolean"}.get(
            annotation.__name__, annotation.__name__
        )
    return str(annotation).replace("typing.", "").replace("NoneType", "null")


def check_honoured(stream: str, strategy: str, budget: Budget, ctx: ErrorContext) -> None:
    try:
        check_budget(get_strategy(strategy), budget)
    except UnhonouredLimitError as err:
        limit = next((k for k in BUDGET_LIMITS if k in str(err)), "")
        raise ctx.error(stream, f"budget.{limit}" if limit else "budget", str(err)) from None


def auto_candidates(
    stream: str,
    kind: str,
    candidates: Any,
    params: Any,
    budget: Budget,
    ctx: ErrorContext,
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """``auto``'s candidates (default: every strategy of the kind that honours the budget) and
    their parameters (by candidate)."""
    if candidates is None:
        named = False
        candidates = []
        for name in strategy_names(kind):
            try:
                check_budget(get_strategy(name), budget)
            except UnhonouredLimitError:
                continue
            candidates.append(name)
        if not candidates:
            raise ctx.error(
                stream, "budget", f"no strategy of kind {kind} honours {budget.limits()}"
            )
    else:
        named = True
    if len(set(candidates)) != len(candidates):
        raise ctx.error(stream, "candidates", "a candidate is listed twice")
    for i, name in enumerate(candidates):
        if name == AUTO:
            raise ctx.error(stream, f"candidates.{i}", "auto cannot be its own candidate")
        check_strategy(stream, kind, name, f"candidates.{i}", ctx)
        if named:
            try:
                check_budget(get_strategy(name), budget)
            except UnhonouredLimitError:
                strategy = get_strategy(name)
                unhonoured = {k: v for k, v in budget.limits().items() if k not in strategy.honours}
                kept = ", ".join(sorted(strategy.honours)) or "no budget limit"
                limits = ", ".join(f"{k}={v}" for k, v in unhonoured.items())
                raise ctx.error(
                    stream,
                    f"budget.{next(iter(unhonoured))}",
                    f"candidate {name!r} cannot honour {limits} (it honours {kept}); drop it "
                    "from candidates or leave the limit unset",
                ) from None
    if not isinstance(params, Mapping):
        raise ctx.error(stream, "params", "for strategy auto: each candidate's parameters by name")
    checked = {}
    for name, values in params.items():
        if name not in candidates:
            raise ctx.error(
                stream,
                f"params.{name}",
                f"for strategy auto, params are given by candidate; {name!r} is not one "
                f"(candidates: {', '.join(candidates)})",
            )
        checked[name] = types.MappingProxyType(
            check_params(stream, name, values or {}, f"params.{name}", ctx)
        )
    return tuple(candidates), checked
