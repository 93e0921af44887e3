"""routeplan_client.jcs: RFC 8785 canonical JSON (the routing table's checksum)."""

from __future__ import annotations

import json

import pytest

from routeplan_client.jcs import canonical_json, number_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.5, "-1.5"),
        (4.5, "4.5"),
        (0.1, "0.1"),
        (1 / 3, "0.3333333333333333"),
        (1e-4, "0.0001"),
        (1e-5, "0.00001"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.25e-7, "1.25e-7"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),  # beyond 2^53: the nearest double, as other readers
        (123456789012345678901, "123456789012345680000"),
        (4294967295, "4294967295"),
    ],
)
def test_numbers_are_written_as_ecmascript_writes_them(value, text):
    assert number_text(value) == text
    assert float(text) == float(value)


def test_members_sort_by_utf16_code_units_not_code_points():
    doc = {"\ue000": 1, "\U0001f600": 2, "a": 3, "": 4}
    # U+1F600 is the surrogate pair D83D DE00, below E000 in UTF-16 (above it as a code point)
    assert canonical_json(doc) == '{"":4,"a":3,"😀":2,"\ue000":1}'.encode()


def test_strings_escape_only_quote_backslash_and_controls():
    text = canonical_json(["\x00\x1f\x7f", '"\\/', "\b\f\n\r\t", "é€😀"]).decode()
    assert text == '["\\u0000\\u001f\x7f","\\"\\\\/","\\b\\f\\n\\r\\t","é€😀"]'


def test_what_is_not_json_is_refused():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="not a JSON number"):
            canonical_json([bad])
    with pytest.raises(ValueError, match="lone surrogate"):
        canonical_json(json.loads('["\\ud800"]'))
    with pytest.raises(ValueError, match="member names are strings"):
        canonical_json({1: 2})
    with pytest.raises(TypeError, match="set is not a JSON value"):
        canonical_json({"a": {1}})
