"""Worker capacities learnt from the logs (``routeplan.model.capacity``): recovered from generated
logs with y workers z× faster, smoothed across nights, refused on too little evidence, the
busiest-windows fallback, the workers file's ``auto``, and the windows job's
``silver.worker_capacity``."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.workers import read_workers, workers_with_capacities
from routeplan.errors import InputError
from routeplan.files import read_workers_and_learn, read_workers_file
from routeplan.model.capacity import estimate_capacities, resolve_capacities, smooth
from routeplan.simulation.generate import GeneratorConfig, generate

DAY = date(2026, 11, 20)


def generated_windows(tmp_path: Path, seed: int, y: int, z: float, **extra) -> pd.DataFrame:
    """Per worker and hourly window: messages and summed cost_ms of a generated stream ``s``."""
    cfg = GeneratorConfig(
        landing=tmp_path / "landing",
        workers_out=tmp_path / "workers.json",
        day=DAY,
        streams=("s",),
        events=20_000,
        keys=2_000,
        workers=8,
        fast_workers=y,
        speedup=z,
        files_per_stream=1,
        fmt="parquet",
        seed=seed,
        **extra,
    )
    generate(cfg)
    events = pd.concat(pd.read_parquet(p) for p in (tmp_path / "landing").rglob("*.parquet"))
    events["window"] = pd.to_datetime(events["ts"].astype("int64"), unit="ms").dt.floor("h")
    return (
        events.groupby(["worker", "window"])
        .agg(messages=("cost_ms", "size"), cost_ms=("cost_ms", "sum"))
        .reset_index()
    )


def estimate(frame: pd.DataFrame, **options):
    return estimate_capacities(
        frame["worker"].tolist(),
        frame["messages"].to_numpy(),
        frame["cost_ms"].to_numpy(),
        np.full(len(frame), 3600.0),
        **options,
    )


@pytest.mark.parametrize(
    ("seed", "y", "z"), [(0, 2, 4.0), (1, 1, 2.5), (2, 3, 1.5), (3, 2, 4.0), (4, 4, 8.0)]
)
def test_cost_ms_recovers_the_speedup_of_the_fast_workers(tmp_path, seed, y, z):
    """``routeplan generate`` makes y workers z× faster (cost_ms divided by their capacity): the
    estimate of each fast worker over each slow one is z within 15 %."""
    found = estimate(generated_windows(tmp_path, seed, y, z), min_messages=500)
    assert not found.skipped
    capacity = found.capacities()
    fast = np.array([capacity[f"w{i}"] for i in range(y)])
    slow = np.array([capacity[f"w{i}"] for i in range(y, 8)])
    assert fast.mean() / slow.mean() == pytest.approx(z, rel=0.15)
    assert (fast.min() / slow.max()) > z / 1.15 and (fast.max() / slow.min()) < z * 1.15
    assert {e.method for e in found.estimates.values()} == {"cost_ms"}
    # the evidence adds up: capacity = messages / busy_seconds, over every window of the worker
    for e in found.estimates.values():
        assert e.capacity == pytest.approx(e.messages / e.busy_seconds)
        assert e.previous_capacity is None and e.smoothing == 1.0
        assert 1 <= e.windows <= 24


def test_the_estimate_is_the_same_with_or_without_upstream_fields(tmp_path):
    """cost_ms is the signal: it does not depend on which other fields the logs carry."""
    a = estimate(generated_windows(tmp_path / "a", 7, 2, 3.0), min_messages=500).capacities()
    b = estimate(generated_windows(tmp_path / "b", 7, 2, 3.0, drift=0.2), min_messages=500)
    for worker, capacity in b.capacities().items():
        assert capacity == pytest.approx(a[worker], rel=0.1)


def test_messages_without_cost_ms_do_not_count_as_free():
    """Only the messages that carry a cost_ms count: the rest neither speed up nor slow down
    the estimate."""
    found = estimate_capacities(
        ["w0", "w0"], [3_000, 3_000], [1_000.0, 1_000.0], [3600.0, 3600.0], [2_000, 2_000]
    )
    e = found.estimates["w0"]
    assert e.method == "cost_ms" and e.messages == 4_000
    assert e.capacity == pytest.approx(4_000 / 2.0)


@given(
    observed=st.floats(0.01, 1e6),
    previous=st.floats(0.01, 1e6),
    alpha=st.floats(0.01, 1.0),
)
def test_smoothing_lies_between_tonight_and_the_previous_night(observed, previous, alpha):
    smoothed = smooth(observed, previous, alpha)
    assert (
        min(observed, previous) * (1 - 1e-12) <= smoothed <= max(observed, previous) * (1 + 1e-12)
    )
    assert smoothed == pytest.approx(alpha * observed + (1 - alpha) * previous)
    assert smooth(observed, None, alpha) == observed


def test_smoothing_across_nights_converges_to_a_new_speed():
    """A worker that became twice as fast: the previous night's estimate damps the jump, and
    night after night the estimate approaches the new speed (α = 0.5: 94 % in four nights)."""
    rows = (["w0", "w1"], [10_000, 10_000], [10_000.0, 20_000.0], [3600.0, 3600.0])
    first = estimate_capacities(*rows)
    assert first.capacities() == pytest.approx({"w0": 1_000.0, "w1": 500.0})
    faster = (rows[0], rows[1], [5_000.0, 20_000.0], rows[3])  # w0 now twice as fast
    previous = first.capacities()
    for _ in range(4):
        night = estimate_capacities(*faster, previous=previous, alpha=0.5)
        e = night.estimates["w0"]
        assert e.previous_capacity == previous["w0"] and e.smoothing == 0.5
        assert e.observed_capacity == pytest.approx(2_000.0)
        assert previous["w0"] < e.capacity < 2_000.0
        previous = night.capacities()
    assert previous["w0"] == pytest.approx(1_000 + 1_000 * (1 - 0.5**4))
    assert previous["w1"] == pytest.approx(500.0)  # unchanged speed stays put


def test_too_little_evidence_gives_no_estimate_and_says_why():
    found = estimate_capacities(
        ["busy", "quiet", "quiet"],
        [5_000, 300, 200],
        [5_000.0, 300.0, 200.0],
        [3600.0] * 3,
        min_messages=1_000,
    )
    assert set(found.estimates) == {"busy"}
    assert set(found.skipped) == {"quiet"}
    assert "500 messages with cost_ms" in found.skipped["quiet"]
    assert "min_messages=1000" in found.skipped["quiet"]


def test_without_cost_ms_the_busiest_windows_give_the_rate():
    """No cost_ms: the k windows of highest throughput, pooled. A worker saturated at 50 msgs/s
    in its three busiest windows and quieter elsewhere is estimated at 50 msgs/s."""
    rates = [50, 10, 50, 20, 50, 5]
    found = estimate_capacities(
        ["w0"] * 6,
        [r * 600 for r in rates],
        [0.0] * 6,
        [600.0] * 6,
        [0] * 6,
        busiest_windows=3,
    )
    e = found.estimates["w0"]
    assert e.method == "busiest_windows" and e.windows == 3
    assert e.capacity == pytest.approx(50.0)
    assert e.messages == 3 * 50 * 600 and e.busy_seconds == pytest.approx(1800.0)


def test_the_fallback_also_needs_enough_messages():
    found = estimate_capacities(["w0"] * 4, [100] * 4, [0.0] * 4, [60.0] * 4, min_messages=500)
    assert not found.estimates and "300 in its 3 busiest windows" in found.skipped["w0"]


def test_inputs_are_checked():
    with pytest.raises(ValueError, match="one value per"):
        estimate_capacities(["w0"], [1, 2], [1.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        estimate_capacities(["w0"], [1], [-1.0], [1.0])
    with pytest.raises(ValueError, match="alpha"):
        estimate_capacities(["w0"], [1], [1.0], [1.0], alpha=0)


def test_resolved_capacities_take_the_units_of_the_file():
    """A file that fixes some workers (relative units) and leaves others ``auto``: the learnt
    msgs/s are scaled so the fixed workers' learnt and given capacities agree."""
    learnt = {"w0": 2_000.0, "w1": 500.0, "w2": 1_000.0}
    resolved, notes = resolve_capacities({"w1": 1.0}, ["w0", "w2", "w9"], learnt)
    assert resolved == pytest.approx({"w0": 4.0, "w2": 2.0, "w9": 1.0})
    assert any("w9" in n and "no learnt capacity" in n for n in notes)
    # every worker auto: relative to the stream's median learnt worker
    resolved, _ = resolve_capacities({}, ["w0", "w1", "w2"], learnt)
    assert resolved == pytest.approx({"w0": 2.0, "w1": 0.5, "w2": 1.0})


def workers_file(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "workers.json"
    path.write_text(json.dumps({"workers": records}))
    return path


def test_the_workers_file_accepts_auto_or_no_capacity(tmp_path):
    path = workers_file(
        tmp_path,
        [
            {"stream": "s", "worker": "w0", "capacity": "auto"},
            {"stream": "s", "worker": "w1"},
            {"stream": "s", "worker": "w2", "capacity": 2},
            {"stream": "t", "worker": "w0", "capacity": 1},
        ],
    )
    workers, learn = read_workers_and_learn(path)
    assert learn == {"s": frozenset({"w0", "w1"})}
    assert workers["s"].capacities.tolist() == [1.0, 1.0, 2.0]  # auto: 1 until resolved
    assert read_workers_file(path) == workers
    # the jobs: learnt msgs/s into the file's units (w2 fixed at 2 and learnt at 400 msgs/s)
    learnt = {"w0": 800.0, "w1": 200.0, "w2": 400.0}
    resolved = workers_with_capacities(path, "s", (), learnt)
    assert resolved.capacities.tolist() == pytest.approx([4.0, 1.0, 2.0])
    assert read_workers(path, "s").capacities.tolist() == [1.0, 1.0, 2.0]
    assert workers_with_capacities(path, "t", (), learnt) == workers["t"]
    # a stream without a file entry: every logged worker is learnt, relative to the median
    logged = workers_with_capacities(path, "u", ("w0", "w1", "(unrecorded)"), learnt)
    assert logged.names == ("w0", "w1") and logged.capacities.tolist() == pytest.approx([2.0, 0.5])


def test_a_capacity_that_is_neither_a_number_nor_auto_names_the_file(tmp_path):
    path = workers_file(tmp_path, [{"stream": "s", "worker": "w0", "capacity": "fast"}])
    with pytest.raises(InputError, match=rf"(?s)^{re.escape(str(path))} .*workers/0/capacity"):
        read_workers_file(path)


@pytest.mark.spark
def test_windows_job_writes_worker_capacity_and_smooths_across_nights(spark, tmp_path):
    """Two nights of generated logs with 2 workers 3× faster, every capacity ``auto``: the
    windows job writes one row per worker and night, the second smoothed with the first, and
    ``resolve_workers`` gives the plan job capacities 3× apart."""
    from jobs import ingest, windows
    from jobs.common import Tables
    from jobs.workers import resolve_workers

    for offset in (0, 1):
        generate(
            GeneratorConfig(
                landing=tmp_path / "landing",
                workers_out=tmp_path / "generated.json",
                day=date(2026, 11, 20 + offset),
                streams=("s",),
                events=12_000,
                keys=1_000,
                workers=4,
                fast_workers=2,
                speedup=3.0,
                files_per_stream=1,
                seed=offset,
            )
        )
    path = tmp_path / "config" / "workers.json"
    path.parent.mkdir()
    auto = [{"stream": "s", "worker": f"w{i}", "capacity": "auto"} for i in range(4)]
    path.write_text(json.dumps({"workers": auto}))
    home = ["--home", str(tmp_path)]
    ingest.main([*home, "--interval-start", "2026-11-20", "--interval-end", "2026-11-22"])
    for day in ("2026-11-20", "2026-11-21"):
        report = windows.main([*home, "--interval-start", day, "--capacity-min-messages", "500"])
        assert report["streams"]["s"]["capacities_not_estimated"] == []
    windows.main([*home, "--interval-start", "2026-11-21", "--capacity-min-messages", "500"])
    rows = (
        spark.read.format("delta")
        .load(str(tmp_path / "warehouse/silver/worker_capacity"))
        .toPandas()
    )
    assert len(rows) == 8  # rerunning a night replaces its rows
    first = rows[rows.interval_start == date(2026, 11, 20)].set_index("worker")
    second = rows[rows.interval_start == date(2026, 11, 21)].set_index("worker")
    assert set(first.method) == {"cost_ms"} and first.previous_capacity.isna().all()
    assert (first.capacity == first.observed_capacity).all()
    assert second.previous_capacity.to_dict() == pytest.approx(first.capacity.to_dict())
    assert (second.smoothing == 0.5).all()
    workers, source = resolve_workers(spark, Tables(tmp_path), path, "s", (), date(2026, 11, 21))
    c = workers.capacities
    assert c[:2].mean() / c[2:].mean() == pytest.approx(3.0, rel=0.15)
    assert source == "learnt"  # every capacity auto: a table planned on them says so


@given(
    messages=st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
    per_message_ms=st.floats(0.01, 100.0),
    slower=st.floats(1.0, 50.0),
)
def test_a_worker_k_times_slower_per_message_is_estimated_k_times_slower(
    messages, per_message_ms, slower
):
    """The cost_ms estimate is the inverse of the mean cost per message, however the messages
    fall into windows: the ratio between two workers is the ratio of their per-message costs."""
    n = len(messages)
    found = estimate_capacities(
        ["fast"] * n + ["slow"] * n,
        messages * 2,
        [m * per_message_ms for m in messages] + [m * per_message_ms * slower for m in messages],
        [3600.0] * (2 * n),
        min_messages=1,
    )
    if sum(messages) == 0:
        assert not found.estimates and set(found.skipped) == {"fast", "slow"}
        return
    capacity = found.capacities()
    assert capacity["fast"] == pytest.approx(1000.0 / per_message_ms)
    assert capacity["fast"] / capacity["slow"] == pytest.approx(slower)
