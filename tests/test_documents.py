"""``routeplan.contracts.documents``: bounded JSON reading."""

from __future__ import annotations

import pytest

from routeplan.contracts.documents import parse_document


def test_the_depth_bound_counts_containers_not_brackets_in_strings():
    at_limit = "[" * 63 + '{"k": "[[[[{{{{"}' + "]" * 63  # 64 levels, brackets in a string
    assert parse_document(at_limit.encode(), "x")[0] is not None
    with pytest.raises(ValueError, match="x: JSON nested deeper than 64 levels"):
        parse_document(("[" + at_limit + "]").encode(), "x")
    escaped = '{"k\\"[[": "\\\\", "v": [[1]]}'  # escaped quotes and backslashes end no string
    assert parse_document(escaped.encode(), "x", max_depth=3) == {'k"[[': "\\", "v": [[1]]}
    with pytest.raises(ValueError, match="x: JSON nested deeper than 2 levels"):
        parse_document(escaped.encode(), "x", max_depth=2)
    with pytest.raises(ValueError, match="x: not JSON: Expecting value"):
        parse_document(b"[1,", "x")
    for unterminated in (b'"' + b'\\"' * 200_000, b'["' + b"[" * 100 + b"\\"):  # linear scan
        with pytest.raises(ValueError, match="x: not JSON: Unterminated string"):
            parse_document(unterminated, "x")
    with pytest.raises(ValueError, match=r"x: more than 3 bytes \(max_bytes\)"):
        parse_document(b"[1,2]", "x", max_bytes=3)
