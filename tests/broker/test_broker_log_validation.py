"""Hostile Produce batches, each named by the rule of Kafka's (ProduceRequest.validateRecords,
UnifiedLog.analyzeAndValidateRecords, LogValidator) it breaks: refused with Kafka's code, the record
errors where Kafka gives them, and nothing of the partition's request appended (log/validator.py)."""

from __future__ import annotations

import gzip
import struct
import time

import pytest
from broker_wire import Wire

from kcodec.broker import Cluster
from kcodec.broker.log.validator import Rules, validate
from kcodec.errors import ErrorCode as E
from kcodec.messages import FetchRequest, ProduceRequest
from kcodec.records import BatchBuilder, Compression, TimestampType, crc32c, iter_batches

NOW = int(time.time() * 1000)


def good(*values: bytes, ts: int = 0, **kw) -> bytearray:
    b = BatchBuilder(**kw)
    for v in values or (b"a", b"b"):
        b.append(b"k", v, timestamp=ts or int(time.time() * 1000))
    return bytearray(b.build())


def recrc(buf: bytearray) -> bytes:
    """The batch with its CRC32C made right again (what a hostile client does)."""
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def put(buf: bytearray, fmt: str, at: int, value: int) -> bytearray:
    struct.pack_into(fmt, buf, at, value)
    return buf


def with_records(records: bytes, count: int, attributes: int = 0) -> bytes:
    """A v2 batch around ``records`` (the bytes after the record count), header fields consistent."""
    head = good(b"x")
    body = bytearray(head[:61]) + records
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">h", body, 21, attributes)
    struct.pack_into(">i", body, 23, count - 1)
    struct.pack_into(">i", body, 57, count)
    return recrc(body)


def records_of(batch: bytes) -> bytes:
    return batch[61:]


def first_record_replaced(new_length: bytes) -> bytes:
    """One good record's bytes with its length varint replaced."""
    rec = records_of(bytes(good(b"v")))
    return new_length + rec[1:]  # a one-byte length varint in a small record


def one(key, value: bytes) -> bytes:
    b = BatchBuilder()
    b.append(key, value)
    return b.build()


def legacy(magic: int) -> bytes:
    b = BatchBuilder(magic=magic)
    b.append(None, b"old")
    return b.build()


TOO_LATE = NOW + 2 * 3600 * 1000  # past message.timestamp.after.max.ms (one hour)

# (rule broken, topic, records, Produce version, code, record errors)
CASES = [
    ("crc32c_mismatch", "t", bytes(put(good(), ">B", -2, good()[-2] ^ 0xFF)), 9, E.CORRUPT_MESSAGE, []),
    ("batch_length_under_14", "t", bytes(put(good(), ">i", 8, 10)), 9, E.CORRUPT_MESSAGE, []),
    ("magic_outside_0_to_2", "t", bytes(put(good(), ">b", 16, 3)), 9, E.CORRUPT_MESSAGE, []),
    ("v2_header_cut_short", "t", recrc(put(bytearray(good()[:40]), ">i", 8, 28)), 9, E.CORRUPT_MESSAGE, []),
    ("magic_0_in_produce_v3_and_later", "t", legacy(0), 9, E.INVALID_RECORD, []),
    ("magic_1_in_produce_v3_and_later", "t", legacy(1), 9, E.INVALID_RECORD, []),
    ("no_records", "t", b"", 9, E.INVALID_RECORD, []),
    ("only_a_cut_off_batch", "t", bytes(good())[:-5], 9, E.INVALID_RECORD, []),
    ("more_than_one_batch", "t", bytes(good()) + bytes(good()), 9, E.INVALID_RECORD, []),
    ("zstd_before_produce_v7", "t", bytes(good(compression=Compression.ZSTD)), 6, E.UNSUPPORTED_COMPRESSION_TYPE, []),
    ("compression_codec_5", "t", recrc(put(good(), ">h", 21, 5)), 9, E.UNKNOWN_SERVER_ERROR, []),
    ("base_offset_not_0", "t", bytes(put(good(), ">q", 0, 7)), 9, E.INVALID_RECORD, []),
    ("over_max_message_bytes", "small", bytes(good(b"x" * 300)), 9, E.MESSAGE_TOO_LARGE, []),
    ("last_offset_delta_negative", "t", recrc(put(good(), ">i", 23, -1)), 9, E.INVALID_RECORD, []),
    ("record_count_minus_1", "t", recrc(put(put(good(b"a"), ">i", 57, -1), ">i", 23, 0)), 9, E.INVALID_RECORD, []),
    ("count_disagrees_with_offset_range", "t", recrc(put(good(), ">i", 57, 3)), 9, E.INVALID_RECORD, []),
    ("count_above_the_records_present", "t", with_records(records_of(bytes(good(b"a", b"b"))), 3), 9,
     E.INVALID_RECORD, []),
    ("count_below_the_records_present", "t", with_records(records_of(bytes(good(b"a", b"b", b"c"))), 2), 9,
     E.INVALID_RECORD, []),
    ("control_batch_from_a_client", "t", recrc(put(good(), ">h", 21, 0x20)), 9, E.INVALID_RECORD, []),
    ("producer_id_without_a_sequence", "t", bytes(good(producer_id=5, producer_epoch=0)), 9, E.INVALID_RECORD, []),
    ("record_length_2_pow_31", "t", with_records(first_record_replaced(b"\x80\x80\x80\x80\x10"), 1), 9,
     E.INVALID_RECORD, []),
    ("record_length_varint_over_5_bytes", "t", with_records(first_record_replaced(b"\xff\xff\xff\xff\xff\x01"), 1),
     9, E.INVALID_RECORD, []),
    ("record_garbage", "t", with_records(b"\x05garbage-garbage", 1), 9, E.INVALID_RECORD, []),
    ("header_count_negative", "t", with_records(records_of(bytes(good(b"v")))[:-1] + b"\x01", 1), 9,
     E.INVALID_RECORD, []),
    ("header_count_over_the_record", "t", with_records(records_of(bytes(good(b"v")))[:-1] + b"\x08", 1), 9,
     E.INVALID_RECORD, []),
    ("compressed_bytes_that_are_not_records", "t", with_records(gzip.compress(b"\x07not-records"), 1, 1), 9,
     E.INVALID_RECORD, []),
    ("compression_bit_on_plain_records", "t", with_records(records_of(bytes(good())), 2, 1), 9,
     E.UNKNOWN_SERVER_ERROR, []),
    ("create_time_past_after_max_ms", "t", bytes(good(b"a", b"b", ts=TOO_LATE)), 9, E.INVALID_TIMESTAMP, [0, 1]),
    ("create_time_past_before_max_ms", "recent", bytes(good(b"a", ts=NOW - 3600 * 1000)), 9, E.INVALID_TIMESTAMP,
     [0]),
    ("log_append_time_batch_on_a_log_append_time_topic", "lat",
     bytes(good(b"a", timestamp_type=TimestampType.LOG_APPEND_TIME)), 9, E.INVALID_TIMESTAMP, [0]),
    ("null_key_on_a_compacted_topic", "compacted", one(None, b"v"), 9,
     E.INVALID_RECORD, [0]),
]


@pytest.fixture(scope="module")
def cluster():
    with Cluster(system_topic_partitions=1) as c:
        c.create_topic("t", 1)
        c.create_topic("small", 1, configs={"max.message.bytes": "200"})
        c.create_topic("recent", 1, configs={"message.timestamp.before.max.ms": "60000"})
        c.create_topic("lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
        c.create_topic("compacted", 1, configs={"cleanup.policy": "compact"})
        yield c


def _produce(topic: str, records: bytes) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)])])


def _end(w: Wire, topic: str) -> int:
    return w.call(FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, session_epoch=-1, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)])]),
        12).responses[0].partitions[0].high_watermark


@pytest.mark.parametrize("rule,topic,records,version,code,record_errors", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_batch_is_refused_with_kafkas_code(cluster, rule, topic, records, version, code, record_errors):
    with Wire(cluster.addresses[0]) as w:
        before = _end(w, topic)
        p = w.call(_produce(topic, records), version).responses[0].partition_responses[0]
        assert p.error_code == code, (rule, p)
        assert [e.batch_index for e in p.record_errors] == record_errors
        if record_errors:  # Kafka's RecordValidationException: a message, and one per record
            assert p.error_message.startswith("One or more records have been rejected")
            assert all(e.batch_index_error_message for e in p.record_errors)
        else:
            assert p.error_message is None
        assert _end(w, topic) == before  # nothing appended
        assert w.call(_produce(topic, one(b"k", b"ok")), version).responses[0] \
            .partition_responses[0].error_code == 0  # and the partition still takes good batches


def test_the_batches_kafka_accepts_still_go_in(cluster):
    with Wire(cluster.addresses[0]) as w:
        for records, version in [(bytes(good(compression=Compression.ZSTD)), 7),
                                 (bytes(good(compression=Compression.GZIP)), 9),
                                 (bytes(good(ts=NOW - 30 * 24 * 3600 * 1000)), 9),  # before.max.ms: unbounded
                                 (bytes(good(producer_id=5, producer_epoch=0, base_sequence=0)), 9),
                                 (one(None, b"v"), 9)]:
            assert w.call(_produce("t", records), version).responses[0].partition_responses[0].error_code == 0
        start = _end(w, "t")
        cut = bytes(good(b"whole")) + bytes(good(b"cut"))[:30]  # a cut-off batch after the one: trimmed
        assert w.call(_produce("t", cut), 9).responses[0].partition_responses[0].error_code == 0
        assert _end(w, "t") == start + 1


def test_decompression_is_bounded():
    rules = Rules(1 << 20, False, 2 ** 63 - 1, 3_600_000, False, max_uncompressed=1000)
    big = bytes(good(b"z" * 5000, compression=Compression.GZIP))
    refused, _ = validate(big, 9, rules, "t-0", NOW)
    assert refused is not None and refused.code == E.INVALID_RECORD
    refused, batch = validate(big, 9, rules._replace(max_uncompressed=1 << 20), "t-0", NOW)
    assert refused is None and [r.value for r in iter_batches(big) for r in r] == [b"z" * 5000]
