import dataclasses

import numpy as np
import pytest
from conftest import zipf_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import BUDGET_LIMITS, Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.contract import UnhonouredLimitError, parameters
from routeplan.planning.keyrouting.virtual_workers import proportional_counts
from routeplan.planning.metrics import table_imbalance, worker_load
from routeplan.planning.registry import get_strategy, strategy_names, strategy_parameters


def heterogeneous(n=10, fast=3, speedup=5.0):
    """Paper 000 §VII: y machines z times faster."""
    return Workers(tuple(Worker(f"w{i}", speedup if i < fast else 1.0) for i in range(n)))


def test_registry_names_and_parameters():
    assert {"kg", "cg"} <= set(strategy_names())
    assert "epsilon" in strategy_parameters("cg")
    with pytest.raises(KeyError, match="unknown strategy"):
        get_strategy("nope")
    with pytest.raises(ValueError, match="bad parameters"):
        get_strategy("cg", epsilonn=0.1)


def test_kg_is_hash_partitioning_over_active_workers(skewed):
    workers = Workers((Worker("a"), Worker("b", state="draining"), Worker("c")))
    table = get_strategy("kg").plan(skewed, None, workers, Budget()).table
    assert table.key_group_worker[:4] == ("a", "c", "a", "c")
    assert not table.hot_keys


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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    loads=st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=300),
    capacities=st.lists(st.floats(0.1, 20), min_size=1, max_size=12),
    draining=st.integers(0, 11),
    strategy=st.sampled_from(["kg", "cg"]),
    alpha=st.integers(1, 12),
)
def test_every_key_group_assigned_once_to_an_active_worker(
    loads, capacities, draining, strategy, alpha
):
    items = [Worker(f"w{i}", c) for i, c in enumerate(capacities)]
    if len(items) > 1 and draining < len(items):
        items[draining] = Worker(items[draining].name, items[draining].capacity, "draining")
    workers = Workers(tuple(items))
    snapshot = LoadSnapshot("s", np.array(loads), {})
    params = {"virtual_workers_per_worker": alpha} if strategy == "cg" else {}
    plan = get_strategy(strategy, **params).plan(snapshot, None, workers, Budget())
    active = {w.name for w in workers.active}
    assert len(plan.table.key_group_worker) == len(loads)
    assert set(plan.table.key_group_worker) <= active
    assert worker_load(plan.table, snapshot).sum() == pytest.approx(sum(loads), rel=1e-9, abs=1e-6)
    assert plan.predicted["imbalance"] >= -1e-9 or not any(loads)


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
    ⌈load·V / ((1+ε)·total)⌉ virtual workers (its salted choices permitting), and with key
    groups too light to overflow (≤ ε·total/V each) no virtual worker passes (1+ε)·total/V."""
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
    # with more pieces needed than virtual workers, a key finds no empty one and fills the spare
    # room of several (as many as it takes): the bound below holds when the needs fit
    fits = sum(needs.values()) <= n_virtual
    for key, parts in pieces.items():
        need = needs[key]
        assert need <= len(parts)
        if epsilon > 0 and fits:  # slack to find a salted choice with room for each piece
            assert len(parts) <= min(need + 1, n_virtual)
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


@given(st.lists(st.floats(0.1, 50), min_size=1, max_size=20), st.integers(1, 400))
def test_proportional_counts_sum_and_follow_capacity(capacities, total):
    caps = np.array(capacities)
    counts = proportional_counts(caps, total)
    assert counts.sum() == total
    assert np.all(counts >= (1 if total >= caps.size else 0))
    # largest remainder: never more than one away from the exact share, once the floor of 1 is met
    exact = total * caps / caps.sum()
    assert np.all((counts <= np.ceil(exact) + 0) | (counts == 1))


# --------------------------------------------------------------------------------------------
# the contract: honest budgets, immutable strategies, renamed parameters


def key_routing_strategies():
    return [n for n in strategy_names() if get_strategy(n).kind == "key_routing"]


LIMITS = {"max_moves": 3, "max_migrated_load_share": 0.05, "max_migration_cost": 2.0}
UNHONOURED = [
    (name, limit)
    for name in key_routing_strategies()
    for limit in BUDGET_LIMITS
    if limit not in get_strategy(name).honours
]
HONOURED = [
    (name, limit)
    for name in key_routing_strategies()
    for limit in BUDGET_LIMITS
    if limit in get_strategy(name).honours
]


@pytest.mark.parametrize(("name", "limit"), UNHONOURED)
def test_a_limit_a_strategy_does_not_honour_is_refused_before_planning(skewed, name, limit):
    budget = Budget(**{limit: LIMITS[limit]})
    with pytest.raises(UnhonouredLimitError, match=rf"{name!r}.*{limit}"):
        get_strategy(name).plan(skewed, None, Workers.homogeneous(4), budget)


def test_every_budget_limit_is_covered_by_the_parametrisation():
    assert {"cg", "ring"} <= {n for n, _ in HONOURED}
    assert len(UNHONOURED) + len(HONOURED) == len(key_routing_strategies()) * len(BUDGET_LIMITS)


@pytest.mark.parametrize(("name", "limit"), HONOURED)
@pytest.mark.parametrize("previous", ["kg", "same"])
@pytest.mark.parametrize("scale", [0.0, 0.3])
def test_an_honoured_limit_holds_against_a_current_table(name, limit, previous, scale):
    small = {"keys": 2_000, "messages": 50_000, "num_key_groups": 64}
    snapshot, drifted = zipf_snapshot(**small), zipf_snapshot(seed=3, **small)
    workers = heterogeneous()
    previous = name if previous == "same" else previous
    current = get_strategy(previous).plan(snapshot, None, Workers.homogeneous(10), Budget()).table
    value = {
        "max_moves": round(10 * scale),
        "max_migrated_load_share": 0.2 * scale,
        "max_migration_cost": 10.0 * scale,  # in moves, the default unit
    }[limit]
    budget = Budget(**{limit: value}, time_limit_s=2)
    plan = get_strategy(name).plan(drifted, current, workers, budget)
    predicted = plan.predicted
    assert predicted.get("forced_moves", 0) == 0  # every worker is still listed
    assert predicted["moves"] == len(plan.moves)
    spent = {
        "max_moves": predicted["moves"],
        "max_migrated_load_share": predicted["migrated_load_share"],
        "max_migration_cost": predicted.get("migration_cost", predicted["moves"]),
    }[limit]
    assert spent <= value + 1e-9
    if scale == 0:  # nothing may move: no move, or (a load-share limit) only moves of no load
        assert predicted["migrated_load_share"] == 0
        assert predicted["moves"] == 0 or limit == "max_migrated_load_share"


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


def test_ring_budget_zero_keeps_a_foreign_table(skewed):
    workers = Workers.homogeneous(10)
    cg = get_strategy("cg").plan(skewed, None, workers, Budget()).table
    plan = get_strategy("ring").plan(skewed, cg, workers, Budget(max_moves=0))
    assert plan.moves == ()
    assert plan.table.strategy_state["pinned_key_groups"]


@pytest.mark.parametrize(
    "name", ["kg", "sg", "potc", "pkg", "dchoices", "porc", "chbl", "cg", "ring"]
)
def test_strategies_are_immutable_values(skewed, name):
    strategy = get_strategy(name)
    workers = heterogeneous()
    first = strategy.plan(skewed, None, workers, Budget()).table
    budget = Budget(max_moves=2) if "max_moves" in strategy.honours else Budget()
    again = strategy.plan(skewed, first, workers, budget).table
    twice = strategy.plan(skewed, None, workers, Budget()).table
    assert twice.content() == first.content()
    assert strategy == get_strategy(name)
    assert first.params == parameters(strategy) == again.params
    fields = dataclasses.fields(strategy)
    if fields:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(strategy, fields[0].name, getattr(strategy, fields[0].name))
    assert not hasattr(strategy, "params")


def test_chbl_tokens_per_worker_keeps_its_old_name_as_a_deprecated_alias(skewed):
    with pytest.warns(
        DeprecationWarning, match="virtual_workers_per_worker is now tokens_per_worker"
    ):
        old = get_strategy("chbl", virtual_workers_per_worker=5)
    assert old == get_strategy("chbl", tokens_per_worker=5)
    assert old.tokens_per_worker == 5
    workers = Workers.homogeneous(6)
    assert (
        old.plan(skewed, None, workers, Budget()).table.content()
        == get_strategy("chbl", tokens_per_worker=5)
        .plan(skewed, None, workers, Budget())
        .table.content()
    )
    assert "tokens_per_worker" in strategy_parameters("chbl")
    assert "virtual_workers_per_worker" in strategy_parameters("cg")  # cg's α keeps its name


def test_register_refuses_a_class_that_breaks_the_contract():
    """A strategy is a frozen dataclass that declares its kind and the limits it honours."""
    from dataclasses import dataclass

    from routeplan.planning.registry import register

    @dataclass
    class Mutable:
        kind = "key_routing"
        honours = frozenset()

    @dataclass(frozen=True)
    class NoKind:
        honours = frozenset()

    @dataclass(frozen=True)
    class UnknownLimit:
        kind = "key_routing"
        honours = frozenset({"max_keys"})

    with pytest.raises(TypeError, match="frozen dataclass"):
        register("test_mutable")(Mutable)
    with pytest.raises(TypeError, match="must declare kind"):
        register("test_no_kind")(NoKind)
    with pytest.raises(TypeError, match="honours"):
        register("test_unknown_limit")(UnknownLimit)
    assert not {"test_mutable", "test_no_kind", "test_unknown_limit"} & set(strategy_names())
