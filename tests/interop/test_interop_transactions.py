"""confluent-kafka 2.16.1 (librdkafka)'s transactional producer against kcodec's broker: one transaction
committed with send_offsets_to_transaction, one aborted; read_committed consumers see only the committed
records, read_uncommitted ones see both."""

from __future__ import annotations

import time

import pytest
from needs import need_module
from interop_support import record

from kcodec.errors import ErrorCode

pytestmark = pytest.mark.interop
ck = need_module("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402

CLIENT = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]}) transactions"
TIMEOUT = 15
TOPIC, GROUP = "ck-txn", "ck-txn-group"


def _transaction(producer: Producer, values: list[bytes], commit: bool, offsets=None, group=None) -> None:
    producer.begin_transaction()
    for i, v in enumerate(values):
        producer.produce(TOPIC, v, partition=i % 2)
    if offsets is not None:
        producer.send_offsets_to_transaction(offsets, group, TIMEOUT)
    if commit:
        producer.commit_transaction(TIMEOUT)
    else:
        assert producer.flush(TIMEOUT) == 0  # written first: an abort drops what is still queued
        producer.abort_transaction(TIMEOUT)


def _read(bootstrap: str, isolation: str, until: set[bytes]) -> set[bytes]:
    """Every value of both partitions, reading until ``until`` has come (or the time is up)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}", "log_level": 2,
                         "isolation.level": isolation, "enable.auto.commit": False})
    seen: set[bytes] = set()
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
        deadline = time.monotonic() + TIMEOUT
        while not until <= seen and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                seen.add(m.value())
    finally:
        consumer.close()
    return seen


def test_commit_and_abort_with_read_committed_consumers(cluster):
    cluster.create_topic(TOPIC, 2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "ck-tx", "log_level": 2,
                         "transaction.timeout.ms": 60_000})
    group = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "log_level": 2})
    try:
        producer.init_transactions(TIMEOUT)
        committed = [b"c1", b"c2", b"c3"]
        _transaction(producer, committed, True, [TopicPartition(TOPIC, 0, 3)], group.consumer_group_metadata())
        aborted = [b"a1", b"a2"]
        _transaction(producer, aborted, False)
        _transaction(producer, [b"c4"], True)
        committed.append(b"c4")
        assert _read(cluster.bootstrap, "read_committed", set(committed)) == set(committed)
        assert _read(cluster.bootstrap, "read_uncommitted", set(committed + aborted)) == set(committed + aborted)
        [tp] = group.committed([TopicPartition(TOPIC, 0)], TIMEOUT)
        assert tp.offset == 3
        apis = {api for per_client in cluster.api_versions_used().values() for api in per_client}
        assert {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"} <= apis
    finally:
        group.close()
        producer.flush(TIMEOUT)
        record(CLIENT, cluster)


def _fenced(producer: Producer) -> KafkaError:
    """The error a fenced producer's next transaction ends with."""
    producer.begin_transaction()
    producer.produce(TOPIC, b"zombie", partition=0)
    with pytest.raises(KafkaException) as e:
        producer.commit_transaction(TIMEOUT)
    return e.value.args[0]


def test_a_second_instance_and_a_timeout_fence_the_producer(cluster):
    cluster.create_topic(TOPIC, 2)
    config = {"bootstrap.servers": cluster.bootstrap, "log_level": 0, "transactional.id": "ck-fenced"}
    first, second = Producer(config), Producer(config)
    slow = Producer({**config, "transactional.id": "ck-slow", "transaction.timeout.ms": 1000})
    try:
        first.init_transactions(TIMEOUT)
        second.init_transactions(TIMEOUT)
        assert _fenced(first).fatal()
        slow.init_transactions(TIMEOUT)
        slow.begin_transaction()
        slow.produce(TOPIC, b"late", partition=0)
        assert slow.flush(TIMEOUT) == 0
        time.sleep(1.5)  # past the transaction timeout: the broker aborts and fences at the next request
        with pytest.raises(KafkaException):
            slow.commit_transaction(TIMEOUT)
        _transaction(second, [b"ok"], True)  # after "late" in partition 0: reading "ok" passes "late"
        assert _read(cluster.bootstrap, "read_committed", {b"ok"}) == {b"ok"}
        assert _read(cluster.bootstrap, "read_uncommitted", {b"late", b"ok"}) == {b"late", b"ok"}
    finally:
        record(CLIENT, cluster)


def test_concurrent_transactions_injected_is_retried(cluster):
    """CONCURRENT_TRANSACTIONS never arises here (markers are written within EndTxn, docs/broker-transactions.md), so a
    client's retries of it are exercised with fail_next: twice on each of InitProducerId,
    AddPartitionsToTxn (v3 and below answer per partition) and EndTxn, and the transaction still commits."""
    cluster.create_topic(TOPIC, 2)
    apis = ("InitProducerId", "AddPartitionsToTxn", "EndTxn")
    injected = [cluster.fail_next(api, ErrorCode.CONCURRENT_TRANSACTIONS, times=2) for api in apis]
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "ck-concurrent",
                         "log_level": 2})
    try:
        producer.init_transactions(TIMEOUT)
        _transaction(producer, [b"after-retries"], True)
        assert [i.taken for i in injected] == [2, 2, 2]
        assert _read(cluster.bootstrap, "read_committed", {b"after-retries"}) == {b"after-retries"}
    finally:
        producer.flush(TIMEOUT)
        record(CLIENT, cluster)
