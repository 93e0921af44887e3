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


def test_a_document_is_published_with_a_jcs_checksum_and_an_old_one_verified_the_old_way():
    from routeplan.model.table import LEGACY_CHECKSUM_PREFIX, checksum

    table = RoutingTable("s", "t", Workers.homogeneous(2), ("w0", "w1"), predicted={"x": 1e-05})
    doc = table.published(1, None, "2026-01-01T00:00:00+00:00").to_document()
    assert doc["checksum"].startswith("jcs-sha256:")
    assert table_from_document(doc).same_routing(table)
    body = {k: v for k, v in doc.items() if k != "checksum"}
    old = {**body, "checksum": checksum(body, LEGACY_CHECKSUM_PREFIX)}  # Python's "1e-05"
    assert old["checksum"].startswith("sha256:") and old["checksum"][7:] != doc["checksum"][11:]
    assert table_from_document(old).same_routing(table)
    for tampered in ({**old, "version": 2}, {**doc, "checksum": "sha256:" + doc["checksum"][11:]}):
        with pytest.raises(ValueError, match="checksum mismatch"):
            table_from_document(tampered)


def test_a_key_routing_document_with_a_seed_beyond_32_bits_or_a_key_split_twice_is_refused():
    from routeplan.model.table import checksum

    table = RoutingTable(
        "s", "t", Workers.homogeneous(2), ("w0", "w1"), hot_keys={"k": [("w0", 1)]}
    )
    doc = table.published(1, None, "2026-01-01T00:00:00+00:00").to_document()
    for changes, message in (
        ({"hash": {"function": "murmur3_x86_32", "seed": 2**32}}, "seed must be an integer"),
        ({"hash": {"function": "murmur3_x86_32", "seed": 1.5}}, "seed must be an integer"),
        ({"hot_keys": doc["hot_keys"] * 2}, "listed twice"),
    ):
        bad = {**doc, **changes}
        bad["checksum"] = checksum(bad)
        with pytest.raises(ValueError, match=message):
            table_from_document(bad)
