"""Real clients produce a known set of messages to a `CaptureBroker`; each returns what it was asked.

The messages cover what a batch can carry: null and empty keys and values, binary values, repeated,
empty and null header values, non-ASCII header names, out-of-order explicit timestamps, and one value
long enough for every codec to compress. A client gets only what its format can hold: magic 0 has no
timestamps and magic 0/1 no headers (``for_magic``). Every function raises if the client reports an error.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Optional

JS = Path(__file__).resolve().parents[1] / "interop" / "js"
T0 = 1_700_000_000_000

# (key, value, headers, timestamp); bytes or None.
MESSAGES: list[tuple[Optional[bytes], Optional[bytes], list[tuple[str, Optional[bytes]]], int]] = [
    (b"key-0", b"value-0", [("h1", b"one"), ("h2", b"")], T0),
    (None, b"no key", [], T0 + 1),
    (b"", b"", [("empty", b"")], T0 + 5),
    (b"tombstone", None, [], T0 + 2),  # earlier than the one before: deltas may be negative
    (b"binary", bytes(range(256)), [("dup", b"a"), ("dup", b"b"), ("null", None)], T0 - 60_000),
    (b"long", b"kcodec record batches " * 120, [("unicode-\u00e9", "\u00fc".encode())], T0 + 1000),
]


def for_magic(magic: int, null_headers: bool = True) -> list[dict[str, Any]]:
    """The messages as JSON-able dicts (bytes as hex), reduced to what ``magic`` can carry; without
    null header values if ``null_headers`` is false (kafka-python and kafkajs refuse them)."""
    out = []
    for key, value, headers, ts in MESSAGES:
        kept = [[n, _hex(v)] for n, v in headers if null_headers or v is not None]
        out.append({"key": _hex(key), "value": _hex(value), "headers": kept if magic >= 2 else [],
                    "timestamp": ts if magic >= 1 else None})
    return out


def _hex(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.hex()


def _unhex(h: Optional[str]) -> Optional[bytes]:
    return None if h is None else bytes.fromhex(h)


def confluent(bootstrap: str, topic: str, messages: list[dict[str, Any]], codec: str,
              idempotent: bool = False) -> dict[str, Any]:
    """confluent-kafka (librdkafka): one linger window, so one batch."""
    import confluent_kafka

    config = {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 100,
              "enable.idempotence": idempotent, "acks": "all", "message.timeout.ms": 15000,
              "client.id": "confluent-records"}
    errors: list[str] = []
    p = confluent_kafka.Producer(config)
    for m in messages:
        p.produce(topic, key=_unhex(m["key"]), value=_unhex(m["value"]), partition=0,
                  headers=[(n, _unhex(v)) for n, v in m["headers"]], timestamp=m["timestamp"] or 0,
                  on_delivery=lambda err, _msg: err and errors.append(str(err)))
    left = p.flush(20)
    if left or errors:
        raise RuntimeError(f"confluent-kafka: {left} undelivered, errors {errors}")
    return {"client": f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka "
                      f"{confluent_kafka.libversion()[0]})", "config": config}


def kafka_python(bootstrap: str, topic: str, messages: list[dict[str, Any]], codec: str,
                 api_version: Optional[tuple[int, ...]] = None) -> dict[str, Any]:
    """kafka-python; ``api_version`` (0, 9) writes magic 0, (0, 10, 1) magic 1, None negotiates (magic 2)."""
    import kafka

    config: dict[str, Any] = {"bootstrap_servers": bootstrap, "compression_type": None if codec == "none" else codec,
                              "linger_ms": 100, "acks": 1, "client_id": "kafka-python-records"}
    if api_version:
        config["api_version"] = api_version
    p = kafka.KafkaProducer(**config)
    try:
        futures = [p.send(topic, key=_unhex(m["key"]), value=_unhex(m["value"]), partition=0,
                          headers=[(n, _unhex(v)) for n, v in m["headers"]] or None, timestamp_ms=m["timestamp"])
                   for m in messages]
        p.flush(20)
        for f in futures:
            f.get(timeout=5)  # raises the delivery error, if any
    finally:
        p.close(5)
    return {"client": f"kafka-python {kafka.__version__}", "config": {**config, "api_version": api_version}}


def aiokafka(bootstrap: str, topic: str, messages: list[dict[str, Any]], codec: str,
             idempotent: bool = False, max_batch_size: int = 16384) -> dict[str, Any]:
    """aiokafka: every send before the linger ends, so one batch unless ``max_batch_size`` splits them."""
    import aiokafka as aio

    config = {"bootstrap_servers": bootstrap, "compression_type": None if codec == "none" else codec,
              "linger_ms": 100, "enable_idempotence": idempotent, "client_id": "aiokafka-records",
              "request_timeout_ms": 15000, "max_batch_size": max_batch_size}

    async def run() -> None:
        p = aio.AIOKafkaProducer(**config)
        await p.start()
        try:
            futures = [await p.send(topic, key=_unhex(m["key"]), value=_unhex(m["value"]), partition=0,
                                    headers=[(n, _unhex(v)) for n, v in m["headers"]], timestamp_ms=m["timestamp"])
                       for m in messages]
            await asyncio.wait_for(asyncio.gather(*futures), 20)
        finally:
            await p.stop()

    asyncio.run(run())
    return {"client": f"aiokafka {aio.__version__}", "config": config}


def node_available() -> Optional[str]:
    """Why kafkajs cannot run here, or None when it can."""
    if shutil.which("node") is None:
        return "node is not installed"
    for pkg in ("kafkajs", "kafkajs-snappy", "kafkajs-lz4", "@mongodb-js/zstd"):
        if not (JS / "node_modules" / pkg).is_dir():
            return f"tests/interop/js/node_modules/{pkg} missing (make test installs it)"
    return None


def kafkajs(bootstrap: str, topic: str, messages: list[dict[str, Any]], codec: str,
            idempotent: bool = False) -> dict[str, Any]:
    """kafkajs (tests/interop/js/produce.js): one send() of every message, so one batch."""
    missing = node_available()
    if missing:
        raise RuntimeError(missing)
    out = subprocess.run(["node", str(JS / "produce.js"), bootstrap, topic, codec, str(idempotent).lower()],
                         input=json.dumps(messages), capture_output=True, text=True, timeout=60)
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines or "ok" not in json.loads(lines[-1]):
        raise RuntimeError(f"kafkajs failed: {out.stdout}{out.stderr}")
    version = json.loads((JS / "node_modules" / "kafkajs" / "package.json").read_text())["version"]
    return {"client": f"kafkajs {version}", "config": {"compression": codec, "idempotent": idempotent}}
