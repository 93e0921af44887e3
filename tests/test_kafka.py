"""routeplan.producers.kafka: producers route every message exactly as ``Router.route`` does,
against a real (librdkafka mock) Kafka cluster with both kafka-python and confluent-kafka."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from routeplan.model.table import RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.producers.client import Router
from routeplan.producers.kafka import KafkaPythonPartitioner, RoutedProducer, worker_partitions
from routeplan.publishing.store import RoutingStore

confluent_kafka = pytest.importorskip("confluent_kafka")

TABLE = RoutingTable(
    "clicks",
    "test",
    Workers((Worker("w0"), Worker("w1", 2.0), Worker("w2"), Worker("w3"))),
    tuple(f"w{g % 4}" for g in range(32)),
    hot_keys={
        "hot-0": (("w0", 0.5), ("w1", 0.5)),
        "hot-1": (("w2", 0.2), ("w3", 0.3), ("w1", 0.5)),
    },
)


def messages(n: int = 300, seed: int = 0) -> list[str]:
    """Keys of a skewed stream: a third of the messages are the two split keys."""
    rng = np.random.default_rng(seed)
    return [
        ("hot-0", "hot-1")[r % 2] if r < 200 else f"user-{r}"
        for r in rng.integers(0, 600, size=n).tolist()
    ]


def routed_partitions(keys: list[str], table: RoutingTable = TABLE) -> list[int]:
    """What a fresh Router says, as partitions (``wN`` -> N)."""
    router = Router(table)
    return [int(router.route(k)[1:]) for k in keys]


class Cluster:
    """The part of kafka-python's ``ClusterMetadata`` a partitioner reads."""

    def __init__(self, partitions: set[int]) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions


def test_worker_partitions_from_names_or_an_explicit_map():
    assert worker_partitions(["w0", "consumer-12", "3"]) == {"w0": 0, "consumer-12": 12, "3": 3}
    assert worker_partitions(["a", "w1"], {"a": 0}) == {"a": 0, "w1": 1}
    with pytest.raises(ValueError, match="worker 'alpha' has no trailing integer"):
        worker_partitions(["w0", "alpha"])
    with pytest.raises(ValueError, match="'w1' and 'x1' both map to partition 1"):
        worker_partitions(["w1", "x1"])
    with pytest.raises(ValueError, match="no trailing integer"):
        KafkaPythonPartitioner(Router(RoutingTable("s", "t", Workers((Worker("a"),)), ("a",))))


def test_kafka_python_partitioner_called_as_both_major_versions_call_it():
    kafka = pytest.importorskip("kafka")
    keys = messages()
    expected = routed_partitions(keys)
    three, two = KafkaPythonPartitioner(Router(TABLE)), KafkaPythonPartitioner(Router(TABLE))
    assert isinstance(three, kafka.partitioner.Partitioner)  # 3.x takes the non-deprecated path
    cluster = Cluster({0, 1, 2, 3})
    got = [three.partition("clicks", k, k.encode(), b"v", b"v", cluster) for k in keys]
    assert got == expected
    assert [two(k.encode(), [0, 1, 2, 3], [0, 1]) for k in keys] == expected
    assert three.router.local_loads() == two.router.local_loads()


def test_a_partition_the_topic_lacks_or_a_bad_key_is_a_clear_error():
    partitioner = KafkaPythonPartitioner(Router(TABLE))
    cluster = Cluster({0, 1, 2})
    key = next(k for k in messages() if routed_partitions([k]) == [3])
    with pytest.raises(
        ValueError, match=r"'w3' maps to partition 3, which topic 'clicks' does not"
    ):
        partitioner.partition("clicks", key, key.encode(), None, None, cluster)
    with pytest.raises(ValueError, match="has no key"):
        partitioner.partition("clicks", None, None, b"v", b"v", cluster)
    with pytest.raises(ValueError, match="not UTF-8"):
        partitioner.partition("clicks", None, b"\xff\xfe", b"v", b"v", cluster)


def test_an_explicit_map_and_a_reloaded_table_change_the_partitions(tmp_path):
    keys = messages(50)
    store = RoutingStore(tmp_path)
    store.publish(TABLE)
    flipped = {"w0": 3, "w1": 2, "w2": 1, "w3": 0}
    with Router.open(tmp_path, "clicks") as router:
        partitioner = KafkaPythonPartitioner(router, worker_partition=flipped)
        got = [partitioner(k.encode(), [0, 1, 2, 3], []) for k in keys]
        assert got == [3 - p for p in routed_partitions(keys)]
        renamed = Workers(tuple(Worker(f"node-{9 - i}") for i in range(4)))
        store.publish(RoutingTable("clicks", "test", renamed, ("node-9",)))
        assert router.reload()
        assert partitioner(b"anything", list(range(10)), []) == 9


# --------------------------------------------------------------------------------------------
# a real cluster: librdkafka's mock brokers (3 brokers; topics auto-created with 4 partitions)


@pytest.fixture(scope="module")
def bootstrap() -> str:
    owner = confluent_kafka.Producer({"test.mock.num.brokers": 3, "log_level": 0})
    brokers = owner.list_topics(timeout=10).brokers.values()
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    owner.flush(5)


def new_topic(bootstrap: str) -> str:
    """A fresh topic, auto-created by asking for its metadata; it has partitions 0-3."""
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    metadata = confluent_kafka.Producer({"bootstrap.servers": bootstrap}).list_topics(topic, 10)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2, 3]
    return topic


def test_confluent_kafka_delivers_every_message_where_route_says(bootstrap):
    topic = new_topic(bootstrap)
    keys = messages()
    producer = RoutedProducer(
        confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}), Router(TABLE)
    )
    delivered: dict[int, int] = {}
    errors = []

    def report(err, msg) -> None:
        if err:
            errors.append(err)
        else:
            delivered[int(msg.value())] = msg.partition()

    for i, key in enumerate(keys):  # str and UTF-8 bytes keys alike
        producer.produce(topic, str(i).encode(), key if i % 2 else key.encode(), on_delivery=report)
    assert producer.flush(10) == 0 and len(producer) == 0 and errors == []
    assert [delivered[i] for i in range(len(keys))] == routed_partitions(keys)

    batch = [{"key": k, "value": str(i).encode()} for i, k in enumerate(keys[:40])]
    delivered.clear()
    batcher = RoutedProducer(
        confluent_kafka.Producer({"bootstrap.servers": bootstrap}), Router(TABLE)
    )
    assert batcher.produce_batch(topic, batch, on_delivery=report) == 40
    assert batcher.flush(10) == 0 and errors == []
    assert [delivered[i] for i in range(40)] == routed_partitions(keys[:40])
    assert "partition" not in batch[0]  # the caller's dicts are left alone

    with pytest.raises(TypeError, match="chooses the partition"):
        producer.produce(topic, b"v", "k", partition=1)
    with pytest.raises(ValueError, match="has no key"):
        producer.produce(topic, b"v")


def test_confluent_kafka_refuses_a_worker_the_topic_has_no_partition_for(bootstrap):
    topic = new_topic(bootstrap)
    wide = RoutingTable("clicks", "test", Workers.homogeneous(8), tuple(f"w{g}" for g in range(8)))
    producer = RoutedProducer(
        confluent_kafka.Producer({"bootstrap.servers": bootstrap}), Router(wide)
    )
    key = next(k for k in messages() if routed_partitions([k], wide)[0] >= 4)
    with pytest.raises(ValueError, match=rf"which topic '{topic}' does not have \(partitions 0-3"):
        producer.produce(topic, b"v", key)


def test_kafka_python_delivers_every_message_where_route_says(bootstrap):
    kafka = pytest.importorskip("kafka")
    topic = new_topic(bootstrap)
    keys = messages()
    # api_version pinned: kafka-python 3.0 probes ApiVersions v3+/v4, which the mock broker
    # (ApiVersions <= v2) answers with an UNSUPPORTED_VERSION body kafka-python cannot decode
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap.split(","),
        api_version=(2, 1, 0),
        partitioner=KafkaPythonPartitioner(Router(TABLE)),
        max_block_ms=10_000,
    )
    try:
        futures = [producer.send(topic, key=k.encode(), value=b"v") for k in keys]
        producer.flush(10)
        assert [f.get(timeout=10).partition for f in futures] == routed_partitions(keys)
        with pytest.raises(ValueError, match="has no key"):
            producer.send(topic, value=b"v")
    finally:
        producer.close(timeout=5)
