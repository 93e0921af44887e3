"""The hostile-ingest campaign's data and its oracle (tests/test_ingest_hostile.py runs them
through the real ingest job).

The oracle is independent of the job: Python's strict UTF-8 decoding, ``json.loads`` (which
refuses trailing text; its numbers read as exact decimals), the stream-event JSON Schema
(``jsonschema``), and the interval. For every row it predicts the bronze row — with exactly
which values — or None (quarantined). The fuzzer writes JSON Lines, CSV and Parquet records
with value mutations of every kind the schema refuses or must keep."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import random
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from jobs.landing_read import MAX_RECORD_BYTES
from routeplan.contracts.schemas import load_schema, validate_document

DAY = "2026-11-20"
START = datetime(2026, 11, 20, tzinfo=UTC)
END = datetime(2026, 11, 21, tzinfo=UTC)
BIG = 10**40  # an exact integer beyond this is out of every range: the oracle stops there
NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
FIELDS = tuple(load_schema("stream_event")["properties"])  # a bronze row's event fields
INTEGER_FIELDS = ("partition", "size_bytes", "routing_version")
NUMBER_FIELDS = ("cost_ms",)
# ts texts whose meaning both Python and Spark agree on (the oracle does not parse dates)
TS_TEXTS = {
    "2026-11-20T10:00:00Z": datetime(2026, 11, 20, 10, tzinfo=UTC),
    "2026-11-20 23:59:59": datetime(2026, 11, 20, 23, 59, 59, tzinfo=UTC),
    "2026-11-21T00:00:01Z": datetime(2026, 11, 21, 0, 0, 1, tzinfo=UTC),  # outside
    "yesterday-ish": None,
    "2026-13-40T00:00:00Z": None,
}


# ---------------------------------------------------------------------------- the oracle


def expected_row(record: dict) -> dict | None:
    """The bronze row a schema-valid record becomes, or None when it must be quarantined.
    Numbers may be exact decimals (``json.loads(..., parse_float=Decimal)``): an integer field
    (and ts) holds an integer only when the decimal is exactly integral."""
    record = {k: v for k, v in record.items() if v is not None}
    for name, value in record.items():
        if not isinstance(value, Decimal):
            continue
        if name not in INTEGER_FIELDS + ("ts",):
            record[name] = float(value)  # a number field is a double
        elif value != value.to_integral_value():
            return None  # a fraction, however small, is not an integer
        else:
            record[name] = int(max(min(value, Decimal(BIG)), Decimal(-BIG)))
    try:
        validate_document("stream_event", record)
    except ValueError:
        return None
    if not all(math.isfinite(record[n]) for n in INTEGER_FIELDS + NUMBER_FIELDS if n in record):
        return None  # NaN and ±Infinity (Parquet floats, 1e400) are not numbers
    ts = record["ts"]
    if isinstance(ts, str):
        if re.fullmatch(r"-?[0-9]+", ts):
            ts = int(ts)
        elif ts in TS_TEXTS:
            ts = TS_TEXTS[ts]
        else:
            raise AssertionError(f"the fuzzer made a ts the oracle cannot judge: {ts!r}")
    if isinstance(ts, int | float):
        if ts != int(ts) or not START.timestamp() * 1000 <= int(ts) < END.timestamp() * 1000:
            return None
        ts = datetime.fromtimestamp(int(ts) / 1000, UTC)
    if ts is None or not START <= ts < END:
        return None
    return {
        "stream": record.get("stream", "default"),
        "key": record["key"],
        "event_id": record.get("event_id"),
        "ts": ts.replace(tzinfo=None),
        "partition": None if "partition" not in record else int(record["partition"]),
        "worker": record.get("worker"),
        "size_bytes": int(record.get("size_bytes", 1)),
        "cost_ms": None if "cost_ms" not in record else float(record["cost_ms"]),
        "upstream_stream": record.get("upstream_stream"),
        "upstream_key": record.get("upstream_key"),
        "routing_version": (
            None if "routing_version" not in record else int(record["routing_version"])
        ),
    }


def judge_json_line(line: bytes) -> dict | None | str:
    """A JSON Lines line (split at LF; one CR before the LF is part of the line end):
    ``"skip"`` (blank), the row it becomes, or None (quarantine)."""
    line = line.removesuffix(b"\r")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip(" \t\r\n"):  # JSON's whitespace
        return "skip"
    if len(line) > MAX_RECORD_BYTES:
        return None

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    def no_constants(name):
        raise ValueError(name)

    try:
        record = json.loads(
            text,
            object_pairs_hook=no_duplicates,
            parse_constant=no_constants,
            parse_float=Decimal,  # exact: 3.0000000000000000001 is not 3.0
        )
    except ValueError:
        return None
    return expected_row(record) if isinstance(record, dict) else None


def judge_text_record(record: dict[str, str]) -> dict | None:
    """A CSV record (or Parquet string columns): text read as each field's type."""
    typed: dict = {}
    for name, text in record.items():
        if text == "" or text is None:
            continue
        if name in INTEGER_FIELDS + NUMBER_FIELDS:
            if not NUMBER.fullmatch(text):
                return None
            typed[name] = json.loads(text, parse_float=Decimal)
        else:
            typed[name] = text
    return expected_row(typed)


# ---------------------------------------------------------------------------- the fuzzer


def base_record(rng: random.Random, i: int) -> dict:
    record = {
        "event_id": f"e{i}",
        "key": rng.choice(["k1", "user-42", "Ärger", "日本", "a,b", 'say "hi"']),
        "ts": rng.choice(["2026-11-20T10:00:00Z", 1795168800000 + i]),
        "stream": rng.choice(["clicks", "orders", None]),
        "partition": rng.choice([0, 7, None]),
        "worker": rng.choice(["w1", "w-2", None]),
        "size_bytes": rng.choice([1, 512, None]),
        "cost_ms": rng.choice([0.5, 3, None]),
    }
    return {k: v for k, v in record.items() if v is not None}


# value mutations, each applied to one field of a JSON record: (field, new value)
JSON_MUTATIONS = [
    ("key", 42),  # a number where the schema wants a string
    ("key", {"a": 1}),
    ("key", ["x"]),
    ("key", ""),
    ("key", "  padded  "),  # valid: spaces are part of the key
    ("key", "line\nbreak"),
    ("key", "tab\there"),
    ("stream", "../../escape"),
    ("stream", "s" * 300),
    ("stream", " clicks"),
    ("stream", ""),
    ("stream", "ok.stream_1"),
    ("worker", "w/1"),
    ("worker", True),
    ("partition", 3.0),  # valid: an integer in JSON Schema
    ("partition", 3.5),
    ("partition", 2**31),
    ("partition", 2**31 - 1),
    ("partition", -1),
    ("partition", "3"),
    ("size_bytes", "12"),
    ("size_bytes", 2**63),
    ("size_bytes", 1e2),
    ("cost_ms", -0.1),
    ("cost_ms", "fast"),
    ("cost_ms", 1e300),
    ("ts", "yesterday-ish"),
    ("ts", "2026-13-40T00:00:00Z"),
    ("ts", "2026-11-21T00:00:01Z"),
    ("ts", "2026-11-20 23:59:59"),
    ("ts", 1795168800000.0),
    ("ts", 1795168800000.5),
    ("ts", None),
    ("event_id", ""),
    ("event_id", 7),
    ("upstream_stream", "a b"),
    ("upstream_key", "up"),
    ("routing_version", 3),
    ("routing_version", 2.0),  # valid: an integer in JSON Schema
    ("routing_version", 0),  # versions start at 1
    ("routing_version", -4),
    ("routing_version", "5"),
    ("routing_version", 2**31),
]


def json_line(rng: random.Random, i: int) -> bytes:
    record = base_record(rng, i)
    kind = rng.randrange(12)
    if kind < 5:  # a field mutation
        field, value = rng.choice(JSON_MUTATIONS)
        if value is None:
            record.pop(field, None)
        else:
            record[field] = value
    line = json.dumps(record, ensure_ascii=rng.random() < 0.5).encode()
    if kind == 5:
        line = line.replace(b"k1", b"k\xff1").replace(b"user", b"us\xc3er")  # invalid UTF-8
    elif kind == 6:
        line = line + rng.choice([b" trailing", b'{"key": "x"}', b"]", b", 1"])
    elif kind == 7:
        line = line.replace(b'"', b"'")
    elif kind == 8:
        line = line[: rng.randrange(1, len(line))]
    elif kind == 9:
        line = line[:-1] + b', "key": "dup"}'  # a key given twice
    elif kind == 10:
        line = rng.choice([b"[1, 2]", b'"just a string"', b"null", b"   "])
    return line


CSV_MUTATIONS = [
    *("3.0", "3.5", "-1", "2147483648", "1e2", "x", " k ", "a\nb", "../x", "", "0"),
    *("3.00000000001", "7.000000000001", "30e-1", "1e400", "-1e400", "1e19"),
]


def csv_rows(
    rng: random.Random, first: int, n: int, mutate: float = 0.4
) -> tuple[list[str], list[list[str]]]:
    """CSV rows; a mutated row has one field (never event_id, so ids stay unique) replaced."""
    header = [
        "event_id",
        "ts",
        "key",
        "stream",
        "partition",
        "worker",
        "size_bytes",
        "cost_ms",
        "routing_version",
    ]
    rows = []
    for i in range(first, first + n):
        record = base_record(rng, i)
        row = [str(record.get(h, "")) for h in header]
        if rng.random() < mutate:
            column = rng.randrange(1, len(header))
            choices = [*TS_TEXTS, "", "1795168800000"] if header[column] == "ts" else CSV_MUTATIONS
            row[column] = rng.choice(choices)
        rows.append(row)
    return header, rows


def write_csv(path: Path, header: list[str], rows: list[list[str]], bom: bool, gz: bool) -> None:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    payload = ("\ufeff" if bom else "").encode() + out.getvalue().encode()
    path.write_bytes(gzip.compress(payload, mtime=0) if gz else payload)


def judge_csv(header: list[str], rows: list[list[str]]) -> list[dict | None]:
    return [judge_text_record(dict(zip(header, row, strict=True))) for row in rows]


# numbers as written in JSON Lines, each in one line of its own: (field, text)
NUMBER_TEXTS = {
    "partition": (
        *("1e400", "-1e400", "3.00000000001", "3.0000000000000000001e0", "3e0", "30e-1"),
        *("3.0", "-0.0", "1e19", "2147483647e0", "2.147483648e9", "0e999999999999"),
        *("1e-999999999999", "1E+1", "2.5e0", "1.0000000000000000000000000000000000000000001"),
    ),
    "size_bytes": (
        *("-1e400", "7.000000000001", "9.223372036854775807e18", "9223372036854775807"),
        *("9223372036854775808", "92233720368547758070e-1", "1e19", "7.0000000000000000001"),
    ),
    "routing_version": ("1.00000000001", "2e0", "1e400"),
    "cost_ms": ("1e400", "-1e400", "1e-400", "2.5e0"),
    "ts": (
        *("1795168800000.00000000001", "1.7951688e12", "1795168800000.0", "1e400"),
        *("9223372036854775807", "-9223372036854775808", "1.79516880000000000001e12"),
    ),
}
BASE = '"key": "k", "ts": "2026-11-20T10:00:00Z"'
NUMBER_LINES = [  # a key's spelling and depth: only the top-level "partition" counts
    '{"event_id": "n-nested", ' + BASE + ', "x": {"partition": 1}, '
    '"partition": 3.0000000000000000001e0}',
    '{"event_id": "n-escaped", ' + BASE + ', "x": {"partition": 3e0}, '
    '"p\\u0061rtition": 3.0000000000000000001e0}',
    '{"event_id": "n-escaped-ok", ' + BASE + ', "p\\u0061rtition": 3e0}',
    '{"event_id": "n-in-string", "key": "{\\"partition\\": 1e0", "ts": "2026-11-20T10:00:00Z", '
    '"partition": 2.5e0}',
    '{"event_id": "n-deep", ' + BASE + ', "y": [[[[[[[[[[[{"partition": 7e-1}]]]]]]]]]]], '
    '"partition": 5e0, "z": {"a": [{"partition": 1.5e0}]}}',
    '{"event_id": "n-stream", ' + BASE + ', "stream": "invalid\\n"}',  # a line break in a name
    '{"event_id": "n-stream-2", ' + BASE + ', "stream": "a: b (c)\\r\\u2028"}',
]


def number_lines() -> list[bytes]:
    lines = []
    for field, texts in NUMBER_TEXTS.items():
        for j, text in enumerate(texts):
            body = f'"key": "k", "ts": {text}' if field == "ts" else f'{BASE}, "{field}": {text}'
            lines.append(f'{{"event_id": "n-{field}-{j}", {body}}}'.encode())
    return lines + [line.encode() for line in NUMBER_LINES]


# Parquet float columns where the schema wants integers (and a double): (field, value)
FLOAT_VALUES = [
    *[("partition", v) for v in (3.0, 3.5, math.nan, math.inf, -math.inf, 1e19, -0.0)],
    *[("partition", v) for v in (2147483647.0, 2147483648.0)],
    *[("size_bytes", v) for v in (7.000000000001, math.nan, math.inf, 2.0**63, 2.0**62)],
    *[("size_bytes", v) for v in (9.223372036854775e18, 5e-324, 1e300)],
    *[("cost_ms", v) for v in (math.nan, math.inf, -math.inf, 0.25, 5e-324)],
]
