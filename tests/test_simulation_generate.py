"""``routeplan.simulation.generate``: the event generator."""

import gzip
import json
from datetime import date

import pandas as pd
import pytest

from routeplan.contracts.schemas import validate_document
from routeplan.files import read_workers_file
from routeplan.model.hashing import key_group
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.planning.registry import get_strategy
from routeplan.simulation.generate import GeneratorConfig, generate, stream_workers

DAY = date(2026, 11, 20)


def config(tmp_path, **overrides):
    base = dict(
        landing=tmp_path / "landing",
        workers_out=tmp_path / "workers.json",
        day=DAY,
        streams=("a", "b"),
        events=4_000,
        keys=500,
        files_per_stream=2,
    )
    return GeneratorConfig(**{**base, **overrides})


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_same_seed_same_bytes(tmp_path):
    generate(config(tmp_path / "x"))
    generate(config(tmp_path / "y"))
    for path in (tmp_path / "x" / "landing" / DAY.isoformat()).iterdir():
        assert (
            path.read_bytes() == (tmp_path / "y/landing" / DAY.isoformat() / path.name).read_bytes()
        )


def test_logs_record_todays_key_grouping_and_capacities(tmp_path):
    cfg = config(tmp_path, fast_workers=2, speedup=3.0)
    summary = generate(cfg)
    rows = [
        r for p in sorted((cfg.landing / DAY.isoformat()).glob("a-*.jsonl")) for r in read_jsonl(p)
    ]
    assert summary["streams"]["a"]["lines"] == len(rows) == 4_000
    kg = (
        get_strategy("kg")
        .plan(LoadSnapshot("a", [1.0] * cfg.num_key_groups), None, stream_workers(cfg), Budget())
        .table
    )
    assert all(r["worker"] == kg.key_group_worker[key_group(r["key"], 1024)] for r in rows)
    assert all(r["ts"].startswith("2026-11-20T") for r in rows)
    doc = json.loads(cfg.workers_out.read_text())
    validate_document("worker", doc)
    assert [w["capacity"] for w in doc["workers"] if w["stream"] == "a"] == [3, 3, 1, 1, 1, 1, 1, 1]
    # the one reader of workers files (jobs and CLI) gives back what was generated
    assert read_workers_file(cfg.workers_out) == {
        "a": stream_workers(cfg),
        "b": stream_workers(cfg),
    }
    # faster workers record cheaper messages
    cost = pd.DataFrame(rows).groupby("worker")["cost_ms"].mean()
    assert cost[["w0", "w1"]].max() < cost[["w2", "w3"]].min()


def test_keys_follow_a_zipf_law(tmp_path):
    cfg = config(tmp_path, events=50_000, zipf=1.2, drift=0.0, streams=("a",))
    generate(cfg)
    rows = [r for p in (cfg.landing / DAY.isoformat()).glob("*.jsonl") for r in read_jsonl(p)]
    counts = pd.Series([r["key"] for r in rows]).value_counts().to_numpy()
    assert counts[0] / counts[9] == pytest.approx(10**1.2, rel=0.25)


def test_malformed_and_duplicates_are_injected_and_counted(tmp_path):
    cfg = config(tmp_path, fmt="csv", gzip=True, malformed=0.05, duplicates=0.02)
    summary = generate(cfg)
    lines = [
        line
        for p in (cfg.landing / DAY.isoformat()).glob("a-*.csv.gz")
        for line in gzip.decompress(p.read_bytes()).decode().splitlines()[1:]
    ]
    counts = summary["streams"]["a"]
    assert counts["lines"] == len(lines) == 4_000 + counts["duplicates"]
    assert 100 < counts["malformed"] < 300
    assert (
        sum(
            1
            for line in lines
            if line.count(",") != 7
            or "yesterday-ish" in line
            or ",-5," in line
            or ",p?," in line
            or ",," in line
        )
        >= counts["malformed"] * 0.9
    )


def test_bad_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format"):
        config(tmp_path, fmt="xml")
    with pytest.raises(ValueError, match="fast_workers"):
        config(tmp_path, fast_workers=20)
