"""A real Kafka broker for the tests: Kafka 4.x in KRaft mode (one process, broker and
controller) from its Maven artefacts (``make setup`` puts them in ``.kafka/libs``;
``$ROUTEPLAN_KAFKA_LIBS`` names the folder), on 127.0.0.1 with a temporary log directory, stopped
by its process group."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kafka_libs() -> Path:
    return Path(os.environ.get("ROUTEPLAN_KAFKA_LIBS") or REPO / ".kafka" / "libs")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One broker (``bootstrap``: ``127.0.0.1:<port>``); ``stop()`` ends its process group."""

    def __init__(self, folder: Path, libs: Path | None = None) -> None:
        self.folder = folder
        self.libs = libs or kafka_libs()
        if not list(self.libs.glob("kafka_2.13-*.jar")):
            raise FileNotFoundError(f"no Kafka jars in {self.libs}: run `make setup`")
        self.port, controller = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log = folder / "kafka.log"
        self.config = folder / "server.properties"
        self.config.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={folder / 'data'}",
                    "num.partitions=1",
                    "auto.create.topics.enable=false",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "group.initial.rebalance.delay.ms=0",
                ]
            )
            + "\n"
        )
        self.process: subprocess.Popen | None = None

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            "-Xms256m",
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # a short-lived test broker: C1 compiles fast enough
            "-cp",
            f"{self.libs}/*",
            main,
            *args,
        ]

    def start(self, timeout: float = 90) -> KafkaBroker:
        cluster_id = "-"
        while cluster_id.startswith("-"):  # as Kafka's own ids: one starting with - is an option
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        subprocess.run(
            self._java(
                "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.config)
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                self._java("kafka.Kafka", str(self.config)),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends all of it
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Kafka exited ({self.process.returncode}): {self.tail()}")
            if self.ready():
                return self
            time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"Kafka did not start in {timeout} s: {self.tail()}")

    def ready(self) -> bool:
        """The broker answers metadata requests (it has joined its own controller)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
        except OSError:
            return False
        import confluent_kafka.admin

        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            return bool(admin.list_topics(timeout=2).brokers)
        except confluent_kafka.KafkaException:
            return False

    def create_topic(self, name: str, partitions: int) -> None:
        import confluent_kafka.admin

        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": self.bootstrap})
        new = confluent_kafka.admin.NewTopic(name, num_partitions=partitions, replication_factor=1)
        admin.create_topics([new])[name].result(30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until every partition has its leader
            topic = admin.list_topics(name, timeout=5).topics.get(name)
            whole = topic and topic.error is None and len(topic.partitions) == partitions
            if whole and all(p.leader >= 0 for p in topic.partitions.values()):
                return
            time.sleep(0.1)
        raise TimeoutError(f"topic {name} has no leaders")

    def read(self, topic: str, partitions: int, n: int) -> list:
        """The first ``n`` records of ``topic`` (``partitions`` of them, read from the start by a
        confluent-kafka consumer of its own; fewer when 20 polls in a row bring nothing), each a
        ``confluent_kafka.Message``, checked for errors."""
        import confluent_kafka

        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": f"check-{topic}"}
        )
        consumer.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(partitions)
            ]
        )
        found: list = []
        try:
            idle = 0
            while len(found) < n and idle < 20:
                batch = consumer.consume(10_000, timeout=1)
                idle = 0 if batch else idle + 1
                for message in batch:
                    assert message.error() is None, message.error()
                    found.append(message)
        finally:
            consumer.close()
        return found

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
