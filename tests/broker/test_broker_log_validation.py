"""Hostile Produce batches, each named by the rule of Kafka's (ProduceRequest.validateRecords,
UnifiedLog.analyzeAndValidateRecords, LogValidator) it breaks (tests/hostile_batches.py, which the conformance
diffs against Apache Kafka send too): refused with Kafka's code, message and record errors, and nothing of
the partition's request appended; a batch Kafka cannot read at all refuses the whole request."""

from __future__ import annotations

import pytest
from broker_wire import Wire
from hostile_batches import ACCEPTED, CASES, NOW, TOPICS, good, inflating_past, one

from kcodec_broker import Cluster
from kcodec_broker.log.validator import Rules, validate
from kcodec.errors import ErrorCode as E
from kcodec.messages import FetchRequest, ProduceRequest
from kcodec.records import BatchBuilder, Compression, iter_batches


@pytest.fixture(scope="module")
def cluster():
    with Cluster(system_topic_partitions=1) as c:
        for name, configs in TOPICS.items():
            c.create_topic(name, 2, configs=configs)
        yield c


def _produce(topic: str, *records: bytes) -> ProduceRequest:
    """``records[i]`` for partition i."""
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=i, records=r)
                                    for i, r in enumerate(records)])])


def _end(w: Wire, topic: str, partition: int = 0) -> int:
    return w.call(FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, session_epoch=-1, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=partition, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)])]),
        12).responses[0].partitions[0].high_watermark


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_a_hostile_batch_is_refused_with_kafkas_code(cluster, case):
    """The hostile batch for partition 0 beside a good one for partition 1, as the conformance diffs send them."""
    with Wire(cluster.addresses[0]) as w:
        before = [_end(w, case.topic, q) for q in (0, 1)]
        p, other = w.call(_produce(case.topic, case.records, one(b"k", b"ok")), case.version) \
            .responses[0].partition_responses
        assert p.error_code == case.code, (case.rule, p)
        assert [e.batch_index for e in p.record_errors] == case.record_errors
        assert all(e.batch_index_error_message for e in p.record_errors)
        if case.message is None:
            assert p.error_message is None
        else:
            assert p.error_message.startswith(case.message)
        assert _end(w, case.topic) == before[0]  # nothing appended
        if case.whole:  # the good batch beside it was refused alike
            assert (other.error_code, other.error_message) == (p.error_code, p.error_message)
            assert _end(w, case.topic, 1) == before[1]
        else:
            assert other.error_code == 0 and _end(w, case.topic, 1) == before[1] + 1
        assert w.call(_produce(case.topic, one(b"k", b"ok")), case.version).responses[0] \
            .partition_responses[0].error_code == 0  # and the partition still takes good batches


def test_the_batches_kafka_accepts_still_go_in(cluster):
    with Wire(cluster.addresses[0]) as w:
        for records, version in [(bytes(good(compression=Compression.ZSTD)), 7),
                                 (bytes(good(compression=Compression.GZIP)), 9),
                                 (bytes(good(ts=NOW - 30 * 24 * 3600 * 1000)), 9),  # before.max.ms: unbounded
                                 (bytes(good(producer_id=5, producer_epoch=0, base_sequence=0)), 9),
                                 (one(None, b"v"), 9)]:
            assert w.call(_produce("t", records), version).responses[0].partition_responses[0].error_code == 0
        for what, topic, records, version in ACCEPTED:
            before = _end(w, topic)
            assert w.call(_produce(topic, records), version).responses[0].partition_responses[0].error_code == 0, what
            assert _end(w, topic) > before
        start = _end(w, "t")
        cut = bytes(good(b"whole")) + bytes(good(b"cut"))[:30]  # a cut-off batch after the one: trimmed
        assert w.call(_produce("t", cut), 9).responses[0].partition_responses[0].error_code == 0
        assert _end(w, "t") == start + 1


def test_decompression_is_bounded():
    """kcodec's own bound on a batch's inflated records (Kafka streams them: a reviewed difference)."""
    rules = Rules(1 << 20, False, 2 ** 63 - 1, 3_600_000, False, max_uncompressed=1000)
    big = inflating_past(5000)
    refused, _ = validate(big, 9, rules, "t-0", NOW)
    assert refused is not None and refused.code == E.INVALID_RECORD
    refused, batch = validate(big, 9, rules._replace(max_uncompressed=1 << 20), "t-0", NOW)
    assert refused is None and [r.value for r in iter_batches(big) for r in r] == [bytes(5000)]


def _stamped(*timestamps: int) -> bytes:
    b = BatchBuilder()
    for ts in timestamps:
        b.append(b"k", b"v", timestamp=ts)
    return b.build()


def test_every_record_of_a_batch_is_held_to_the_timestamp_bounds():
    """A batch that passes is judged from its records' timestamp range; one record out of it, anywhere in
    the batch, is named as Kafka names it, and a record without a timestamp (-1) is exempt."""
    rules = Rules(1 << 20, False, 60_000, 3_600_000, False)
    assert validate(_stamped(NOW - 60_000, NOW, NOW + 3_600_000), 9, rules, "t-0", NOW)[0] is None  # the bounds
    assert validate(_stamped(NOW, -1, NOW), 9, rules, "t-0", NOW)[0] is None
    for stamps, bad in [((NOW, NOW - 60_001, NOW), [1]), ((NOW, NOW + 3_600_001, NOW, NOW - 70_000), [1, 3]),
                        ((NOW, -2, NOW), [1])]:
        refused, _ = validate(_stamped(*stamps), 9, rules, "t-0", NOW)
        assert refused is not None and refused.code == E.INVALID_TIMESTAMP, stamps
        assert [i for i, _ in refused.record_errors] == bad
    assert validate(_stamped(NOW, NOW - 1000), 9, rules._replace(log_append_time=True), "t-0", NOW)[0] is None
    refused, _ = validate(_stamped(NOW, NOW), 9, rules._replace(compacted=True), "t-0", NOW)
    assert refused is None
