"""Typed text values, checked one way wherever text comes in: the command line, the simulator's
``zipf:`` / ``generate:`` specs, the Spark jobs' ``--param`` and the DAG's arguments.

A library module low in the layers (it imports only ``routeplan.errors`` and
``routeplan.model``; the CLI, the simulator and the jobs import it). What needs the strategies
— strategy names, ``--param`` values checked against a strategy — is the CLI's
(``routeplan.cli.strategies``):

* type functions for numbers (finite, within bounds), names (``routeplan.model.names``), dates
  and versions, usable as argparse ``type=``; each raises ``argparse.ArgumentTypeError`` naming
  the value and what is allowed, which argparse reports as ``argument --flag: …`` (exit code 2);
* ``parse_spec``: the one parser of ``K=V[,K=V…]`` specs (``zipf:…``, ``generate:…``,
  ``--capacities``), each key with its own type function; ``param_pair``: one ``--param K=V``
  with a JSON value (the CLI and ``jobs/plan.py``);
* ``fits_type``: whether a value suits a type annotation (the CLI's ``--param`` checks and the
  streams' policies use it against a strategy's parameter types);
* the limits on sizes a request may ask for, checked before anything is allocated.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from routeplan.errors import UsageError
from routeplan.model.hashing import MAX_NUM_KEY_GROUPS
from routeplan.model.names import InvalidNameError, check_name

__all__ = [
    "MAX_KEYS",
    "MAX_MESSAGES",
    "MAX_NUM_KEY_GROUPS",
    "MAX_PARTITIONS",
    "MAX_WORKERS",
    "TypeFunction",
    "checked",
    "comma_list",
    "finite_float",
    "fits_type",
    "integer",
    "iso_date",
    "key_group_count",
    "name_list",
    "nonnegative_float",
    "nonnegative_int",
    "number",
    "param_pair",
    "parse_spec",
    "port",
    "positive_float",
    "positive_int",
    "probability",
    "split_pair",
    "stream_name",
    "version_number",
    "worker_count",
]

MAX_WORKERS = 2**16  # workers (or consumers, sources) a command may ask for
MAX_PARTITIONS = 2**20  # partitions of a topic (a partition number is below this)
MAX_MESSAGES = 10**9  # messages of a synthetic stream (zipf:, generate:, --events)
MAX_KEYS = 10**8  # distinct keys of a synthetic stream

TypeFunction = Callable[[str], Any]
_INTEGER = re.compile(r"[+-]?\d[\d_]*")


def _named(function: TypeFunction, name: str) -> TypeFunction:
    function.__name__ = name  # argparse names the type in some of its messages
    return function


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def integer(low: int | None = None, high: int | None = None) -> TypeFunction:
    """An integer in ``low..high`` (``1e6`` is accepted for 1000000, ``2.5`` is not)."""
    if low is not None and high is not None:
        allowed = f"an integer in {low}..{high}"
    else:
        allowed = f"an integer {_bounds(low, high, False, False)}".rstrip()

    def parse(text: str) -> int:
        text = text.strip()
        value: int | None = None
        if _INTEGER.fullmatch(text):
            value = int(text)
        else:
            with_float = _float_or_none(text)
            if with_float is not None and math.isfinite(with_float) and with_float.is_integer():
                value = int(with_float)
        too_low = value is not None and low is not None and value < low
        too_high = value is not None and high is not None and value > high
        if value is None or too_low or too_high:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text!r}")
        return value

    return _named(parse, "integer")


def number(
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> TypeFunction:
    """A finite number within the bounds (open or closed)."""
    allowed = f"a finite number {_bounds(low, high, low_open, high_open)}".rstrip()

    def parse(text: str) -> float:
        value = _float_or_none(text.strip())
        if (
            value is None
            or not math.isfinite(value)
            or (low is not None and (value <= low if low_open else value < low))
            or (high is not None and (value >= high if high_open else value > high))
        ):
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {text.strip()!r}")
        return value

    return _named(parse, "number")


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


positive_int = integer(1)
nonnegative_int = integer(0)
worker_count = integer(1, MAX_WORKERS)
key_group_count = integer(1, MAX_NUM_KEY_GROUPS)
port = integer(0, 65535)
finite_float = number()
positive_float = number(0, low_open=True)
nonnegative_float = number(0)
probability = number(0, 1)


def stream_name(text: str) -> str:
    """A stream name obeying ``routeplan.model.names`` (so never a path such as ``../x``)."""
    return _name(text, "stream")


def _name(text: str, what: str) -> str:
    try:
        return check_name(text, what)
    except InvalidNameError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def comma_list(text: str) -> tuple[str, ...]:
    """``a,b,c`` → ``("a", "b", "c")`` (blanks dropped, at least one item)."""
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def name_list(text: str) -> tuple[str, ...]:
    """A comma-separated list of stream names."""
    return tuple(stream_name(s) for s in comma_list(text))


def iso_date(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def version_number(text: str) -> int:
    """A version number (``3`` or ``v3``)."""
    value = text.strip().lower().removeprefix("v")
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a version number >= 1 (3 or v3), got {text!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# K=V specs


def checked(parse: TypeFunction, text: str, what: str) -> Any:
    """``parse(text)``, its refusal as a ``UsageError`` that starts with ``what``."""
    try:
        return parse(text)
    except (argparse.ArgumentTypeError, ValueError) as err:
        raise UsageError(f"{what}: {err}") from None


def split_pair(item: str, what: str) -> tuple[str, str]:
    """``"k=v"`` → ``("k", "v")`` (stripped); ``UsageError`` unless there is a key and a ``=``."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{what}: expected K=V, got {item.strip()!r}")
    return key.strip(), value.strip()


def parse_spec(text: str, fields: Mapping[str, TypeFunction], what: str) -> dict[str, Any]:
    """``k=v[,k=v…]`` → ``{k: fields[k](v)}``: ``UsageError`` naming ``what``, the key, the value
    and what is allowed for an unknown or repeated key or a value its type function refuses."""
    pairs = [split_pair(item, what) for item in text.split(",") if item.strip()]
    unknown = sorted({k for k, _ in pairs} - set(fields))
    if unknown:
        raise UsageError(f"unknown {what} fields: {unknown}; known: {', '.join(fields)}")
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise UsageError(f"{what}: {key} given twice")
        try:
            out[key] = fields[key](value)
        except (argparse.ArgumentTypeError, ValueError) as err:
            raise UsageError(f"{what}: {key}: {err}") from None
    return out


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _finite_json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def param_pair(text: str) -> tuple[str, object]:
    """``--param K=V``: ``V`` as JSON when it parses (never NaN or infinite), else a string."""
    try:
        key, value = split_pair(text, "--param")
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    try:
        return key, json.loads(
            value, parse_constant=_refuse_constant, parse_float=_finite_json_float
        )
    except json.JSONDecodeError:
        return key, value
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{key}={value!r}: {err}") from None


def fits_type(value: object, hint: Any) -> bool:
    """Whether ``value`` (parsed from text, JSON or YAML) suits the type annotation ``hint``:
    unions, None, bool, int (not bool), finite float, str, mappings and lists of those; an
    annotation this check does not know accepts the value (the strategy checks it)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(fits_type(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    if hint is str:
        return isinstance(value, str)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        kt, vt = args or (Any, Any)
        return isinstance(value, dict) and all(
            fits_type(k, kt) and fits_type(v, vt) for k, v in value.items()
        )
    if origin is not None and isinstance(origin, type) and issubclass(origin, list | tuple):
        if not args:
            return True
        return isinstance(value, list) and all(fits_type(v, args[0]) for v in value)
    return True  # an annotation this check does not know: the strategy checks the value
