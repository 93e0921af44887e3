"""``routeplan.planning.registry``: strategy names, parameters and registration."""

from __future__ import annotations

import pytest

from routeplan.planning.registry import (
    get_strategy,
    kept_home,
    strategy_names,
    strategy_parameters,
)


def test_registry_names_and_parameters():
    assert {"kg", "cg"} <= set(strategy_names())
    assert "epsilon" in strategy_parameters("cg")
    with pytest.raises(KeyError, match="unknown strategy"):
        get_strategy("nope")
    with pytest.raises(ValueError, match="bad parameters"):
        get_strategy("cg", epsilonn=0.1)


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


def test_kept_home_is_what_a_strategy_declares_for_key_groups_given_back():
    """A pruned move leaves the group where it was: cg takes it out of its virtual worker,
    the ring pins it, a strategy without state (lpt) keeps the state as it is."""
    cg = kept_home("cg", {"key_group_virtual_worker": [3, 4, 5, 6], "x": 1}, [1, 3])
    assert cg == {"key_group_virtual_worker": [3, -1, 5, -1], "x": 1}
    ring = kept_home("ring", {"pinned_key_groups": [7], "tokens": {}}, [2, 7])
    assert ring == {"pinned_key_groups": [2, 7], "tokens": {}}
    state = {"anything": [1]}
    assert kept_home("lpt", state, [0]) == state and kept_home("lpt", state, [0]) is not state
