"""Key-routing strategies of papers 000, 001, 003 as batch planners: the tables they publish."""

from collections import Counter

import numpy as np
import pytest
from conftest import zipf_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeplan.model.hashing import hash_choices, hash_choices_many, key_group, key_hash
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Worker, Workers
from routeplan.planning.keyrouting.partial_key_grouping import head_choices
from routeplan.planning.keyrouting.placement import water_fill
from routeplan.planning.keyrouting.ring import HashRing, group_positions
from routeplan.planning.metrics import skew, worker_load
from routeplan.planning.registry import get_strategy, strategy_names, strategy_parameters
from routeplan.producers.client import Router
from routeplan.simulation.online import ONLINE_SCHEMES

KEY_ROUTING = ("kg", "sg", "potc", "pkg", "dchoices", "porc", "chbl", "cg", "ring")


def test_every_key_routing_strategy_is_registered_with_an_online_form():
    assert set(KEY_ROUTING) <= set(strategy_names())
    assert set(ONLINE_SCHEMES) == set(KEY_ROUTING)
    assert {"epsilon", "tokens_per_worker"} <= set(strategy_parameters("chbl"))
    assert "epsilon" in strategy_parameters("porc")
    assert {"method", "tau", "max_rounds"} <= set(strategy_parameters("ring"))
    for name, bad in (("ring", {"method": "tripling"}), ("pkg", {"d": 0}), ("porc", {"x": 1})):
        with pytest.raises(ValueError):
            get_strategy(name, **bad)


def messages_and_snapshot(seed: int, exponent: float, keys: int, groups: int, hot: int):
    """A message stream (key per message) and the LoadSnapshot the windows job would make."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, keys + 1) ** exponent
    counts = rng.multinomial(4_000, p / p.sum())
    names = [f"key-{seed}-{i}" for i in range(keys)]
    load = np.zeros(groups)
    for name, c in zip(names, counts, strict=True):
        load[key_group(name, groups)] += c
    top = [names[i] for i in np.argsort(-counts, kind="stable")[:hot] if counts[i] > 0]
    snapshot = LoadSnapshot("s", load, {k: float(counts[names.index(k)]) for k in top})
    messages = [n for n, c in zip(names, counts, strict=True) for _ in range(c)]
    rng.shuffle(messages)
    return messages, snapshot


def allowed_workers(name, table, snapshot, key, active):
    """Where the strategy's rule may send a hot key (paper 003 §3: its d hash choices)."""
    n, total = len(active), snapshot.total
    if name == "pkg":  # two independent hashes (§5), which may coincide
        return {active[c] for c in hash_choices(key, 2, n)}
    if name == "dchoices":  # ours: d_i distinct choices
        keys = list(snapshot.hot_key_load)
        d = head_choices([snapshot.hot_key_load[k] / total for k in keys], n)[keys.index(key)]
        return {active[c] for c in hash_choices(key, d, n, distinct=True)}
    return set(active)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    exponent=st.floats(0.6, 1.6),
    capacities=st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=2, max_size=9),
    draining=st.integers(0, 8),
    groups=st.sampled_from([16, 64, 128]),
)
def test_router_sends_every_message_where_each_plan_intended(
    seed, exponent, capacities, draining, groups
):
    items = [Worker(f"w{i}", c) for i, c in enumerate(capacities)]
    if draining < len(items):
        items[draining] = Worker(items[draining].name, items[draining].capacity, "draining")
    workers = Workers(tuple(items))
    active = [w.name for w in workers.active]
    messages, snapshot = messages_and_snapshot(seed, exponent, 300, groups, hot=8)
    for name in KEY_ROUTING:
        table = get_strategy(name).plan(snapshot, None, workers, Budget()).table
        # every key group assigned exactly once, to an active worker
        assert len(table.key_group_worker) == groups
        assert set(table.key_group_worker) <= set(active), name
        router = Router(table)
        got = Counter(router.route(m) for m in messages)
        for key, targets in table.hot_keys.items():
            listed = {w for w, _ in targets}
            assert listed <= allowed_workers(name, table, snapshot, key, active), (name, key)
            assert set(router.candidates(key)) == listed
        for m in set(messages) - set(table.hot_keys):
            assert router.route(m) == table.key_group_worker[key_group(m, groups)]
        # split keys' messages land on their listed workers only (the Router picks among
        # them by local load, paper 003 §3.2); no message is lost
        for key, targets in table.hot_keys.items():
            assert {router.route(key) for _ in range(3 * len(targets))} <= {w for w, _ in targets}
        assert sum(got.values()) == len(messages)
        if name == "ring":
            ring = HashRing.build(table.strategy_state["tokens"])
            owners = ring.lookup(group_positions(groups))
            assert list(table.key_group_worker) == [ring.names[o] for o in owners]


@pytest.mark.parametrize("name", ["sg", "potc", "pkg", "dchoices", "porc", "chbl", "cg"])
def test_load_aware_tables_balance_a_skewed_snapshot_where_kg_does_not(skewed, name):
    workers = Workers.homogeneous(10)
    kg = get_strategy("kg").plan(skewed, None, workers, Budget()).predicted
    plan = get_strategy(name).plan(skewed, None, workers, Budget()).predicted
    assert kg["imbalance"] > 0.5
    assert plan["imbalance"] < 0.02, plan
    if name in ("porc", "chbl", "cg"):  # ε-bounded (paper 000 §V-A)
        assert plan["imbalance"] <= 0.01 + 1e-9


def test_memory_orders_like_the_papers(skewed):
    """Paper 000 §VI-B: KG keeps one copy of each key, PKG at most two, SG/PoTC up to W."""
    workers = Workers.homogeneous(10)
    memory = {
        n: get_strategy(n).plan(skewed, None, workers, Budget()).predicted["memory"]
        for n in ("kg", "pkg", "sg", "potc")
    }
    keys = skewed.distinct_keys.sum()
    assert memory["kg"] == keys
    assert keys < memory["pkg"] <= keys + len(skewed.hot_key_load)
    assert memory["sg"] > memory["pkg"] and memory["potc"] > memory["pkg"]


def test_dchoices_gives_head_keys_more_choices_than_pkg():
    loads = LoadSnapshot("s", np.array([600.0, 300, 100]), {"hot": 500.0, "warm": 100.0})
    workers = Workers.homogeneous(10)
    pkg = get_strategy("pkg").plan(loads, None, workers, Budget()).table
    dch = get_strategy("dchoices").plan(loads, None, workers, Budget()).table
    assert len(pkg.hot_keys["hot"]) <= 2
    # head shares 0.5 and 0.1 over 10 workers at fill 0.5: ⌈0.5·10/0.5⌉ = 10, then the lighter
    # key's cumulative share 0.6 → all 10 too; below 1/(5W) = 0.02 a key keeps two
    assert head_choices([0.5, 0.1, 0.01], 10) == [10, 10, 2]
    assert head_choices([0.05, 0.03], 10) == [2, 2]
    assert head_choices([0.03, 0.05], 100, fill=0.5) == [16, 10]
    assert len(dch.hot_keys["hot"]) > 2


@given(st.text(min_size=1, max_size=12), st.integers(1, 40), st.integers(1, 50), st.integers(0, 99))
def test_distinct_hash_choices_differ_and_start_with_key_grouping(key, d, n, seed):
    choices = hash_choices(key, d, n, seed, distinct=True)
    assert len(choices) == min(d, n) == len(set(choices))
    assert all(0 <= c < n for c in choices)
    assert choices[0] == key_hash(key, seed) % n
    assert hash_choices_many([key, "other"], d, n, seed, distinct=True)[0].tolist() == choices


def coinciding_key(n: int) -> str:
    """A key whose two independent hash choices among ``n`` workers coincide."""
    return next(f"k{i}" for i in range(10_000) if len(set(hash_choices(f"k{i}", 2, n))) == 1)


def test_pkg_follows_paper_003_independent_choices_and_distinct_is_an_option():
    """Paper 003 §5: a key whose two hashes coincide has one worker; ``distinct_choices`` (ours)
    gives it two. A split key's workers are exactly its choices in both."""
    n = 10
    key = coinciding_key(n)
    loads = LoadSnapshot("s", np.array([600.0, 300, 100]), {key: 500.0})
    workers = Workers.homogeneous(n)
    paper = get_strategy("pkg").plan(loads, None, workers, Budget()).table
    ours = get_strategy("pkg", distinct_choices=True).plan(loads, None, workers, Budget()).table
    names = workers.names
    assert {w for w, _ in paper.hot_keys[key]} == {names[hash_choices(key, 2, n)[0]]}
    assert {w for w, _ in ours.hot_keys[key]} == {
        names[c] for c in hash_choices(key, 2, n, distinct=True)
    }
    assert len(ours.hot_keys[key]) == 2
    assert paper.params["distinct_choices"] is False and ours.params["distinct_choices"] is True
    with pytest.raises(ValueError):
        get_strategy("pkg", distinct_choices="yes")


def test_a_pkg_table_routes_by_its_listed_workers_not_by_hash_choices():
    """A table planned with distinct choices (every ``pkg`` table before the paper's independent
    choices became the default) keeps routing each hot key to the workers its document lists."""
    n = 10
    key = coinciding_key(n)
    loads = LoadSnapshot("s", np.array([600.0, 300, 100]), {key: 500.0})
    workers = Workers.homogeneous(n)
    old = get_strategy("pkg", distinct_choices=True).plan(loads, None, workers, Budget()).table
    router = Router(old)
    listed = {w for w, _ in old.hot_keys[key]}
    assert len(listed) == 2
    assert {router.route(key) for _ in range(20)} == listed


@given(
    st.lists(st.floats(0, 100), min_size=1, max_size=8),
    st.lists(st.floats(0.5, 5), min_size=8, max_size=8),
    st.floats(0.001, 500),
)
def test_water_fill_levels_the_receivers_and_conserves_load(levels, capacity, amount):
    cap = np.array(capacity[: len(levels)])
    load = np.array(levels) * cap
    before = load.copy()
    parts = water_fill(amount, range(len(levels)), load, cap)
    assert sum(parts.values()) == pytest.approx(amount)
    assert all(x > 0 for x in parts.values())
    after = load / cap
    top = max(after[w] for w in parts)
    # every receiver ends at the same level, no worker left below it received nothing it could
    assert all(after[w] == pytest.approx(top, abs=1e-6 * (1 + top)) for w in parts)
    untouched = [i for i in range(len(levels)) if i not in parts]
    assert all(before[i] / cap[i] >= top - 1e-6 * (1 + top) for i in untouched)


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50), st.integers(1, 6))
def test_ring_lookup_is_the_first_token_clockwise(hashes, tokens):
    ring = HashRing.build({"a": tokens, "b": 2 * tokens, "c": 1})
    got = ring.lookup(np.array(hashes))
    for h, owner in zip(hashes, got, strict=True):
        after = [i for i, p in enumerate(ring.positions) if p >= h]
        expected = ring.owners[after[0] if after else 0]  # wrap around past the last token
        assert owner == expected


@pytest.mark.parametrize("method", ["halving", "doubling"])
def test_ring_rounds_reduce_skew_and_carry_their_tokens(method):
    loads = zipf_snapshot(keys=3_000, messages=100_000, exponent=0.7, num_key_groups=256)
    workers = Workers.homogeneous(4)  # paper 001 §6: four reducers, τ = 0.2
    ring = {"method": method, "initial_tokens": 4}
    none = get_strategy("ring", max_rounds=0, **ring).plan(loads, None, workers, Budget())
    lb = get_strategy("ring", max_rounds=3, **ring).plan(loads, None, workers, Budget())
    assert lb.table.strategy_state["relieved"], "the trigger Q_max > Q_2·(1+τ) must fire"
    assert skew(worker_load(lb.table, loads)) < skew(worker_load(none.table, loads))
    tokens = lb.table.strategy_state["tokens"]
    start = none.table.strategy_state["tokens"]
    assert start == dict.fromkeys(workers.names, 4 if method == "halving" else 1)
    assert tokens != start
    # the next plan starts from these tokens; a zero-round plan keeps them and routes alike
    again = get_strategy("ring", max_rounds=0, **ring).plan(loads, lb.table, workers, Budget())
    assert again.table.strategy_state["tokens"] == tokens
    assert again.moves == ()


def test_ring_respects_the_move_budget():
    loads = zipf_snapshot(keys=3_000, messages=100_000, exponent=0.7, num_key_groups=256)
    workers = Workers.homogeneous(4)
    ring = get_strategy("ring", initial_tokens=4)
    first = get_strategy("ring", initial_tokens=4, max_rounds=0).plan(
        loads, None, workers, Budget()
    )
    capped = ring.plan(loads, first.table, workers, Budget(max_moves=0))
    free = ring.plan(loads, first.table, workers, Budget())
    assert capped.moves == ()
    assert len(free.moves) > 0


def test_skew_metric_matches_paper_001_definition():
    assert skew(np.array([25.0, 25, 25, 25])) == 0.0
    assert skew(np.array([100.0, 0, 0, 0])) == 1.0
    # M = 100, U = 25, W = 40: (40 − 25) / (100 − 25) = 0.2 (WL5-like)
    assert skew(np.array([40.0, 20, 20, 20])) == pytest.approx(0.2)


@pytest.mark.parametrize("name", KEY_ROUTING)
def test_an_idle_stream_still_gets_a_complete_table(name):
    loads = LoadSnapshot("s", np.zeros(8), {"quiet": 0.0})
    workers = Workers((Worker("a"), Worker("b", 2.0), Worker("c", state="draining")))
    plan = get_strategy(name).plan(loads, None, workers, Budget())
    assert set(plan.table.key_group_worker) <= {"a", "b"}
    assert all(w in {"a", "b"} for t in plan.table.hot_keys.values() for w, _ in t)
    assert plan.predicted["imbalance"] == 0.0
