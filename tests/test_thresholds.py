"""A policy's thresholds checked in one place (routeplan.streams.thresholds)."""

from __future__ import annotations

import re

import pytest

from routeplan.streams.policy import DEFAULTS
from routeplan.streams.thresholds import RANGES, checked_thresholds


def refuse(field: str, message: str) -> ValueError:
    return ValueError(f"{field}: {message}")


def test_the_defaults_pass_and_keep_their_types():
    found = checked_thresholds(DEFAULTS["thresholds"], refuse)
    assert found == dict(DEFAULTS["thresholds"]) and set(found) == set(RANGES)
    assert isinstance(found["cooldown"], int) and isinstance(found["regression_tolerance"], float)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("imbalance_tolerance", 1.5, "imbalance_tolerance: must be a number in [0, 1]"),
        ("hot_key_min_share", 0, "hot_key_min_share: must be a number in (0, 1]"),
        ("regression_tolerance", True, "regression_tolerance: must be a number in [0, 1]"),
        ("regression_days", 0, "regression_days: must be an integer in 1..30"),
        ("regression_window", 1.0, "regression_window: must be an integer in 0..365 (nights)"),
        ("cooldown", 366, "cooldown: must be an integer in 0..365 (nights)"),
        ("capacity_tolerance", float("nan"), "capacity_tolerance: must be a number in [0, 1]"),
    ],
)
def test_a_threshold_out_of_its_range_is_named_with_its_range(field, value, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        checked_thresholds({**DEFAULTS["thresholds"], field: value}, refuse)
