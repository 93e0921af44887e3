"""bench/peer_duckdb.py's DuckDB pipeline: ingest classifies rows as jobs/ingest.py does, windows
computes routeplan's key groups; small data, no Spark."""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from routeplan.model.hashing import DEFAULT_NUM_KEY_GROUPS, key_groups

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def peer():
    with pytest.MonkeyPatch.context() as patch:  # bench scripts import their neighbours
        patch.syspath_prepend(str(BENCH))
        yield importlib.import_module("peer_duckdb")


def _millis(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


VALID = {"event_id": "a", "ts": "2026-11-20T01:00:00Z", "stream": "s", "key": "k1"}
FIRST = json.dumps({**VALID, "worker": "w0", "partition": 1, "size_bytes": 10, "cost_ms": 1.5})
LINES = [  # (line, the start of its reason; None: written to bronze)
    (FIRST, None),
    (json.dumps({**VALID, "event_id": "b", "ts": _millis("2026-11-20T02:30:00")}), None),
    (json.dumps({**VALID, "event_id": "c", "ts": str(_millis("2026-11-20T03:00:00"))}), None),
    (json.dumps({"ts": "2026-11-20T04:00:00", "key": "k2", "size_bytes": 3.0}), None),
    (FIRST, "duplicate event_id"),
    ('{"event_id": "t", "ts"', "malformed line"),
    (json.dumps(VALID) + " x", "malformed line"),
    ("[1, 2]", "malformed line"),
    (json.dumps({"event_id": "m", "ts": "2026-11-20T01:00:00Z"}), "missing key"),
    (json.dumps({**VALID, "event_id": "e", "key": ""}), "missing key"),
    (json.dumps({**VALID, "event_id": "f", "ts": "yesterday-ish"}), "unparseable ts"),
    (json.dumps({**VALID, "event_id": "g", "size_bytes": -5}), "invalid size_bytes"),
    (json.dumps({**VALID, "event_id": "h", "size_bytes": "12"}), "wrong type for size_bytes"),
    (json.dumps({**VALID, "event_id": "i", "partition": "p?"}), "wrong type for partition"),
    (json.dumps({**VALID, "event_id": "j", "partition": 2**31}), "invalid partition"),
    (json.dumps({**VALID, "event_id": "k", "cost_ms": -1}), "invalid cost_ms"),
    (json.dumps({**VALID, "event_id": "l", "worker": "a/b"}), "invalid worker name"),
    (json.dumps({**VALID, "event_id": ""}), "invalid event_id"),
    (json.dumps({**VALID, "event_id": "n", "ts": "2026-11-21T00:00:00Z"}), "ts outside"),
]


@pytest.fixture(scope="module")
def home(peer, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("peer")
    folder = home / "landing" / peer.DAY.isoformat()
    folder.mkdir(parents=True)
    (folder / "s-000.jsonl").write_text("\n".join([*(line for line, _ in LINES), "   ", ""]) + "\n")
    (folder / "_ignored.jsonl").write_text("not json\n")
    con = peer.duckdb_connection()
    report = peer.duckdb_ingest(con, home, peer.DAY)
    assert report == {"rows_read": len(LINES), "rows_written": 4, "rows_quarantined": 15}
    peer.duckdb_windows(con, home, peer.DAY)
    return home


def test_ingest_quarantines_every_invalid_line_with_its_reason(home):
    rows = duckdb.sql(
        f"SELECT raw, reason FROM '{home}/duckdb/bronze/quarantine.parquet'"
    ).fetchall()
    got = sorted((raw, reason.split(" (")[0].split(":")[0]) for raw, reason in rows)
    want = [(line, why) for line, why in LINES if why]
    assert len(got) == len(want)
    for (raw, reason), (line, why) in zip(got, sorted(want), strict=True):
        assert raw == line and reason.startswith(why), (raw, reason, why)


def test_ingest_writes_valid_rows_typed_with_defaults(home):
    rows = duckdb.sql(
        f"""SELECT event_id, epoch_ms(ts), stream, key, size_bytes, worker
            FROM read_parquet('{home}/duckdb/bronze/stream_events/**/*.parquet',
                              hive_partitioning = true) ORDER BY ts"""
    ).fetchall()
    assert [r[1] for r in rows] == [
        _millis(t) for t in ("2026-11-20T01:00:00", "2026-11-20T02:30:00", "2026-11-20T03:00:00")
    ] + [_millis("2026-11-20T04:00:00")]
    assert rows[0] == ("a", rows[0][1], "s", "k1", 10, "w0")
    assert rows[3][2:] == ("default", "k2", 3, None)  # default stream, 3.0 is an integer
    assert len(rows[3][0]) == 64  # no event_id: a stable hash of the row


def test_windows_use_routeplan_key_groups(home):
    silver = home / "duckdb" / "silver"
    groups = dict(
        duckdb.sql(
            f"SELECT key, key_group FROM read_parquet('{silver}/key_load/**/*.parquet')"
        ).fetchall()
    )
    expected = key_groups(sorted(groups), DEFAULT_NUM_KEY_GROUPS)
    assert groups == dict(zip(sorted(groups), expected.tolist(), strict=True))
    workers = duckdb.sql(
        f"SELECT DISTINCT worker FROM read_parquet('{silver}/worker_load/**/*.parquet')"
    ).fetchall()
    assert sorted(w for (w,) in workers) == ["(unrecorded)", "w0"]
    summary = duckdb.sql(
        f"""SELECT stream, messages, top_key, top_key_share
            FROM read_parquet('{silver}/window_summary/**/*.parquet') ORDER BY ALL"""
    ).fetchall()
    assert summary == [("default", 1, "k2", 1.0)] + [("s", 1, "k1", 1.0)] * 3


def test_generated_day_counts(peer, tmp_path):
    summary = peer.generate_sample(3000, tmp_path)
    report = peer.run_duckdb(tmp_path)
    lines = sum(s["lines"] for s in summary["streams"].values())
    broken = sum(s["malformed"] + s["duplicates"] for s in summary["streams"].values())
    assert report.rows["bronze.stream_events"] + report.rows["bronze.quarantine"] == lines
    assert report.rows["bronze.quarantine"] == broken
    assert report.rows["silver.window_summary"] == 72  # 3 streams x 24 hours
    assert set(report.seconds) == {"ingest", "windows"}
