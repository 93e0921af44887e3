"""``routeplan.planning.keyrouting.consistent_grouping``: the ``cg`` strategy (paper 000)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import zipf_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.metrics import table_imbalance, worker_load
from routeplan.planning.registry import get_strategy


def heterogeneous(n=10, fast=3, speedup=5.0):
    """Paper 000 §VII: y machines z times faster."""
    return Workers(tuple(Worker(f"w{i}", speedup if i < fast else 1.0) for i in range(n)))


@pytest.mark.parametrize("workers", [Workers.homogeneous(10), heterogeneous()])
@pytest.mark.parametrize(("pairing", "bound"), [("exact", 0.1), ("fcfs", 0.15)])
def test_cg_balances_where_kg_does_not(skewed, workers, pairing, bound):
    kg = get_strategy("kg").plan(skewed, None, workers, Budget())
    cg = get_strategy("cg", pairing=pairing).plan(skewed, None, workers, Budget())
    assert kg.predicted["imbalance"] > 0.5
    assert cg.predicted["imbalance"] < bound  # paper 000 §V-B's FCFS pairing is coarser
    assert cg.predicted["imbalance"] == pytest.approx(table_imbalance(cg.table, skewed))
    # the load is conserved: every message lands on some worker
    assert worker_load(cg.table, skewed).sum() == pytest.approx(skewed.total)


def test_cg_splits_hot_keys_by_weights_summing_to_one(skewed):
    table = get_strategy("cg").plan(skewed, None, Workers.homogeneous(20), Budget()).table
    split = [targets for targets in table.hot_keys.values() if len(targets) > 1]
    assert split, "the heaviest Zipf key exceeds one virtual worker and must be split"
    for targets in table.hot_keys.values():
        assert sum(w for _, w in targets) == pytest.approx(1.0)
        assert len({w for w, _ in targets}) == len(targets)


@pytest.mark.parametrize(
    "workers", [Workers.homogeneous(4), Workers.homogeneous(8), heterogeneous()]
)
@pytest.mark.parametrize("pairing", ["fcfs", "exact"])
@pytest.mark.parametrize("alpha", [1, 10])
def test_cg_rerun_on_same_loads_moves_nothing(workers, pairing, alpha):
    """A plan is a fixed point of the planner: rerunning a day publishes nothing new."""
    cg = get_strategy("cg", pairing=pairing, virtual_workers_per_worker=alpha)
    cases = [  # (seed, exponent, hot keys, messages): the last is one quiet hour of the demo
        (0, 0.8, 10, 30_000),
        (1, 1.0, 0, 30_000),
        (2, 1.4, 10, 30_000),
        (3, 1.0, 50, 30_000),
        (5, 1.0, 100, 190),
    ]
    for seed, exponent, hot, messages in cases:
        snapshot = zipf_snapshot(
            keys=3000,
            messages=messages,
            num_key_groups=1024 if messages < 1000 else 256,
            seed=seed,
            exponent=exponent,
            hot=hot,
        )
        first = cg.plan(snapshot, None, workers, Budget()).table
        again = cg.plan(snapshot, first, workers, Budget())
        assert again.moves == (), (seed, exponent, hot)
        assert again.table.same_routing(first)


def test_cg_moves_few_groups_under_drift_and_respects_budget(skewed):
    workers = Workers.homogeneous(10)
    first = get_strategy("cg").plan(skewed, None, workers, Budget()).table
    drifted = zipf_snapshot(seed=1)
    free = get_strategy("cg").plan(drifted, first, workers, Budget())
    assert free.predicted["migrated_load_share"] < 0.25
    none = get_strategy("cg").plan(drifted, first, workers, Budget(max_moves=0))
    fresh = get_strategy("cg").plan(drifted, None, workers, Budget())
    assert none.predicted["moves"] <= free.predicted["moves"]
    assert free.predicted["moves"] < len(fresh.table.key_group_worker)


def test_cg_empties_draining_workers(skewed):
    workers = Workers.homogeneous(6)
    first = get_strategy("cg").plan(skewed, None, workers, Budget()).table
    draining = Workers(workers.items[:-1] + (Worker("w5", state="draining"),))
    plan = get_strategy("cg").plan(skewed, first, draining, Budget())
    assert "w5" not in plan.table.key_group_worker
    assert all(w != "w5" for t in plan.table.hot_keys.values() for w, _ in t)
    assert plan.predicted["moves"] > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    # a hot key's share of the stream: none, or at least 1e-4 (loads are message counts; the
    # planner treats 1e-12 of a message as nothing)
    hot=st.lists(st.just(0.0) | st.floats(1e-4, 0.3), min_size=1, max_size=8),
    groups=st.integers(50, 400),
    workers=st.integers(2, 30),
    alpha=st.integers(1, 12),
    epsilon=st.sampled_from([0.0, 0.01, 0.1, 0.5]),
    seed=st.integers(0, 10_000),
)
def test_cg_splits_a_hot_key_only_as_far_as_its_load_needs(
    hot, groups, workers, alpha, epsilon, seed
):
    """Paper 000 §V-A, §VI-B (Eq. 2): units go in decreasing load with PoRC, so a hot key takes
    at least ⌈load·V / ((1+ε)·total)⌉ virtual workers, its pieces add up to it, and with key
    groups too light to overflow (≤ ε·total/V each) no virtual worker passes (1+ε)·total/V and
    the heaviest key sits on at most one worker more than its load needs."""
    rng = np.random.default_rng(seed)
    n_virtual = alpha * workers
    rest = 1.0 - sum(hot) if sum(hot) < 0.9 else 0.1
    group_load = rng.dirichlet(np.ones(groups)) * rest * 1e6
    for _ in range(30):  # key groups small enough that the ε bound can hold: ≤ ε·total/V
        group_load = np.minimum(
            group_load, epsilon * (group_load.sum() + sum(hot) * 1e6) / n_virtual
        )
    hot_load = {f"h{i}": h * 1e6 for i, h in enumerate(hot) if h > 0}
    keys = list(hot_load)
    from routeplan.model.hashing import key_groups

    owners = key_groups(keys, groups) if keys else np.array([], dtype=np.int64)
    flow = group_load.copy()
    np.add.at(flow, owners, [hot_load[k] for k in keys])
    snapshot = LoadSnapshot("s", flow, hot_load)
    cg = get_strategy("cg", virtual_workers_per_worker=alpha, epsilon=epsilon)
    plan = cg.plan(snapshot, None, Workers.homogeneous(workers), Budget())
    state = plan.table.strategy_state
    capacity = (1 + epsilon) * snapshot.total / n_virtual
    pieces = state["hot_key_virtual_workers"]
    needs = {key: int(np.ceil(hot_load[key] / capacity - 1e-9)) for key in pieces}
    # at least the pieces its load needs; how many more depends on the room other units left
    # and on each virtual worker's bound: a key fills its workers' virtual workers (most room
    # first), so some pieces are partial (11 pieces for a need of 8 were seen: the upper bound
    # is on workers, checked on realistic streams by the next test and bench/paper000_cg.py)
    for key, parts in pieces.items():
        assert needs[key] <= len(parts)
        assert sum(s for _, s in parts) == pytest.approx(1.0)
        assert len({w for w, _ in plan.table.hot_keys[key]}) <= len(parts)
    residual = snapshot.residual_key_group_load(list(pieces))
    if epsilon > 0 and residual.max() <= epsilon * snapshot.total / n_virtual * (1 + 1e-9):
        vw = np.bincount(
            np.asarray(state["key_group_virtual_worker"]), weights=residual, minlength=n_virtual
        )
        for key, parts in pieces.items():
            for v, share in parts:
                vw[v] += share * hot_load[key]
        assert vw.max() <= capacity * (1 + 1e-9)
        assert plan.predicted["imbalance"] <= epsilon + 1e-9  # equal workers, α each
        # the heaviest key, placed first, fills whole workers: ⌈load / (α·capacity)⌉ of them,
        # one more where a salted choice's worker was shared; pairing never spreads it while
        # its workers are within the ε bound
        top = max(pieces, key=lambda k: (hot_load[k], k), default=None)
        if top is not None:
            need = int(np.ceil(hot_load[top] / (alpha * capacity) - 1e-9))
            assert len(plan.table.hot_keys[top]) <= need + 1


def test_cg_on_a_wp_like_snapshot_splits_the_top_key_over_what_it_needs():
    """The issue's case: p1 ≈ 9.3 % (WP, paper 000 Table I) on 10 workers, α = 10: the top key
    needs ⌈0.093·100/1.01⌉ = 10 virtual workers, not every worker's, and few keys split."""
    snapshot = zipf_snapshot(keys=50_000, messages=1_000_000, exponent=1.0, hot=200)
    top = max(snapshot.hot_key_load, key=snapshot.hot_key_load.get)
    table = get_strategy("cg").plan(snapshot, None, Workers.homogeneous(10), Budget()).table
    capacity = 1.01 * snapshot.total / 100
    need = int(np.ceil(snapshot.hot_key_load[top] / capacity))
    assert need == 9  # p1 ≈ 8.8 %
    assert len(table.strategy_state["hot_key_virtual_workers"][top]) == need
    assert len(table.hot_keys[top]) < 10
    heavier = sum(v > capacity for v in snapshot.hot_key_load.values())
    assert sum(len(t) > 1 for t in table.hot_keys.values()) <= heavier


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 1_000),
    exponent=st.floats(0.5, 1.5),
    max_moves=st.integers(0, 12),
    previous=st.sampled_from(["cg", "kg", "ring"]),
    workers=st.sampled_from(["same", "draining", "grown"]),
)
def test_cg_moves_at_most_max_moves(seed, exponent, max_moves, previous, workers):
    before = heterogeneous(8, 2, 3.0)
    after = {
        "same": before,
        "draining": Workers(before.items[:-1] + (Worker("w7", state="draining"),)),
        "grown": Workers(before.items + (Worker("w8", 2.0),)),
    }[workers]
    small = {"keys": 3_000, "messages": 60_000, "num_key_groups": 128, "exponent": exponent}
    snapshot = zipf_snapshot(seed=seed, **small)
    current = get_strategy(previous).plan(snapshot, None, before, Budget()).table
    drifted = zipf_snapshot(seed=seed + 1, **small)
    plan = get_strategy("cg").plan(drifted, current, after, Budget(max_moves=max_moves))
    assert len(plan.moves) == plan.predicted["moves"] <= max_moves
    if max_moves == 0:
        assert plan.moves == ()
        assert plan.table.key_group_worker == current.key_group_worker
    # the kept groups are recorded so that a later plan can still move them
    state = plan.table.strategy_state
    assert len(state["key_group_virtual_worker"]) == drifted.num_key_groups
    again = get_strategy("cg").plan(drifted, plan.table, after, Budget(max_moves=max_moves))
    assert len(again.moves) <= max_moves


@pytest.mark.parametrize(("pairing", "bound"), [("exact", 0.1), ("fcfs", 0.15)])
def test_cg_budget_zero_keeps_a_foreign_table_and_a_later_free_plan_balances(
    skewed, pairing, bound
):
    workers = heterogeneous()
    cg = get_strategy("cg", pairing=pairing)
    kg = get_strategy("kg").plan(skewed, None, workers, Budget()).table
    kept = cg.plan(skewed, kg, workers, Budget(max_moves=0))
    assert kept.moves == () and kept.predicted["moves"] == 0
    assert kept.table.key_group_worker == kg.key_group_worker
    assert -1 in kept.table.strategy_state["key_group_virtual_worker"]
    free = cg.plan(skewed, kept.table, workers, Budget())
    assert free.predicted["imbalance"] < bound < kept.predicted["imbalance"]


def test_cg_moves_off_removed_workers_whatever_the_budget(skewed):
    workers = Workers.homogeneous(6)
    first = get_strategy("cg").plan(skewed, None, workers, Budget()).table
    plan = get_strategy("cg").plan(skewed, first, Workers(workers.items[:-1]), Budget(max_moves=0))
    assert "w5" not in plan.table.key_group_worker
    forced = plan.predicted["forced_moves"]
    assert forced == sum(w == "w5" for w in first.key_group_worker) + sum(
        any(w == "w5" for w, _ in t) for t in first.hot_keys.values()
    )
    assert plan.predicted["moves"] == forced > 0


# ---------------------------------------------------------------- a hot key on few workers


def top_key_bound_and_imbalance(snapshot: LoadSnapshot, workers: int, epsilon: float = 0.01):
    """cg's plan on ``workers`` equal workers: the top key's workers, the bound
    ``⌈p1·W/(1+ε)⌉ + 1`` on them, the imbalance, and the plan."""
    plan = get_strategy("cg", epsilon=epsilon).plan(
        snapshot, None, Workers.homogeneous(workers), Budget()
    )
    top = max(snapshot.hot_key_load, key=lambda k: (snapshot.hot_key_load[k], k))
    p1 = snapshot.hot_key_load[top] / snapshot.total
    on = len(plan.table.hot_keys.get(top, ((None, 1.0),)))
    return on, int(np.ceil(p1 * workers / (1 + epsilon) - 1e-9)) + 1, plan


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exponent=st.floats(0.7, 1.4), seed=st.integers(0, 10_000))
def test_cg_keeps_the_top_key_on_the_workers_its_load_needs_at_50_workers(exponent, seed):
    """Issue 32: a hot key's pieces fill the virtual workers of the same workers first, so the
    top key sits on at most ⌈p1·W/(1+ε)⌉ + 1 workers (it was cut into ⌈p1·V/(1+ε)⌉ pieces on
    as many workers), and the imbalance stays within 2ε; re-planning moves nothing."""
    snapshot = zipf_snapshot(keys=20_000, messages=500_000, exponent=exponent, seed=seed, hot=100)
    on, bound, plan = top_key_bound_and_imbalance(snapshot, 50)
    assert on <= bound
    assert plan.predicted["imbalance"] <= 2 * 0.01 + 1e-9
    again = get_strategy("cg", epsilon=0.01).plan(
        snapshot, plan.table, Workers.homogeneous(50), Budget()
    )
    assert again.moves == ()


def test_cg_keeps_the_top_english_word_on_three_of_50_workers():
    """The issue's case: English words by their frequency (p1 ≈ 5.4 % for "the"), 50 equal
    workers, ε = 0.01: "the" needs ⌈0.054·50/1.01⌉ = 3 workers (it was on 24)."""
    wordfreq = pytest.importorskip("wordfreq")
    from routeplan.model.hashing import key_groups

    top = sorted(wordfreq.get_frequency_dict("en").items(), key=lambda kv: (-kv[1], kv[0]))
    words, freq = zip(*top[:100_000], strict=True)
    counts = np.round(np.array(freq) / sum(freq) * 10_000_000)
    groups = key_groups(list(words), 1024)
    hot = {w: c for w, c in zip(words, counts, strict=True) if c >= 0.001 * counts.sum()}
    snapshot = LoadSnapshot("words", np.bincount(groups, weights=counts, minlength=1024), hot)
    on, bound, plan = top_key_bound_and_imbalance(snapshot, 50)
    assert (on, bound) == (3, 4)
    assert plan.predicted["imbalance"] <= 0.02
