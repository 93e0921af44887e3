"""``routeplan.model.flow``: flows between key groups."""

from __future__ import annotations

import numpy as np
import pytest

from routeplan.model.flow import flow_arrays
from routeplan.model.loads import LoadSnapshot


def test_flow_is_validated():
    with pytest.raises(ValueError, match="endpoints"):
        LoadSnapshot("s", np.ones(2), key_group_flow=np.array([[0, 5, 1.0]]))
    with pytest.raises(ValueError, match="one end"):
        LoadSnapshot("s", np.ones(2), key_group_flow=[[2, 3, 1.0]], flow_anchors=("a", "b"))
    with pytest.raises(ValueError, match="rows"):
        LoadSnapshot("s", np.ones(2), key_group_flow=np.ones((2, 2)))
    with pytest.raises(ValueError, match="outside"):
        flow_arrays(2, [(0, 2, 1.0)])
