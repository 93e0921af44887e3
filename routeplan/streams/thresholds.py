"""A stream policy's ``thresholds``, each with its range, checked in one place.

``imbalance_tolerance`` (what ``auto`` counts as balanced), ``hot_key_min_share`` (the share
that makes a key a hot key), ``regression_tolerance`` and ``regression_days`` (what a regression
is), ``regression_window`` and ``cooldown`` (nights, for the regression guard) and
``capacity_tolerance`` (capacities that route alike): ``checked_thresholds`` turns a merged
policy's ``thresholds`` into ``StreamPolicy`` fields, or names the first one out of range. The
sections ``rebalance`` (the nightly gate, ``routeplan.streams.gate.GateRules``) and ``planning``
(the forecast, ``routeplan.streams.forecast.ForecastRules``) are checked the same way, against
``REBALANCE`` and ``PLANNING``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

# name → (integer?, low, high, low excluded?, unit said in the message)
RANGES: Mapping[str, tuple[bool, float, float, bool, str]] = {
    "imbalance_tolerance": (False, 0.0, 1.0, False, ""),
    "hot_key_min_share": (False, 0.0, 1.0, True, ""),
    "regression_tolerance": (False, 0.0, 1.0, False, ""),
    "regression_days": (True, 1, 30, False, ""),
    "regression_window": (True, 0, 365, False, " (nights)"),
    "cooldown": (True, 0, 365, False, " (nights)"),
    "capacity_tolerance": (False, 0.0, 1.0, False, ""),
}
REBALANCE: Mapping[str, tuple[bool, float, float, bool, str]] = {
    "threshold": (False, 0.0, 10.0, False, ""),
    "min_gain": (False, 0.0, 10.0, False, ""),
    "min_relative_gain": (False, 0.0, 1.0, False, ""),
    "persistence": (True, 1, 30, False, " (nights)"),
    "far": (False, 1.0, 100.0, False, " (× threshold)"),
}
PLANNING: Mapping[str, tuple[bool, float, float, bool, str]] = {
    "history_days": (True, 1, 60, False, " (days)"),
    "quantile": (False, 0.0, 1.0, False, ""),
    "decay": (False, 0.0, 1.0, True, ""),
}


def checked_thresholds(
    thresholds: Mapping[str, Any],
    error: Callable[[str, str], Exception],
    ranges: Mapping[str, tuple[bool, float, float, bool, str]] = RANGES,
) -> dict[str, float | int]:
    """Every number of ``ranges`` (default the ``thresholds``') from ``thresholds``;
    ``error(field, message)`` is raised for the first one missing or out of its range."""
    found: dict[str, float | int] = {}
    for name, (integer, low, high, open_low, unit) in ranges.items():
        value = thresholds.get(name)
        if integer:
            valid = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
            if not valid:
                raise error(name, f"must be an integer in {low}..{high}{unit}")
            found[name] = value
            continue
        number = _number(value, low, high, open_low)
        if number is None:
            interval = f"{'(' if open_low else '['}{low:g}, {high:g}]"
            raise error(name, f"must be a number in {interval}{unit}")
        found[name] = number
    return found


def _number(value: Any, low: float, high: float, open_low: bool) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if value < low or value > high or (open_low and value == low):
        return None
    return float(value)
