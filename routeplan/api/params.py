"""The API's path and query parameters that name a stream or a version: one spelling each, so
one table never has two addresses (each cached forever as immutable)."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Path as PathParam
from pydantic import BeforeValidator

MAX_VERSION = 2**63 - 1  # larger numbers are no version (and no file name)

StreamParam = Annotated[
    str,
    PathParam(
        description="stream name, e.g. `clicks` (1-128 characters of A-Z a-z 0-9 . _ -, "
        "not starting with `.` or `-`; others are 404)"
    ),
]
_CANONICAL_VERSION = re.compile(r"[1-9][0-9]{0,18}")  # as a file name spells it: v<N>.json


def canonical_version(value: object) -> object:
    """Refuse a version not spelled as its file name spells it (422): ``1.0``, ``01``, ``+1``,
    `` 1``, ``1e0``, ``1_0`` would all be 1 to a lax integer parser, so one table would have
    many addresses (each cached forever as immutable)."""
    if isinstance(value, str) and not _CANONICAL_VERSION.fullmatch(value):
        raise ValueError(
            "a version is a whole number written in plain digits, without a sign, leading "
            f"zeros, a fraction, an exponent or spaces (3, not 03 or 3.0), from 1 to {MAX_VERSION}"
        )
    return value


VERSION_RULE = "plain digits: 3, never 03, +3, 3.0 or 3e0 (those are 422)"
VersionParam = Annotated[
    int,
    BeforeValidator(canonical_version),
    PathParam(ge=1, le=MAX_VERSION, description=f"a published version, in {VERSION_RULE}"),
]
