"""The example applications run as written, and the documentation's Java and Go snippets are
excerpts of them.

``examples/java`` is a Maven project of its own depending on ``dev.routeplan:routeplan-client``:
the test installs the client with ``mvn install`` into a local repository of its own (seeded,
offline, from ``~/.m2/repository``, which ``make setup`` fills), then packages the example
against it. ``examples/go`` is a Go module of its own requiring ``routeplan.dev/client`` by a
``replace``; the test vets and builds it. Each then reads the keys of a skewed stream on stdin
and sends them to a real Kafka broker (``tests/conftest.py``), following a table served by
``routeplan serve`` over HTTP with a bearer token; a consumer reads every record back: it is on
the partition the Python ``Router`` gives the LATEST table, and carries that version as its
``routing_version`` header."""

from __future__ import annotations

import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from kafka_broker import REPO, free_port

from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Worker, Workers
from routeplan.publishing.store import RoutingStore
from routeplan_client import Router

confluent_kafka = pytest.importorskip("confluent_kafka")

STREAM = "clicks"
PARTITIONS = 8
RECORDS = 3000
TOKEN = "example-token"


def table(seed: int, shift: int) -> RoutingTable:
    """An 8-worker table with split keys (a non-ASCII one and the empty key among them)."""
    return RoutingTable(
        STREAM,
        "test",
        Workers(tuple(Worker(f"w{i}", (1.0, 2.0, 0.5, 1.5)[i % 4]) for i in range(PARTITIONS))),
        tuple(f"w{(g * 3 + shift) % PARTITIONS}" for g in range(256)),
        hot_keys={
            "hot-0": (("w0", 0.5), ("w1", 0.5)),
            "hot-1": tuple((f"w{i}", 1 + i) for i in range(PARTITIONS)),
            "ключ-😀": (("w7", 0.6), ("w6", 0.4)),
            "": (("w5", 1.0), ("w4", 1.0)),
        },
        hash_seed=seed,
    )


V1, V2 = table(seed=3, shift=0), table(seed=11, shift=5)
# The consumers' plan: c0 and c1 read the partitions of the producers' topic, not as a built-in
# assignor would split them.
PLAN = PartitionAssignment(
    "orders",
    "test",
    Workers.homogeneous(2, prefix="c"),
    {p: f"c{(p + 1) // 2 % 2}" for p in range(PARTITIONS)},
)


def stream_keys(n: int = RECORDS, seed: int = 5) -> list[str]:
    rng = np.random.default_rng(seed)
    hot = sorted(V2.hot_keys)
    users = (rng.zipf(1.3, size=n) % 5000).tolist()
    pick = rng.random(n).tolist()
    return [
        hot[int(p / 0.3 * len(hot)) % len(hot)] if p < 0.3 else f"user-{u}"
        for p, u in zip(pick, users, strict=True)
    ]


KEYS = stream_keys()


def partitions(routing: RoutingTable) -> list[int]:
    """What a fresh Router says for KEYS in order, as partitions (``wN`` -> N)."""
    return [int(w[1:]) for w in Router(routing).route_many(KEYS)]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> str:
    """``routeplan serve`` over a store where v2 is LATEST, closed by TOKEN: its URL."""
    store = tmp_path_factory.mktemp("routing")
    RoutingStore(store).publish(V1)
    RoutingStore(store).publish(V2)
    RoutingStore(store).publish(PLAN)
    port = free_port()
    log = open(store / "serve.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "routeplan.cli.main", "serve", "--routing", str(store)]
        + ["--port", str(port)],
        cwd=REPO,
        env={**os.environ, "ROUTEPLAN_API_TOKEN": TOKEN},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (store / "serve.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "routeplan serve did not listen in 60 s"
                time.sleep(0.2)
        with pytest.raises(urllib.error.HTTPError, match="401"):  # closed: the token matters
            urllib.request.urlopen(f"{url}/streams/{STREAM}/latest", timeout=5)
        yield url
    finally:
        process.terminate()
        process.wait(15)
        log.close()


def maven_repository(folder: Path) -> Path:
    """A local Maven repository of the test's own: every group of ``~/.m2/repository`` linked in,
    but not routeplan's, which only this test's ``mvn install`` puts there."""
    home = Path.home() / ".m2" / "repository"
    assert home.is_dir(), "make setup fills ~/.m2/repository (the Java client's artefacts)"
    repo = folder / "m2"
    (repo / "dev").mkdir(parents=True)
    for entry in home.iterdir():
        if entry.name != "dev":
            (repo / entry.name).symlink_to(entry)
    for entry in (home / "dev").glob("*"):
        if entry.name != "routeplan":
            (repo / "dev" / entry.name).symlink_to(entry)
    return repo


def mvn(repo: Path, pom: Path, *goals: str) -> None:
    command = ["mvn", "--batch-mode", "--quiet", "--offline", f"-Dmaven.repo.local={repo}"]
    done = subprocess.run(
        [*command, "-f", str(pom), *goals], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]


@pytest.fixture(scope="module")
def java_example(tmp_path_factory) -> list[str]:
    """examples/java built against the client as ``mvn install`` installs it: its command."""
    work = tmp_path_factory.mktemp("java")
    repo = maven_repository(work)
    client = work / "client"
    shutil.copytree(REPO / "clients" / "java", client, ignore=shutil.ignore_patterns("target"))
    mvn(repo, client / "pom.xml", "install", "-Dmaven.test.skip=true")
    version = (REPO / "clients" / "VERSION").read_text().strip()
    installed = repo / "dev" / "routeplan" / "routeplan-client" / version
    assert (installed / f"routeplan-client-{version}.jar").is_file(), sorted(
        installed.parent.rglob("*")
    )
    example = work / "example"
    shutil.copytree(REPO / "examples" / "java", example, ignore=shutil.ignore_patterns("target"))
    mvn(repo, example / "pom.xml", "package")
    lib = example / "target" / "lib"
    assert (lib / f"routeplan-client-{version}.jar").read_bytes() == (
        installed / f"routeplan-client-{version}.jar"
    ).read_bytes()
    jar = example / "target" / "routed-producer.jar"
    return ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{jar}:{lib}/*"]  # then the main class


@pytest.fixture(scope="module")
def go_example(tmp_path_factory) -> list[str]:
    """examples/go vetted and built as a module of its own: its command."""
    binary = tmp_path_factory.mktemp("go") / "routed-producer"
    module = REPO / "examples" / "go"
    for command in (["go", "vet", "./..."], ["go", "build", "-o", str(binary), "."]):
        done = subprocess.run(command, cwd=module, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    return [str(binary)]


def run_example(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        input="".join(k + "\n" for k in KEYS),
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, **env},
        timeout=120,
    )


def read_back(broker, topic: str, n: int) -> dict[int, tuple[int, bytes | None, str]]:
    """Line number (the record's value) -> its partition, routing_version header and key."""
    return {
        int(m.value()): (
            m.partition(),
            dict(m.headers() or []).get("routing_version"),
            m.key().decode("utf-8"),
        )
        for m in broker.read(topic, PARTITIONS, n)
    }


@pytest.mark.parametrize("language", ["java", "go"])
def test_the_example_producer_routes_by_the_served_table_and_stamps_its_version(
    language, request, broker, served
):
    main = ["example.RoutedProducer"] if language == "java" else []
    command = [*request.getfixturevalue(f"{language}_example"), *main]
    topic = f"{STREAM}-{language}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    env = {"KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap, "KAFKA_TOPIC": topic}
    env |= {"ROUTING_LOCATION": served, "ROUTING_STREAM": STREAM}
    denied = run_example(command, {**env, "ROUTEPLAN_API_TOKEN": "not-the-token"})
    assert denied.returncode != 0 and "401" in denied.stderr, denied.stderr
    done = run_example(command, {**env, "ROUTEPLAN_API_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert f"sent {RECORDS} records to {topic}" in done.stderr
    found = read_back(broker, topic, RECORDS)
    assert len(found) == RECORDS, f"read back {len(found)} of {RECORDS} records"
    assert [found[i][2] for i in range(RECORDS)] == KEYS
    expected, by_v1 = partitions(V2), partitions(V1)
    assert sum(a != b for a, b in zip(expected, by_v1, strict=True)) > RECORDS / 2  # v2 is news
    wrong = [i for i in range(RECORDS) if found[i][0] != expected[i]]
    assert not wrong, f"{len(wrong)} records off v2's partition, first {wrong[:5]}"
    assert {found[i][1] for i in range(RECORDS)} == {b"2"}  # LATEST's version, decimal UTF-8


# The documentation's Java and Go blocks, each after a marker naming the file it is cut from; a
# Python block so marked is an excerpt too (the others show the library, not an example).
DOCS = ["docs/routing-tables.md"]
EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->\s*\n```(java|go|python)\n(.*?)\n```", re.DOTALL)
BLOCK = re.compile(r"^```(java|go)$", re.MULTILINE)


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def contains(whole: list[str], snippet: list[str]) -> bool:
    """Whether the snippet's lines are ``whole``'s, in order: each run of them between two
    ``...`` lines (what the snippet leaves out) together."""
    parts: list[list[str]] = [[]]
    for line in snippet:
        if line == "...":
            parts.append([])
        else:
            parts[-1].append(line)
    start = 0
    for part in parts:
        at = next(
            (
                i
                for i in range(start, len(whole) - len(part) + 1)
                if whole[i : i + len(part)] == part
            ),
            None,
        )
        if at is None:
            return False
        start = at + len(part)
    return True


@pytest.mark.parametrize("doc", DOCS)
def test_every_example_snippet_is_an_excerpt_of_a_program_the_tests_run(doc):
    text = (REPO / doc).read_text(encoding="utf-8")
    excerpts = EXCERPT.findall(text)
    marked = [language for _, language, _ in excerpts if language != "python"]
    assert len(marked) == len(BLOCK.findall(text)), f"{doc}: a java/go block without a marker"
    assert {"java", "go", "python"} <= {language for _, language, _ in excerpts}, doc
    for source, language, snippet in excerpts:
        path = REPO / source
        assert path.suffix == {"java": ".java", "go": ".go", "python": ".py"}[language], source
        assert contains(lines(path.read_text(encoding="utf-8")), lines(snippet)), (
            f"{doc}: this {language} block is not in {source}:\n{snippet}"
        )


class Consumers:
    """``example.AssignedConsumer`` processes of one group, one per name in the plan: their
    stdout lines, as (name, line), in ``lines``; stopped at a line on their stdin."""

    def __init__(self, command: list[str], env: dict[str, str], logs: Path) -> None:
        self.lines: queue.Queue = queue.Queue()
        self.logs = {name: logs / f"{name}.log" for name in sorted(PLAN.consumers.names)}
        self.processes: dict[str, subprocess.Popen] = {}
        for name, log in self.logs.items():
            with open(log, "wb") as err:
                self.processes[name] = subprocess.Popen(
                    [*command, "example.AssignedConsumer"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env={**os.environ, **env, "CONSUMER_NAME": name},
                    start_new_session=True,
                )
            threading.Thread(target=self._read, args=(name,), daemon=True).start()

    def _read(self, name: str) -> None:
        for line in self.processes[name].stdout:
            self.lines.put((name, line.split()))

    def next(self, deadline: float) -> tuple[str, list[str]]:
        try:
            return self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            logs = "\n".join(log.read_text(errors="replace")[-2000:] for log in self.logs.values())
            raise AssertionError(f"the consumers said nothing more in time\n{logs}") from None

    def stop(self) -> str:
        """Stops them; their stderr (the clients' logs), together."""
        try:
            for process in self.processes.values():
                if process.poll() is None:
                    process.stdin.write("stop\n")
                    process.stdin.close()
            for name, process in self.processes.items():
                assert process.wait(60) == 0, self.logs[name].read_text(errors="replace")
        finally:
            for process in self.processes.values():
                if process.poll() is None:
                    os.killpg(process.pid, 9)
                    process.wait()
        return "\n".join(log.read_text(errors="replace") for log in self.logs.values())


def test_the_example_consumers_read_the_partitions_the_plan_names(
    java_example, broker, served, tmp_path
):
    """Two AssignedConsumers of one group settle on PLAN's partitions, then read every record
    RoutedProducer sends: each on a partition of its own, with v2's routing_version."""
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    env = {"KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap, "KAFKA_TOPIC": topic}
    env |= {"ROUTING_LOCATION": served, "ROUTEPLAN_API_TOKEN": TOKEN}
    group = Consumers(java_example, {**env, "ROUTING_STREAM": "orders"}, tmp_path)
    plan = {
        c: [p for p, n in sorted(PLAN.partition_consumer.items()) if n == c] for c in group.logs
    }
    assert plan == {"c0": [0, 3, 4, 7], "c1": [1, 2, 5, 6]}
    read: dict[str, Counter] = {name: Counter() for name in plan}
    try:
        assigned: dict[str, str] = {}
        deadline = time.monotonic() + 90
        while assigned != {c: str(ps).replace(" ", "") for c, ps in plan.items()}:
            name, line = group.next(deadline)
            if line[0] == "assigned":
                assigned[name] = "".join(line[1:])
        producer = [*java_example, "example.RoutedProducer"]
        produced = run_example(producer, {**env, "ROUTING_STREAM": STREAM})
        assert produced.returncode == 0, produced.stderr
        deadline = time.monotonic() + 60
        while sum(sum(c.values()) for c in read.values()) < RECORDS:
            name, line = group.next(deadline)
            if line[0] == "record":
                read[name][(int(line[1]), line[2])] += 1
    finally:
        log = group.stop()
    assert "assigned by orders v1" in log, log
    for name, records in read.items():
        assert {p for p, _ in records} <= set(plan[name]), (name, records)
        assert {v for _, v in records} == {"2"}, (name, records)
    by_partition = Counter({p: n for c in read.values() for (p, _), n in c.items()})
    assert by_partition == Counter(partitions(V2))
