"""Fetching from followers (KIP-392) with real consumers: a consumer with a rack (confluent-kafka's
``client.rack``, kafka-python's and aiokafka's ``client_rack``) is sent by the rack-aware leader to the
follower in its rack, reads there, and keeps reading, from the leader, when that follower stops.
``Cluster.fetched_batches()`` says which broker served it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from needs import missing, need_module, need_tool

from kcodec_broker import Cluster
from kcodec_broker.replicas import RACK_AWARE

pytestmark = pytest.mark.interop
TIMEOUT = 20
TOPIC = "near"
RACKS = {1: "a", 2: "b", 3: "c"}
JS = Path(__file__).resolve().parent / "js"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """t-0 led by broker 1 (rack a) with followers 2 (rack b) and 3 (rack c); a paused follower leaves the ISR
    after 300 ms (replica.lag.time.max.ms), checked every 150 ms."""
    with Cluster(brokers=3, racks=RACKS, replica_selector=RACK_AWARE, system_topic_partitions=1,
                 replica_lag_time_max_ms=300) as c:
        with c.state.lock:
            c.state.add_topic(c.state.plan_topic(TOPIC, assignments={0: [1, 2, 3]}))
        yield c


def _served(cluster: Cluster, client_id: str) -> dict[int, int]:
    return {node: n[client_id] for node, n in cluster.fetched_batches().items() if n[client_id]}


def _producer(cluster: Cluster) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                     "message.timeout.ms": TIMEOUT * 1000, "log_level": 2})


def _write(producer: Any, name: str) -> list[bytes]:
    """Five messages to t-0, one batch each."""
    sent = []
    for i in range(5):
        value = f"{name}-{i}".encode()
        producer.produce(TOPIC, value=value, partition=0)
        assert producer.flush(TIMEOUT) == 0
        sent.append(value)
    return sent


def _fetched_by(cluster: Cluster, client_id: str, first: int) -> None:
    """The client's Fetch requests were v11+ (KIP-392 needs their rack_id); broker 2, the follower in its rack,
    served the ``first`` batches (never the leader), and the leader the rest, once 2 had stopped."""
    fetches = [v for api, v in cluster.requests_served()[client_id] if api == "Fetch"]
    assert min(fetches) >= 11
    served = _served(cluster, client_id)
    assert served.get(2) == first and served.get(1, 0) > 0, served


def _follow_then_fall_back(cluster: Cluster, client_id: str, poll: Callable[[], list[bytes]]) -> None:
    """Write five messages, read them with ``poll`` (one bounded poll of the client: the values it returned)
    from the follower in rack b; stop that follower; write and read five more, from the leader."""
    producer = _producer(cluster)
    sent: list[bytes] = []
    got: list[bytes] = []

    def step(name: str) -> None:
        sent.extend(_write(producer, name))
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(sent) and time.monotonic() < deadline:
            got.extend(poll())
        assert got == sent

    step("near")
    assert set(_served(cluster, client_id)) == {2}  # the follower in its rack, never the leader
    cluster.stop_broker(2)
    step("after")
    _fetched_by(cluster, client_id, _served(cluster, client_id)[2])


def _librdkafka(cluster: Cluster, client_id: str) -> tuple[Any, Callable[[], list[bytes]]]:
    """A confluent-kafka consumer in rack b assigned t-0 from offset 0, and one bounded poll of it."""
    need_module("confluent_kafka")
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "topic.metadata.refresh.interval.ms": 500,
                         "metadata.max.age.ms": 1000, "retry.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
                         "log_level": 2, "group.id": "near", "enable.auto.commit": False,
                         "client.id": client_id, "client.rack": "b", "auto.offset.reset": "error",
                         "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])

    def poll() -> list[bytes]:
        m = consumer.poll(0.2)
        if m is None:
            return []
        assert m.error() is None, m.error()  # a reset would be an error event, not a silent jump
        return [m.value()]

    return consumer, poll


def test_confluent_kafka_reads_from_the_follower_in_its_rack_and_falls_back_to_the_leader(cluster):
    consumer, poll = _librdkafka(cluster, "rack-b-librdkafka")
    try:
        _follow_then_fall_back(cluster, "rack-b-librdkafka", poll)
    finally:
        consumer.close()


def test_confluent_kafka_keeps_reading_the_follower_that_lags_out_of_the_isr(cluster):
    # librdkafka keeps its preferred replica while the leader is unchanged (a 5-minute lease): a follower out
    # of the ISR serves it its lagging copy, as Kafka's does, and nothing new until it catches up
    consumer, poll = _librdkafka(cluster, "rack-b-lagging")
    producer = _producer(cluster)
    try:
        sent = _write(producer, "near")
        got: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 5 and time.monotonic() < deadline:
            got.extend(poll())
        assert got == sent and _served(cluster, "rack-b-lagging") == {2: 5}
        cluster.pause_replication(2)
        sent += _write(producer, "lagging")  # acks=all: the first waits until the ISR check drops 2
        assert cluster.state.partition_leadership(cluster.topics()[TOPIC], 0).isr == [1, 3]
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            got.extend(poll())
        assert len(got) == 5 and _served(cluster, "rack-b-lagging") == {2: 5}  # its copy: nothing new, no error
        cluster.resume_replication(2)
        deadline = time.monotonic() + TIMEOUT
        while len(got) < len(sent) and time.monotonic() < deadline:
            got.extend(poll())
        assert got == sent
        assert _served(cluster, "rack-b-lagging") == {2: 10}  # the follower, caught up; never the leader
        assert min(v for api, v in cluster.requests_served()["rack-b-lagging"] if api == "Fetch") >= 11
    finally:
        consumer.close()


def test_kafka_python_reads_from_the_follower_in_its_rack_and_falls_back_to_the_leader(cluster):
    need_module("confluent_kafka")
    need_module("kafka")
    import kafka

    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="rack-b-kafka-python",
                                   client_rack="b", enable_auto_commit=False, metadata_max_age_ms=1000,
                                   fetch_max_wait_ms=100, retry_backoff_ms=50, reconnect_backoff_max_ms=200,
                                   request_timeout_ms=5000)
    tp = kafka.TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)

    def poll() -> list[bytes]:
        return [r.value for rs in consumer.poll(timeout_ms=200).values() for r in rs]

    try:
        _follow_then_fall_back(cluster, "rack-b-kafka-python", poll)
    finally:
        consumer.close()


def test_aiokafka_reads_from_the_follower_in_its_rack_and_falls_back_to_the_leader(cluster):
    need_module("confluent_kafka")
    need_module("aiokafka")
    import aiokafka

    loop = asyncio.new_event_loop()
    tp = aiokafka.TopicPartition(TOPIC, 0)

    async def start() -> aiokafka.AIOKafkaConsumer:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, client_id="rack-b-aiokafka",
                                             client_rack="b", enable_auto_commit=False, metadata_max_age_ms=1000,
                                             fetch_max_wait_ms=100, retry_backoff_ms=50, request_timeout_ms=5000)
        await consumer.start()
        consumer.assign([tp])
        consumer.seek(tp, 0)
        return consumer

    async def poll_once() -> list[bytes]:
        batches = await consumer.getmany(tp, timeout_ms=200)
        return [r.value for rs in batches.values() for r in rs]

    consumer = loop.run_until_complete(asyncio.wait_for(start(), TIMEOUT))
    try:
        _follow_then_fall_back(cluster, "rack-b-aiokafka", lambda: loop.run_until_complete(poll_once()))
    finally:
        loop.run_until_complete(consumer.stop())
        loop.close()


def test_kafkajs_reads_from_the_follower_in_its_rack_and_falls_back_to_the_leader(cluster):
    # kafkajs keeps the preferred read replica until metadataMaxAge (its check of offline replicas looks at
    # the leader, not the preferred one): the stopped follower's connection errors end when that expires
    need_module("confluent_kafka")
    node = need_tool("node", "Node.js 18+ and npm; Debian's nodejs and npm packages")
    if not (JS / "node_modules" / "kafkajs").is_dir():
        missing("kafkajs in tests/interop/js/node_modules (`make test` runs npm ci there)")
    producer = _producer(cluster)
    sent = _write(producer, "near")
    reader = subprocess.Popen([node, str(JS / "consume.js"), cluster.bootstrap, TOPIC, "10", "b"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while _served(cluster, "rack-b-kafkajs").get(2, 0) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _served(cluster, "rack-b-kafkajs") == {2: 5}  # the follower in its rack, never the leader
        cluster.stop_broker(2)
        sent += _write(producer, "after")
        out, err = reader.communicate(timeout=40)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.communicate()
    result = json.loads(out.strip().splitlines()[-1])
    assert [bytes.fromhex(m["value"]) for m in result.get("ok", [])] == sent, out + err
    _fetched_by(cluster, "rack-b-kafkajs", 5)
