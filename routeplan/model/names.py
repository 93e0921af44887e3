"""The one rule for stream and worker names (``schemas/name.schema.json``).

Names taken from data become paths (``routing/<stream>/``, Delta's ``stream=<stream>``
partitions) and URL segments, so every boundary checks them with this module: ingest
(quarantine), the routing store (refuse), the HTTP API (4xx), the CLI and the client.

A valid name matches ``^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`` in full: 1–128 characters of
Kafka's topic alphabet, never starting with ``.`` or ``-`` — so ``.``, ``..``, ``a/b``, ``a\\b``,
hidden files, empty strings, spaces, newlines and non-ASCII letters are all refused.
"""

from __future__ import annotations

import re
from functools import cache

from routeplan.contracts.schemas import load_schema

__all__ = ["InvalidNameError", "check_name", "is_valid_name", "name_rule", "spark_name_regex"]


class InvalidNameError(ValueError):
    """A stream or worker name breaks the rule of ``schemas/name.schema.json``."""


@cache
def _schema() -> dict:
    return load_schema("name")


@cache
def _regex() -> re.Pattern[str]:
    return re.compile(_schema()["pattern"])


def max_length() -> int:
    return int(_schema()["maxLength"])


def name_rule() -> str:
    """The rule in words, for error messages."""
    return f"1-{max_length()} characters of A-Z a-z 0-9 . _ -, not starting with '.' or '-'"


def is_valid_name(name: object) -> bool:
    """True iff ``name`` is a ``str`` that obeys the name rule (total: any object)."""
    return (
        isinstance(name, str) and 0 < len(name) <= max_length() and _regex().match(name) is not None
    )


def check_name(name: object, what: str = "stream") -> str:
    """``name`` itself, or ``InvalidNameError`` naming the value (shortened) and the rule."""
    if is_valid_name(name):
        return name  # type: ignore[return-value]
    shown = repr(name)  # escaped: control and other unprintable characters show as \x.., \U..
    shown = shown if len(shown) <= 60 else shown[:57] + "…"
    raise InvalidNameError(f"invalid {what} name {shown}: {name_rule()}")


def spark_name_regex() -> str:
    """The pattern for Spark's ``rlike`` (Java regex; ``rlike`` searches, the pattern anchors)."""
    return _schema()["pattern"]
