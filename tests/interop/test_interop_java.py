"""Kafka's Java client 4.4 (kafka-clients, tests/interop/java) produces to and consumes from kcodec broker:
every codec and acks, idempotent and transactional producers (and a fenced one), consumer groups under the
classic protocol and KIP-848's consumer protocol with a rebalance across two members, read_committed, seek
and commits. The JVM runs the scenario and returns what the client saw; the tests say what Kafka does, and
run the same scenarios against Apache Kafka 4.4 itself (the session's real_kafka; marker slow) to show that
it does."""

from __future__ import annotations

from typing import Iterator

import pytest
from interop_support import record
from java_clients import CLIENT, SESSION, Target

from kcodec_broker import Cluster, GroupSettings
from kcodec.records import iter_batches

pytestmark = [pytest.mark.interop, pytest.mark.checkout]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


# Against Apache Kafka too (slow: about a minute more; `pytest -m slow tests/interop/test_interop_java*.py`)
@pytest.fixture(params=["kcodec", pytest.param("kafka", marks=pytest.mark.slow)])
def target(request, java) -> Iterator[Target]:
    """kcodec broker: three brokers, KIP-848 members heartbeating every second (Kafka's
    group.consumer.heartbeat.interval.ms is 5 s, which a rebalance waits for); or Apache Kafka."""
    if request.param == "kafka":
        yield Target("kafka", request.getfixturevalue("real_kafka").bootstrap, java, prefix=f"j{SESSION}-")
        return
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5,
                 groups=GroupSettings(consumer_heartbeat_interval_ms=1000)) as c:
        try:
            yield Target("kcodec", c.bootstrap, java, cluster=c)
        finally:
            record(CLIENT, c)


def batches(cluster: Cluster, topic: str, partition: int) -> list:
    """The record batches a partition holds, read back through kcodec.records."""
    with cluster.state.lock:
        log = cluster.state.logs.logs.get((cluster.state.topics[topic].topic_id, partition))
        data = b"".join(bytes(b) for b in log.batches) if log is not None else b""
    return list(iter_batches(data))


@pytest.mark.parametrize("acks", ["all", "1", "0"])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_every_codec_and_acks(java, target, codec, acks):
    topic = target.create_topic(f"java-{codec}-{acks}", 3, 2)
    idempotent = acks == "all"  # idempotence needs acks=all
    r = java.call("produce", bootstrap=target.bootstrap, topic=topic, partitions=3, count=60, acks=acks,
                  compression=codec, idempotence=str(idempotent).lower())
    if acks == "0":  # nothing comes back: no offsets
        assert {tuple(s) for s in r["sent"]} == {(p, -1) for p in range(3)}
    else:
        assert r["sent"] == [[i % 3, i // 3] for i in range(60)]
    got = sorted(r["records"], key=lambda m: int(m["key"][1:]))
    assert [(m["partition"], m["key"], m["value"], m["headers"]) for m in got] == [
        (i % 3, f"k{i}", f"v{i}", {"i": str(i)}) for i in range(60)]
    assert {m["offset"] for m in got if m["partition"] == 0} == set(range(20))
    assert {m["timestamp_type"] for m in got} == {"CreateTime"} and {m["leader_epoch"] for m in got} == {0}
    if target.cluster is not None:
        stored = [b for p in range(3) for b in batches(target.cluster, topic, p)]
        assert {int(b.compression) for b in stored} == {CODEC_IDS[codec]}
        assert {b.producer_id >= 0 for b in stored} == {idempotent}  # idempotent batches carry a producer id


def test_transactions_read_committed(java, target):
    """Committed, aborted, committed with the group's offset sent to the transaction: read_committed sees the
    committed records only and stops at the last stable offset; the offset is the group's once committed."""
    topic = target.create_topic("java-txn", 1, 2)
    r = java.call("transactions", bootstrap=target.bootstrap, topic=topic, group=target.name("java-txn-group"),
                  transactional_id=target.name("java-txn-id"))
    assert r["read_committed"] == ["c1", "c2", "c3"]
    assert r["read_uncommitted"] == ["c1", "c2", "a1", "c3"]
    assert r["read_committed_end"] == r["read_uncommitted_end"] == 7  # 4 records and 3 commit/abort markers
    assert r["committed"] == [7, "txn"]
    if target.cluster is not None:
        controls = [b for b in batches(target.cluster, topic, 0) if b.is_control]
        assert len(controls) == 3 and all(b.is_transactional for b in controls)


def test_a_second_producer_fences_the_first(java, target):
    topic = target.create_topic("java-fenced", 1, 2)
    r = java.call("fenced", bootstrap=target.bootstrap, topic=topic, transactional_id=target.name("java-fenced-id"))
    assert r["first_commit"]["error"] == "ProducerFencedException", r
    assert r["read_committed"] == ["second"]  # the first one's open transaction was aborted


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_rebalances_across_two_members(java, target, protocol):
    """A alone has all four partitions; B joins and they split them; B leaves and A has all four again.
    Classic: eager (the default assignors' first, range); consumer (KIP-848): incremental, the broker assigns."""
    topic = target.create_topic(f"java-group-{protocol}", 4, 2)
    group = target.name(f"java-{protocol}")
    r = java.call("group", bootstrap=target.bootstrap, topic=topic, partitions=4, group=group, protocol=protocol)
    everything = [f"{topic}-{p}" for p in range(4)]
    assert r["alone_assignment"] == everything and r["alone_read"] == 40
    a, b = r["shared_assignment"]
    assert len(a) == len(b) == 2 and sorted(a + b) == everything
    assert r["async_commit_error"] is None
    assert r["after_leave_assignment"] == everything
    assert r["committed"] == {p: 20 for p in everything}
    assert r["group_metadata"] == [group, True, True]
    events_a, events_b = r["events"]
    assert events_b == [f"assigned [{', '.join(b)}]", f"revoked [{', '.join(b)}]"]
    if protocol == "classic":  # eager: everything revoked at each rebalance, then the new share assigned
        assert events_a[:3] == [f"assigned [{', '.join(everything)}]", f"revoked [{', '.join(everything)}]",
                                f"assigned [{', '.join(a)}]"]
    else:  # incremental: only what moves
        assert events_a[:3] == [f"assigned [{', '.join(everything)}]", f"revoked [{', '.join(b)}]",
                                f"assigned [{', '.join(b)}]"]
    if target.cluster is not None:
        with target.cluster.state.lock:
            assert target.cluster.state.offsets.get(group, topic, 0).offset == 20


def test_seek_and_offsets_for_times(java, target):
    topic = target.create_topic("java-seek", 1, 2)
    r = java.call("seek", bootstrap=target.bootstrap, topic=topic)
    assert r == {"after_seek_5": 5, "position_beginning": 0, "position_end": 10,
                 "for_time_3500": [4, 4000],  # the first record at or after the time
                 "for_time_future": None, "beginning": 0, "end": 10, "paused_poll": 0, "resumed_first": 8}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_commit_sync_and_async(java, target, protocol):
    topic = target.create_topic(f"java-commit-{protocol}", 1, 2)
    r = java.call("commit", bootstrap=target.bootstrap, topic=topic, group=target.name(f"java-commit-{protocol}"),
                  protocol=protocol)
    assert r == {"read": 10, "committed_sync": [4, "four"], "async": "ok", "committed_async": [6, "six"],
                 "resumed_at": 6}
