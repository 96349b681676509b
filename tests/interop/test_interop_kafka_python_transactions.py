"""kafka-python's transactional producer against kcodec's broker: a committed transaction with
send_offsets_to_transaction and an aborted one; read_committed sees the committed records only."""

from __future__ import annotations

import time

import pytest
from needs import need_module
from interop_support import record

pytestmark = pytest.mark.interop
kafka = need_module("kafka")
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition  # noqa: E402

CLIENT = f"kafka-python {kafka.__version__} transactions"
TIMEOUT = 15
TOPIC, GROUP = "kp-txn", "kp-txn-group"


def _read(bootstrap: str, isolation: str, until: set[bytes]) -> set[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    seen: set[bytes] = set()
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        deadline = time.monotonic() + TIMEOUT
        while not until <= seen and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen.update(r.value for r in records)
    finally:
        consumer.close()
    return seen


def _transactions(bootstrap: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-tx")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for v in (b"c1", b"c2"):
            producer.send(TOPIC, v, partition=0)
        producer.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(2, "", -1)}, GROUP)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, b"a1", partition=0)
        producer.flush(TIMEOUT)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(TOPIC, b"c3", partition=0)
        producer.commit_transaction()
    finally:
        producer.close(TIMEOUT)


def test_kafka_python_transactions(cluster):
    cluster.create_topic(TOPIC, 1)
    try:
        _transactions(cluster.bootstrap)
        committed = {b"c1", b"c2", b"c3"}
        assert _read(cluster.bootstrap, "read_committed", committed) == committed
        assert _read(cluster.bootstrap, "read_uncommitted", committed | {b"a1"}) == committed | {b"a1"}
        with cluster.state.lock:
            assert cluster.state.offsets.get(GROUP, TOPIC, 0).offset == 2
    finally:
        record(CLIENT, cluster)
