"""Hostile landing files through the real ingest job (Spark + Delta), judged by an oracle.

The oracle (``tests/hostile_oracle.py``) is independent of the job. For every file it
predicts which rows are written — with exactly which values — and how many are quarantined; the
job must agree file by file: read = written + quarantined, every written row byte-identical to
its input, every quarantined row with a reason, every unreadable file one quarantine row naming
it.

Landing files are read by their exact paths (names with glob characters, ``:``, spaces), line
ends are LF or CRLF (a CR elsewhere is the record's), a JSON line longer than
``MAX_RECORD_BYTES`` is quarantined as too large, and a symlink is followed only inside the
landing folder: everything else the listing finds is refused whole, unread.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import random
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hostile_oracle import (
    DAY,
    FIELDS,
    FLOAT_VALUES,
    NUMBER,
    START,
    base_record,
    csv_rows,
    expected_row,
    json_line,
    judge_csv,
    judge_json_line,
    number_lines,
    write_csv,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs import ingest
from jobs.bronze import check_thresholds
from jobs.landing_read import MAX_RECORD_BYTES, TOO_LARGE
from routeplan.model.names import is_valid_name, spark_name_regex

pytestmark = pytest.mark.spark
# ---------------------------------------------------------------------------- the scenario


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, spark):
    """One landing day of hostile files, its oracle, and the ingest report."""
    home = tmp_path_factory.mktemp("hostile")
    folder = home / "landing" / DAY
    folder.mkdir(parents=True)
    rng = random.Random(20261120)
    expect: dict[str, list] = {}  # file name → per row: expected bronze row or None
    bad_files: set[str] = set()
    n = 0

    def add_jsonl(name: str, lines: list[bytes], gz: bool = False) -> None:
        payload = b"\n".join(lines) + b"\n"
        (folder / name).write_bytes(gzip.compress(payload, mtime=0) if gz else payload)
        judged = [judge_json_line(line) for line in lines]
        expect[name] = [j for j in judged if j != "skip"]

    for f in range(4):  # fuzzed JSON Lines, two of them gzip
        lines = [json_line(rng, n + i) for i in range(150)]
        n += 150
        add_jsonl(f"fuzz{f}.jsonl" + (".gz" if f % 2 else ""), lines, gz=bool(f % 2))
    for f in range(3):  # fuzzed CSV, one with a byte-order mark, one gzip
        header, rows = csv_rows(rng, n, 120)
        n += 120
        name = f"fuzz{f}.csv" + (".gz" if f == 2 else "")
        write_csv(folder / name, header, rows, bom=f == 1, gz=f == 2)
        expect[name] = judge_csv(header, rows)
    # a CSV whose data rows hold invalid UTF-8: those rows quarantined with their bytes, the
    # others written — a valid U+FFFD (EF BF BD) among them
    header, rows = csv_rows(rng, n, 30, mutate=0)
    n += 30
    rows[5][2] = rows[12][2] = "rep\ufffdlaced"
    rows[10][2] = 'q"x,y'  # written quoted: the raw bytes keep the quotes
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    lines = out.getvalue().encode().split(b"\n")
    broken = {3, 10}
    for i in broken:
        lines[i + 1] = lines[i + 1].replace(b",", b"\xfe,", 1)
    (folder / "badbytes.csv").write_bytes(b"\n".join(lines))
    expect["badbytes.csv"] = [
        None if i in broken else r for i, r in enumerate(judge_csv(header, rows))
    ]
    broken_lines = {lines[i + 1] for i in broken}
    # numbers: overflowing, with tiny fractions, in exponent form; keys nested and escaped
    add_jsonl("numbers.jsonl", number_lines())
    floats = [
        {"event_id": f"f{i}", "key": "k", "ts": "2026-11-20T10:00:00Z", field: value}
        for i, (field, value) in enumerate(FLOAT_VALUES)
    ]
    pq.write_table(
        pa.table(
            {
                **{c: [r[c] for r in floats] for c in ("event_id", "key", "ts")},
                **{
                    c: pa.array([r.get(c) for r in floats], pa.float64())
                    for c in ("partition", "size_bytes", "cost_ms")
                },
            }
        ),
        folder / "floats.parquet",
    )
    expect["floats.parquet"] = [expected_row(r) for r in floats]
    # Parquet: typed columns, a string column holding invalid UTF-8, conflicting types
    records = [base_record(rng, n + i) for i in range(60)]
    n += 60
    table = pa.table(
        {
            "event_id": [r["event_id"] for r in records],
            "key": [r["key"] for r in records],
            "ts": [str(r["ts"]) for r in records],
            "partition": pa.array([r.get("partition") for r in records], pa.int64()),
            "size_bytes": pa.array([r.get("size_bytes") for r in records], pa.int32()),
            "cost_ms": pa.array([r.get("cost_ms") for r in records], pa.float64()),
        }
    )
    pq.write_table(table, folder / "typed.parquet")
    expect["typed.parquet"] = [expected_row({**r, "stream": None, "worker": None}) for r in records]
    keys = pa.array([b"ok-key", b"bad\xffkey", b"fine"], pa.binary()).view(pa.string())
    pq.write_table(
        pa.table({"key": keys, "ts": ["2026-11-20T10:00:00Z"] * 3, "event_id": ["p1", "p2", "p3"]}),
        folder / "badutf8.parquet",
    )
    expect["badutf8.parquet"] = [
        expected_row({"key": "ok-key", "ts": "2026-11-20T10:00:00Z", "event_id": "p1"}),
        None,
        expected_row({"key": "fine", "ts": "2026-11-20T10:00:00Z", "event_id": "p3"}),
    ]
    pq.write_table(
        pa.table({"key": pa.array([1, 2], pa.int64()), "ts": ["2026-11-20T10:00:00Z"] * 2}),
        folder / "intkey.parquet",
    )
    expect["intkey.parquet"] = [None, None]  # a key is a string
    # names Spark's reader would take for a glob or a URI: each file read once, by its own name
    # (a file named *.jsonl once made every .jsonl file be read twice)
    for name in (
        "events[1].jsonl",
        "brace{a,b}.jsonl",
        "*.jsonl",
        "what?.jsonl",
        "back\\slash.jsonl",
        "at 10:00:00+01.jsonl",  # ":" alone, a space and a "+" (which URL decoding reads as " ")
        "at:[2].jsonl.gz",  # ":" and a glob character: Hadoop's globber cannot take it
        "100% {x}.jsonl",
    ):
        add_jsonl(name, [json_line(rng, n + i) for i in range(20)], gz=name.endswith(".gz"))
        n += 20
    header, rows = csv_rows(rng, n, 20)
    n += 20
    write_csv(folder / "orders[2]:x.csv", header, rows, bom=False, gz=False)
    expect["orders[2]:x.csv"] = judge_csv(header, rows)
    pq.write_table(table.slice(0, 5), folder / "typed{copy}.parquet")  # the same events again
    expect["typed{copy}.parquet"] = [None] * 5  # duplicates of typed.parquet's first five
    # line ends: LF or CRLF end a line; a lone CR is part of the line (JSON whitespace between
    # tokens; inside a string it is a control character: invalid JSON, one row)
    cr_lines = [json_line(rng, n + i) + b"\r" for i in range(20)]  # CRLF
    n += 20
    cr_lines += [
        b'{"key": "cr\rinside", "ts": "2026-11-20T10:00:00Z", "event_id": "cr1"}\r',
        b'{"key": "crlf-ok",\r"ts":\r"2026-11-20T10:00:00Z", "event_id": "cr2"}',
        b'{"key": "cr-ok", "ts": "2026-11-20T10:00:00Z", "event_id": "cr3"}\r\r',
        b"\r",
    ]
    add_jsonl("crlf.jsonl", cr_lines)
    header, rows = csv_rows(rng, n, 20, mutate=0)
    n += 20
    key = header.index("key")
    for i, text in enumerate(["line1\r\nline2", "lf\nonly", "cr\ronly", "end\r", "x\r\n"]):
        rows[i][key] = text
    rows[5][-1] = ""  # an empty last field: "" then CRLF
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([header, *rows])
    (folder / "crlf.csv").write_bytes(out.getvalue().encode())
    expect["crlf.csv"] = judge_csv(header, rows)
    # the longest JSON line read, and a valid one a byte longer: quarantined as too large
    record = {"ts": "2026-11-20T10:00:00Z", "event_id": "big1", "key": ""}
    pad = MAX_RECORD_BYTES - len(json.dumps(record).encode())
    largest = json.dumps({**record, "key": "k" * pad}).encode()
    larger = json.dumps({**record, "event_id": "big2", "key": "k" * (pad + 1)}).encode()
    assert len(largest) == MAX_RECORD_BYTES == len(larger) - 1
    add_jsonl("large.jsonl", [largest, larger, json_line(rng, n)])
    n += 1
    # symlinks: followed inside the landing folder only; refused unread otherwise
    shared = home / "landing" / "shared"
    shared.mkdir()
    lines = [json_line(rng, n + i) for i in range(10)]
    n += 10
    (shared / "inside.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "inside-link.jsonl").symlink_to(shared / "inside.jsonl")
    expect["inside-link.jsonl"] = [j for j in map(judge_json_line, lines) if j != "skip"]
    secret = home / "secret.jsonl"  # valid events outside the landing: never read
    secret.write_bytes(b'{"key": "secret", "ts": "2026-11-20T10:00:00Z"}\n')
    (folder / "passwd.jsonl").symlink_to(secret)
    (folder / "etc.jsonl").symlink_to("/etc/passwd")
    (folder / "dangling.jsonl").symlink_to(folder / "nowhere.jsonl")
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    (folder / "folder.jsonl").symlink_to(shared)
    os.mkfifo(folder / "pipe.jsonl")  # a reader would wait for it forever
    with open(os.fsencode(folder) + b"/name\xff.jsonl", "wb") as handle:
        handle.write(b'{"key": "a", "ts": "2026-11-20T10:00:00Z"}\n')
    bad_files |= {
        "passwd.jsonl",
        "etc.jsonl",
        "dangling.jsonl",
        "loop.jsonl",
        "folder.jsonl",
        "pipe.jsonl",
        "name\\xff.jsonl",
    }
    # Parquet whose column names differ only in case: Spark cannot tell them apart
    pq.write_table(
        pa.table({"key": ["a"], "Key": ["b"], "ts": ["2026-11-20T10:00:00Z"]}),
        folder / "cases.parquet",
    )
    pq.write_table(
        pa.table({"key": ["a"], "ts": ["2026-11-20T10:00:00Z"], "x": [{"a": 1, "A": 2}]}),
        folder / "nested-cases.parquet",
    )
    bad_files |= {"cases.parquet", "nested-cases.parquet"}
    # files that cannot be read at all: each one quarantine row naming it
    good = gzip.compress(b'{"key": "a", "ts": "2026-11-20T10:00:00Z"}\n' * 50, mtime=0)
    parquet_bytes = (folder / "typed.parquet").read_bytes()
    unreadable = {
        "truncated.jsonl.gz": good[: len(good) // 2],
        "empty.csv.gz": b"",
        # Spark names it URL-encoded when it fails on it: still one row naming the file
        "random [1] 50%+.jsonl.gz": bytes(rng.randrange(256) for _ in range(300)),
        "random.parquet": bytes(rng.randrange(256) for _ in range(300)),
        "truncated.parquet": parquet_bytes[: len(parquet_bytes) // 2],
        "notes.txt": b"key,ts\n",
        "latin1-header.csv": "clé,ts\nk,2026-11-20T10:00:00Z\n".encode("latin-1"),
        "twice.csv": b"key,ts,key\na,2026-11-20T10:00:00Z,b\n",
        "corrupt.csv.gz": b"\x1f\x8b\x08\x00" + bytes(rng.randrange(256) for _ in range(300)),
    }
    for name, payload in unreadable.items():
        (folder / name).write_bytes(payload)
        bad_files.add(name)
    report = ingest.main(
        [
            "--home",
            str(home),
            "--interval-start",
            DAY,
            "--max-bad-files",
            "100",
            "--max-quarantined-share",
            "1",
        ]
    )
    events = spark.read.format("delta").load(str(home / "warehouse/bronze/stream_events"))
    quarantine = spark.read.format("delta").load(str(home / "warehouse/bronze/quarantine"))
    return {
        "home": home,
        "expect": expect,
        "bad_files": bad_files,
        "report": report,
        "events": events.collect(),
        "quarantine": quarantine,
        "broken_lines": broken_lines,
    }


def by_file(rows, name: str) -> list:
    return [r for r in rows if Path(r.source_file).name == name]


def test_every_file_balances_and_every_written_row_is_its_input(hostile):
    events = hostile["events"]
    quarantine = hostile["quarantine"].collect()
    for name, expected in hostile["expect"].items():
        written = by_file(events, name)
        quarantined = by_file(quarantine, name)
        assert len(written) + len(quarantined) == len(expected), name
        want = sorted(json.dumps(e, default=str, sort_keys=True) for e in expected if e is not None)
        got = sorted(
            json.dumps({k: row[k] for k in FIELDS}, default=str, sort_keys=True) for row in written
        )
        assert got == want, name
    assert all(r.reason for r in quarantine)


def test_unreadable_files_go_whole_to_quarantine_and_the_day_proceeds(hostile):
    report = hostile["report"]
    named = {Path(f["file"]).name: f["reason"] for f in report["files_quarantined"]}
    assert set(named) == hostile["bad_files"]
    assert "unknown file type" in named["notes.txt"]
    assert "not UTF-8" in named["latin1-header.csv"]
    assert "twice" in named["twice.csv"] and "'key'" in named["twice.csv"]
    assert "gzip" in named["empty.csv.gz"]
    assert named["truncated.jsonl.gz"].startswith("unreadable file")
    assert named["random [1] 50%+.jsonl.gz"].startswith("unreadable file: ")
    assert named["random.parquet"].startswith("not a readable Parquet file")
    quarantine = hostile["quarantine"].collect()
    for name in hostile["bad_files"]:
        rows = by_file(quarantine, name)
        assert len(rows) == 1 and rows[0].reason == named[name], name
    assert report["rows_read"] == (
        report["rows_written"] + report["rows_quarantined"] + report["rows_not_selected"]
    )
    assert report["rows_written"] > 500


def test_files_are_read_once_by_their_exact_names(hostile):
    """Glob characters, ``:``, ``%``, ``+`` and spaces in a name: each file read once (the
    per-file balance above), its rows named by the file's own name, not a URL encoding."""
    report = hostile["report"]
    sources = {r.source_file for r in hostile["events"]}
    folder = f"file:{os.path.realpath(hostile['home'])}/landing/{DAY}/"
    for name in ("events[1].jsonl", "*.jsonl", "at 10:00:00+01.jsonl", "at:[2].jsonl.gz"):
        assert folder + name in sources, (name, sorted(sources))
    assert {folder + "orders[2]:x.csv", folder + "100% {x}.jsonl"} <= sources
    assert report["rows_read"] == sum(map(len, hostile["expect"].values())) + len(
        hostile["bad_files"]
    )


def test_landing_entries_that_are_not_files_in_it_are_refused_unread(hostile):
    named = {Path(f["file"]).name: f["reason"] for f in hostile["report"]["files_quarantined"]}
    assert named["passwd.jsonl"].startswith("symlink out of the landing folder (not followed)")
    assert named["etc.jsonl"] == "symlink out of the landing folder (not followed): '/etc/passwd'"
    assert named["dangling.jsonl"].startswith("broken symlink: ")
    assert named["loop.jsonl"].startswith("symlink loop: ")
    assert named["folder.jsonl"].startswith("symlink to something other than a file")
    assert named["pipe.jsonl"].startswith("not a regular file")
    assert named["name\\xff.jsonl"] == "file name is not UTF-8"
    assert named["corrupt.csv.gz"].startswith("unreadable gzip file: ")
    assert "'Key', 'key'" in named["cases.parquet"]
    assert "'x.A', 'x.a'" in named["nested-cases.parquet"]
    quarantine = hostile["quarantine"]
    # the row names the landing file (the link), never its target, and nothing of the target
    # was read
    links = quarantine.where("source_file LIKE '%/passwd.jsonl' OR source_file LIKE '%/etc.jsonl'")
    assert links.count() == 2 and links.where("raw IS NOT NULL").count() == 0
    assert quarantine.where("raw LIKE '%secret%' OR raw LIKE 'root:%'").count() == 0
    assert "secret" not in {r.key for r in hostile["events"]}


def test_line_ends_are_lf_or_crlf_and_text_is_kept_byte_for_byte(hostile):
    events, quarantine = hostile["events"], hostile["quarantine"]
    keys = {r.key for r in by_file(events, "crlf.csv")}
    assert {"line1\r\nline2", "lf\nonly", "cr\ronly", "end\r", "x\r\n"} <= keys
    written = {r.event_id for r in by_file(events, "crlf.jsonl")}
    assert {"cr2", "cr3"} <= written  # a CR between tokens is JSON whitespace
    cr_inside = quarantine.where("source_file LIKE '%/crlf.jsonl' AND raw LIKE '%cr\rinside%'")
    assert [r.reason for r in cr_inside.collect()] == ["malformed line: not valid JSON"]


def test_a_json_line_is_read_up_to_the_documented_size(hostile):
    assert TOO_LARGE == "record larger than 16777216 bytes"
    big = [r for r in hostile["events"] if r.event_id == "big1"]
    assert len(big) == 1 and len(big[0].key) > MAX_RECORD_BYTES - 100
    larger = hostile["quarantine"].where('raw LIKE \'%"event_id": "big2"%\'')
    assert [r.reason for r in larger.select("reason").collect()] == [TOO_LARGE]


def test_the_campaigns_rows_get_their_reasons(hostile):
    reasons = {r.reason.split(":")[0] for r in hostile["quarantine"].collect()}
    for expected in (
        "invalid stream name",
        "invalid worker name",
        "invalid UTF-8",
        "wrong type for key",
        "malformed line",
        "invalid partition",
        "invalid routing_version",
        "wrong type for routing_version",
        "unparseable ts",
        "missing key",
    ):
        assert expected in reasons, (expected, sorted(reasons))
    written = {r.key for r in hostile["events"]}
    assert {"  padded  ", "line\nbreak", "a,b", 'say "hi"'} <= written  # never trimmed or cut
    streams = {r.stream for r in hostile["events"]}
    assert "../../escape" not in streams and all(len(s) <= 128 for s in streams)


def test_quarantine_loads_in_pandas_with_the_raw_bytes(hostile):
    frame = hostile["quarantine"].toPandas()  # a non-UTF-8 row once made this raise
    bad = frame[frame["reason"].str.startswith("invalid UTF-8")]
    assert len(bad) > 0
    assert bad["raw_bytes"].map(lambda b: b is not None).any()
    for raw in bad["raw_bytes"].dropna():
        with pytest.raises(UnicodeDecodeError):
            bytes(raw).decode("utf-8")


def test_numbers_that_overflow_or_hold_a_fraction_are_one_quarantine_row_each(hostile):
    """1e400, NaN, 3.00000000001, 3.0000000000000000001e0 … never stop the day nor become an
    integer: each is quarantined with the field's reason; 3e0, 30e-1, 2.0 are written."""
    quarantine = hostile["quarantine"].collect()
    reasons = {r.raw: r.reason for r in by_file(quarantine, "numbers.jsonl")}
    for line in number_lines():
        field = re.match(
            rb'\{"event_id": "n-(partition|size_bytes|routing_version|cost_ms|ts)-', line
        )
        if field and judge_json_line(line) is None:
            name = field.group(1).decode()
            want = "unparseable ts: " if name == "ts" else f"invalid {name}: "
            assert reasons[line.decode()].startswith(want), line
    by_reason = {r.raw: r.reason for r in by_file(quarantine, "floats.parquet")}
    assert len(by_reason) == sum(e is None for e in hostile["expect"]["floats.parquet"])
    assert sorted({r.split(":")[0] for r in by_reason.values()}) == [
        "invalid cost_ms",
        "invalid partition",
        "invalid size_bytes",
    ]
    assert any(r == "invalid partition: NaN" for r in by_reason.values())
    written = {r.event_id: r for r in by_file(hostile["events"], "numbers.jsonl")}
    assert written["n-partition-4"].partition == 3  # 3e0
    assert written["n-partition-5"].partition == 3  # 30e-1
    assert written["n-size_bytes-2"].size_bytes == 2**63 - 1  # 9.223372036854775807e18
    assert written["n-escaped-ok"].partition == 3
    assert written["n-deep"].partition == 5
    assert "n-nested" not in written and "n-escaped" not in written


def test_rows_that_are_not_utf8_keep_their_bytes_and_a_valid_u_fffd_is_kept(hostile):
    quarantine = hostile["quarantine"].collect()
    csv_rows_out = by_file(quarantine, "badbytes.csv")
    assert {bytes(r.raw_bytes) for r in csv_rows_out} == hostile["broken_lines"]
    assert {r.reason for r in csv_rows_out} == {"invalid UTF-8: raw_bytes holds the record's bytes"}
    kept = [r for r in by_file(hostile["events"], "badbytes.csv") if "\ufffd" in r.key]
    assert len(kept) == 2
    (parquet,) = [r for r in by_file(quarantine, "badutf8.parquet")]
    assert bytes(parquet.raw_bytes) == b"bad\xffkey"
    assert parquet.reason == (
        'invalid UTF-8: column "key" is not UTF-8; raw_bytes holds that value\'s bytes'
    )
    for row in quarantine:
        if row.reason.startswith("invalid UTF-8") and Path(row.source_file).suffix == ".jsonl":
            assert row.reason == "invalid UTF-8: raw_bytes holds the line's bytes"
            assert bytes(row.raw_bytes).decode("utf-8", "replace") == row.raw


# the codes of the rows' reasons; a file's reason is counted under its own code
ROW_CODES = {
    "malformed line",
    TOO_LARGE,
    "invalid UTF-8",
    "duplicate event_id",
    "ts outside the data interval",
    "unparseable ts",
    *(f"missing {f}" for f in ("key", "ts")),
    *(f"wrong type for {f}" for f in FIELDS),
    *(f"invalid {f} name" for f in ("stream", "worker", "upstream_stream")),
    *(f"invalid {f}" for f in FIELDS),
}


def test_the_report_counts_quarantined_rows_by_fixed_single_line_codes(hostile):
    """A reason's detail (a value, a file's error) never reaches the report's keys: a stream
    name holding a line break, ": " or " (" is counted under "invalid stream name"."""
    report = hostile["report"]
    by_reason = report["quarantined_by_reason"]
    file_codes = {f["reason"].split(": ")[0].split(" (")[0] for f in report["files_quarantined"]}
    assert set(by_reason) <= ROW_CODES | file_codes, set(by_reason) - ROW_CODES - file_codes
    assert by_reason["invalid stream name"] >= 2
    assert sum(by_reason.values()) == report["rows_quarantined"]
    for row in hostile["quarantine"].collect():
        assert len(row.reason.splitlines()) == 1, row.reason
    streams = {r.raw: r.reason for r in by_file(hostile["quarantine"].collect(), "numbers.jsonl")}
    assert "invalid stream name: invalid\\n" in streams.values()
    assert "invalid stream name: a: b (c)\\r\\u2028" in streams.values()


def integer_of(text: str) -> int | None:
    """The oracle of ``integer_value``: exact decimal arithmetic."""
    if not NUMBER.fullmatch(text):
        return None
    value = Decimal(text)
    if value == 0:
        return 0
    if value.adjusted() >= 19 or value != value.to_integral_value():
        return None  # 10**19 or more, or a fraction
    return int(value) if -(2**63) <= value < 2**63 else None


def number_texts(rng: random.Random, n: int) -> list[str]:
    """Number texts around integers: tiny fractions, trailing zeros, exponents that move the
    point over them, leading zeros after the point, syntax errors."""
    texts = []
    for _ in range(n):
        whole = rng.choice(["0", "3", "30", "100", "9223372036854775807", "9" * 25])
        fraction = rng.choice(["", ".0", ".000", ".5", ".00000000001", ".0000000000000000001"])
        exponent = rng.choice(
            ["", "e0", "E+1", "e-1", "e-2", "e18", "e19", "e-30", "e999999999999"]
        )
        sign = rng.choice(["", "-"])
        text = sign + whole + fraction + exponent
        texts.append(rng.choice([text, text, text, " " + text, text + "x", "+" + text]))
    return texts


def test_integer_value_decides_on_the_text_as_exact_decimals_do(spark):
    from pyspark.sql import functions as F

    from jobs.event_rules import integer_value

    texts = number_texts(random.Random(33), 400) + [
        *("3.0", "3.00000000001", "3e0", "30e-1", "3.0000000000000000001e0", "-0", "-0.0e5"),
        *("0e999999999999", "1e-999999999999", "0.0000003e7", "9223372036854775807"),
        *("9223372036854775808", "92233720368547758070e-1", "-9223372036854775808", "1e19"),
        *("NaN", "Infinity", "01", "3.", ".5", "1e", "-", "", "1_000", "٣"),
    ]
    frame = spark.createDataFrame([(t,) for t in texts], "text string")
    got = frame.select("text", integer_value(F.col("text")).alias("value")).collect()
    assert [(r.text, r.value) for r in got] == [(t, integer_of(t)) for t in texts]


def test_too_many_bad_files_fail_the_day_naming_each(hostile):
    """The day's report against a lower threshold (``main`` checks it after the write: see the
    next test) — not a second ingest of the whole hostile day."""
    with pytest.raises(SystemExit) as failure:
        check_thresholds(hostile["report"], max_bad_files=2, max_share=1.0)
    message = str(failure.value)
    assert "max_bad_files = 2" in message
    for name in hostile["bad_files"]:
        assert name in message


def test_too_many_quarantined_rows_fail_the_day_naming_the_files(spark, tmp_path):
    folder = tmp_path / "landing" / DAY
    folder.mkdir(parents=True)
    good = "".join(f'{{"key": "k{i}", "ts": "2026-11-20T10:00:00Z"}}\n' for i in range(9))
    bad = "".join(f'{{"key": {i}, "ts": "2026-11-20T10:00:00Z"}}\n' for i in range(3))
    (folder / "good.jsonl").write_text(good)
    (folder / "bad.jsonl").write_text(bad)
    with pytest.raises(SystemExit, match=r"(?s)3 of 12 rows quarantined .*bad\.jsonl: 3 rows"):
        ingest.main(["--home", str(tmp_path), "--interval-start", DAY])
    # both tables were still written, so an operator can look
    bronze = tmp_path / "warehouse" / "bronze"
    assert spark.read.format("delta").load(str(bronze / "quarantine")).count() == 3
    assert spark.read.format("delta").load(str(bronze / "stream_events")).count() == 9


def test_the_fuzzer_covers_every_kind(hostile):
    """Guard against a fuzzer that drifted into only valid (or only invalid) rows."""
    expected = [e for rows in hostile["expect"].values() for e in rows]
    assert sum(e is None for e in expected) > 100
    assert sum(e is not None for e in expected) > 300
    assert date.fromisoformat(DAY) == START.date()


NAMES = st.one_of(
    st.text(max_size=140),
    st.text(alphabet="abcXYZ019._-/\\ \n\x00é", max_size=140),
    st.sampled_from(["..", ".", "-x", "a" * 128, "a" * 129, "ok\n", "../../escape", "clicks"]),
)


@settings(max_examples=8, deadline=None)
@given(st.lists(NAMES, min_size=20, max_size=120))
def test_spark_and_python_agree_on_every_name(spark, names):
    """The rule ingest applies in Spark is the one the store, API, CLI and client apply."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(n,) for n in names], "name string")
    verdicts = frame.select("name", F.col("name").rlike(spark_name_regex()).alias("ok")).collect()
    assert [(r.name, r.ok) for r in verdicts] == [(n, is_valid_name(n)) for n in names]
