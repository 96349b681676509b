"""GetTelemetrySubscriptions v0 and PushTelemetry v0 (KIP-714) over the wire, and Cluster.telemetry()."""

from __future__ import annotations

import gzip
import time
import uuid

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster
from kcodec_broker import telemetry
from kcodec_broker.telemetry import subscription_id
from kcodec.errors import ErrorCode as E
from kcodec.messages import (ApiVersionsRequest, GetTelemetrySubscriptionsRequest as Get,
                             PushTelemetryRequest as Push)
from kcodec.records import Compression, compress

ZERO = uuid.UUID(int=0)
OTLP = b"\n\x1b\x12\x19\n\x17org.apache.kafka.test.x"  # any bytes: the broker keeps them as they come


class Clock:
    """The telemetry's clock, moved by the test: no sleeping, no timing races."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def cluster():
    with Cluster(brokers=2, system_topic_partitions=1, telemetry_max_bytes=4096, client_telemetry=True) as c:
        c.runtime.telemetry.clock = Clock()
        yield c


def later(c: Cluster, seconds: float = 0.1) -> None:
    """One push interval (100 ms) later, on the telemetry's clock."""
    c.runtime.telemetry.clock.sleep(seconds)  # type: ignore[attr-defined]


def push(w: Wire, instance: uuid.UUID, sub: int, data: bytes = OTLP, compression: int = 0,
         terminating: bool = False) -> int:
    return w.call(Push(client_instance_id=instance, subscription_id=sub, terminating=terminating,
                       compression_type=compression, metrics=data), 0).error_code


def test_no_subscription_no_metrics_and_a_new_instance_id(cluster):
    with Wire(cluster.addresses[0]) as w:
        r = w.call(Get(client_instance_id=ZERO), 0)
    assert r.error_code == 0 and r.client_instance_id not in (ZERO, uuid.UUID(int=1))
    assert list(r.requested_metrics) == [] and r.push_interval_ms == 300_000  # Kafka's default interval
    assert list(r.accepted_compression_types) == [4, 3, 1, 2]  # zstd, lz4, gzip, snappy: Kafka's preference
    assert r.telemetry_max_bytes == 4096 and r.delta_temporality is True
    assert r.subscription_id == subscription_id([], 300_000, r.client_instance_id)


def test_matching_subscriptions_combine(cluster):
    cluster.set_client_metrics("producers", {"metrics": "org.apache.kafka.producer.", "interval.ms": "2000",
                                             "match": "client_id=app-.*"})
    cluster.set_client_metrics("all-clients", {"metrics": "org.apache.kafka.client.", "interval.ms": "60000"})
    cluster.set_client_metrics("others", {"metrics": "org.apache.kafka.other.", "interval.ms": "100",
                                          "match": "client_software_name=java"})
    with Wire(cluster.addresses[0], client_id="app-1") as w:
        w.call(ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.0"), 3)
        r = w.call(Get(client_instance_id=ZERO), 0)
    assert list(r.requested_metrics) == ["org.apache.kafka.client.", "org.apache.kafka.producer."]
    assert r.push_interval_ms == 2000
    with Wire(cluster.addresses[1], client_id="batch") as w:
        r = w.call(Get(client_instance_id=ZERO), 0)
    assert list(r.requested_metrics) == ["org.apache.kafka.client."] and r.push_interval_ms == 60000
    cluster.set_client_metrics("everything", {"metrics": "*", "match": "client_id=batch"})
    with Wire(cluster.addresses[1], client_id="batch") as w:
        assert list(w.call(Get(client_instance_id=ZERO), 0).requested_metrics) == ["*"]  # all metrics: "*" alone


def test_asking_again_early_is_throttled_unless_the_subscriptions_changed(cluster):
    cluster.set_client_metrics("s", {"metrics": "a.", "interval.ms": "100"})
    with Wire(cluster.addresses[0]) as w:
        first = w.call(Get(client_instance_id=ZERO), 0)
        me = first.client_instance_id
        assert w.call(Get(client_instance_id=me), 0).error_code == E.THROTTLING_QUOTA_EXCEEDED
        cluster.set_client_metrics("s", {"metrics": "b.", "interval.ms": "100"})
        changed = w.call(Get(client_instance_id=me), 0)
        assert changed.error_code == 0 and changed.client_instance_id == me
        assert list(changed.requested_metrics) == ["b."] and changed.subscription_id != first.subscription_id
        later(cluster)
        again = w.call(Get(client_instance_id=me), 0)
        assert again.error_code == 0 and again.subscription_id == changed.subscription_id


def test_pushes_are_kept_per_instance_decompressed(cluster):
    cluster.set_client_metrics("s", {"metrics": "org.apache.kafka.", "interval.ms": "100"})
    with Wire(cluster.addresses[0], client_id="pusher") as w:
        r = w.call(Get(client_instance_id=ZERO), 0)
        me, sub = r.client_instance_id, r.subscription_id
        assert push(w, me, sub, gzip.compress(OTLP), Compression.GZIP) == 0  # the first push may come early
        assert push(w, me, sub) == E.THROTTLING_QUOTA_EXCEEDED
        later(cluster)
        zstd = compress(Compression.ZSTD, OTLP * 3)
        assert push(w, me, sub, zstd, Compression.ZSTD) == 0
        later(cluster)
        assert push(w, me, sub, b"") == 0  # nothing to keep
    with Wire(cluster.addresses[1], client_id="pusher") as w:  # any broker: a new instance there, same subscription
        later(cluster)
        assert push(w, me, sub, OTLP, terminating=True) == 0
    kept = cluster.telemetry()
    assert list(kept) == [me]
    assert [(p.compression_type, p.metrics, p.terminating, p.node_id, p.client_id) for p in kept[me]] == [
        (1, OTLP, False, 1, "pusher"), (4, OTLP * 3, False, 1, "pusher"), (0, OTLP, True, 2, "pusher")]
    assert kept[me][1].raw == zstd and all(p.subscription_id == sub for p in kept[me])


def test_push_errors_in_kafkas_order(cluster):
    cluster.set_client_metrics("s", {"metrics": "*", "interval.ms": "100"})
    with Wire(cluster.addresses[0]) as w:
        r = w.call(Get(client_instance_id=ZERO), 0)
        me, sub = r.client_instance_id, r.subscription_id
        assert push(w, ZERO, sub) == push(w, uuid.UUID(int=1), sub) == E.INVALID_REQUEST  # reserved ids
        assert push(w, me, sub + 1) == E.UNKNOWN_SUBSCRIPTION_ID
        retry = w.call(Get(client_instance_id=me), 0)  # after that error a Get is never too early
        assert retry.error_code == 0 and retry.subscription_id == sub
        # but, as in Kafka, that Get does not restart the interval: a push right after it is too early
        assert push(w, me, sub, compression=9) == E.THROTTLING_QUOTA_EXCEEDED
        later(cluster)
        assert push(w, me, sub, compression=9) == E.UNSUPPORTED_COMPRESSION_TYPE
        assert w.call(Get(client_instance_id=me), 0).error_code == 0
        later(cluster)
        assert push(w, me, sub, b"x" * 4097) == E.TELEMETRY_TOO_LARGE
        later(cluster)
        assert push(w, me, sub, gzip.compress(b"\0" * 5000), Compression.GZIP) == E.TELEMETRY_TOO_LARGE  # inflated
        later(cluster)
        assert push(w, me, sub, b"not gzip", Compression.GZIP) == E.INVALID_RECORD
        assert push(w, me, sub, terminating=True) == 0  # too early, but a terminating push is taken
        assert push(w, me, sub) == E.INVALID_REQUEST  # nothing after a terminating push
        assert w.call(Get(client_instance_id=me), 0).error_code == E.THROTTLING_QUOTA_EXCEEDED
    assert [p.terminating for p in cluster.telemetry()[me]] == [True]


def test_a_client_may_bring_its_own_instance_id(cluster):
    mine = uuid.uuid4()
    with Wire(cluster.addresses[0]) as w:
        r = w.call(Get(client_instance_id=mine), 0)
        assert r.error_code == 0 and r.client_instance_id == mine
        assert push(w, mine, r.subscription_id, b"") == 0
    assert cluster.telemetry() == {}  # an empty push keeps nothing


def test_subscription_ids_follow_kafkas_formula():
    # CRC32C of "[m1, m2]" + interval, XORed with the Java hash of the uuid (most ^ least, folded)
    u = uuid.UUID(int=(5 << 64) | 3)
    from kcodec.records import crc32c
    expected = crc32c(b"[a., b.]1000") ^ 6
    assert subscription_id(["a.", "b."], 1000, u) == (expected - (1 << 32) if expected >= 1 << 31 else expected)


def test_source_address_port_and_instance_id_selectors(cluster):
    mine = uuid.uuid4()
    cluster.set_client_metrics("local", {"metrics": "local.", "match": r"client_source_address=127\.0\.0\.1"})
    cluster.set_client_metrics("port-1", {"metrics": "port.", "match": "client_source_port=1"})
    cluster.set_client_metrics("me", {"metrics": "me.", "match": f"client_instance_id={mine}"})
    with Wire(cluster.addresses[0]) as w:
        assert list(w.call(Get(client_instance_id=ZERO), 0).requested_metrics) == ["local."]
        assert list(w.call(Get(client_instance_id=mine), 0).requested_metrics) == ["local.", "me."]


def test_off_by_default_as_kafka_without_a_reporter():
    """A cluster not asked for client telemetry neither advertises the two APIs nor serves them (Kafka
    offers them only with a reporter that receives client metrics); subscriptions are still kept."""
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        keys = {k.api_key for k in w.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                          3).api_keys}
        assert not keys & {Get.API_KEY, Push.API_KEY} and 0 in keys
        assert w.call(Get(client_instance_id=ZERO), 0).error_code == E.UNSUPPORTED_VERSION
        c.set_client_metrics("all", {"metrics": "*", "interval.ms": "1000"})
        assert w.call(Get(client_instance_id=ZERO), 0).error_code == E.UNSUPPORTED_VERSION
        assert c.telemetry() == {}


# -- client instances: per broker, expiring, bounded, tied to their connection (Kafka's ClientMetricsManager) --
def subscribe(w: Wire, instance: uuid.UUID = ZERO) -> tuple[uuid.UUID, int]:
    r = w.call(Get(client_instance_id=instance), 0)
    assert r.error_code == 0
    return r.client_instance_id, r.subscription_id


def test_each_broker_keeps_its_own_client_instances(cluster):
    cluster.set_client_metrics("s", {"metrics": "*", "interval.ms": "1000"})
    with Wire(cluster.addresses[0]) as one, Wire(cluster.addresses[1]) as two:
        me, sub = subscribe(one)
        assert one.call(Get(client_instance_id=me), 0).error_code == E.THROTTLING_QUOTA_EXCEEDED
        assert subscribe(two, me) == (me, sub)  # broker 2 never saw it: no throttling, the same subscription id
        assert push(one, me, sub, terminating=True) == 0
        assert push(one, me, sub) == E.INVALID_REQUEST  # broker 1: nothing after a terminating push
        assert push(two, me, sub) == 0  # broker 2's instance is not terminated
    assert [(p.node_id, p.terminating) for p in cluster.telemetry()[me]] == [(1, True), (2, False)]


@pytest.mark.parametrize("interval_ms, life_s", [(30_000, 90.0), (100, 60.0)])
def test_an_instance_is_forgotten_three_intervals_or_a_minute_after_its_last_request(cluster, interval_ms, life_s):
    # max(60 s, 3 push intervals), counted again from every request (Kafka's expiration timer task)
    cluster.set_client_metrics("s", {"metrics": "*", "interval.ms": str(interval_ms)})
    with Wire(cluster.addresses[0]) as w:
        me, sub = subscribe(w)
        assert push(w, me, sub, terminating=True) == 0
        later(cluster, life_s - 0.1)
        assert push(w, me, sub) == E.INVALID_REQUEST  # still known: terminated; and alive for life_s again
        later(cluster, life_s)
        assert push(w, me, sub) == 0  # forgotten: a new instance, matched afresh, with the same subscription id
        cluster.set_client_metrics("s", {"metrics": "other.", "interval.ms": str(interval_ms)})
        later(cluster, life_s)
        assert push(w, me, sub) == E.UNKNOWN_SUBSCRIPTION_ID  # forgotten, and the subscriptions changed
        again, new_sub = subscribe(w, me)  # what the client does then: it asks again
        assert again == me and new_sub != sub
        later(cluster, interval_ms / 1000)  # that Get did not restart the interval (test_push_errors_in_kafkas_order)
        assert push(w, me, new_sub) == 0
    assert [p.subscription_id for p in cluster.telemetry()[me]] == [sub, sub, new_sub]


def test_a_broker_keeps_at_most_max_instances_the_least_recently_used_going(cluster, monkeypatch):
    monkeypatch.setattr(telemetry, "MAX_INSTANCES", 2)
    cluster.set_client_metrics("s", {"metrics": "*", "interval.ms": "1000"})
    with Wire(cluster.addresses[0]) as w:
        done = []
        for _ in range(3):  # a, b, c: each terminated; c's arrival pushes a out
            me, sub = subscribe(w)
            assert push(w, me, sub, terminating=True) == 0
            done.append((me, sub))
        (a, a_sub), (b, b_sub), _ = done
        assert push(w, b, b_sub) == E.INVALID_REQUEST  # kept, and now the most recently used
        assert push(w, a, a_sub) == 0  # forgotten: new (and c goes)


def test_an_instance_is_forgotten_when_the_connection_that_made_it_closes(cluster):
    cluster.set_client_metrics("s", {"metrics": "*", "interval.ms": "1000"})
    with Wire(cluster.addresses[0]) as w:
        me, sub = subscribe(w)
        assert push(w, me, sub, terminating=True) == 0
        with Wire(cluster.addresses[0]) as other:  # another connection: the instance is not its own
            assert push(other, me, sub) == E.INVALID_REQUEST
        assert me in cluster.runtime.telemetry.known(1)
    deadline = time.monotonic() + 5
    while me in cluster.runtime.telemetry.known(1) and time.monotonic() < deadline:  # the close reaches it
        time.sleep(0.02)
    assert me not in cluster.runtime.telemetry.known(1)
    with Wire(cluster.addresses[0]) as w:
        assert push(w, me, sub) == 0  # a new instance
