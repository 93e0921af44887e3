"""The Python client's examples (``examples/python``) run as a user runs them, against the
real Kafka broker: ``produce.py`` sends each record to the partition the table names, stamped with
``routing_version``; three ``consume.py`` members of one group read the partitions the plan names
for each. (tests/test_examples.py keeps the docs' snippets marked ``<!-- excerpt: <file> -->``
excerpts of these files and of the Java and Go examples.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

from test_kafka import GROUP_PARTITIONS, KEYS, PARTITIONS, WIDE, by_consumer, consumer_plan  # noqa: E402

from routeplan.publishing.store import RoutingStore  # noqa: E402
from routeplan_client import Router  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "python"


def example_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ROUTEPLAN_API_TOKEN"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def read_records(broker, topic: str, n: int) -> list[tuple[str, int, list]]:
    """``(key, partition, headers)`` of the topic's first ``n`` records."""
    return [
        (m.key().decode(), m.partition(), m.headers()) for m in broker.read(topic, PARTITIONS, n)
    ]


def test_the_producer_example_routes_by_the_table_and_stamps_the_version(broker, tmp_path):
    stream = f"clicks{uuid.uuid4().hex[:8]}"  # the example's topic is its stream
    broker.create_topic(stream, PARTITIONS)
    table = replace(WIDE, stream=stream)  # split hot keys: decided by the producer's own loads
    RoutingStore(tmp_path).publish(table)
    keys = KEYS[:5_000]
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "produce.py"), str(tmp_path), stream, broker.bootstrap],
        input="".join(k + "\n" for k in keys),
        capture_output=True,
        text=True,
        timeout=120,
        env=example_env(),
    )
    assert done.returncode == 0, done.stderr
    assert f"sent {len(keys)} records to {stream} by v1" in done.stderr
    found = read_records(broker, stream, len(keys))
    expected = [int(w[1:]) for w in Router(table).route_many(keys)]
    assert Counter((k, p) for k, p, _ in found) == Counter(zip(keys, expected, strict=True))
    assert {tuple(h) for _, _, headers in found for h in headers} == {("routing_version", b"1")}


class Members:
    """``consume.py`` processes of one group, each line of their output collected."""

    def __init__(self, broker, root: Path, stream: str, names: list[str]) -> None:
        group = f"group-{uuid.uuid4().hex[:8]}"
        self.lines: dict[str, list[str]] = {name: [] for name in names}
        self.processes = []
        for name in names:
            command = [sys.executable, str(EXAMPLES / "consume.py"), str(root), stream]
            process = subprocess.Popen(
                [*command, broker.bootstrap, group, name],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=example_env(),
                start_new_session=True,
            )
            self.processes.append(process)
            threading.Thread(target=self._collect, args=(name, process), daemon=True).start()

    def _collect(self, name: str, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines[name].append(line.rstrip("\n"))

    def assigned(self) -> dict[str, list[int]]:
        """Each member's last printed assignment."""
        out = {}
        for name, lines in self.lines.items():
            said = [line for line in list(lines) if line.startswith(f"{name} assigned ")]
            if said:
                out[name] = [int(p) for p in re.findall(r"\d+", said[-1].split(" assigned ")[1])]
        return out

    def wait_for(self, check, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            assert all(p.poll() is None for p in self.processes), self.stderr()
            time.sleep(0.1)
        raise AssertionError(f"timed out: {self.lines}\n{self.stderr()}")

    def stderr(self) -> str:
        return "".join(p.stderr.read() for p in self.processes if p.poll() is not None)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()


def test_the_consumer_example_members_read_the_partitions_the_plan_names(broker, tmp_path):
    stream = f"orders{uuid.uuid4().hex[:8]}"
    broker.create_topic(stream, GROUP_PARTITIONS)
    plan = replace(consumer_plan(1), stream=stream)
    RoutingStore(tmp_path).publish(plan)
    want = by_consumer(plan)
    members = Members(broker, tmp_path, stream, sorted(want))
    try:
        members.wait_for(lambda: members.assigned() == want)
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap})
        for p in range(GROUP_PARTITIONS):
            producer.produce(stream, key=f"key-{p}", value=b"x", partition=p)
        producer.flush(30)

        def read_all() -> bool:
            return (
                sum(len(re.findall(r" \d+ key-", " ".join(v))) for v in members.lines.values())
                == GROUP_PARTITIONS
            )

        members.wait_for(read_all)
    finally:
        members.stop()
    for name, partitions in want.items():
        read = sorted(int(line.split()[1]) for line in members.lines[name] if " key-" in line)
        assert read == partitions, (name, members.lines[name])
