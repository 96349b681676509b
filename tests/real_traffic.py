"""Four real clients produce (acks=0 too) and consume in groups, for the real-capture tests.

confluent-kafka, kafka-python, aiokafka and kafkajs, each on its own topic and group, against a
bootstrap address (the tap in front of a real broker). Each returns what it did from its own side:
messages sent per acks setting and delivered, messages consumed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

JS = Path(__file__).parent / "interop" / "js"
N = 6  # messages per client and acks setting


def confluent(bootstrap: str) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer

    out: dict[str, Any] = {"sent": {}, "consumed": 0}
    for acks in (-1, 0):
        p = Producer({"bootstrap.servers": bootstrap, "client.id": f"ck-producer-acks{acks}", "acks": acks,
                      "linger.ms": 0, "allow.auto.create.topics": True})
        for i in range(N):
            p.produce("real-ck", f"ck{acks}-{i}".encode())
            p.flush(10)  # one message a request: the request count is the message count
        out["sent"][acks] = N
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "ck-consumer", "group.id": "real-ck-group",
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "fetch.wait.max.ms": 100})
    c.subscribe(["real-ck"])
    deadline = __import__("time").monotonic() + 20
    while out["consumed"] < 2 * N and __import__("time").monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            out["consumed"] += 1
    c.close()
    return out


def kafka_python(bootstrap: str) -> dict[str, Any]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    out: dict[str, Any] = {"sent": {}, "consumed": 0}
    for acks in (1, 0):
        p = KafkaProducer(bootstrap_servers=bootstrap, client_id=f"kpy-producer-acks{acks}", acks=acks)
        for i in range(N):
            p.send("real-kpy", f"kpy{acks}-{i}".encode(), partition=0)
            p.flush(10)
        p.close()
        out["sent"][acks] = N
    # Tansu 0.6.0 does not finish kafka-python's group join: partitions assigned, offsets in a group.
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="kpy-consumer", group_id="real-kpy-group",
                      auto_offset_reset="earliest", consumer_timeout_ms=2000, fetch_max_wait_ms=100,
                      enable_auto_commit=False)
    c.assign([TopicPartition("real-kpy", 0)])
    for _ in c:
        out["consumed"] += 1
        if out["consumed"] >= 2 * N:
            break
    c.commit()
    c.close()
    return out


def aiokafka(bootstrap: str) -> dict[str, Any]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def produce(acks: Any) -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=f"aio-producer-acks{acks}", acks=acks)
        await p.start()
        for i in range(N):
            await asyncio.wait_for(p.send_and_wait("real-aio", f"aio{acks}-{i}".encode(), partition=0), 10)
        await p.stop()

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {"sent": {}, "consumed": 0}
        await produce("all")
        out["sent"]["all"] = N
        c = AIOKafkaConsumer("real-aio", bootstrap_servers=bootstrap, client_id="aio-consumer",
                             group_id="real-aio-group", auto_offset_reset="earliest", fetch_max_wait_ms=100)
        await c.start()
        while out["consumed"] < N:
            batch = await asyncio.wait_for(c.getmany(timeout_ms=500), 20)
            out["consumed"] += sum(len(v) for v in batch.values())
        await c.stop()
        # Last: aiokafka drops its connection when Tansu answers an acks=0 request (it expects none).
        await produce(0)
        out["sent"][0] = N
        return out

    return asyncio.run(asyncio.wait_for(run(), 40))


def kafkajs(bootstrap: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "kafkajs").is_dir():
        raise FileNotFoundError("node or kafkajs (make tests/interop/js/node_modules/.kcodec-installed)")
    run = subprocess.run([node, str(JS / "produce_consume.js"), bootstrap, "real-js", "real-js-group", str(N)],
                         capture_output=True, text=True, timeout=60)
    return json.loads(run.stdout.strip().splitlines()[-1])


CLIENTS = {"aiokafka": aiokafka, "kafkajs": kafkajs, "confluent-kafka": confluent, "kafka-python": kafka_python}


def run_all(bootstrap: str) -> dict[str, dict[str, Any]]:
    """Every client in turn against ``bootstrap``: what each did (a client that cannot run: `missing`)."""
    from needs import missing

    did = {}
    for name, run in CLIENTS.items():
        try:
            did[name] = run(bootstrap)
        except FileNotFoundError as e:
            missing(str(e))
    return did
