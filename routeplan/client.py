"""What producers and consumers use: nothing but a published routing table.

router = Router.from_store("var/routing", "clicks")     # LATEST, or version=3
router.route("user-42")                                  # -> "w7"

assignment = Assignment.from_store("var/routing", "clicks")   # a partition_assignment table
assignment.partitions("c3")                                   # -> [4, 9]: what c3 reads
"""

from __future__ import annotations

import os
import threading

from routeplan.hashing import key_group
from routeplan.routing_table import RoutingTable
from routeplan.store import RoutingStore


class Router:
    """Routes keys exactly as a routing table says.

    A key with a ``hot_keys`` entry is spread over its workers by weight with smooth weighted
    round-robin (the split is exact over any run of messages); every other key goes to its key
    group's worker.
    """

    def __init__(self, table: RoutingTable) -> None:
        if table.kind != "key_routing":
            raise ValueError(
                f"{table.stream} v{table.version} is a {table.kind} table: "
                "read it with routeplan.client.Assignment"
            )
        self.table = table
        self._groups = table.key_group_worker
        self._num_key_groups = table.num_key_groups
        self._seed = table.hash_seed
        self._split = {
            key: ([w for w, _ in targets], [x for _, x in targets])
            for key, targets in table.hot_keys.items()
        }
        self._credit = {key: [0.0] * len(ws) for key, (ws, _) in self._split.items()}
        self._lock = threading.Lock()

    @classmethod
    def from_store(
        cls, root: str | os.PathLike[str], stream: str, version: int | None = None
    ) -> Router:
        """Load LATEST (or a pinned ``version``) of ``stream``, schema and checksum verified."""
        return cls(_published(root, stream, version))

    @property
    def version(self) -> int | None:
        return self.table.version

    def candidates(self, key: str) -> list[str]:
        """Every worker that may receive ``key``."""
        if key in self._split:
            return list(self._split[key][0])
        return [self._groups[key_group(key, self._num_key_groups, self._seed)]]

    def route(self, key: str) -> str:
        """The worker for the next message of ``key``."""
        split = self._split.get(key)
        if split is None:
            return self._groups[key_group(key, self._num_key_groups, self._seed)]
        workers, weights = split
        with self._lock:
            credit = self._credit[key]
            for i, weight in enumerate(weights):
                credit[i] += weight
            best = max(range(len(credit)), key=credit.__getitem__)
            credit[best] -= sum(weights)
        return workers[best]


class Assignment:
    """Which consumer reads which partition, as a ``partition_assignment`` table says."""

    def __init__(self, table: RoutingTable) -> None:
        if table.kind != "partition_assignment":
            raise ValueError(
                f"{table.stream} v{table.version} is a {table.kind} table, not a "
                "partition_assignment one"
            )
        self.table = table
        self._partitions: dict[str, list[int]] = {}
        for partition, consumer in table.partition_consumer.items():
            self._partitions.setdefault(consumer, []).append(partition)

    @classmethod
    def from_store(
        cls, root: str | os.PathLike[str], stream: str, version: int | None = None
    ) -> Assignment:
        """Load LATEST (or a pinned ``version``) of ``stream``, schema and checksum verified."""
        return cls(_published(root, stream, version))

    @property
    def version(self) -> int | None:
        return self.table.version

    @property
    def consumers(self) -> list[str]:
        """The consumers of the group (each reads at least one partition)."""
        return sorted(self._partitions)

    def consumer(self, partition: int) -> str:
        """The consumer that reads ``partition`` (KeyError if the table has no such partition)."""
        return self.table.partition_consumer[int(partition)]

    def partitions(self, consumer: str) -> list[int]:
        """The partitions ``consumer`` reads, ascending (empty: it is not in the group)."""
        return list(self._partitions.get(consumer, []))


def _published(root: str | os.PathLike[str], stream: str, version: int | None) -> RoutingTable:
    table = RoutingStore(root).load(stream, version)
    if table is None:
        raise FileNotFoundError(f"no routing table published for stream {stream!r} in {root}")
    return table
