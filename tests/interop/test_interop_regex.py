"""confluent-kafka's KIP-848 regex subscription on kcodec's broker: with ``group.protocol=consumer``,
``subscribe(["^prefix.*"])`` sends the regex in ConsumerGroupHeartbeat and the broker resolves it, so the
member gets the matching topics, a matching topic created later joins its assignment and reads, a deleted
one leaves it, and a topic that does not match never joins."""

from __future__ import annotations

from typing import Iterator

import pytest
from needs import need_module
from interop_support import TIMEOUT, record, until

from kcodec_broker import Cluster, GroupSettings

pytestmark = pytest.mark.interop
ck = need_module("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

CK = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]})"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=5, groups=GroupSettings(
            consumer_session_timeout_ms=6000, consumer_heartbeat_interval_ms=100)) as c:
        yield c


def test_confluent_kafka_regex_subscription_follows_new_topics(cluster):
    cluster.create_topic("rx-a", 2)
    cluster.create_topic("rx-b", 1)
    cluster.create_topic("other", 2)
    assigned: set[tuple[str, int]] = set()
    read: list[bytes] = []

    def on_assign(consumer: Consumer, parts: list[TopicPartition]) -> None:
        assigned.update((p.topic, p.partition) for p in parts)  # KIP-848: incremental

    def on_revoke(consumer: Consumer, parts: list[TopicPartition]) -> None:
        assigned.difference_update((p.topic, p.partition) for p in parts)

    def poll() -> None:
        for m in consumer.consume(100, 0.05):
            assert m.error() is None, m.error()
            read.append(m.value())
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "rx-group", "client.id": "rx",
                         "group.protocol": "consumer", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
                         "log_level": 2})
    try:
        consumer.subscribe(["^rx-.*"], on_assign=on_assign, on_revoke=on_revoke)
        until(poll, lambda: assigned == {("rx-a", 0), ("rx-a", 1), ("rx-b", 0)}, "the regex's topics")
        cluster.create_topic("rx-new", 2)
        until(poll, lambda: {("rx-new", 0), ("rx-new", 1)} <= assigned, "the new matching topic")
        assert {t for t, _ in assigned} == {"rx-a", "rx-b", "rx-new"}
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        producer.produce("rx-new", b"hello", partition=1)
        producer.produce("other", b"not for us", partition=0)
        assert producer.flush(TIMEOUT) == 0
        until(poll, lambda: b"hello" in read, "a record of the new topic")
        assert b"not for us" not in read
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        described = admin.describe_consumer_groups(["rx-group"])["rx-group"].result(timeout=TIMEOUT)
        assert [m.client_id for m in described.members] == ["rx"]
        admin.delete_topics(["rx-b"])["rx-b"].result(timeout=TIMEOUT)
        until(poll, lambda: ("rx-b", 0) not in assigned, "the deleted topic's partition to go")
        members = cluster.runtime.groups.consumer.groups["rx-group"].members.values()
        assert [m.regex for m in members] == ["(^rx-.*)"]  # sent (librdkafka joins its regexes with |), resolved here
    finally:
        consumer.close()
        record(CK, cluster)
