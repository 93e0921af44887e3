"""routeplan_client.assignor without a broker: the kafka-python assignor gives each member the
partitions the ``partition_assignment`` table names for the consumer it is paired with (declared
names first, the rest in sorted order), every partition of the topic exactly once; it falls back
to Range, saying why, for every reason the Java ``RouteplanAssignor`` does; the Rebalancer asks
for a rebalance once per new version. Members are kafka-python's own ``JoinGroupResponseMember``
with subscriptions that went through the wire encoding; the cluster is what ``assign`` reads."""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("kafka")

from kafka.coordinator.assignors.abstract import RebalanceProtocol  # noqa: E402
from kafka.coordinator.assignors.range import RangePartitionAssignor  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupResponse  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription  # noqa: E402

from routeplan.model.names import InvalidNameError  # noqa: E402
from routeplan.model.table import PartitionAssignment, RoutingTable  # noqa: E402
from routeplan.model.workers import Workers  # noqa: E402
from routeplan.publishing.store import RoutingStore  # noqa: E402
from routeplan_client.assignor import Rebalancer, assignor  # noqa: E402

STREAM = "orders"
LOGGER = "routeplan_client.assignor"


def plan(mapping: dict[int, str], consumers: int = 3, stream: str = STREAM) -> PartitionAssignment:
    return PartitionAssignment(stream, "test", Workers.homogeneous(consumers, prefix="c"), mapping)


# c0: 1, 4  c1: 2, 5  c2: 0, 3 — not what Range (or any built-in assignor) gives
PLAN = plan({p: f"c{(p + 2) % 3}" for p in range(6)})


class Cluster:
    """What ``assign`` (and Range) read of kafka-python's ``ClusterMetadata``."""

    def __init__(self, **topics: int) -> None:
        self.topics = topics

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.topics[topic])) if topic in self.topics else None


def member(
    member_id: str,
    root: Path,
    consumer: str | None = None,
    instance: str | None = None,
    topics: tuple[str, ...] = (STREAM,),
) -> JoinGroupResponse.JoinGroupResponseMember:
    """A member as the leader sees it: its subscription, made by its own process's assignor
    class, encoded and decoded as on the wire."""
    sent = assignor(root, STREAM, consumer=consumer).metadata(set(topics))
    return JoinGroupResponse.JoinGroupResponseMember(
        member_id=member_id,
        group_instance_id=instance,
        metadata=ConsumerProtocolSubscription.decode(sent.encode()),
    )


def partitions(assignment: dict) -> dict[str, list[int]]:
    """member id -> its partitions of any topic, ascending."""
    return {m: sorted(tp.partition for tp in a.partitions()) for m, a in assignment.items()}


def every_once(assigned: dict[str, list[int]], n: int) -> bool:
    return sorted(p for ps in assigned.values() for p in ps) == list(range(n))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "routing"
    RoutingStore(root).publish(PLAN)
    return root


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=LOGGER)
    return caplog


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The assignor's warnings (not Range's own)."""
    return [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]


def test_the_class_is_a_kafka_python_eager_assignor_named_routeplan(store):
    made = assignor(store, STREAM)
    assert made.name == "routeplan" and made.plan_topic() == STREAM
    assert made().supported_protocols() == [RebalanceProtocol.EAGER]  # kafka-python makes one
    assert assignor(store, STREAM, topic="t").plan_topic() == "t"
    assert assignor(store, STREAM).latest is not made.latest  # each class reads on its own


def test_follows_the_plan_pairing_sorted_consumers_with_sorted_members(store, logs):
    made = assignor(store, STREAM)
    members = [member(m, store) for m in ("m-b", "m-c", "m-a")]
    got = partitions(made.assign(Cluster(orders=6), members))
    # consumer names sorted (c0, c1, c2) pair with member ids sorted (m-a, m-b, m-c)
    assert got == {"m-a": [1, 4], "m-b": [2, 5], "m-c": [0, 3]}
    assert made.fallback_reason is None
    assert got != partitions(RangePartitionAssignor.assign(Cluster(orders=6), members))
    assert "topic orders assigned by orders v1 (partition_assignment) to 3 members" in logs.text
    assert not warnings_of(logs)


def test_declared_names_are_honoured_user_data_then_group_instance_id(store):
    made = assignor(store, STREAM)
    members = [
        member("m-a", store, consumer="c2"),  # this process said consumer="c2"
        member("m-b", store, instance="c0"),  # static membership: group.instance.id c0
        member("m-c", store),
    ]
    got = partitions(made.assign(Cluster(orders=6), members))
    assert got == {"m-a": [0, 3], "m-b": [1, 4], "m-c": [2, 5]}
    # consumer= wins over the instance id; a restarted static member (new id) keeps its share
    members = [
        member("m-x", store, consumer="c1", instance="c0"),
        member("m-y", store, instance="c0"),
        member("m-z", store),
    ]
    got = partitions(made.assign(Cluster(orders=6), members))
    assert got == {"m-x": [2, 5], "m-y": [1, 4], "m-z": [0, 3]}


def test_the_sorted_pairing_is_stable_whatever_the_order_members_arrive_in(store, logs):
    made = assignor(store, STREAM)
    members = [
        member("m-1", store, consumer="zed"),  # names not in the plan: sorted by name, after ""
        member("m-2", store, instance="alpha"),
        member("m-3", store),
    ]
    expected = {"m-3": [1, 4], "m-2": [2, 5], "m-1": [0, 3]}
    for seed in range(6):
        random.Random(seed).shuffle(members)
        assert partitions(made.assign(Cluster(orders=6), members)) == expected
    # two members declaring one name: the first by member id gets it, the other pairs in order
    members = [member("m-2", store, consumer="c0"), member("m-1", store, consumer="c0")]
    members.append(member("m-3", store))
    got = partitions(made.assign(Cluster(orders=6), members))
    assert got == {"m-1": [1, 4], "m-2": [0, 3], "m-3": [2, 5]}
    assert any("members m-1 and m-2 both declare consumer c0" in w for w in warnings_of(logs))


def test_unplanned_partitions_go_to_the_member_with_the_fewest(tmp_path, logs):
    root = tmp_path / "routing"
    RoutingStore(root).publish(plan({0: "c0", 1: "c0", 2: "c0", 3: "c1", 4: "c2", 5: "c2"}))
    made = assignor(root, STREAM)
    members = [member(f"m{i}", root, consumer=f"c{i}") for i in range(3)]
    got = partitions(made.assign(Cluster(orders=8), members))
    # loads 3, 1, 2: partition 6 to c1 (now 2), partition 7 to c1 again (tied with c2: first)
    assert got == {"m0": [0, 1, 2], "m1": [3, 6, 7], "m2": [4, 5]}
    assert every_once(got, 8) and made.fallback_reason is None
    assert any("does not name partitions [6, 7] of topic orders" in w for w in warnings_of(logs))


def test_partitions_the_topic_lacks_are_left_out(store, logs):
    made = assignor(store, STREAM)
    members = [member(f"m{i}", store, consumer=f"c{i}") for i in range(3)]
    got = partitions(made.assign(Cluster(orders=4), members))
    assert got == {"m0": [1], "m1": [2], "m2": [0, 3]}
    assert every_once(got, 4)
    assert any(
        "names partitions [4, 5], which topic orders does not have (4 partitions): left out" in w
        for w in warnings_of(logs)
    )


def test_a_consumer_with_no_partition_left_gets_none(store):
    made = assignor(store, STREAM)
    members = [member(f"m{i}", store, consumer=f"c{i}") for i in range(3)]
    assignment = made.assign(Cluster(orders=2), members)  # the plan's 0, 1: c2 and c0
    assert partitions(assignment) == {"m0": [1], "m1": [], "m2": [0]}
    assert assignment["m1"].assigned_partitions == []


def fallback_cases(tmp_path: Path) -> Iterator[tuple[str, object, list, Cluster, str]]:
    """(name, assignor class, members, cluster, the reason it must give) for each fallback."""
    root = tmp_path / "routing"
    three = [member(f"m{i}", tmp_path) for i in range(3)]

    yield "no table", assignor(root, STREAM), three, Cluster(orders=6), "no table at "

    corrupt = tmp_path / "corrupt"
    doc = RoutingStore(corrupt).publish(PLAN).to_document()
    doc["checksum"] = "jcs-sha256:" + "0" * 64
    (corrupt / STREAM / "v1.json").write_text(json.dumps(doc))
    yield "refused", assignor(corrupt, STREAM), three, Cluster(orders=6), "invalid table: "

    keyed = tmp_path / "keyed"
    RoutingStore(keyed).publish(
        RoutingTable(STREAM, "test", Workers.homogeneous(3), tuple(f"w{g % 3}" for g in range(8)))
    )
    yield (
        "key_routing",
        assignor(keyed, STREAM),
        three,
        Cluster(orders=6),
        "a key_routing table, not a partition_assignment one",
    )

    other = tmp_path / "other"
    published = RoutingStore(other).publish(plan(dict(PLAN.partition_consumer), stream="billing"))
    (other / STREAM).mkdir()
    (other / STREAM / "v1.json").write_text(json.dumps(published.to_document()))
    (other / STREAM / "LATEST").write_text("v1.json")
    yield (
        "another stream",
        assignor(other, STREAM),
        three,
        Cluster(orders=6),
        "the table is of stream 'billing', not 'orders'",
    )

    store = tmp_path / "store"
    RoutingStore(store).publish(PLAN)
    mixed = [*three[:2], member("m2", tmp_path, topics=(STREAM, "audit"))]
    yield (
        "another topic too",
        assignor(store, STREAM),
        mixed,
        Cluster(orders=6, audit=2),
        "member m2 subscribes to ['audit', 'orders'], not to topic 'orders' alone",
    )
    yield (
        "another topic",
        assignor(store, STREAM, topic="orders-v2"),
        three,
        Cluster(orders=6, **{"orders-v2": 6}),
        "member m0 subscribes to ['orders'], not to topic 'orders-v2' alone",
    )
    yield (
        "no metadata",
        assignor(store, STREAM),
        three,
        Cluster(),
        "no metadata for topic 'orders'",
    )
    yield (
        "fewer members",
        assignor(store, STREAM),
        three[:2],
        Cluster(orders=6),
        "the group has 2 members, the plan 3 consumers that read partitions",
    )
    four = [*three, member("m3", tmp_path)]
    yield (
        "more members",
        assignor(store, STREAM),
        four,
        Cluster(orders=6),
        "the group has 4 members, the plan 3 consumers that read partitions",
    )


def test_each_reason_to_fall_back_gives_ranges_assignment_and_says_why(tmp_path, caplog):
    cases = list(fallback_cases(tmp_path))
    assert len(cases) == 9
    for name, made, members, cluster, reason in cases:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            got = made.assign(cluster, members)
        assert partitions(got) == partitions(RangePartitionAssignor.assign(cluster, members)), name
        assert reason in (made.fallback_reason or ""), (name, made.fallback_reason)
        said = warnings_of(caplog)
        assert len(said) == 1, (name, said)
        assert said[0].startswith(f"routeplan: the group is assigned by range ({len(members)} ")
        assert reason in said[0], (name, said)
        if name in ("fewer members", "more members"):
            assert every_once(partitions(got), 6)


def test_a_group_of_another_size_gets_the_plans_partitions_spread_by_its_loads(tmp_path, logs):
    """Two members for a three-consumer plan planned on loads: Graham's LPT over the loads
    (heaviest first, each to the least loaded member; a partition the plan has no load for
    counts as their mean), members in declared-name order; the reason is kept and logged."""
    loads = [9.0, 1.0, 4.0, 4.0, 2.0, 6.0]  # partition 6 (the topic's 7th) is not in the plan
    planned = replace(PLAN, planning_load={"partition_load": loads})
    RoutingStore(tmp_path).publish(planned)
    made = assignor(tmp_path, STREAM)
    members = [member("m-b", tmp_path, consumer="zeta"), member("m-a", tmp_path, consumer="c1")]
    got = partitions(made.assign(Cluster(orders=7), members))
    # members c1 (m-a), zeta (m-b); heaviest first: 0 (9) -> a; 5 (6) -> b; 6 (the mean,
    # 26/6) -> b (6 < 9); 2 (4) -> a (9 < 10.3); 3 (4) -> b (10.3 < 13); 4 (2) -> a; 1 (1) -> b
    assert got == {"m-a": [0, 2, 4], "m-b": [1, 3, 5, 6]}
    assert made.fallback_reason == (
        "orders v1 (partition_assignment): the group has 2 members, the plan 3 consumers that "
        "read partitions"
    )
    (said,) = warnings_of(logs)
    assert said.endswith("its partitions are spread by its loads over the members")
    # three members: the plan itself, not the loads
    three = [member(f"m{i}", tmp_path, consumer=f"c{i}") for i in range(3)]
    assert partitions(made.assign(Cluster(orders=6), three))["m0"] == [1, 4]
    assert made.fallback_reason is None


def test_each_assignment_reads_latest_again(store):
    made = assignor(store, STREAM)
    members = [member(f"m{i}", store, consumer=f"c{i}") for i in range(3)]
    assert partitions(made.assign(Cluster(orders=6), members))["m0"] == [1, 4]
    RoutingStore(store).publish(plan({p: f"c{p % 3}" for p in range(6)}))
    assert partitions(made.assign(Cluster(orders=6), members))["m0"] == [0, 3]
    # a refused version falls back, and stays refused; once LATEST moves on it is followed
    (store / STREAM / "v3.json").write_text("{not json")
    (store / STREAM / "LATEST").write_text("v3.json")
    for _ in range(2):
        made.assign(Cluster(orders=6), members)
        assert made.fallback_reason and made.fallback_reason.startswith("invalid table: ")
    (store / STREAM / "LATEST").write_text("v1.json")
    assert partitions(made.assign(Cluster(orders=6), members))["m0"] == [1, 4]
    assert made.fallback_reason is None


class Coordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


class Consumer:
    """What the Rebalancer touches of a kafka-python KafkaConsumer."""

    def __init__(self) -> None:
        self._coordinator = Coordinator()


def test_the_rebalancer_asks_once_per_new_plan_and_says_so_in_the_subscription(store, logs):
    made = assignor(store, STREAM, consumer="c1")
    rebalancer = Rebalancer(made, reload_interval=1e-9)
    consumer = Consumer()
    assert rebalancer.table is not None and rebalancer.table.version == 1  # the baseline
    first = json.loads(made.metadata({STREAM}).user_data)
    assert first["consumer"] == "c1" and first["table"].startswith("v1 ")
    assert not rebalancer.maybe_rebalance(consumer)  # v1 is no news
    RoutingStore(store).publish(plan({p: f"c{p % 3}" for p in range(6)}))
    assert rebalancer.maybe_rebalance(consumer)
    assert consumer._coordinator.rejoins == 1
    assert "the group rebalances: routeplan orders v2 (was v1)" in logs.text
    # the subscription changes too: a follower's JoinGroup starts a rebalance as the leader's
    assert json.loads(made.metadata({STREAM}).user_data)["table"].startswith("v2 ")
    assert not rebalancer.maybe_rebalance(consumer) and consumer._coordinator.rejoins == 1
    # a key_routing LATEST asks for nothing, said once
    RoutingStore(store).publish(
        RoutingTable(STREAM, "test", Workers.homogeneous(3), tuple(f"w{g % 3}" for g in range(8)))
    )
    assert not rebalancer.maybe_rebalance(consumer) and not rebalancer.maybe_rebalance(consumer)
    assert consumer._coordinator.rejoins == 1
    assert sum("is not a partition_assignment table" in w for w in warnings_of(logs)) == 1
    RoutingStore(store).publish(PLAN)
    assert rebalancer.maybe_rebalance(consumer) and rebalancer.table.version == 4
    assert consumer._coordinator.rejoins == 2
    RoutingStore(store).publish(plan({p: f"c{p % 3}" for p in range(6)}))
    with pytest.raises(TypeError, match="kafka-python 3.x KafkaConsumer"):
        rebalancer.maybe_rebalance(object())


def test_the_rebalancer_reads_once_per_interval_or_never(store):
    made = assignor(store, STREAM)
    never, hourly = Rebalancer(made, reload_interval=None), Rebalancer(made, reload_interval=3600)
    RoutingStore(store).publish(plan({p: f"c{p % 3}" for p in range(6)}))
    consumer = Consumer()
    assert not never.maybe_rebalance(consumer) and not hourly.maybe_rebalance(consumer)
    assert consumer._coordinator.rejoins == 0
    with pytest.raises(TypeError, match="the class assignor"):
        Rebalancer(RangePartitionAssignor)
    with pytest.raises(ValueError, match="reload_interval"):
        Rebalancer(made, reload_interval=0)


def test_bad_arguments_are_refused_before_any_read(tmp_path):
    with pytest.raises(InvalidNameError):
        assignor(tmp_path, "no/such")
    with pytest.raises(InvalidNameError):
        assignor(tmp_path, STREAM, consumer="c 1")
    with pytest.raises(ValueError, match="token is empty"):
        assignor("http://127.0.0.1:9", STREAM, token=" ")
    with pytest.raises(ValueError, match="topic is empty"):
        assignor(tmp_path, STREAM, topic="")


@contextmanager
def api(root: Path, token: str) -> Iterator[str]:
    """``GET /streams/<stream>/latest`` of the store at ``root``, for a bearer ``token`` only."""
    store = RoutingStore(root)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.headers.get("Authorization") != f"Bearer {token}":
                status, body = 401, json.dumps({"detail": "a bearer token is needed"}).encode()
            else:
                status, body = 200, store.read_bytes(STREAM, store.latest_version(STREAM))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_http_api_with_a_token(store):
    pytest.importorskip("httpx")
    members = [member(f"m{i}", store, consumer=f"c{i}") for i in range(3)]
    with api(store, "s3cret") as url:
        made = assignor(url, STREAM, token="s3cret")
        got = partitions(made.assign(Cluster(orders=6), members))
        assert got == {"m0": [1, 4], "m1": [2, 5], "m2": [0, 3]} and made.fallback_reason is None
        refused = assignor(url, STREAM)
        refused.assign(Cluster(orders=6), members)
    assert "no table at" in refused.fallback_reason and "HTTP 401" in refused.fallback_reason


class _Task:
    def __init__(self, done: bool) -> None:
        self.is_done = done


class _Coordinator:
    def __init__(self, task: _Task | None, rejoin: bool) -> None:
        self._join_task, self._rejoin, self.rejoins = task, rejoin, 0

    def need_rejoin(self) -> bool:
        return self._rejoin

    def request_rejoin(self) -> None:
        self.rejoins += 1


class _Consumer:
    def __init__(self, coordinator: object) -> None:
        self._coordinator = coordinator


@pytest.mark.parametrize(
    ("task", "rejoin", "stranded"),
    [
        (_Task(True), False, True),  # answered, never applied: the kafka-python 3.0 case
        (_Task(True), True, False),  # answered, and the next poll applies it
        (_Task(False), False, False),  # still in flight
        (None, False, False),  # no rebalance under way
    ],
)
def test_a_finished_rebalance_left_unapplied_makes_the_consumer_rejoin(
    store, logs, task, rejoin, stranded
):
    """``stranded_join`` tells a done join task nobody will collect; ``maybe_rebalance`` then
    asks the consumer to rejoin (at every call, whatever its interval)."""
    from routeplan_client.assignor import stranded_join

    coordinator = _Coordinator(task, rejoin)
    assert stranded_join(_Consumer(coordinator)) is stranded
    assert stranded_join(object()) is False  # a consumer without those attributes
    rebalancer = Rebalancer(assignor(store, STREAM), reload_interval=3600)
    assert rebalancer.maybe_rebalance(_Consumer(coordinator)) is stranded
    assert coordinator.rejoins == int(stranded)
    assert ("did not apply its assignment" in logs.text) is stranded
