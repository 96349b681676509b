"""A Fetch response's batches are the log's own objects when they reach the transport (or, before Python
3.12, writev on the socket itself): kcodec_broker writes with kcodec.protocol.aio.write_buffers."""

from __future__ import annotations

from broker_wire import Wire
from transport_recording import record_writes

import kcodec.protocol.writes as writes
import kcodec_broker.server as broker_server
from kcodec_broker import Cluster
from kcodec.messages import FetchRequest, ProduceRequest
from kcodec.protocol.aio import write_buffers
from kcodec.protocol.writes import WRITEV
from kcodec.records import BatchBuilder, iter_batches


def _batch(value: bytes) -> bytes:
    b = BatchBuilder()
    b.append(None, value)
    return b.build()


def test_fetched_batches_are_the_logs_own_objects_at_the_transport(monkeypatch):
    # Issue 29: a Fetch response reaches the socket without its record batches being copied. The batches
    # the log holds must be the very objects the connection hands to the transport (whose write sends from
    # the object itself when nothing waits before it; from Python 3.12 writelines keeps them for sendmsg),
    # after the codec encoded the response around them (kcodec.Buffers).
    handed: list = []
    monkeypatch.setattr(writes, "WRITEV", WRITEV)

    async def recorded(writer, pieces) -> None:
        record_writes(writer.transport, handed)
        await write_buffers(writer, pieces)
    monkeypatch.setattr(broker_server, "write_buffers", recorded)
    values = [b"a" * 300_000, b"b", b"c" * 70_000]
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        with Wire(c.addresses[0]) as w:
            for v in values:
                r = w.call(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
                    name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_batch(v))])]), 9)
                assert r.responses[0].partition_responses[0].error_code == 0
            handed.clear()
            resp = w.call(FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
                topic="t", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                12)
        stored = c.state.logs.log(c.topics()["t"].topic_id, 0).batches
        records = resp.responses[0].partitions[0].records
        assert [r.value for b in iter_batches(records) for r in b] == values
        assert len(stored) == 3
        for batch in stored:  # by identity: not a copy, not a view of a joined frame
            assert any(obj is batch for obj, _ in handed), f"a stored batch of {len(batch)} bytes was copied"
