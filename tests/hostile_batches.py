"""Hostile Produce batches, each named by the rule of Kafka's (ProduceRequest.validateRecords,
UnifiedLog.analyzeAndValidateRecords, LogValidator) it breaks, with the code Kafka answers: one list for
the broker's suite (tests/broker/test_broker_log_validation.py) and the conformance diffs against Apache
Kafka (tests/kafka/scenarios_hostile.py). The batches are built once, at import, so that both brokers of a
diff get the same bytes (timestamps included)."""

from __future__ import annotations

import gzip
import struct
import time
from typing import NamedTuple, Optional

from kcodec.errors import ErrorCode as E
from kcodec.records import BatchBuilder, Compression, TimestampType, crc32c

NOW = int(time.time() * 1000)
TOO_LATE = NOW + 2 * 3600 * 1000  # past message.timestamp.after.max.ms (one hour)

# The topics the cases write to (one partition each) and their configs.
TOPICS: dict[str, dict[str, str]] = {
    "t": {},
    "small": {"max.message.bytes": "200"},
    "recent": {"message.timestamp.before.max.ms": "60000"},
    "lat": {"message.timestamp.type": "LogAppendTime"},
    "compacted": {"cleanup.policy": "compact"},
    "bounded": {"max.decompressed.message.bytes": "1000"},
}


def good(*values: bytes, ts: int = 0, **kw: object) -> bytearray:
    b = BatchBuilder(**kw)  # type: ignore[arg-type]
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


def one(key: Optional[bytes], value: bytes) -> bytes:
    b = BatchBuilder()
    b.append(key, value)
    return b.build()


def legacy(magic: int) -> bytes:
    b = BatchBuilder(magic=magic)
    b.append(None, b"old")
    return b.build()


def header_cut(length: int) -> bytes:
    """A v2 batch whose length says ``length`` (under the 49 of a header), its bytes cut to it."""
    return recrc(put(bytearray(good()[:LOG_OVERHEAD + length]), ">i", 8, length))


def compressed(codec: int, *sizes: int) -> bytes:
    """A batch of records of ``sizes`` value bytes (key ``k``; a record's body is its value size + 8)."""
    b = BatchBuilder(compression=codec)
    for n in sizes:
        b.append(b"k", b"v" * n)
    return b.build()


def record(body: bytes) -> bytes:
    """A record of ``body`` (attributes onwards) behind its length varint."""
    return bytes([len(body) * 2]) + body


def header_key_not_utf8() -> bytes:
    b = BatchBuilder()
    b.append(b"k", b"v", headers=[("hh", b"x")])
    data = bytearray(b.build())
    data[data.index(b"hh")] = 0xFF
    return recrc(data)


LOG_OVERHEAD = 12
OVERLONG = b"\xff\xff\xff\xff\xff\x01"  # a varint of 6 bytes
GARBAGE = b"garbage-garbage-garbage"


class Case(NamedTuple):
    rule: str                   # the rule the batch breaks
    topic: str                  # a key of TOPICS
    records: bytes
    version: int                # the Produce version it is sent with
    code: E                     # what Kafka answers
    record_errors: list[int]    # the batch indexes Kafka names in record_errors
    message: Optional[str] = None   # the start of Kafka's error message (v8+), None: none
    whole: bool = False         # Kafka refuses the whole request: every partition of it gets the code


RECORDS_REJECTED = "One or more records have been rejected"
CASES = [Case(*c) for c in [
    ("crc32c_mismatch", "t", bytes(put(good(), ">B", -2, good()[-2] ^ 0xFF)), 9, E.CORRUPT_MESSAGE, []),
    # a first batch Kafka cannot read when it looks for transactional batches fails the whole request
    ("batch_length_under_14", "t", bytes(put(good(), ">i", 8, 10)), 9, E.CORRUPT_MESSAGE, [],
     "Record size 10 is less than the minimum record overhead (14)", True),
    ("magic_outside_0_to_2", "t", bytes(put(good(), ">b", 16, 3)), 9, E.CORRUPT_MESSAGE, [],
     "Invalid magic found in record: 3", True),
    ("second_batch_length_under_14", "t", bytes(good()) + bytes(put(good(), ">i", 8, 10))[:13], 9,
     E.CORRUPT_MESSAGE, []),
    ("second_batch_magic_3", "t", bytes(good()) + bytes(put(good(), ">b", 16, 3)), 9, E.CORRUPT_MESSAGE, []),
    # ReplicaManager reads every batch's producer id: an IndexOutOfBoundsException for the whole request
    ("v2_header_cut_before_the_producer_id", "t", header_cut(28), 9, E.UNKNOWN_SERVER_ERROR, [], None, True),
    ("v2_header_cut_after_the_producer_id", "t", header_cut(39), 9, E.CORRUPT_MESSAGE, []),
    ("v2_header_without_records", "t", header_cut(49), 9, E.INVALID_RECORD, []),
    ("magic_1_then_a_length_under_14", "t", legacy(1) + bytes(put(good(), ">i", 8, 10))[:13], 9,
     E.INVALID_RECORD, []),
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
    # ByteUtils.readVarint's IllegalArgumentException escapes where a plain record's length is read
    ("record_length_varint_over_5_bytes", "t", with_records(first_record_replaced(OVERLONG), 1), 9,
     E.UNKNOWN_SERVER_ERROR, []),
    ("record_length_varint_past_the_end", "t", with_records(b"\xff", 1), 9, E.INVALID_RECORD, []),
    ("record_length_negative", "t", with_records(first_record_replaced(b"\x01"), 1), 9, E.INVALID_RECORD, []),
    ("key_length_varint_over_5_bytes", "t", with_records(record(b"\x00\x00\x00" + OVERLONG + b"\x02v\x00"), 1), 9,
     E.INVALID_RECORD, []),
    ("timestamp_varlong_over_10_bytes", "t", with_records(record(b"\x00" + b"\xff" * 10 + b"\x01\x00\x02k\x02v\x00"),
                                                           1), 9, E.INVALID_RECORD, []),
    ("gzip_record_length_varint_over_5_bytes", "t",
     with_records(gzip.compress(OVERLONG + records_of(bytes(good(b"v")))[1:]), 1, 1), 9, E.INVALID_RECORD, []),
    ("record_garbage", "t", with_records(b"\x05garbage-garbage", 1), 9, E.INVALID_RECORD, []),
    ("header_count_negative", "t", with_records(records_of(bytes(good(b"v")))[:-1] + b"\x01", 1), 9,
     E.INVALID_RECORD, []),
    ("header_count_over_the_record", "t", with_records(records_of(bytes(good(b"v")))[:-1] + b"\x08", 1), 9,
     E.INVALID_RECORD, []),
    ("compressed_bytes_that_are_not_records", "t", with_records(gzip.compress(b"\x07not-records"), 1, 1), 9,
     E.INVALID_RECORD, []),
    ("compression_bit_on_plain_records", "t", with_records(records_of(bytes(good())), 2, 1), 9,
     E.UNKNOWN_SERVER_ERROR, []),
    ("gzip_bytes_that_do_not_inflate", "t", with_records(GARBAGE, 1, 1), 9, E.UNKNOWN_SERVER_ERROR, []),
    ("snappy_bytes_that_do_not_inflate", "t", with_records(GARBAGE, 1, 2), 9, E.UNKNOWN_SERVER_ERROR, []),
    ("lz4_bytes_that_do_not_inflate", "t", with_records(GARBAGE, 1, 3), 9, E.UNKNOWN_SERVER_ERROR, []),
    ("zstd_bytes_that_do_not_inflate", "t", with_records(GARBAGE, 1, 4), 9, E.UNKNOWN_SERVER_ERROR, []),
    ("gzip_cut_short", "t", with_records(gzip.compress(records_of(bytes(good(b"v"))))[:-8], 1, 1), 9,
     E.UNKNOWN_SERVER_ERROR, []),
    # before v7 ProduceRequest.validateRecords asks for the codec: its IllegalArgumentException escapes KafkaApis
    ("compression_codec_6_before_produce_v7", "t", recrc(put(good(), ">h", 21, 6)), 6, E.UNKNOWN_SERVER_ERROR, [],
     None, True),
    # max.decompressed.message.bytes bounds each compressed record's body (value size + 8 here)
    ("record_body_over_max_decompressed_message_bytes", "bounded", compressed(Compression.GZIP, 993), 9,
     E.INVALID_RECORD, []),
    ("lz4_record_body_over_max_decompressed_message_bytes", "bounded", compressed(Compression.LZ4, 10, 993), 9,
     E.INVALID_RECORD, []),
    ("create_time_past_after_max_ms", "t", bytes(good(b"a", b"b", ts=TOO_LATE)), 9, E.INVALID_TIMESTAMP, [0, 1],
     RECORDS_REJECTED),
    ("create_time_past_before_max_ms", "recent", bytes(good(b"a", ts=NOW - 3600 * 1000)), 9, E.INVALID_TIMESTAMP,
     [0], RECORDS_REJECTED),
    ("log_append_time_batch_on_a_log_append_time_topic", "lat",
     bytes(good(b"a", timestamp_type=TimestampType.LOG_APPEND_TIME)), 9, E.INVALID_TIMESTAMP, [0], RECORDS_REJECTED),
    ("null_key_on_a_compacted_topic", "compacted", one(None, b"v"), 9, E.INVALID_RECORD, [0], RECORDS_REJECTED),
]]

# Batches Kafka takes that a stricter reading would refuse: (what they hold, topic, records, Produce version).
ACCEPTED = [
    ("header_key_not_utf8", "t", header_key_not_utf8(), 9),
    ("delete_horizon_bit_set", "t", recrc(put(good(), ">h", 21, 0x40)), 9),
    ("plain_record_body_over_max_decompressed_message_bytes", "bounded", one(b"k", b"v" * 5000), 9),
    ("compressed_records_together_over_max_decompressed_message_bytes", "bounded",
     compressed(Compression.GZIP, 400, 400, 400), 9),
    ("record_body_at_max_decompressed_message_bytes", "bounded", compressed(Compression.ZSTD, 992), 9),
]


def inflating_past(limit: int) -> bytes:
    """A gzip batch of one record whose value is ``limit`` zero bytes (made when asked: it takes a moment):
    Kafka streams records and takes it; kcodec broker inflates a batch within its max_uncompressed."""
    b = BatchBuilder(compression=Compression.GZIP)
    b.append(b"k", bytes(limit))
    return b.build()
