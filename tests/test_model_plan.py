"""``routeplan.model.plan``: plans and their moves."""

from __future__ import annotations

import numpy as np

from routeplan.model.loads import LoadSnapshot
from routeplan.model.plan import moves
from routeplan.model.table import RoutingTable
from routeplan.model.workers import Workers


def test_moves_list_changed_groups_and_hot_keys_with_their_load():
    workers = Workers.homogeneous(2)
    loads = LoadSnapshot("s", np.array([5.0, 7.0, 1.0]), {})
    a = RoutingTable("s", "kg", workers, ("w0", "w1", "w0"))
    b = RoutingTable("s", "kg", workers, ("w0", "w0", "w1"))
    found = moves(a, b, loads)
    assert [m.unit for m in found] == ["key_group:1", "key_group:2"]
    assert sum(m.load for m in found) == 8.0
    assert moves(a, a, loads) == ()
