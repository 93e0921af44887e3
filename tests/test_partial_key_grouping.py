"""``routeplan.planning.keyrouting.partial_key_grouping``: ``pkg`` and ``dchoices`` (paper 003)."""

from __future__ import annotations

import numpy as np
import pytest

from routeplan.model.hashing import hash_choices
from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import Budget
from routeplan.model.workers import Workers
from routeplan.planning.keyrouting.partial_key_grouping import head_choices
from routeplan.planning.registry import get_strategy
from routeplan_client import Router


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
