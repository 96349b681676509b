"""Client telemetry (KIP-714) with real clients: librdkafka (confluent-kafka 2.16.1) asks for its
subscription and pushes its metrics; kafka-python administers CLIENT_METRICS subscriptions."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest
from needs import need_module
from interop_support import record

from kcodec_broker import Cluster

pytestmark = pytest.mark.interop
TIMEOUT = 10  # librdkafka pushes within 1.5 push intervals (jitter) of its subscription


QUEUE = "org.apache.kafka.producer.record.queue."  # the producer's queue-time metrics only


def _subscribe(c: Cluster) -> None:
    c.set_client_metrics("ck-sub", {"metrics": f"{QUEUE},org.apache.kafka.consumer.", "interval.ms": "500"})


def test_librdkafka_producer_and_consumer_push_metrics():
    ck = need_module("confluent_kafka")
    client = f"confluent-kafka {ck.__version__} (librdkafka {ck.libversion()[0]})"
    with Cluster(brokers=1, system_topic_partitions=1, client_telemetry=True) as c:
        _subscribe(c)
        c.create_topic("ck-telemetry", 1, 1)
        producer = ck.Producer({"bootstrap.servers": c.bootstrap, "client.id": "ck-tel-producer", "log_level": 3})
        consumer = ck.Consumer({"bootstrap.servers": c.bootstrap, "client.id": "ck-tel-consumer",
                                "group.id": "ck-tel", "auto.offset.reset": "earliest", "log_level": 3})
        try:
            consumer.subscribe(["ck-telemetry"])
            deadline = time.monotonic() + TIMEOUT
            while {p.client_id for pushes in c.telemetry().values() for p in pushes} != {
                    "ck-tel-producer", "ck-tel-consumer"}:
                assert time.monotonic() < deadline, f"no pushes from both clients: {c.telemetry()}"
                producer.produce("ck-telemetry", b"v")
                producer.poll(0.1)
                consumer.poll(0.1)
        finally:
            producer.flush(5)
            consumer.close()
            del producer
        pushes = [p for ps in c.telemetry().values() for p in ps]
        used = record(client, c)
    assert used["GetTelemetrySubscriptions"] == [0] and used["PushTelemetry"] == [0]
    names = {client: {n for p in pushes if p.client_id == client for n in p.metric_names()}
             for client in ("ck-tel-producer", "ck-tel-consumer")}
    # librdkafka pushes what the broker's subscription asked for, and nothing else
    assert names["ck-tel-producer"] and all(n.startswith(QUEUE) for n in names["ck-tel-producer"])
    assert names["ck-tel-consumer"] and all(n.startswith("org.apache.kafka.consumer.")
                                            for n in names["ck-tel-consumer"])
    # librdkafka takes the first of the broker's accepted types it was built with: zstd (4) here
    assert {p.compression_type for p in pushes} == {4} and all(p.raw != p.metrics for p in pushes)
    assert any(p.terminating for p in pushes if p.client_id == "ck-tel-consumer")  # its last push, at close


class _Skewed:
    """The broker's telemetry clock: real time, which the test may move forward (no minute-long sleeps)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.ahead


def test_librdkafka_pushes_on_after_its_instance_expires_and_resubscribes():
    # the broker forgets an instance a minute after its last request (three 500 ms intervals are less); the
    # next push makes a new one: taken while the subscriptions are the same, UNKNOWN_SUBSCRIPTION_ID once they
    # changed, whereupon librdkafka asks for its subscription again and pushes under the new id
    ck = need_module("confluent_kafka")
    with Cluster(brokers=1, system_topic_partitions=1, client_telemetry=True) as c:
        clock = c.runtime.telemetry.clock = _Skewed()
        _subscribe(c)
        producer = ck.Producer({"bootstrap.servers": c.bootstrap, "client.id": "ck-expiring", "log_level": 3})

        def wait_for(what: str, done: Callable[[], bool], client: Any = producer) -> None:
            deadline = time.monotonic() + TIMEOUT
            while not done():
                assert time.monotonic() < deadline, f"{what}: {c.telemetry()}"
                client.poll(0.1)

        def pushes() -> list[Any]:
            return [p for ps in c.telemetry().values() for p in ps]

        def gets() -> int:
            return c.requests_served()["ck-expiring"][("GetTelemetrySubscriptions", 0)]

        try:
            wait_for("no push", lambda: len(pushes()) >= 1)
            (me,) = c.telemetry()
            first_sub = pushes()[0].subscription_id
            clock.ahead += 61  # forgotten; the subscriptions unchanged
            seen = len(pushes())
            wait_for("no push after the expiry", lambda: len(pushes()) >= seen + 2)
            assert gets() == 1 and {p.subscription_id for p in pushes()} == {first_sub}
            c.set_client_metrics("ck-sub", {"metrics": "org.apache.kafka.producer.", "interval.ms": "500"})
            clock.ahead += 61  # forgotten again; now the subscriptions differ
            wait_for("no push under a new subscription", lambda: pushes()[-1].subscription_id != first_sub)
        finally:
            producer.flush(5)
            del producer, wait_for  # destroyed before the cluster stops
        assert gets() >= 2 and list(c.telemetry()) == [me]  # it asked again, and kept its instance id
        assert {n for p in pushes() if p.subscription_id != first_sub for n in p.metric_names()} - {
            n for p in pushes() if p.subscription_id == first_sub for n in p.metric_names()}  # more than before


def test_librdkafka_pushes_nothing_without_a_subscription():
    ck = need_module("confluent_kafka")
    with Cluster(brokers=1, system_topic_partitions=1, client_telemetry=True) as c:
        c.set_client_metrics("others", {"metrics": "*", "interval.ms": "100", "match": "client_id=someone-else"})
        producer = ck.Producer({"bootstrap.servers": c.bootstrap, "client.id": "ck-unsubscribed", "log_level": 3})
        try:
            deadline = time.monotonic() + TIMEOUT
            while not any("GetTelemetrySubscriptions" in apis for apis in c.api_versions_used().values()):
                assert time.monotonic() < deadline, "librdkafka never asked for its subscription"
                producer.poll(0.1)
            time.sleep(1.0)  # ten of the other subscription's intervals
            producer.poll(0)
        finally:
            producer.flush(5)
            del producer
        assert c.telemetry() == {}
        assert not any("PushTelemetry" in apis for apis in c.api_versions_used().values())


def test_kafka_python_administers_client_metrics_subscriptions():
    need_module("kafka")
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    sub = "kp-subscription"
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
        try:
            altered = admin.alter_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, sub, {
                "metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=kp-.*"})])
            described = admin.describe_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, sub)])
            listed = admin.list_config_resources(["CLIENT_METRICS"])
            refused = admin.alter_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, sub, {"interval.ms": "5"})])
            deleted = admin.alter_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, sub, {
                k: ("DELETE", None) for k in ("metrics", "interval.ms", "match")})])
            after = admin.list_config_resources(["CLIENT_METRICS"])
        finally:
            admin.close()
            used = record("kafka-python", c)
    assert altered == deleted == {"client_metrics": {sub: "OK"}}
    values = described["client_metrics"][sub]
    assert {k: (v["value"], v["config_type"]) for k, v in values.items()} == {
        "interval.ms": ("1000", "INT"), "match": ("client_id=kp-.*", "LIST"),
        "metrics": ("org.apache.kafka.producer.", "LIST")}
    assert {v["config_source"] for v in values.values()} == {"DYNAMIC_CLIENT_METRICS_CONFIG"}  # Kafka's 7
    assert listed == {"client_metrics": [sub]} and after == {}
    assert "InvalidRequestError" in str(refused["client_metrics"][sub])
    assert used["IncrementalAlterConfigs"] == [1] and used["ListConfigResources"] == [1]


def test_librdkafka_asks_nothing_of_a_cluster_without_client_telemetry():
    ck = need_module("confluent_kafka")
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        _subscribe(c)
        c.create_topic("ck-quiet", 1, 1)
        producer = ck.Producer({"bootstrap.servers": c.bootstrap, "client.id": "ck-quiet", "log_level": 3})
        try:
            producer.produce("ck-quiet", b"v")
            assert producer.flush(10) == 0
            time.sleep(1.0)  # two of the subscription's intervals
            producer.poll(0)
        finally:
            del producer
        used = c.api_versions_used()
    assert used and not any({"GetTelemetrySubscriptions", "PushTelemetry"} & set(apis) for apis in used.values())
    assert c.telemetry() == {}
