"""Real clients produce numbered messages to explicit partitions and read partitions back by assign()
(kafkajs, which has no assign(), is read back through confluent-kafka). Every call is bounded in time and
raises when the client reports an error."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import peer_reads
from needs import missing, need_tool

JS = Path(__file__).resolve().parent / "js"
Sent = list[tuple[int, bytes]]  # (partition, value)
ACKS = {"all": -1, "1": 1, "0": 0}


def confluent_produce(bootstrap: str, topic: str, messages: Sent, codec: str, acks: str, idempotent: bool) -> None:
    import confluent_kafka

    errors: list[str] = []
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": acks,
                                  "enable.idempotence": idempotent, "linger.ms": 5, "message.timeout.ms": 15000})
    for partition, value in messages:
        p.produce(topic, value=value, partition=partition, on_delivery=lambda e, _m: e and errors.append(str(e)))
    left = p.flush(20)
    if left or errors:
        raise RuntimeError(f"confluent-kafka: {left} undelivered, errors {errors[:3]}")


def kafka_python_produce(bootstrap: str, topic: str, messages: Sent, codec: str, acks: str, idempotent: bool) -> None:
    import kafka

    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                            acks=ACKS[acks] if acks != "all" else "all", enable_idempotence=idempotent, linger_ms=5)
    try:
        futures = [p.send(topic, value=v, partition=part) for part, v in messages]
        p.flush(20)
        if acks != "0":
            for f in futures:
                f.get(timeout=5)
    finally:
        p.close(5)


def aiokafka_produce(bootstrap: str, topic: str, messages: Sent, codec: str, acks: str, idempotent: bool) -> None:
    import aiokafka as aio

    async def run() -> None:
        p = aio.AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                                 acks=ACKS[acks] if acks != "all" else "all", enable_idempotence=idempotent,
                                 linger_ms=5, request_timeout_ms=15000)
        await p.start()
        try:
            futures = [await p.send(topic, value=v, partition=part) for part, v in messages]
            await asyncio.wait_for(asyncio.gather(*futures), 20)
        finally:
            await p.stop()

    asyncio.run(run())


def kafkajs_produce(bootstrap: str, topic: str, messages: Sent, codec: str, acks: str, idempotent: bool) -> None:
    node = need_tool("node", "Node.js 18+ and npm; Debian's nodejs and npm packages")
    if not (JS / "node_modules" / "kafkajs").is_dir():
        missing("kafkajs in tests/interop/js/node_modules (`make test` runs npm ci there)")
    out = subprocess.run([node, str(JS / "produce_data.js"), bootstrap, topic, codec, str(ACKS[acks]),
                          str(idempotent).lower()], input=json.dumps([[p, v.decode()] for p, v in messages]),
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.strip().splitlines()
    if out.returncode or not lines or json.loads(lines[-1]).get("ok") != len(messages):
        raise RuntimeError(f"kafkajs failed: {out.stdout}{out.stderr}")


PRODUCERS = {"confluent-kafka": confluent_produce, "kafka-python": kafka_python_produce,
             "aiokafka": aiokafka_produce, "kafkajs": kafkajs_produce}


def confluent_consume(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 20.0) -> Sent:
    return [(m.partition(), m.value()) for m in peer_reads.confluent(bootstrap, topic, partitions, count, timeout)]


def kafka_python_consume(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 20.0) -> Sent:
    return [(r.partition, r.value) for r in peer_reads.kafka_python(bootstrap, topic, partitions, count, timeout)]


def aiokafka_consume(bootstrap: str, topic: str, partitions: int, count: int, timeout: float = 20.0) -> Sent:
    return [(r.partition, r.value) for r in peer_reads.aiokafka(bootstrap, topic, partitions, count, timeout)]


CONSUMERS = {"confluent-kafka": confluent_consume, "kafka-python": kafka_python_consume,
             "aiokafka": aiokafka_consume, "kafkajs": confluent_consume}
