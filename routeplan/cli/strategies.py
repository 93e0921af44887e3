"""The command line's strategy arguments, checked against what can run them: a strategy name
(the planning registry's, or the simulator's online schemes) and ``--param`` values (against the
strategy's parameter types and its own checks). They live in the CLI layer, above
``routeplan.planning`` and ``routeplan.simulation``, which ``routeplan.parsing`` sits below; each
raises ``argparse.ArgumentTypeError`` (a type function) or ``UsageError`` as ``parsing`` does.
The registry and the simulator are imported on first use, so ``routeplan --help`` stays cheap.
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from routeplan.errors import UsageError
from routeplan.parsing import comma_list, fits_type

__all__ = [
    "check_strategy_params",
    "key_routing_strategy_name",
    "online_strategy_list",
    "online_strategy_name",
    "strategy_name",
]


def _choose(text: str, known: Iterable[str], what: str) -> str:
    known = list(known)
    if text not in known:
        raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; known: {', '.join(known)}")
    return text


def strategy_name(text: str) -> str:
    """Any registered strategy."""
    from routeplan.planning.registry import strategy_names

    return _choose(text.strip(), strategy_names(), "strategy")


def key_routing_strategy_name(text: str) -> str:
    """A registered strategy that routes key groups (``routeplan plan``); a partition strategy
    is refused with a pointer to ``routeplan binpack``, which plans partitions."""
    from routeplan.planning.registry import strategy_names

    name = text.strip()
    if name in strategy_names("partition_assignment"):
        raise argparse.ArgumentTypeError(
            f"{name!r} assigns partitions to consumers: plan it with routeplan binpack"
        )
    return _choose(name, strategy_names("key_routing"), "key-routing strategy")


def online_strategy_name(text: str) -> str:
    """A strategy the stream simulator can replay."""
    from routeplan.simulation.online import ONLINE_SCHEMES

    return _choose(text.strip(), ONLINE_SCHEMES, "strategy")


def online_strategy_list(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(online_strategy_name(s) for s in comma_list(text)))


def check_strategy_params(strategy: str, params: Mapping[str, object]) -> dict[str, Any]:
    """``params`` for ``strategy``: ``UsageError`` for a name it does not take or a value of the
    wrong type (by the annotations of its constructor); integral floats become ints."""
    from routeplan.planning.registry import strategy_parameter_types

    hints = strategy_parameter_types(strategy)
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in hints:
            raise UsageError(
                f"--param {key}: strategy {strategy!r} takes no such parameter; "
                f"it takes: {', '.join(hints) or 'none'}"
            )
        hint = hints[key]
        if hint is not None and not fits_type(value, hint):
            if _fits_integer(value, hint):
                value = int(value)  # type: ignore[arg-type]
            else:
                raise UsageError(
                    f"--param {key}={json.dumps(value)}: {strategy}'s {key} takes {_describe(hint)}"
                )
        out[key] = value
    if out:  # the strategy's own checks of its values (ranges, choices), as a usage error
        from routeplan.planning.registry import get_strategy

        try:
            get_strategy(strategy, **out)
        except ValueError as err:
            given = " ".join(f"{k}={json.dumps(v)}" for k, v in out.items())
            raise UsageError(f"--param {given}: {strategy}: {err}") from None
    return out


def _fits_integer(value: object, hint: Any) -> bool:
    return isinstance(value, float) and value.is_integer() and fits_type(int(value), hint)


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    names = {type(None): "null", bool: "true or false", int: "an integer", str: "a string"}
    if hint is float:
        return "a finite number"
    if hint in names:
        return names[hint]
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return f"a JSON object of {_describe(args[1]) if args else 'values'}"
    return str(hint)
