"""``routeplan.planning.keyrouting.placement``: water filling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeplan.planning.keyrouting.placement import water_fill


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
