"""``routeplan.planning.keyrouting.virtual_workers``: virtual workers by capacity."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from routeplan.planning.keyrouting.virtual_workers import proportional_counts


@given(st.lists(st.floats(0.1, 50), min_size=1, max_size=20), st.integers(1, 400))
def test_proportional_counts_sum_and_follow_capacity(capacities, total):
    caps = np.array(capacities)
    counts = proportional_counts(caps, total)
    assert counts.sum() == total
    assert np.all(counts >= (1 if total >= caps.size else 0))
    # largest remainder: never more than one away from the exact share, once the floor of 1 is met
    exact = total * caps / caps.sum()
    assert np.all((counts <= np.ceil(exact) + 0) | (counts == 1))
