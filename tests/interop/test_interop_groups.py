"""Real clients' consumer groups on kcodec's broker: three members with a rebalance when one joins and
one leaves, committed offsets a restarted member reads back, and the admin calls around groups."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from needs import missing, need_module, need_tool
from group_members import PARTITIONS, TOPIC, play
from interop_support import TIMEOUT, record, until

from kcodec_broker import Cluster, GroupSettings

pytestmark = pytest.mark.interop
ck = need_module("confluent_kafka")
kafka = need_module("kafka")
aiokafka = need_module("aiokafka")
from aiokafka import AIOKafkaConsumer  # noqa: E402
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402
from kafka import KafkaConsumer  # noqa: E402
from kafka import TopicPartition as KTopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

CK = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]})"
KP = "kafka-python " + kafka.__version__
AK = "aiokafka " + aiokafka.__version__


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=5, groups=GroupSettings(
            min_session_timeout_ms=500, consumer_session_timeout_ms=6000, consumer_heartbeat_interval_ms=100)) as c:
        yield c


def covers_all(assigned: dict[str, list[int]], members: list[str]) -> bool:
    """Every partition assigned once, over exactly these members, each with some."""
    parts = [p for m in members for p in assigned.get(m, [])]
    return sorted(parts) == list(range(PARTITIONS)) and all(assigned.get(m) for m in members)


# -- confluent-kafka ---------------------------------------------------------------------------------------
def _ck_consumer(cluster: Cluster, name: str, assigned: dict[str, list[int]], group: str = "ck-group") -> Consumer:
    def on_assign(consumer: Consumer, parts: list[TopicPartition]) -> None:
        assigned[name] = sorted(p.partition for p in parts)

    def on_revoke(consumer: Consumer, parts: list[TopicPartition]) -> None:
        assigned[name] = []

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": name,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 100, "enable.auto.commit": False,
                  "auto.offset.reset": "latest", "log_level": 2})
    c.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke)
    return c


class ConfluentDriver:
    def __init__(self, protocol: str = "classic") -> None:
        self.protocol = protocol  # "consumer": KIP-848, the broker assigns (session and heartbeat are its own)

    def open(self, cluster: Cluster, name: str, group: str) -> Consumer:
        classic = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 100} if self.protocol == "classic" else {}
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": name,
                      "group.protocol": self.protocol, **classic, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "log_level": 2})
        c.subscribe([TOPIC])
        return c

    def poll(self, consumer: Consumer) -> list[tuple[int, bytes]]:
        out = []
        for m in consumer.consume(100, 0.05):
            assert m.error() is None, m.error()
            out.append((m.partition(), m.value()))
        return out

    def assignment(self, consumer: Consumer) -> list[int]:
        return [tp.partition for tp in consumer.assignment()]

    def commit(self, consumer: Consumer) -> None:
        try:
            consumer.commit(asynchronous=False)
        except ck.KafkaException as e:
            # A rebalance took the partitions between the consume and the commit (KIP-848 revokes them on
            # the broker's heartbeat answer): librdkafka then holds no position and says so. The scenario's
            # checks still hold the group to what it committed (nothing read twice after the restart).
            if e.args[0].code() != ck.KafkaError._NO_OFFSET:
                raise

    def close(self, consumer: Consumer) -> None:
        consumer.close()


def check_scenario(result: dict) -> None:
    assert sorted(result["restarted"]) == sorted(result["fourth"])  # resumed: nothing read twice
    assert result["committed"] == {p: 16 for p in range(PARTITIONS)}  # 4 batches of 24 over 6 partitions
    assert result["generation"] >= 3  # joins, a join, a leave: at least three generations (KIP-848: epochs)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_kafka_group_consumes_rebalances_commits_and_resumes(cluster, protocol):
    try:
        check_scenario(play(ConfluentDriver(protocol), cluster, f"ck-{protocol}"))
    finally:
        record(CK, cluster)


def test_confluent_kafka_static_member_restarts_without_a_rebalance(cluster):
    cluster.create_topic(TOPIC, PARTITIONS, 2)
    assigned: dict[str, list[int]] = {}

    def static(name: str) -> Consumer:
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ck-static", "group.instance.id": name,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 100, "log_level": 2})
        c.subscribe([TOPIC], on_assign=lambda _, ps: assigned.__setitem__(name, sorted(p.partition for p in ps)))
        return c
    members = {n: static(n) for n in ("a", "b")}
    try:
        until(lambda: [m.poll(0.02) for m in members.values()], lambda: covers_all(assigned, ["a", "b"]), "a and b")
        group = cluster.runtime.groups.get("ck-static")
        before = (group.generation, dict(assigned))
        members.pop("b").close()  # a static member leaves no LeaveGroup behind (KIP-345)
        del assigned["b"]
        members["b"] = static("b")  # back with its instance id before its session ends
        until(lambda: [m.poll(0.02) for m in members.values()], lambda: "b" in assigned, "b's assignment")
        assert (group.generation, assigned) == before
    finally:
        for m in members.values():
            m.close()
        record(CK, cluster)


def test_confluent_kafka_admin_groups_and_offsets(cluster):
    cluster.create_topic(TOPIC, PARTITIONS, 2)
    assigned: dict[str, list[int]] = {}
    consumer = _ck_consumer(cluster, "solo", assigned, group="ck-admin")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
    try:
        until(lambda: consumer.poll(0.02), lambda: covers_all(assigned, ["solo"]), "the member's assignment")
        listed = admin.list_consumer_groups().result(timeout=TIMEOUT)
        assert [g.group_id for g in listed.valid] == ["ck-admin"] and not listed.errors
        described = admin.describe_consumer_groups(["ck-admin"])["ck-admin"].result(timeout=TIMEOUT)
        assert described.state.name == "STABLE" and [m.client_id for m in described.members] == ["solo"]
        assert sorted(tp.partition for tp in described.members[0].assignment.topic_partitions) == list(range(PARTITIONS))
        consumer.close()
        altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            "ck-admin", [TopicPartition(TOPIC, 1, 7), TopicPartition(TOPIC, 4, 9)])])
        altered["ck-admin"].result(timeout=TIMEOUT)
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("ck-admin")])
        got = offsets["ck-admin"].result(timeout=TIMEOUT)
        assert sorted((tp.partition, tp.offset) for tp in got.topic_partitions) == [(1, 7), (4, 9)]
        admin.delete_consumer_groups(["ck-admin"])["ck-admin"].result(timeout=TIMEOUT)
        assert admin.list_consumer_groups().result(timeout=TIMEOUT).valid == []
    finally:
        consumer.close()
        record(CK, cluster)


# -- kafka-python ------------------------------------------------------------------------------------------
class KafkaPythonDriver:
    def open(self, cluster: Cluster, name: str, group: str) -> KafkaConsumer:
        c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, client_id=name, session_timeout_ms=6000,
                          heartbeat_interval_ms=100, enable_auto_commit=False, auto_offset_reset="earliest",
                          request_timeout_ms=10000)
        c.subscribe([TOPIC])
        return c

    def poll(self, consumer: KafkaConsumer) -> list[tuple[int, bytes]]:
        # A poll that times out while the member's JoinGroup/SyncGroup is in flight can leave kafka-python
        # 3.0.12 with the join done but never applied (need_rejoin() turns False first): no heartbeats,
        # the member times out. Polls longer than a rebalance here (heartbeats every 100 ms) avoid it.
        return [(tp.partition, r.value) for tp, records in consumer.poll(timeout_ms=1000).items() for r in records]

    def assignment(self, consumer: KafkaConsumer) -> list[int]:
        return [tp.partition for tp in consumer.assignment()]

    def commit(self, consumer: KafkaConsumer) -> None:
        consumer.commit()

    def close(self, consumer: KafkaConsumer) -> None:
        consumer.close()


def test_kafka_python_group_consumes_rebalances_commits_and_resumes(cluster):
    try:
        check_scenario(play(KafkaPythonDriver(), cluster, "kp-group"))
    finally:
        record(KP, cluster)


def test_kafka_python_admin_groups_and_offsets(cluster):
    cluster.create_topic(TOPIC, PARTITIONS, 2)
    assigned: dict[str, list[int]] = {}
    consumer = _ck_consumer(cluster, "solo", assigned, group="kp-admin")
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        until(lambda: consumer.poll(0.02), lambda: covers_all(assigned, ["solo"]), "the member's assignment")
        consumer.commit(offsets=[TopicPartition(TOPIC, 2, 11)], asynchronous=False)
        assert [(g["group_id"], g["group_state"]) for g in admin.list_groups()] == [("kp-admin", "Stable")]
        described = admin.describe_groups(["kp-admin"])["kp-admin"]
        assert described["group_state"] == "Stable" and [m["client_id"] for m in described["members"]] == ["solo"]
        assert described["members"][0]["member_metadata"]["topics"] == [TOPIC]
        assert described["members"][0]["member_assignment"]["assigned_partitions"] == [
            {"topic": TOPIC, "partitions": list(range(PARTITIONS))}]

        def committed() -> dict[int, int]:
            return {tp.partition: o.offset for tp, o in admin.list_group_offsets({"kp-admin": None})["kp-admin"].items()}
        assert committed() == {2: 11}
        consumer.close()
        admin.alter_group_offsets("kp-admin", {KTopicPartition(TOPIC, 3): OffsetAndMetadata(5, "", -1)})
        assert committed() == {2: 11, 3: 5}
        admin.delete_group_offsets("kp-admin", [KTopicPartition(TOPIC, 3)])
        assert committed() == {2: 11}
        assert admin.delete_groups(["kp-admin"]) == {"kp-admin": "OK"}
        assert admin.list_groups() == []
    finally:
        consumer.close()
        admin.close()
        record(KP, cluster)


# -- aiokafka --------------------------------------------------------------------------------------------
class AiokafkaDriver:
    """Each member's thread runs its own event loop; the consumer's heartbeat task runs while it polls."""

    def open(self, cluster: Cluster, name: str, group: str) -> tuple[asyncio.AbstractEventLoop, AIOKafkaConsumer]:
        loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaConsumer:
            c = AIOKafkaConsumer(TOPIC, bootstrap_servers=cluster.bootstrap, group_id=group, client_id=name,
                                 session_timeout_ms=6000, heartbeat_interval_ms=100, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
            await c.start()
            return c
        return loop, loop.run_until_complete(start())

    def poll(self, member: tuple[asyncio.AbstractEventLoop, AIOKafkaConsumer]) -> list[tuple[int, bytes]]:
        loop, c = member
        got = loop.run_until_complete(c.getmany(timeout_ms=100))
        return [(tp.partition, r.value) for tp, records in got.items() for r in records]

    def assignment(self, member: tuple[asyncio.AbstractEventLoop, AIOKafkaConsumer]) -> list[int]:
        return [tp.partition for tp in member[1].assignment()]

    def commit(self, member: tuple[asyncio.AbstractEventLoop, AIOKafkaConsumer]) -> None:
        member[0].run_until_complete(member[1].commit())

    def close(self, member: tuple[asyncio.AbstractEventLoop, AIOKafkaConsumer]) -> None:
        loop, c = member
        try:
            loop.run_until_complete(c.stop())
        finally:
            loop.close()


def test_aiokafka_group_consumes_rebalances_commits_and_resumes(cluster):
    try:
        check_scenario(play(AiokafkaDriver(), cluster, "ak-group"))
    finally:
        record(AK, cluster)


# -- kafkajs -----------------------------------------------------------------------------------------------
JS = Path(__file__).resolve().parent / "js"
KJ = "kafkajs 2.2.4"


@dataclass
class JsMember:
    proc: subprocess.Popen
    assigned: list[int] = field(default_factory=list)
    pending: bytes = b""


class KafkajsDriver:
    """A node process per member (js/group_member.js) reporting its assignments and messages as JSON lines;
    it commits each message before the next."""

    def __init__(self) -> None:
        self.node = need_tool("node", "Node.js 18+ and npm; Debian's nodejs and npm packages")
        if not (JS / "node_modules" / "kafkajs").is_dir():
            missing("kafkajs in tests/interop/js/node_modules (`make test` runs npm ci there)")

    def open(self, cluster: Cluster, name: str, group: str) -> JsMember:
        return JsMember(subprocess.Popen([self.node, str(JS / "group_member.js"), cluster.bootstrap, group, TOPIC, name],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE))

    def poll(self, member: JsMember) -> list[tuple[int, bytes]]:
        out = member.proc.stdout
        assert out is not None
        if select.select([out], [], [], 0.05)[0]:
            chunk = os.read(out.fileno(), 65536)
            assert chunk or member.proc.poll() is None, f"the kafkajs member exited with {member.proc.returncode}"
            member.pending += chunk
        *lines, member.pending = member.pending.split(b"\n")
        got = []
        for line in lines:
            event = json.loads(line)
            assert "error" not in event, event["error"]
            if "assigned" in event:
                member.assigned = list(event["assigned"])
            else:
                got.append((-1, bytes.fromhex(event["value"])))
        return got

    def assignment(self, member: JsMember) -> list[int]:
        return member.assigned

    def commit(self, member: JsMember) -> None:
        pass  # committed by the member itself, message by message

    def close(self, member: JsMember) -> None:
        assert member.proc.stdin is not None
        try:
            member.proc.stdin.write(b"stop\n")
            member.proc.stdin.close()
            assert member.proc.wait(timeout=20) == 0
        finally:
            if member.proc.poll() is None:
                member.proc.kill()
                member.proc.wait()


def test_kafkajs_group_consumes_rebalances_commits_and_resumes(cluster):
    try:
        check_scenario(play(KafkajsDriver(), cluster, "js-group"))
    finally:
        record(KJ, cluster)
