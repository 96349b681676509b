"""Brokers for the client's tests: a scriptable fake (unit tests) and real ones (interop).

Real brokers come through the parametrised ``broker`` fixture; each is a ``RealBroker`` that says what
it serves (``features``) and which versions kcodec should negotiate with it (``expected``); a broker
with SASL users carries them (``sasl``) and every test logs in with them. To add another broker, write a
session fixture that yields a RealBroker and add its name to BROKERS. ``kcodec broker`` joins when
``kcodec_broker`` is importable.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.resources
import importlib.util
import os
import shutil
import socket
import stat
import subprocess
import time
import uuid
from typing import Any, Awaitable, Callable, Optional, Union

import pytest

import kcodec
from kcodec.errors import ErrorCode
from kcodec.messages import ApiVersionsResponse

from client_support import RealBroker, _run_tansu, TANSU_VERSIONS


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: Any) -> Any:
    for address in _run_tansu(tmp_path_factory):
        yield RealBroker(name="tansu", bootstrap=address, features={"admin"}, topics={}, expected=TANSU_VERSIONS)


@pytest.fixture(scope="session")
def tansu_auth(tmp_path_factory: Any) -> Any:
    """Tansu requiring authentication: SCRAM users only, so SASL PLAIN must fail."""
    for address in _run_tansu(tmp_path_factory, "--authentication"):
        yield RealBroker(name="tansu-auth", bootstrap=address, features=set(), topics={}, expected=TANSU_VERSIONS)


@pytest.fixture(scope="session")
def rdkafka_mock() -> Any:
    """librdkafka's mock cluster (confluent-kafka 2.16.1), three brokers, two topics made by producing."""
    from confluent_kafka import Producer

    producer = Producer({"test.mock.num.brokers": 3, "log_level": 3})
    try:
        topics = {"orders": 4, "payments": 4}  # the mock creates topics with 4 partitions on first use
        for name in topics:
            producer.produce(name, b"x")
        if producer.flush(15) != 0:
            pytest.fail("librdkafka's mock cluster did not take the messages")
        md = producer.list_topics(timeout=10)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
        assert all(b.host == "127.0.0.1" for b in md.brokers.values())
        yield RealBroker(
            name="rdkafka-mock", bootstrap=bootstrap, features=set(), topics=topics,
            expected={"ApiVersions": 2, "Metadata": 13, "DescribeTopicPartitions": None, "CreateTopics": None,
                      "DeleteTopics": None, "CreatePartitions": None, "DescribeConfigs": None, "ListTopics": None})
    finally:
        producer.flush(5)
        del producer  # destroys the client, and its mock cluster with it


HAVE_KCODEC_BROKER = importlib.util.find_spec("kcodec_broker") is not None
KCODEC_BROKER_TOPICS = {"orders": 4, "payments": 7}


def _kcodec_cluster(**options: Any) -> Any:
    from kcodec_broker import Cluster

    with Cluster(brokers=3, **options) as cluster:
        for name, partitions in KCODEC_BROKER_TOPICS.items():
            cluster.create_topic(name, partitions, 3)
        yield cluster


@pytest.fixture(scope="session")
def kcodec_broker() -> Any:
    """kcodec's own broker: ListTopics, DescribeTopicPartitions with paging."""
    for cluster in _kcodec_cluster():
        yield RealBroker(name="kcodec-broker", bootstrap=cluster.bootstrap, topics=dict(KCODEC_BROKER_TOPICS),
                         features={"admin", "list_topics", "pagination"}, expected=KCODEC_BROKER_VERSIONS)


@pytest.fixture(scope="session")
def kcodec_broker_sasl() -> Any:
    """kcodec's own broker with SASL PLAIN users."""
    for cluster in _kcodec_cluster(users={"alice": "secret"}):
        yield RealBroker(name="kcodec-broker-sasl", bootstrap=cluster.bootstrap, topics=dict(KCODEC_BROKER_TOPICS),
                         features={"admin", "list_topics", "pagination", "sasl"}, sasl=("alice", "secret"),
                         expected={**KCODEC_BROKER_VERSIONS, "SaslHandshake": 1, "SaslAuthenticate": 2})


KCODEC_BROKER_VERSIONS: dict[str, Optional[int]] = {
    "ApiVersions": 4, "Metadata": 13, "DescribeTopicPartitions": 0, "CreateTopics": 7, "DeleteTopics": 6,
    "CreatePartitions": 3, "DescribeConfigs": 4, "ListTopics": 1}

# Apache Kafka 4.4 itself (tests/kafka): no ListTopics (KIP-142: the client falls back to Metadata).
KAFKA_VERSIONS: dict[str, Optional[int]] = {
    "ApiVersions": 4, "Metadata": 13, "DescribeTopicPartitions": 0, "CreateTopics": 7, "DeleteTopics": 6,
    "CreatePartitions": 3, "DescribeConfigs": 4, "ListTopics": None}
KAFKA_TOPICS = {"orders": 4, "payments": 7}


@pytest.fixture(scope="session")
def kafka_topics(real_kafka: Any) -> dict[str, int]:
    """The client suite's topics on the real Kafka (made once; replication factor 1, its only node)."""
    from kcodec.client import NewTopic, SyncClient

    with SyncClient(real_kafka.bootstrap, request_timeout=30) as c:
        made = c.create_topics([NewTopic(name, n, 1) for name, n in KAFKA_TOPICS.items()])
    assert all(r.ok or r.error == ErrorCode.TOPIC_ALREADY_EXISTS for r in made), made
    return dict(KAFKA_TOPICS)


@pytest.fixture(scope="session")
def kafka(real_kafka: Any, kafka_topics: dict[str, int]) -> Any:
    """Apache Kafka 4.4, its PLAINTEXT listener: DescribeTopicPartitions pages as kcodec broker's does."""
    yield RealBroker(name="kafka", bootstrap=real_kafka.bootstrap, topics=dict(kafka_topics),
                     features={"admin", "pagination"}, expected=KAFKA_VERSIONS)


@pytest.fixture(scope="session")
def kafka_sasl(real_kafka: Any, kafka_topics: dict[str, int]) -> Any:
    """Apache Kafka 4.4, its SASL_PLAINTEXT listener, as ``admin`` (a super user) with SASL PLAIN."""
    import real_kafka as rk

    yield RealBroker(name="kafka-sasl", bootstrap=real_kafka.sasl_bootstrap, topics=dict(kafka_topics),
                     features={"admin", "pagination", "sasl"}, sasl=("admin", rk.SASL_USERS["admin"]),
                     expected={**KAFKA_VERSIONS, "SaslHandshake": 1, "SaslAuthenticate": 2})


BROKERS = ["tansu", "rdkafka_mock"] + (["kcodec_broker", "kcodec_broker_sasl"] if HAVE_KCODEC_BROKER else []) + [
    pytest.param(name, marks=pytest.mark.kafka) for name in ("kafka", "kafka_sasl")]
# The brokers that administer topics (create, delete, add partitions): their tests run on each.
ADMIN_BROKERS = ["tansu", pytest.param("kafka", marks=pytest.mark.kafka)]


@pytest.fixture(params=BROKERS)
def broker(request: Any) -> RealBroker:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


@pytest.fixture(params=ADMIN_BROKERS)
def admin_broker(request: Any) -> RealBroker:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]
