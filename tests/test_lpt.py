"""``lpt``: LPT on every window of the day (routeplan.planning.keyrouting.lpt)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.keyrouting.lpt import place_lpt
from routeplan.planning.metrics import peak_excess
from routeplan.planning.registry import get_strategy
from routeplan.streams.history import window_loads

WORKERS = Workers(tuple(Worker(f"w{i}") for i in range(4)))


def worst(table, loads: LoadSnapshot) -> float:
    hot = {k: loads.hot_key_profile(k)[:, None] for k in loads.hot_key_load}
    hot = {k: v[:, 0] for k, v in hot.items()}
    found = window_loads(table, loads.key_group_windows, hot)
    return peak_excess(found, table.workers.capacities, table.workers.is_active)


def test_units_that_peak_at_the_same_hour_land_on_different_workers():
    windows = np.zeros((2, 8))
    windows[0, :4] = 10.0  # four morning groups
    windows[1, 4:] = 10.0  # four evening groups
    loads = LoadSnapshot("s", windows.mean(axis=0), key_group_windows=windows)
    table = get_strategy("lpt").plan(loads, None, WORKERS, Budget()).table
    morning = {table.key_group_worker[g] for g in range(4)}
    assert len(morning) == 4 and worst(table, loads) == pytest.approx(0.0)
    plain = get_strategy("lpt").plan(
        LoadSnapshot("s", windows.mean(axis=0)), None, WORKERS, Budget()
    )
    assert plain.table.predicted["imbalance"] == pytest.approx(0.0)  # LPT of the means


def test_a_hot_key_heavier_than_a_worker_is_split_on_distinct_workers_by_its_own_hours():
    windows = np.full((2, 16), 1.0)
    loads = LoadSnapshot(
        "s", windows.mean(axis=0), {"big": 10.0}, key_group_windows=windows,
        hot_key_windows={"big": np.array([0.0, 20.0])},
    )  # fmt: skip
    g = loads.hot_key_group("big")
    loads = LoadSnapshot(
        "s", windows.mean(axis=0) + np.eye(16)[g] * 10.0, {"big": 10.0},
        key_group_windows=windows + np.outer([0.0, 20.0], np.eye(16)[g]),
        hot_key_windows={"big": np.array([0.0, 20.0])},
    )  # fmt: skip
    table = get_strategy("lpt").plan(loads, None, WORKERS, Budget()).table
    targets = [w for w, _ in table.hot_keys["big"]]
    assert len(targets) == len(set(targets)) >= 2  # evening share 20/36 > 0.5 × 9: split


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(2, 40))
def test_lpt_is_total_deterministic_and_within_grahams_bound_on_one_window(seed, n, units):
    rng = np.random.default_rng(seed)
    x = rng.gamma(0.5, 1.0, (1, units))
    capacity = np.ones(n)
    assign = place_lpt(x, capacity, np.ones(n, bool))
    assert np.array_equal(assign, place_lpt(x, capacity, np.ones(n, bool)))
    assert set(assign) <= set(range(n))
    loads = np.bincount(assign, weights=x[0], minlength=n)
    # list scheduling (Graham): the makespan is at most the mean plus the largest job
    assert loads.max() <= x.sum() / n + x.max() + 1e-9


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.005, 0.1))
def test_lpt_moves_its_own_plan_only_for_more_than_keep_within_and_never_onto_a_drained_worker(
    seed, keep
):
    rng = np.random.default_rng(seed)
    windows = rng.gamma(1.0, 1.0, (6, 32))
    loads = LoadSnapshot("s", windows.mean(axis=0), key_group_windows=windows)
    strategy = get_strategy("lpt", keep_within=keep)
    first = strategy.plan(loads, None, WORKERS, Budget()).table
    again = strategy.plan(loads, first, WORKERS, Budget())
    if again.moves:  # a re-plan of its own plan moves only for more than keep_within
        before, after = (worst(t, loads) for t in (first, again.table))
        assert after < before - keep
    assert worst(again.table, loads) <= worst(first, loads) + 1e-9
    drained = Workers((*WORKERS.items[:3], Worker("w3", state="draining")))
    moved = strategy.plan(loads, first, drained, Budget()).table
    assert "w3" not in moved.key_group_worker


def test_lpt_refuses_a_bad_split_share():
    with pytest.raises(ValueError, match="split_share"):
        get_strategy("lpt", split_share=0.0)
