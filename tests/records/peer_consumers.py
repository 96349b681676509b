"""Real clients read partition 0 of a topic from offset 0: each returns (offset, key, value, headers,
timestamp) per message, bytes or None, headers as [(name, value)]. Bounded: ``count`` messages or
``timeout`` seconds, whichever comes first; every consumer is closed before returning."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any, Optional

from peer_producers import JS, _unhex, node_available

Message = tuple[int, Optional[bytes], Optional[bytes], list[tuple[str, Optional[bytes]]], int]


def _rows(fetched: dict[Any, list[Any]]) -> list[Message]:
    """kafka-python's and aiokafka's ConsumerRecords (the same shape) as Messages."""
    return [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for records in fetched.values() for r in records]


def confluent(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    import confluent_kafka as ck

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "confluent-records", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "client.id": "confluent-records"})
    got: list[Message] = []
    try:
        c.assign([ck.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise RuntimeError(f"confluent-kafka: {m.error()}")
            got.append((m.offset(), m.key(), m.value(), list(m.headers() or []), m.timestamp()[1]))
    finally:
        c.close()
    return got


def kafka_python(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    import kafka

    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                            auto_offset_reset="earliest", client_id="kafka-python-records")
    got: list[Message] = []
    try:
        tp = kafka.TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            got += _rows(c.poll(timeout_ms=200))
    finally:
        c.close()
    return got


def aiokafka(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    import aiokafka as aio

    async def run() -> list[Message]:
        c = aio.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", client_id="aiokafka-records")
        await c.start()
        got: list[Message] = []
        try:
            tp = aio.TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            deadline = time.monotonic() + timeout
            while len(got) < count and time.monotonic() < deadline:
                got += _rows(await c.getmany(timeout_ms=200))
        finally:
            await c.stop()
        return got

    return asyncio.run(run())


def kafkajs(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[Message]:
    """kafkajs has no assign(): tests/interop/js/consume.js joins a fresh group and subscribes from the start."""
    missing = node_available()
    if missing:
        raise RuntimeError(missing)
    out = subprocess.run(["node", str(JS / "consume.js"), bootstrap, topic, str(count)], capture_output=True,
                         text=True, timeout=timeout + 30)
    lines = out.stdout.strip().splitlines()
    result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    if out.returncode or "ok" not in result:
        raise RuntimeError(f"kafkajs failed: {out.stdout}{out.stderr}")
    return [(m["offset"], _unhex(m["key"]), _unhex(m["value"]), [(n, _unhex(v)) for n, v in m["headers"]],
             m["timestamp"]) for m in result["ok"]]
