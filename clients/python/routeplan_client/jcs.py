"""RFC 8785, the JSON Canonicalization Scheme (JCS): one byte string per JSON value, any language.

A routing table's checksum is the SHA-256 of its document in this form (without ``checksum``), so
a Java or Go producer verifies it from the JSON alone (docs/routing-spec.md):

* objects: members sorted by their names compared as UTF-16 code units (not code points: a name
  with a character above U+FFFF sorts before one with U+E000–U+FFFF), no white space;
* strings: UTF-8; only ``"``, ``\\`` and the controls U+0000–U+001F are escaped — ``\\b \\t \\n
  \\f \\r`` by their short forms, the others as ``\\u00xx`` in lower-case hex;
* numbers: IEEE-754 doubles written as ECMAScript's ``Number.prototype.toString`` writes them:
  the shortest digits that read back as the same double, plain from 1e-6 to below 1e21
  (``4.5``, ``0.000001``, ``100``), else ``1e+21``, ``1.5e-7``; ``-0`` is ``0``; integers
  beyond 2^53 are first rounded to the nearest double (as every other reader of the JSON does).
  NaN and infinities are not JSON and are refused;
* ``true``, ``false``, ``null`` as they are.

``canonical_json`` writes arrays of plain strings through the C JSON encoder (whose escaping with
``ensure_ascii=False`` is exactly JCS's), so a 2^24-entry ``key_group_worker`` takes about a
second.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

_dump_string = json.JSONEncoder(ensure_ascii=False).encode  # C escaping = JCS's (see above)
_dump_strings = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_EXACT = 2**53


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 (JCS) form of ``value`` (dicts, lists and tuples, str, int, float, bool,
    None) as UTF-8 bytes; ValueError for a NaN, an infinity, a non-string member name or a lone
    surrogate, TypeError for any other type."""
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"not valid Unicode (a lone surrogate?): {err}") from None


def number_text(x: float | int) -> str:
    """ECMAScript's ``Number.prototype.toString`` of ``x`` read as a double (RFC 8785 §3.2.2.3)."""
    if isinstance(x, int) and -_EXACT <= x <= _EXACT:
        return str(x)  # exact as a double, and written with no exponent below 1e21
    x = float(x)  # OverflowError for an integer beyond the doubles
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a JSON number")
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 1e16:  # repr writes these without an exponent, as ECMAScript does
        text = repr(x)
        return text[:-2] if text.endswith(".0") else text
    sign = "-" if x < 0 else ""
    # repr is the shortest round-trip (and then the closest) digit string, as ECMAScript's
    _, digits, exponent = Decimal(repr(abs(x))).normalize().as_tuple()
    s = "".join(map(str, digits))
    k = len(s)
    n = int(exponent) + k  # value = 0.s × 10^n
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + s
    e = n - 1
    mantissa = s if k == 1 else s[0] + "." + s[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _utf16_order(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_dump_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, float)):
        out.append(number_text(value))
    elif isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("JSON member names are strings")
        out.append("{")
        for i, name in enumerate(sorted(value, key=_utf16_order)):
            if i:
                out.append(",")
            out.append(_dump_string(name))
            out.append(":")
            _write(value[name], out)
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        if value and all(type(v) is str for v in value):  # the fast path: key_group_worker
            out.append(_dump_strings(list(value)))
            return
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")
