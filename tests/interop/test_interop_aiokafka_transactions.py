"""aiokafka 0.14.0's transactional producer against kcodec's broker: a committed transaction with
send_offsets_to_transaction, an aborted one, a fenced instance; read_committed sees the committed only.
Everything the test starts is stopped, and no future is left holding an exception nobody retrieved
(no_unretrieved_exceptions)."""

from __future__ import annotations

import asyncio

import pytest
from needs import need_module
from interop_support import record

pytestmark = pytest.mark.interop
aiokafka = need_module("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.errors import ProducerFenced  # noqa: E402

CLIENT = f"aiokafka {aiokafka.__version__} transactions"
TIMEOUT = 15
TOPIC, GROUP = "aio-txn", "aio-txn-group"


async def _read(bootstrap: str, isolation: str, until: set[bytes]) -> set[bytes]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    seen: set[bytes] = set()
    try:
        await consumer.start()  # inside: a start that fails half-way is stopped too
        consumer.assign([TopicPartition(TOPIC, 0)])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while not until <= seen and loop.time() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                seen.update(r.value for r in records)
    finally:
        await consumer.stop()
    return seen


def _retrieve_the_fence(producer: AIOKafkaProducer) -> None:
    """Retrieve the ProducerFenced that aiokafka 0.14 leaves in futures nobody awaits once its sender task
    died of it (Sender._fail_all, here on the AddPartitionsToTxn answer INVALID_PRODUCER_EPOCH): the
    transaction manager's end waiter (set by fatal_error, awaited only by a commit or an abort, which a
    fenced producer may not start) and the drain waiter of each batch the failure ended (set by
    MessageBatch.failure, awaited only by a send blocked on a full batch). Collected unretrieved, each is
    logged by asyncio."""
    waiters = [producer._txn_manager.wait_for_transaction_end()]
    waiters += [batch._drain_waiter for batches in producer._message_accumulator._batches.values()
                for batch in batches]
    for waiter in waiters:
        if waiter.done() and not waiter.cancelled():
            waiter.exception()


async def _scenario(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-tx", request_timeout_ms=10_000)
    try:
        await producer.start()
        async with producer.transaction():
            for v in (b"c1", b"c2"):
                await producer.send_and_wait(TOPIC, v, partition=0)
            await producer.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 2}, GROUP)
        await producer.begin_transaction()
        await producer.send_and_wait(TOPIC, b"a1", partition=0)
        await producer.abort_transaction()
        # a second instance of the id fences the first
        successor = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-tx")
        try:
            await successor.start()
            await producer.begin_transaction()
            with pytest.raises(ProducerFenced):
                await producer.send_and_wait(TOPIC, b"zombie", partition=0)
            _retrieve_the_fence(producer)
            async with successor.transaction():
                await successor.send_and_wait(TOPIC, b"c3", partition=0)
        finally:
            await successor.stop()
    finally:
        await producer.stop()
    committed = {b"c1", b"c2", b"c3"}
    assert await _read(bootstrap, "read_committed", committed) == committed
    assert await _read(bootstrap, "read_uncommitted", committed | {b"a1"}) == committed | {b"a1"}


@pytest.mark.usefixtures("no_unretrieved_exceptions")
def test_aiokafka_transactions(cluster):
    cluster.create_topic(TOPIC, 1)
    try:
        asyncio.run(asyncio.wait_for(_scenario(cluster.bootstrap), 60))
        with cluster.state.lock:
            assert cluster.state.offsets.get(GROUP, TOPIC, 0).offset == 2
    finally:
        record(CLIENT, cluster)
