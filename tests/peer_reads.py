"""Real consumers read partitions of a topic from offset 0 by assign(), bounded: ``count`` records or
``timeout`` seconds, whichever comes first, and closed before returning. Each returns the client's own
record objects (confluent-kafka's Message, kafka-python's and aiokafka's ConsumerRecord) in the order
polled; the callers turn them into what they compare (tests/records/peer_consumers.py,
tests/interop/data_clients.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any


def _from_start(consumer: Any, partitions: list[Any]) -> None:
    """kafka-python's and aiokafka's consumers (the same calls): these partitions, from offset 0."""
    consumer.assign(partitions)
    for tp in partitions:
        consumer.seek(tp, 0)


def confluent(bootstrap: str, topic: str, partitions: int, count: int, timeout: float,
              client_id: str = "kcodec-tests") -> list[Any]:
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": client_id, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "client.id": client_id})
    got: list[Any] = []
    try:
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 0.2):
                if m.error():
                    raise RuntimeError(f"confluent-kafka: {m.error()}")
                got.append(m)
    finally:
        c.close()
    return got


def kafka_python(bootstrap: str, topic: str, partitions: int, count: int, timeout: float,
                 client_id: str = "kcodec-tests") -> list[Any]:
    import kafka

    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                            auto_offset_reset="earliest", client_id=client_id)
    got: list[Any] = []
    try:
        _from_start(c, [kafka.TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=200).values():
                got += records
    finally:
        c.close()
    return got


def aiokafka(bootstrap: str, topic: str, partitions: int, count: int, timeout: float,
             client_id: str = "kcodec-tests") -> list[Any]:
    import aiokafka as aio

    async def run() -> list[Any]:
        c = aio.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", client_id=client_id)
        await c.start()
        got: list[Any] = []
        try:
            _from_start(c, [aio.TopicPartition(topic, p) for p in range(partitions)])
            deadline = time.monotonic() + timeout
            while len(got) < count and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=200)).values():
                    got += records
        finally:
            await c.stop()
        return got

    return asyncio.run(run())
