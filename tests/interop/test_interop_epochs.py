"""Leader epochs with real consumers (KIP-320): while the partition's leader stops and returns, or a
reassignment drops a follower (a new epoch, the same leader), a consumer keeps its position, validates it
with OffsetForLeaderEpoch at the new epoch, and reads every record once, each stamped with the epoch it
was written in."""

from __future__ import annotations

import time
from collections import Counter
from typing import Iterator, Optional

import pytest
from needs import need_module

from kcodec_broker import Cluster

pytestmark = pytest.mark.interop
TIMEOUT = 15
TOPIC = "epochs"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic(TOPIC, assignments={0: [1, 2, 3]}))
        yield c


def _epoch(cluster: Cluster) -> int:
    with cluster.state.lock:
        return cluster.state.leader_epoch(cluster.topics()[TOPIC], 0)


def _validations(cluster: Cluster, client_id: str) -> int:
    """How many OffsetForLeaderEpoch requests the client sent; its Fetch requests carried epochs (v9+)."""
    served = cluster.requests_served().get(client_id, Counter())
    assert min(v for api, v in served if api == "Fetch") >= 9
    return sum(n for (api, _v), n in served.items() if api == "OffsetForLeaderEpoch")


class _Confluent:
    """A confluent-kafka producer and a consumer reading partition 0 by assign() from offset 0."""

    def __init__(self, cluster: Cluster, client_id: str) -> None:
        need_module("confluent_kafka")
        from confluent_kafka import Consumer, Producer, TopicPartition

        fast = {"bootstrap.servers": cluster.bootstrap, "topic.metadata.refresh.interval.ms": 300,
                "retry.backoff.ms": 50, "log_level": 2}
        self.producer = Producer({**fast, "acks": "all", "enable.idempotence": True, "linger.ms": 0,
                                  "message.timeout.ms": TIMEOUT * 1000})
        # a reset would be an error event ("error"), not a silent jump to the start or end
        self.consumer = Consumer({**fast, "group.id": "epochs", "enable.auto.commit": False, "client.id": client_id,
                                  "auto.offset.reset": "error"})
        self.consumer.assign([TopicPartition(TOPIC, 0, 0)])
        self.sent: list[bytes] = []
        self.got: list[tuple[Optional[bytes], Optional[int]]] = []

    def step(self, name: str) -> None:
        """Write five records and read them, each with the leader epoch it was written in."""
        errors: list[str] = []
        for i in range(5):
            value = f"{name}-{i}".encode()
            self.producer.produce(TOPIC, value=value, partition=0)
            self.sent.append(value)
        assert self.producer.flush(TIMEOUT) == 0
        deadline = time.monotonic() + TIMEOUT
        while len(self.got) < len(self.sent) and time.monotonic() < deadline:
            m = self.consumer.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                errors.append(str(m.error()))
            else:
                self.got.append((m.value(), m.leader_epoch()))
        assert [v for v, _ in self.got] == self.sent and not errors, errors

    def position(self) -> int:
        from confluent_kafka import TopicPartition
        return self.consumer.position([TopicPartition(TOPIC, 0)])[0].offset

    def close(self) -> None:
        self.consumer.close()


def test_confluent_kafka_consumer_keeps_its_position_across_leader_changes(cluster):
    client = _Confluent(cluster, "epoch-reader")
    try:
        client.step("first")
        cluster.stop_broker(1)   # broker 2 leads at epoch 1
        client.step("second")
        cluster.start_broker(1)  # broker 1 leads again at epoch 2
        client.step("third")
        cluster.stop_broker(1)   # away and back between two polls: two epochs on, the same leader
        cluster.start_broker(1)
        client.step("fourth")
        assert _epoch(cluster) == 4
        assert [e for _, e in client.got] == [0] * 5 + [1] * 5 + [2] * 5 + [4] * 5
        assert _validations(cluster, "epoch-reader") > 0  # librdkafka checked its position (KIP-320)
        assert client.position() == 20
    finally:
        client.close()


@pytest.mark.parametrize("client_class", ["confluent", "kafka-python"])
def test_a_consumer_reads_on_when_a_reassignment_drops_a_follower(cluster, client_class):
    """Broker 1 leads throughout; each reassignment that drops a replica is a new epoch (Kafka's
    PartitionChangeBuilder), so the consumer's fetches at the old one are fenced until it sees the new."""
    client = (_Confluent if client_class == "confluent" else _KafkaPython)(cluster, "epoch-reassigned")

    def reassign(replicas: list[int]) -> None:
        with cluster.state.lock:
            cluster.state.reassign(cluster.topics()[TOPIC], 0, replicas)

    try:
        client.step("first")
        reassign([1, 2])  # drops 3: epoch 1
        client.step("second")
        reassign([1, 2, 3])  # only adds: still epoch 1
        client.step("third")
        reassign([1, 3])  # drops 2: epoch 2
        client.step("fourth")
        with cluster.state.lock:
            assert cluster.state.leader(cluster.topics()[TOPIC], 0) == 1 and _epoch(cluster) == 2
        assert [e for _, e in client.got] == [0] * 5 + [1] * 10 + [2] * 5
        assert _validations(cluster, "epoch-reassigned") > 0  # it checked its position at the new epoch
        assert client.position() == 20
    finally:
        client.close()


class _KafkaPython:
    """A kafka-python producer and a consumer reading partition 0 by assign() from offset 0."""

    def __init__(self, cluster: Cluster, client_id: str) -> None:
        need_module("kafka")
        import kafka

        self.producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=0,
                                            retry_backoff_ms=50, metadata_max_age_ms=300)
        self.consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id=client_id,
                                            enable_auto_commit=False, auto_offset_reset="none",
                                            metadata_max_age_ms=300, retry_backoff_ms=50,
                                            request_timeout_ms=TIMEOUT * 1000)
        self.tp = kafka.TopicPartition(TOPIC, 0)
        self.consumer.assign([self.tp])
        self.consumer.seek(self.tp, 0)
        self.sent: list[bytes] = []
        self.got: list[tuple[bytes, int]] = []

    def step(self, name: str) -> None:
        """Write five records and read them, each with the leader epoch it was written in."""
        for i in range(5):
            value = f"{name}-{i}".encode()
            self.producer.send(TOPIC, value=value, partition=0).get(timeout=TIMEOUT)
            self.sent.append(value)
        deadline = time.monotonic() + TIMEOUT
        while len(self.got) < len(self.sent) and time.monotonic() < deadline:
            for records in self.consumer.poll(timeout_ms=200).values():
                self.got.extend((r.value, r.leader_epoch) for r in records)
        assert [v for v, _ in self.got] == self.sent

    def position(self) -> int:
        return self.consumer.position(self.tp)

    def close(self) -> None:
        self.consumer.close()
        self.producer.close()


def test_kafka_python_consumer_validates_its_position_after_a_leader_change(cluster):
    client = _KafkaPython(cluster, "epoch-python")
    try:
        client.step("first")
        cluster.stop_broker(1)
        client.step("second")
        cluster.start_broker(1)
        client.step("third")
        assert [e for _, e in client.got] == [0] * 5 + [1] * 5 + [2] * 5
        assert _validations(cluster, "epoch-python") > 0
        assert client.position() == 15
    finally:
        client.close()
