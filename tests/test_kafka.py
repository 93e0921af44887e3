"""routeplan_client.kafka: producers route every message exactly as ``Router.route`` does.

Against a real Kafka 4.x broker (KRaft, ``tests/kafka_broker.py``: one for the run) the Java
client's ``RoutingPartitioner``, the Go client's franz-go partitioner and Python's kafka-python
and confluent-kafka adapters each send a skewed stream (split hot keys included) while bad tables
are published mid-stream (wrong checksum, truncated, wrong kind); a consumer reads every record
back, and its partition is what the Python ``Router`` says for that message. Java consumers of a
group assigned by ``RouteplanAssignor`` read the partitions a ``partition_assignment`` table names
for them, follow a new version, and fall back when the group is not the plan's size; so do
kafka-python consumers of a group assigned by ``routeplan_client.assignor``."""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from kafka_broker import REPO, KafkaBroker

from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.publishing.store import RoutingStore
from routeplan_client import Router
from routeplan_client.kafka import KafkaPythonPartitioner, RoutedProducer, worker_partitions

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
    # a topic with fewer partitions than the table needs refuses every record, before the
    # router counts it (routing spec §4): also one whose own partition exists
    for key in (
        next(k for k in messages() if routed_partitions([k]) == [3]),
        next(k for k in messages() if routed_partitions([k]) == [0]),
    ):
        with pytest.raises(
            ValueError, match=r"topic 'clicks' has partitions 0-2, but table .* needs 3 too"
        ):
            partitioner.partition("clicks", key, key.encode(), None, None, cluster)
    assert sum(partitioner.router.local_loads().values()) == 0
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
# a real broker: Kafka 4.x in KRaft mode, one for the module (tests/kafka_broker.py)

STREAM = "clicks"
PARTITIONS = 8
RECORDS = 100_000
PHASES = 4  # a bad table is published after each of the first three parts
WIDE = RoutingTable(
    STREAM,
    "test",
    Workers(tuple(Worker(f"w{i}", (1.0, 2.0, 0.5, 1.5)[i % 4]) for i in range(PARTITIONS))),
    tuple(f"w{(g * 5 + g // 7) % PARTITIONS}" for g in range(1024)),
    hot_keys={
        "hot-0": (("w0", 0.5), ("w1", 0.5)),
        "hot-1": (("w2", 0.2), ("w3", 0.3), ("w1", 0.5)),
        "hot-2": tuple((f"w{i}", 1 + i) for i in range(PARTITIONS)),
        "ключ-😀": (("w7", 0.6), ("w6", 0.4)),
        "": (("w5", 1.0), ("w4", 1.0)),
    },
    hash_seed=11,
)


def stream_keys(n: int = RECORDS, seed: int = 7) -> list[str]:
    """A skewed stream: about 30 % split hot keys (unevenly), the rest Zipf-like users."""
    rng = np.random.default_rng(seed)
    hot = sorted(WIDE.hot_keys)
    users = rng.zipf(1.2, size=n) % 20_000
    pick = rng.random(n)
    return [
        hot[int(p / 0.3 * len(hot)) % len(hot)] if p < 0.3 else f"user-{u}"
        for p, u in zip(pick.tolist(), users.tolist(), strict=True)
    ]


KEYS = stream_keys()
EXPECTED = [int(w[1:]) for w in Router(WIDE).route_many(KEYS)]


def bad_versions(good: dict) -> list[bytes]:
    """What is published between the parts: a wrong checksum, a truncated file, the wrong kind."""
    wrong_checksum = {**good, "version": 2, "checksum": "jcs-sha256:" + "0" * 64}
    truncated = json.dumps({**good, "version": 3}).encode()[:1000]
    consumers = Workers.homogeneous(2, prefix="c")
    assignment = PartitionAssignment(STREAM, "binpack", consumers, {0: "c0", 1: "c1"})
    wrong_kind = assignment.published(4, 1, "2026-01-01T00:00:00+00:00").to_document()
    return [json.dumps(wrong_checksum).encode(), truncated, json.dumps(wrong_kind).encode()]


def publish_bad(store: Path, phase: int) -> None:
    good = RoutingStore(store).read_document(STREAM, 1)
    folder = store / STREAM
    (folder / f"v{phase + 2}.json").write_bytes(bad_versions(good)[phase])
    (folder / "LATEST").write_text(f"v{phase + 2}.json")


def new_store(tmp_path: Path) -> Path:
    store = tmp_path / "routing"
    RoutingStore(store).publish(WIDE)
    return store


def read_back(broker: KafkaBroker, topic: str, n: int) -> dict[int, int]:
    """Message index (the record's value) -> the partition a consumer read it from."""
    return {int(m.value()): m.partition() for m in broker.read(topic, PARTITIONS, n)}


def assert_routed_as_python_says(found: dict[int, int], n: int = RECORDS) -> None:
    assert len(found) == n, f"read back {len(found)} of {n} records"
    wrong = [i for i in range(n) if found[i] != EXPECTED[i]]
    assert not wrong, f"{len(wrong)} records off their partition, first {wrong[:5]}"


def new_topic(broker: KafkaBroker, partitions: int = PARTITIONS) -> str:
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions)
    return topic


def run_producer(command: list[str], store: Path) -> str:
    """Run a producer process that sends KEYS in PHASES parts; publish a bad table after each
    part but the last, let it reload, check it kept v1. Its stderr (the client's log)."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        for phase in range(PHASES):
            assert process.stdout.readline().strip() == f"sent {phase}", process.stderr.read()
            if phase + 1 < PHASES:
                publish_bad(store, phase)
                process.stdin.write("reload\n")
                process.stdin.flush()
                assert process.stdout.readline().strip() == "reloaded false v1"
        process.stdin.close()
        assert process.wait(60) == 0, process.stderr.read()
        return process.stderr.read()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()


def write_keys(tmp_path: Path) -> Path:
    path = tmp_path / "keys.txt"
    path.write_text("".join(k + "\n" for k in KEYS), encoding="utf-8")
    return path


def test_java_routing_partitioner_sends_every_record_where_the_python_router_says(broker, tmp_path):
    jar = REPO / "clients" / "java" / "target" / "routeplan-client.jar"
    assert jar.is_file(), "make setup builds the Java client"
    topic, store = new_topic(broker), new_store(tmp_path)
    command = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{jar}:{jar.parent / 'lib'}/*"]
    command += ["dev.routeplan.client.ProduceKeys", "--bootstrap", broker.bootstrap]
    command += ["--topic", topic, "--location", str(store), "--stream", STREAM]
    command += ["--keys", str(write_keys(tmp_path)), "--phases", str(PHASES)]
    log = run_producer(command, store)
    for version in ("v2.json", "v3.json", "v4.json"):
        assert f"rejected {version}, keeps serving v1" in log, log
    assert "checksum mismatch" in log and "not JSON" in log and "partition_assignment" in log
    assert_routed_as_python_says(read_back(broker, topic, RECORDS))


def test_go_kgoroute_partitioner_sends_every_record_where_the_python_router_says(broker, tmp_path):
    produce = REPO / "clients" / "go" / "bin" / "produce"
    assert produce.is_file(), "make setup builds the Go client"
    topic, store = new_topic(broker), new_store(tmp_path)
    command = [str(produce), "-bootstrap", broker.bootstrap, "-topic", topic]
    command += ["-location", str(store), "-stream", STREAM, "-keys", str(write_keys(tmp_path))]
    log = run_producer([*command, "-phases", str(PHASES)], store)
    for version in ("v2.json", "v3.json", "v4.json"):
        assert f"rejected={version}" in log, log
    assert_routed_as_python_says(read_back(broker, topic, RECORDS))


def test_confluent_kafka_sends_every_record_where_the_router_says_bad_tables_mid_stream(
    broker, tmp_path, caplog
):
    topic, store = new_topic(broker), new_store(tmp_path)
    errors = []
    with Router.open(store, STREAM) as router:
        producer = RoutedProducer(
            confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5}),
            router,
        )

        def report(err, msg) -> None:
            if err:
                errors.append(err)

        with caplog.at_level(logging.WARNING, logger="routeplan_client.router"):
            for phase in range(PHASES):
                start, end = RECORDS * phase // PHASES, RECORDS * (phase + 1) // PHASES
                for i in range(start, end):  # str and UTF-8 bytes keys alike
                    key = KEYS[i] if i % 2 else KEYS[i].encode()
                    producer.produce(topic, str(i).encode(), key, on_delivery=report)
                    if i % 20_000 == 0:
                        producer.poll(0)
                if phase + 1 < PHASES:
                    publish_bad(store, phase)
                    assert not router.reload() and router.version == 1
        assert producer.flush(30) == 0 and errors == []
    rejected = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(rejected) == 3, rejected
    assert_routed_as_python_says(read_back(broker, topic, RECORDS))


def test_kafka_python_sends_every_record_where_the_router_says_bad_tables_mid_stream(
    broker, tmp_path
):
    kafka = pytest.importorskip("kafka")
    topic, store = new_topic(broker), new_store(tmp_path)
    n = RECORDS
    with Router.open(store, STREAM) as router:
        producer = kafka.KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            partitioner=KafkaPythonPartitioner(router),
            linger_ms=5,
            max_block_ms=10_000,
        )
        try:
            for phase in range(PHASES):
                for i in range(n * phase // PHASES, n * (phase + 1) // PHASES):
                    producer.send(topic, key=KEYS[i].encode(), value=str(i).encode())
                if phase + 1 < PHASES:
                    publish_bad(store, phase)
                    assert not router.reload() and router.version == 1
            producer.flush(30)
            with pytest.raises(ValueError, match="has no key"):
                producer.send(topic, value=b"v")
        finally:
            producer.close(timeout=5)
    assert_routed_as_python_says(read_back(broker, topic, n), n)


def test_confluent_kafka_refuses_a_topic_with_fewer_partitions_than_the_table_needs(broker):
    topic = new_topic(broker, partitions=4)
    producer = RoutedProducer(
        confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap}), Router(WIDE)
    )
    key = next(k for k, p in zip(KEYS, EXPECTED, strict=True) if p >= 4)
    with pytest.raises(ValueError, match=rf"topic '{topic}' has partitions 0-3, but table"):
        producer.produce(topic, b"v", key)
    with pytest.raises(ValueError, match="has no key"):
        producer.produce(topic, b"v")


# --------------------------------------------------------------------------------------------
# RouteplanAssignor: a consumer group of Java consumers assigned by a partition_assignment table

JAR = REPO / "clients" / "java" / "target" / "routeplan-client.jar"
GROUP_PARTITIONS = 6


def consumer_plan(version: int, loads: list[float] | None = None) -> PartitionAssignment:
    """Three consumers c0-c2 over 6 partitions, not in the order a built-in assignor gives them;
    version 2 moves partitions 0-2 and keeps 3-5. Planned on ``loads`` when given."""
    shift = 2 if version == 1 else 1
    plan = {p: f"c{(p + (shift if p < 3 else 2)) % 3}" for p in range(GROUP_PARTITIONS)}
    planning = {"partition_load": loads} if loads is not None else {}
    consumers = Workers.homogeneous(3, prefix="c")
    return PartitionAssignment(STREAM, "test", consumers, plan, planning_load=planning)


# one heavy partition: spread by these loads over two members, c0 gets it alone (Graham's LPT)
SKEWED_LOADS = [5.0, 1.0, 1.0, 1.0, 1.0, 1.0]
SPREAD = {"c0": [0], "c1": [1, 2, 3, 4, 5]}


def by_consumer(table: PartitionAssignment) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for p, c in sorted(table.partition_consumer.items()):
        out.setdefault(c, []).append(p)
    return out


class JavaConsumers:
    """``ConsumeAssigned`` processes of one group (one per instance id): each prints its
    assignment as a JSON line whenever it changes, and stops at a line on stdin."""

    def __init__(
        self, broker: KafkaBroker, topic: str, store: Path, instances: list[str], logs: Path
    ) -> None:
        assert JAR.is_file(), "make setup builds the Java client"
        self.lines: queue.Queue = queue.Queue()
        self.logs = [logs / f"{instance}.log" for instance in instances]
        self.processes = []
        group = f"group-{uuid.uuid4().hex[:8]}"
        for instance, log in zip(instances, self.logs, strict=True):
            command = ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{JAR}:{JAR.parent / 'lib'}/*"]
            command += ["dev.routeplan.client.ConsumeAssigned", "--bootstrap", broker.bootstrap]
            command += ["--topic", topic, "--group", group, "--instance", instance]
            command += ["--location", str(store), "--stream", STREAM, "--reload-ms", "200"]
            with open(log, "wb") as err:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    start_new_session=True,
                )
            self.processes.append(process)
            threading.Thread(target=self._read, args=(process,), daemon=True).start()
        self.latest: dict[str, dict] = {}

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.put(json.loads(line))

    def settle(self, want: dict[str, list[int]] | None = None, timeout: float = 90) -> dict:
        """Each instance's partitions once all report the same generation and every partition
        is assigned exactly once (and, given ``want``, as it says); an AssertionError with what
        they last reported when that does not happen within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            self.latest[line["instance"]] = line
            if len(self.latest) < len(self.processes):
                continue
            if len({line["generation"] for line in self.latest.values()}) != 1:
                continue
            got = {i: line["partitions"] for i, line in sorted(self.latest.items())}
            every = sorted(p for ps in got.values() for p in ps)
            if every == list(range(GROUP_PARTITIONS)) and (want is None or got == want):
                return got
        logs = "\n".join(log.read_text(errors="replace")[-2000:] for log in self.logs)
        raise AssertionError(f"the group did not settle: last reported {self.latest}\n{logs}")

    def stop(self) -> str:
        """Stops them all; their stderr (the clients' logs), together."""
        try:
            for process in self.processes:
                process.stdin.write("stop\n")
                process.stdin.close()
            for process in self.processes:
                assert process.wait(60) == 0, self.logs
        finally:
            for process in self.processes:
                if process.poll() is None:
                    os.killpg(process.pid, 9)
                    process.wait()
        return "\n".join(log.read_text(errors="replace") for log in self.logs)


def test_java_assignor_gives_each_consumer_the_partitions_the_plan_names(broker, tmp_path):
    topic, store = new_topic(broker, GROUP_PARTITIONS), tmp_path / "routing"
    RoutingStore(store).publish(consumer_plan(1))
    group = JavaConsumers(broker, topic, store, ["c0", "c1", "c2"], tmp_path)
    try:
        assert by_consumer(consumer_plan(1)) == {"c0": [1, 4], "c1": [2, 5], "c2": [0, 3]}
        group.settle(by_consumer(consumer_plan(1)))
        # a new version: each consumer's rebalancer asks for a rebalance, and the partitions
        # that move are released by their owners before their new consumers get them
        RoutingStore(store).publish(consumer_plan(2))
        assert by_consumer(consumer_plan(2)) == {"c0": [2, 4], "c1": [0, 5], "c2": [1, 3]}
        group.settle(by_consumer(consumer_plan(2)))
    finally:
        log = group.stop()
    assert "assigned by clicks v1" in log and "assigned by clicks v2" in log, log
    assert "the group rebalances: routeplan clicks v2 (was v1)" in log, log


def test_java_assignor_spreads_by_the_plans_loads_or_falls_back_when_the_group_is_not_its_size(
    broker, tmp_path
):
    """Two members for a three-consumer plan: spread by the plan's loads; a version without
    loads: cooperative-sticky."""
    topic, store = new_topic(broker, GROUP_PARTITIONS), tmp_path / "routing"
    RoutingStore(store).publish(consumer_plan(1, SKEWED_LOADS))
    group = JavaConsumers(broker, topic, store, ["c0", "c1"], tmp_path)
    try:
        assert group.settle(SPREAD) == SPREAD
        RoutingStore(store).publish(consumer_plan(2))  # no loads: cooperative-sticky
        got, deadline = group.settle(), time.monotonic() + 60
        while sorted(len(ps) for ps in got.values()) != [3, 3]:  # sticky balances: 3 and 3
            assert time.monotonic() < deadline, f"not rebalanced by cooperative-sticky: {got}"
            got = group.settle()
    finally:
        log = group.stop()
    assert "the group has 2 members, the plan 3 consumers that read partitions" in log, log
    assert "its partitions are spread by its loads over the members" in log, log
    assert "and it has no partition loads to spread" in log, log
    assert "assigned by cooperative-sticky" in log, log


# --------------------------------------------------------------------------------------------
# routeplan_client.assignor: a consumer group of kafka-python consumers assigned by the table


class PythonConsumers:
    """kafka-python consumers of one group, a thread each, each with its own ``assignor(...)``
    class (``consumer=`` its name) and a ``Rebalancer`` in its poll loop; each keeps its
    generation and partitions after every poll."""

    def __init__(self, broker: KafkaBroker, topic: str, store: Path, names: list[str]) -> None:
        kafka = pytest.importorskip("kafka")
        from routeplan_client.kafka import Rebalancer, assignor

        group = f"group-{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self.reported: dict[str, tuple[int, list[int]]] = {}
        self.errors: list[BaseException] = []
        self.classes = {name: assignor(store, STREAM, topic=topic, consumer=name) for name in names}

        def run(name: str) -> None:
            made = self.classes[name]
            rebalancer = Rebalancer(made, reload_interval=0.2)  # before subscribe
            consumer = kafka.KafkaConsumer(
                bootstrap_servers=broker.bootstrap,
                group_id=group,
                partition_assignment_strategy=[made],
                enable_auto_commit=False,
                heartbeat_interval_ms=300,  # sees a rebalance soon
            )
            try:
                consumer.subscribe([topic])
                while not self.stopping.is_set():
                    consumer.poll(timeout_ms=100)
                    rebalancer.maybe_rebalance(consumer)
                    generation = consumer.group_metadata().generation_id
                    mine = sorted(tp.partition for tp in consumer.assignment())
                    self.reported[name] = (generation, mine)
            except BaseException as err:  # the test reports it
                self.errors.append(err)
            finally:
                consumer.close(timeout_ms=5000)

        self.threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in names]
        for thread in self.threads:
            thread.start()

    def settle(self, want: dict[str, list[int]] | None = None, timeout: float = 30) -> dict:
        """Each consumer's partitions once all report one generation and every partition is
        assigned exactly once (and, given ``want``, as it says)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.errors:
            now = dict(self.reported)
            if len(now) == len(self.threads) and len({g for g, _ in now.values()}) == 1:
                got = {name: ps for name, (_, ps) in sorted(now.items())}
                every = sorted(p for ps in got.values() for p in ps)
                if every == list(range(GROUP_PARTITIONS)) and want in (None, got):
                    return got
            time.sleep(0.05)
        raise AssertionError(f"the group did not settle: {self.reported}, errors {self.errors}")

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(15)
        assert not self.errors, self.errors


def test_kafka_python_assignor_gives_each_consumer_the_partitions_the_plan_names(
    broker, tmp_path, caplog
):
    caplog.set_level(logging.INFO, logger="routeplan_client.assignor")
    topic, store = new_topic(broker, GROUP_PARTITIONS), tmp_path / "routing"
    RoutingStore(store).publish(consumer_plan(1))
    group = PythonConsumers(broker, topic, store, ["c0", "c1", "c2"])
    try:
        group.settle(by_consumer(consumer_plan(1)))
        RoutingStore(store).publish(consumer_plan(2))  # a rebalancer asks, the leader follows
        group.settle(by_consumer(consumer_plan(2)))
    finally:
        group.stop()
    assert "assigned by clicks v1 (partition_assignment) to 3 members" in caplog.text
    assert "the group rebalances: routeplan clicks v2 (was v1)" in caplog.text


def test_kafka_python_assignor_falls_back_or_spreads_by_the_loads_when_the_group_is_not_its_size(
    broker, tmp_path
):
    """Two members for a three-consumer plan: Range's without loads; a version with loads is
    spread by them."""
    topic, store = new_topic(broker, GROUP_PARTITIONS), tmp_path / "routing"
    RoutingStore(store).publish(consumer_plan(1))  # no loads
    group = PythonConsumers(broker, topic, store, ["c0", "c1"])
    try:
        got = group.settle()  # Range's: by member id, which the broker draws at random
        assert sorted(got.values()) == [[0, 1, 2], [3, 4, 5]], got
        why = "clicks v1 (partition_assignment): the group has 2 members, the plan 3 consumers"
        assert any(why in (c.fallback_reason or "") for c in group.classes.values()), why
        RoutingStore(store).publish(consumer_plan(2, SKEWED_LOADS))
        assert group.settle(SPREAD) == SPREAD
    finally:
        group.stop()
