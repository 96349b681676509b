"""Real admin clients run preferred leader elections (ElectLeaders, KIP-183 / KIP-460) after a broker
restart, as kafka-leader-election.sh does; a producer and a consumer keep working while leadership moves
away and back; a consumer sees what an unclean election of a lagging replica lost."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
from needs import need_module

from kcodec_broker import Cluster

pytestmark = pytest.mark.interop
TIMEOUT = 15
TOPIC = "moving"


@pytest.fixture
def kept() -> Iterator[Cluster]:
    """Three brokers whose leaders stay where they moved (auto.leader.rebalance.enable=false)."""
    with Cluster(brokers=3, auto_leader_rebalance=False, system_topic_partitions=1) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic(TOPIC, assignments={0: [1, 2, 3]}))
        yield c


def _leader(cluster: Cluster) -> int:
    with cluster.state.lock:
        return cluster.state.leader(cluster.topics()[TOPIC], 0)


def test_confluent_kafka_elects_the_preferred_leader_while_a_producer_and_a_consumer_keep_working(kept):
    ck = need_module("confluent_kafka")
    from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    fast = {"bootstrap.servers": kept.bootstrap, "topic.metadata.refresh.interval.ms": 300,
            "retry.backoff.ms": 50, "log_level": 2}
    producer = Producer({**fast, "acks": "all", "enable.idempotence": True, "linger.ms": 0,
                         "message.timeout.ms": TIMEOUT * 1000})
    consumer = Consumer({**fast, "group.id": "elections", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    admin = AdminClient(fast)
    sent: list[bytes] = []
    got: list[bytes] = []

    def produce(step: str) -> None:
        errors: list[str] = []
        for i in range(5):
            value = f"{step}-{i}".encode()
            producer.produce(TOPIC, value=value, partition=0, on_delivery=lambda e, _m: e and errors.append(str(e)))
            sent.append(value)
        assert producer.flush(TIMEOUT) == 0 and not errors, errors

    def consume_all() -> None:
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(sent) and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert got == sent

    try:
        produce("before")
        consume_all()
        kept.stop_broker(1)
        produce("moved")
        consume_all()
        kept.start_broker(1)
        produce("restarted")
        consume_all()
        assert _leader(kept) == 2  # the returning broker is a follower until the election
        tp = TopicPartition(TOPIC, 0)
        done = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=TIMEOUT)
        assert list(done) == [tp] and done[tp] is None
        assert _leader(kept) == 1
        produce("elected")
        consume_all()
        again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=TIMEOUT)
        assert again[tp].code() == ck.KafkaError.ELECTION_NOT_NEEDED  # a KafkaError, not raised
    finally:
        consumer.close()


def test_confluent_kafka_unclean_election_brings_an_offline_partition_back(kept):
    need_module("confluent_kafka")
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    kept.stop_broker(2)
    kept.stop_broker(3)
    kept.stop_broker(1)  # the last in-sync replica: the partition is offline
    kept.start_broker(2)
    assert _leader(kept) == -1
    admin = AdminClient({"bootstrap.servers": kept.bootstrap, "log_level": 2})
    tp = TopicPartition(TOPIC, 0)
    done = admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(timeout=TIMEOUT)
    assert done[tp] is None and _leader(kept) == 2


def test_kafka_python_elects_the_preferred_leader(kept):
    need_module("kafka")
    from kafka.admin import KafkaAdminClient

    kept.stop_broker(1)
    kept.start_broker(1)
    assert _leader(kept) == 2
    admin = KafkaAdminClient(bootstrap_servers=kept.bootstrap, request_timeout_ms=TIMEOUT * 1000)
    try:
        resp = admin.elect_leaders(0, {TOPIC: [0]})
        assert [(p.partition_id, p.error_code) for t in resp.replica_election_results
                for p in t.partition_result] == [(0, 0)]
        assert _leader(kept) == 1
        admin.elect_leaders(0, {TOPIC: [0]})  # ELECTION_NOT_NEEDED: kafka-python does not raise it
    finally:
        admin.close()


def test_confluent_kafka_sees_the_records_an_unclean_election_of_a_lagging_replica_lost(kept):
    need_module("confluent_kafka")
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    fast = {"bootstrap.servers": kept.bootstrap, "topic.metadata.refresh.interval.ms": 300,
            "retry.backoff.ms": 50, "log_level": 2}

    def produce(acks: str, values: list[bytes]) -> None:
        producer = Producer({**fast, "acks": acks, "linger.ms": 0, "message.timeout.ms": TIMEOUT * 1000})
        for v in values:
            producer.produce(TOPIC, value=v, partition=0)
        assert producer.flush(TIMEOUT) == 0

    # librdkafka validates its position with OffsetForLeaderEpoch after the leader changes (KIP-320): the new
    # leader's log is shorter than where it read, and it reports the truncation (auto.offset.reset=error)
    consumer = Consumer({**fast, "group.id": "unused", "enable.auto.commit": False, "auto.offset.reset": "error"})
    got: list[object] = []

    def consume(n: int) -> None:
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                got.append(m.error() or (m.offset(), m.value()))

    try:
        kept.stop_broker(3)  # out of the ISR: 1 and 2 are left
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        produce("all", [b"kept-0", b"kept-1", b"kept-2"])
        kept.pause_replication(2)
        produce("1", [b"lost-0", b"lost-1", b"lost-2"])  # acks=1: on the leader only
        consume(6)
        assert [v for _, v in got] == [b"kept-0", b"kept-1", b"kept-2", b"lost-0", b"lost-1", b"lost-2"]
        now = kept.state.clock()
        kept.state.clock = lambda: now + kept.state.replica_lag_time_max_ms + 1
        assert kept.check_isr()  # 2 lagged out of the ISR
        kept.stop_broker(1)
        with kept.state.lock:
            assert kept.state.elect_leader(kept.topics()[TOPIC], 0, unclean=True) == 0  # 2 leads, log end 3
        produce("all", [b"after-0", b"after-1", b"after-2", b"after-3"])  # offsets 3 to 6, epoch 2
        consume(7)
        error = got[6]
        assert isinstance(error, KafkaError) and error.code() == KafkaError._AUTO_OFFSET_RESET, error
        assert "log truncation detected at offset 6" in error.str() and "end offset is 3" in error.str()
        consumer.assign([TopicPartition(TOPIC, 0, 3)])  # where the new leader's epoch began
        consume(11)
        assert got[7:] == [(3, b"after-0"), (4, b"after-1"), (5, b"after-2"), (6, b"after-3")]
    finally:
        consumer.close()
