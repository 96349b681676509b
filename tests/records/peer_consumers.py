"""Real clients read partition 0 of a topic from offset 0: each returns (offset, key, value, headers,
timestamp) per message, bytes or None, headers as [(name, value)]. Bounded: ``count`` messages or
``timeout`` seconds, whichever comes first; every consumer is closed before returning."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Optional

import peer_reads
from peer_producers import JS, _unhex, node_available

Message = tuple[int, Optional[bytes], Optional[bytes], list[tuple[str, Optional[bytes]]], int]


def _row(r: Any) -> Message:
    """kafka-python's and aiokafka's ConsumerRecord (the same shape) as a Message."""
    return (r.offset, r.key, r.value, list(r.headers), r.timestamp)


def confluent(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    return [(m.offset(), m.key(), m.value(), list(m.headers() or []), m.timestamp()[1])
            for m in peer_reads.confluent(bootstrap, topic, 1, count, timeout, "confluent-records")]


def kafka_python(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    return [_row(r) for r in peer_reads.kafka_python(bootstrap, topic, 1, count, timeout, "kafka-python-records")]


def aiokafka(bootstrap: str, topic: str, count: int, timeout: float = 20.0) -> list[Message]:
    return [_row(r) for r in peer_reads.aiokafka(bootstrap, topic, 1, count, timeout, "aiokafka-records")]


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
