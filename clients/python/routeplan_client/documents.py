"""Reading a routing table's JSON with bounds: every reader parses here.

A document comes from a file or a server that may be broken or hostile, so it is bounded before
it is parsed: at most ``max_bytes`` (256 MiB by default; a reader reads one byte more to tell)
and at most ``max_depth`` nested arrays and objects (64; a routing table needs fewer than 10).
The depth is measured before ``json.loads`` runs — strings removed, brackets counted — so a
200 000-deep array is a ``ValueError`` naming its source, never a ``RecursionError``.
"""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_MAX_BYTES = 256 * 2**20
DEFAULT_MAX_DEPTH = 64

# a string, or an unterminated one up to the end: every quote that starts a match succeeds at
# once, so the scan stays linear whatever the input (no retry from each escaped quote)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_OPEN = ord("[")


def parse_document(
    data: bytes | str,
    where: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """``data`` parsed as JSON, or ``ValueError`` naming ``where`` when it is larger than
    ``max_bytes``, nested deeper than ``max_depth`` or not JSON."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    check_bounds(raw, where, max_bytes, max_depth)
    try:
        return json.loads(raw)
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise ValueError(f"{where}: not JSON: {err}") from None


def check_bounds(
    raw: bytes, where: str, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> None:
    """``ValueError`` naming ``where`` when ``raw`` is larger than ``max_bytes`` or its arrays
    and objects nest deeper than ``max_depth``."""
    if len(raw) > max_bytes:
        raise ValueError(f"{where}: more than {max_bytes} bytes (max_bytes)")
    if _deeper_than(raw, max_depth):
        raise ValueError(f"{where}: JSON nested deeper than {max_depth} levels")


def _deeper_than(raw: bytes, max_depth: int) -> bool:
    """True when arrays and objects in ``raw`` nest deeper than ``max_depth`` (brackets inside
    strings do not count; an unbalanced document is left for the parser to refuse). The depth
    after each bracket is a running sum of +1 (open) and -1 (close); ``[[[`` runs are skipped
    at once when they cannot reach the bound."""
    brackets = _STRING.sub(b"", raw).translate(_AS_SQUARE, _NOT_BRACKET)
    if len(brackets) <= max_depth:
        return False
    depth = 0
    for b in brackets:
        depth += 1 if b == _OPEN else -1
        if depth > max_depth:
            return True
    return False
