"""The one rule for stream and worker names, as routeplan's ``schemas/name.schema.json`` states it.

Names taken from data become paths (``<root>/<stream>/LATEST``) and URL segments, so the client
refuses a stream name that breaks the rule before any read. A valid name matches
``[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`` in full: 1–128 characters of Kafka's topic alphabet, never
starting with ``.`` or ``-`` — so ``.``, ``..``, ``a/b``, hidden files, empty strings, spaces,
newlines and non-ASCII letters are all refused.
"""

from __future__ import annotations

import re

NAME_PATTERN = "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}(?![\\s\\S])"  # the schema's pattern, verbatim
MAX_NAME_LENGTH = 128
_NAME = re.compile(NAME_PATTERN)

__all__ = ["InvalidNameError", "check_name", "is_valid_name", "name_rule"]


class InvalidNameError(ValueError):
    """A stream or worker name breaks the name rule."""


def name_rule() -> str:
    """The rule in words, for error messages."""
    return f"1-{MAX_NAME_LENGTH} characters of A-Z a-z 0-9 . _ -, not starting with '.' or '-'"


def is_valid_name(name: object) -> bool:
    """True iff ``name`` is a ``str`` that obeys the name rule (total: any object)."""
    return isinstance(name, str) and 0 < len(name) <= MAX_NAME_LENGTH and bool(_NAME.match(name))


def check_name(name: object, what: str = "stream") -> str:
    """``name`` itself, or ``InvalidNameError`` naming the value (shortened) and the rule."""
    if is_valid_name(name):
        return name  # type: ignore[return-value]
    shown = repr(name)  # escaped: control and other unprintable characters show as \x.., \U..
    shown = shown if len(shown) <= 60 else shown[:57] + "…"
    raise InvalidNameError(f"invalid {what} name {shown}: {name_rule()}")
