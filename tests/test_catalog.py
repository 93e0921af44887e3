"""``routeplan.planning.catalog``: every registered strategy has a name for people."""

from __future__ import annotations

from routeplan.planning.catalog import STRATEGIES, describe, label
from routeplan.planning.registry import get_strategy, strategy_names


def test_every_registered_strategy_is_described_and_nothing_else():
    assert sorted(STRATEGIES) == strategy_names()
    for name, info in STRATEGIES.items():
        assert info.title and info.objective, name
        assert info.paper in (None, "000", "001", "002", "003", "004"), name
        taken = {f for f in type(get_strategy(name)).__dataclass_fields__}
        assert set(info.weights) <= taken, f"{name} weighs parameters it does not take"


def test_labels_name_the_strategy_its_title_and_paper():
    assert label("cg") == "cg — Consistent Grouping (paper 000)"
    assert label("mwfp") == "mwfp — Modified Worst Fit Partition (paper 002)"
    assert label("kafka_range") == "kafka_range — Kafka RangeAssignor"  # no paper
    assert describe("someone_elses").title == "someone_elses"
