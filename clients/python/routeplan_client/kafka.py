"""Kafka producers that route by a routing table, in one line.

    from routeplan_client import Router
    from routeplan_client.kafka import KafkaPythonPartitioner, RoutedProducer, version_header

    token = os.environ["ROUTEPLAN_API_TOKEN"]
    router = Router.open("https://routeplan.example", "clicks", token=token, reload_interval=30)

    # kafka-python
    producer = KafkaProducer(bootstrap_servers=..., partitioner=KafkaPythonPartitioner(router))
    producer.send("clicks", key=b"user-42", value=b"...", headers=[version_header(router)])

    # confluent-kafka (librdkafka takes no Python partitioner: the wrapper sets partition=)
    producer = RoutedProducer(confluent_kafka.Producer(conf), router)
    producer.produce("clicks", value=b"...", key="user-42")

Each message goes to the partition of ``router.route(key)``: by default the integer that ends the
worker's name (``w7`` → 7, ``3`` → 3), or an explicit ``worker_partition`` mapping. Keys are the
table's keys: ``str``, or bytes decoded as UTF-8. A message without a key is an error here, not
a silent fall-back to Kafka's own partitioner: a routed topic has no place for it.
``version_header(router)`` is the ``routing_version`` header to stamp on each record: the next
night's outcomes attribute each message to the version that routed it.

Consumers: ``assignor(location, stream, ...)`` returns the class kafka-python's
``partition_assignment_strategy`` takes, so a consumer group reads its partitions as the
stream's ``partition_assignment`` table says (``routeplan_client.assignor``).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from routeplan_client.router import Router
from routeplan_client.tables import RoutingTable

__all__ = [
    "ROUTING_VERSION_HEADER",
    "KafkaPythonPartitioner",
    "RoutedProducer",
    "version_header",
    "worker_partitions",
]

ROUTING_VERSION_HEADER = "routing_version"


def __getattr__(name: str) -> Any:
    """``assignor`` and ``Rebalancer`` come from ``routeplan_client.assignor`` when first asked
    for: it needs kafka-python 3.x, the partitioners here do not (2.x works too)."""
    if name in ("assignor", "Rebalancer", "RouteplanAssignor"):
        from routeplan_client import assignor as module

        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TRAILING_INT = re.compile(r"(\d+)$")


def worker_partitions(
    workers: Iterable[str], worker_partition: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Partition of each worker: ``worker_partition[worker]``, else the integer its name ends
    with. ValueError for a worker with neither, or two workers on one partition."""
    mapping: dict[str, int] = {}
    for worker in workers:
        if worker_partition is not None and worker in worker_partition:
            partition = int(worker_partition[worker])
        elif match := _TRAILING_INT.search(worker):
            partition = int(match.group(1))
        else:
            raise ValueError(
                f"worker {worker!r} has no trailing integer to use as its partition: "
                "pass worker_partition={worker: partition, ...}"
            )
        if partition < 0:
            raise ValueError(f"worker {worker!r}: partition must be >= 0, got {partition}")
        mapping[worker] = partition
    owners: dict[int, str] = {}
    for worker, partition in mapping.items():
        if partition in owners:
            raise ValueError(
                f"workers {owners[partition]!r} and {worker!r} both map to partition {partition}"
            )
        owners[partition] = worker
    return mapping


def _key_text(key: object) -> str:
    """The routing key of a message: ``str`` as is, bytes decoded as UTF-8."""
    if isinstance(key, str):
        return key
    if key is None:
        raise ValueError(
            "routeplan routes keyed messages: this message has no key "
            "(send it through a producer without the routeplan partitioner)"
        )
    if isinstance(key, (bytes, bytearray, memoryview)):
        try:
            return bytes(key).decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(f"message key {bytes(key)[:40]!r} is not UTF-8: {err}") from err
    raise TypeError(f"message key must be str or bytes, got {type(key).__name__}")


def version_header(version: Router | int | None) -> tuple[str, bytes]:
    """The ``routing_version`` header of a record (``(name, value)``, as kafka-python's
    ``headers=[...]`` and confluent-kafka's take it): the decimal version of the table that
    routed it, as UTF-8 — ``router.version`` when given a router. ValueError for a table that
    was never published (no version to attribute the record to)."""
    number = version.version if isinstance(version, Router) else version
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"routing_version must be a published version (>= 1), got {number!r}")
    return ROUTING_VERSION_HEADER, str(number).encode("ascii")


class _Partitions:
    """``router.route(key)`` as a partition of a topic, the worker map rebuilt when the table
    changes."""

    def __init__(self, router: Router, worker_partition: Mapping[str, int] | None) -> None:
        self.router = router
        self._explicit = dict(worker_partition) if worker_partition is not None else None
        self._cached: tuple[RoutingTable, dict[str, int]] | None = None
        self._map()  # a worker without a partition fails here, not at the first message

    def _map(self) -> dict[str, int]:
        table = self.router.table
        if self._cached is None or self._cached[0] is not table:
            self._cached = (table, worker_partitions(table.worker_names, self._explicit))
        return self._cached[1]

    def missing(self, partitions: Collection[int]) -> list[int]:
        """The partitions the table needs that ``partitions`` (a topic's) lacks."""
        return sorted(set(self._map().values()) - set(partitions))

    def route_in(self, topic: str, key: object, partitions: Collection[int]) -> int:
        """The partition of the message in ``topic`` (whose partitions are ``partitions``),
        counted by the router only once placed: a key that is not text, or a topic with fewer
        partitions than the table needs, is refused before the message is routed (every
        record, not only those of the workers beyond it: the routing spec §4)."""
        text = _key_text(key)
        missing = self.missing(partitions)
        if missing:
            raise ValueError(
                f"topic {topic!r} has partitions {_span(partitions) or 'none'}, but table "
                f"{self.router.table.stream} {_version(self.router.version)} needs "
                f"{_span(missing)} too: no record is routed until the topic has them"
            )
        worker = self.router.route(text)
        partition = self._map().get(worker)
        if partition is None:  # the table changed between the check and route()
            partition = worker_partitions([worker], self._explicit)[worker]
        return partition


def _version(version: int | None) -> str:
    return f"v{version}" if version is not None else "(not published)"


def _span(partitions: Collection[int]) -> str:
    ordered = sorted(partitions)
    if len(ordered) > 1 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(map(str, ordered))


class KafkaPythonPartitioner:
    """kafka-python's ``partitioner=``: the partition of ``router.route(key)``.

    kafka-python 3.x calls ``partition(topic, key, serialized_key, value, serialized_value,
    cluster)`` on a ``kafka.partitioner.Partitioner`` (this class registers as one); 2.x calls
    the partitioner itself with ``(serialized_key, all_partitions, available_partitions)``. A
    ``str`` key is routed by its text, bytes as UTF-8 (the routing spec §3). A topic with
    fewer partitions than the table needs refuses every record, before it is counted.
    """

    def __init__(self, router: Router, worker_partition: Mapping[str, int] | None = None) -> None:
        try:
            from kafka.partitioner import Partitioner
        except ImportError:  # kafka-python 2.x has no base class: it calls __call__
            pass
        else:
            Partitioner.register(KafkaPythonPartitioner)
        self._partitions = _Partitions(router, worker_partition)

    @property
    def router(self) -> Router:
        return self._partitions.router

    def partition(
        self,
        topic: str,
        key: object,
        serialized_key: bytes | None,
        value: object,
        serialized_value: bytes | None,
        cluster: Any,
    ) -> int:
        """kafka-python 3.x: a ``str`` key is routed by its text whatever the serializer
        wrote (as Java's partitioner does), other keys by their serialized bytes (UTF-8)."""
        chosen = key if isinstance(key, str) else serialized_key
        return self._partitions.route_in(topic, chosen, cluster.partitions_for_topic(topic) or ())

    def __call__(
        self, serialized_key: bytes | None, all_partitions: list[int], available: list[int]
    ) -> int:
        """kafka-python 2.x."""
        topic = "(kafka-python 2.x does not name it)"
        return self._partitions.route_in(topic, serialized_key, all_partitions)


class RoutedProducer:
    """A confluent-kafka ``Producer`` whose ``produce`` sets ``partition=`` by the table.

    Everything else (``flush``, ``poll``, ``len()``, transactions …) is the wrapped producer's.
    The topic's partitions are read once from the cluster (``list_topics``) and again when the
    table needs one not among them; still missing, ``produce`` raises ValueError for every
    record, before it is routed or counted.
    """

    def __init__(
        self,
        producer: Any,
        router: Router,
        worker_partition: Mapping[str, int] | None = None,
        metadata_timeout: float = 10.0,
    ) -> None:
        self.producer = producer
        self._partitions = _Partitions(router, worker_partition)
        self._metadata_timeout = metadata_timeout
        self._topic_partitions: dict[str, frozenset[int]] = {}

    @property
    def router(self) -> Router:
        return self._partitions.router

    def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> None:
        """``Producer.produce`` to the partition of ``router.route(key)``."""
        if "partition" in kwargs:
            raise TypeError("RoutedProducer.produce chooses the partition: do not pass one")
        partition = self._partition(topic, key)
        self.producer.produce(topic, value=value, key=key, partition=partition, **kwargs)

    def produce_batch(self, topic: str, messages: list[dict[str, Any]], **kwargs: Any) -> int:
        """``Producer.produce_batch`` by the table: one call per partition, messages in order.

        (confluent-kafka 2.16 does not reliably honour a per-message ``partition`` in a batch,
        but does honour the batch's.) Every key is checked before any message is routed.
        """
        if "partition" in kwargs or any("partition" in m for m in messages):
            raise TypeError("RoutedProducer.produce_batch chooses the partitions: pass none")
        keys = [_key_text(m.get("key")) for m in messages]
        by_partition: dict[int, list[dict[str, Any]]] = {}
        for message, key in zip(messages, keys):
            by_partition.setdefault(self._partition(topic, key), []).append(message)
        return sum(
            self.producer.produce_batch(topic, batch, partition=partition, **kwargs)
            for partition, batch in by_partition.items()
        )

    def _partition(self, topic: str, key: Any) -> int:
        known = self._topic_partitions.get(topic)
        if known is None or self._partitions.missing(known):  # new, or partitions added since
            known = self._refresh(topic)
        return self._partitions.route_in(topic, key, known)

    def _refresh(self, topic: str) -> frozenset[int]:
        metadata = self.producer.list_topics(topic, timeout=self._metadata_timeout)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            raise ValueError(f"topic {topic!r}: no metadata ({found.error if found else 'absent'})")
        self._topic_partitions[topic] = frozenset(found.partitions)
        return self._topic_partitions[topic]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.producer, name)

    def __len__(self) -> int:
        return len(self.producer)
