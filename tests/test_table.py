"""``routeplan.model.table``: routing tables and partition assignments."""

from __future__ import annotations

import pytest

from routeplan.model.table import PartitionAssignment, RoutingTable, table_from_document
from routeplan.model.workers import Workers


def test_partition_table_validation():
    workers = Workers.homogeneous(2)
    table = PartitionAssignment("s", "mwf", workers, {1: "w1", 0: "w0"})
    assert list(table.partition_consumer) == [0, 1] and table.num_partitions == 2
    assert "partition_consumer" in table.content() and "num_key_groups" not in table.content()
    key_table = RoutingTable("s", "kg", workers, ("w0", "w1"))
    assert "partition_consumer" not in key_table.content()
    with pytest.raises(ValueError, match="at least one partition"):
        PartitionAssignment("s", "mwf", workers, {})
    with pytest.raises(ValueError, match="does not list"):
        PartitionAssignment("s", "mwf", workers, {0: "x"})
    key_doc = {**key_table.to_document(), "partition_consumer": {"0": "w0"}}
    with pytest.raises(ValueError, match="belongs to partition_assignment"):
        RoutingTable.from_document(key_doc, verify=False)
    with pytest.raises(ValueError, match="at least one key group"):
        RoutingTable("s", "kg", workers, ())
    # each class reads its own kind; table_from_document reads either
    with pytest.raises(ValueError, match="is a partition_assignment table"):
        RoutingTable.from_document(table.to_document())
    with pytest.raises(ValueError, match="is a key_routing table"):
        PartitionAssignment.from_document(key_table.to_document())
    assert table_from_document(key_table.to_document()) == key_table
    assert table_from_document(table.to_document()) == table
