"""Kafka's checks of a Produce v3+ request's records before anything is appended, in Kafka's order (each
checked against Apache Kafka 4.4 by tests/kafka/scenarios_hostile.py):

1. ``scan_request``: ``RequestUtils.hasTransactionalRecords`` reads each partition's first batch; a length or
   magic no batch has refuses the whole request (CORRUPT_MESSAGE for every partition, with Kafka's message).
2. ``check_request``, per partition: ``ProduceRequest.validateRecords`` (the request's version).
3. ``producer_id_cut_off``: ReplicaManager reads the producer id of every batch it is given; one that ends
   before it refuses the whole request (UNKNOWN_SERVER_ERROR for every partition).
4. ``validate_append``, per partition: ``UnifiedLog.analyzeAndValidateRecords`` (the batch) and
   ``LogValidator`` (the batch header, then every record, decompressed within a bound).

Each refusal is the code Kafka answers; the message is Kafka's where Kafka sends one (record errors: the
records refused, with ``record_errors``), else None, as Kafka's (the reason is logged at INFO).

The codes (see docs/broker-data.md):
- CORRUPT_MESSAGE: a batch length under 14 bytes or a magic outside 0..2 (Kafka's batch iterator), a v2
  batch under its 61-byte header, a CRC32C that does not match.
- INVALID_RECORD: no whole batch, magic 0/1 (v3+ carries v2 batches only), more than one batch, a base
  offset other than 0, a last offset delta or record count that disagree or are not positive, a control
  batch, a producer id without a base sequence, records that do not parse (lengths, varints, headers, a
  count that disagrees with the records present, bytes left after them, compressed bytes that are not
  records), a compressed record's body over max.decompressed.message.bytes, more than ``max_uncompressed``
  bytes once inflated (kcodec's bound: Kafka streams records and takes such a batch, a reviewed
  difference), a record without a key on a compacted topic (a record error).
- UNSUPPORTED_COMPRESSION_TYPE: zstd before Produce v7.
- MESSAGE_TOO_LARGE: a batch over the topic's max.message.bytes.
- INVALID_TIMESTAMP: a CreateTime record outside message.timestamp.before.max.ms / after.max.ms of now, or
  a batch that says LogAppendTime where it may not (record errors).
- UNKNOWN_SERVER_ERROR: compression codec 5-7 (before Produce v7 for the whole request), compressed bytes
  that do not inflate, a plain record's length varint over 5 bytes (Kafka's IllegalArgumentException and
  KafkaException escape its validator as they do).
"""

from __future__ import annotations

import logging
import struct
from typing import Any, Iterable, NamedTuple, Optional

from kcodec.errors import ErrorCode
from kcodec.records import DEFAULT_MAX_UNCOMPRESSED, RecordsError, crc32c, iter_batches, record_summary

from .transactions import TRANSACTIONAL_BIT

log = logging.getLogger("kcodec_broker")

_BASE_OFFSET = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_CRC = struct.Struct(">I")
LOG_OVERHEAD = 12           # base offset and length
MIN_BATCH_LENGTH = 14       # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the least a length may say
V2_OVERHEAD = 61            # a v2 batch header, up to and including its record count
PRODUCER_ID_END = 51        # the end of a v2 batch's producer id
MAX_RECORD_BODY = 2_147_483_639  # the default of max.decompressed.message.bytes
ZSTD = 4
NO_TIMESTAMP = -1
_I64 = 1 << 64


class Refusal(NamedTuple):
    code: ErrorCode
    message: Optional[str] = None
    record_errors: tuple[tuple[int, str], ...] = ()  # (batch index, message) per refused record
    whole: bool = False            # the whole request is refused (every partition answered with this code)


class Rules(NamedTuple):
    """The topic's settings the records are checked against."""
    max_message_bytes: int
    log_append_time: bool          # message.timestamp.type=LogAppendTime
    before_max_ms: int             # message.timestamp.before.max.ms
    after_max_ms: int              # message.timestamp.after.max.ms
    compacted: bool                # cleanup.policy has compact
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED   # kcodec's bound on a batch's inflated records
    max_record_body: int = MAX_RECORD_BODY             # max.decompressed.message.bytes


def _refuse(code: ErrorCode, reason: str) -> Refusal:
    """A refusal Kafka answers without a message (its exception is not a RecordValidationException)."""
    log.info("produce refused with %s: %s", code.name, reason)
    return Refusal(code)


def _next_batch(records: Any, pos: int) -> tuple[Optional[Refusal], Optional[int]]:
    """Kafka's ByteBufferLogInputStream.nextBatch at ``pos``: (None, the batch's size), (None, None) when no
    whole batch is left (a cut-off one is trimmed), or CORRUPT_MESSAGE with Kafka's message for a length or
    magic no batch can have."""
    n = len(records) - pos
    if n < LOG_OVERHEAD:
        return None, None
    (length,) = _LENGTH.unpack_from(records, pos + 8)
    if length < MIN_BATCH_LENGTH:
        return Refusal(ErrorCode.CORRUPT_MESSAGE, f"Record size {length} is less than the minimum record overhead "
                                                  f"({MIN_BATCH_LENGTH})"), None
    if n < 17:
        return None, None
    magic = struct.unpack_from(">b", records, pos + 16)[0]
    if not 0 <= magic <= 2:
        return Refusal(ErrorCode.CORRUPT_MESSAGE, f"Invalid magic found in record: {magic}"), None
    return None, (LOG_OVERHEAD + length if n >= LOG_OVERHEAD + length else None)


def scan_request(partition_records: Iterable[Optional[Any]]) -> tuple[Optional[Refusal], bool]:
    """Kafka's RequestUtils.hasTransactionalRecords, the first thing a Produce meets: each partition's first
    batch in request order, until one is transactional. (a refusal of the whole request: a length or magic no
    batch has, every partition answered with its code and message; whether a batch is transactional)."""
    for records in partition_records:
        if not records:
            continue
        refused, size = _next_batch(records, 0)
        if refused is not None:
            log.info("produce request refused with %s: %s", refused.code.name, refused.message)
            return refused, False
        if size is not None and records[16] == 2 and records[22] & TRANSACTIONAL_BIT:
            return None, True
    return None, False


def check_request(records: Optional[Any], version: int) -> tuple[Optional[Refusal], int]:
    """Kafka's ProduceRequest.validateRecords for one partition: (a refusal, 0) or (None, the size of its
    one whole batch, which starts at byte 0; a cut-off batch after it is trimmed)."""
    if not records:
        return _refuse(ErrorCode.INVALID_RECORD, "no records"), 0
    refused, size = _next_batch(records, 0)
    if refused is not None:
        return _refuse(refused.code, refused.message or ""), 0
    if size is None:
        return _refuse(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} must have at least "
                                                 "one record batch per partition"), 0
    if records[16] != 2:
        return _refuse(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                 "contain record batches with magic version 2"), 0
    codec = records[22] & 0x07
    if version < 7 and codec > ZSTD:  # CompressionType.forId's IllegalArgumentException escapes KafkaApis
        return _refuse(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown compression type id: {codec}")._replace(whole=True), 0
    if version < 7 and codec == ZSTD:
        return _refuse(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce requests with version {version} are not "
                                                               "allowed to use ZStandard compression"), 0
    refused, more = _next_batch(records, size)
    if refused is not None:  # a second batch Kafka cannot read: its code, without a message here
        return _refuse(refused.code, refused.message or ""), 0
    if more is not None:
        return _refuse(ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                 "contain exactly one record batch per partition"), 0
    return None, size


# What Kafka's ReplicaManager.appendToLocalLog answers without the partition's log start offset
NO_LOG_START = (ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE)


def producer_id_cut_off(size: int) -> bool:
    """Whether a v2 batch of ``size`` bytes ends before its producer id (bytes 43..51), which Kafka's
    ReplicaManager reads from every batch it is given: its IndexOutOfBoundsException fails the whole
    request (UNKNOWN_SERVER_ERROR for every partition, nothing appended)."""
    return size < PRODUCER_ID_END


def validate(records: Optional[Any], version: int, rules: Rules, topic_partition: str,
             now_ms: int) -> tuple[Optional[Refusal], Any]:
    """One partition's records through every check (a request of that partition alone): (refusal, None) or
    (None, the batch: a kcodec.records.RecordBatch)."""
    refused, _ = scan_request([records])
    if refused is None:
        refused, size = check_request(records, version)
    if refused is not None or records is None:
        return refused, None
    if producer_id_cut_off(size):
        return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR), None
    return validate_append(memoryview(records)[:size], rules, topic_partition, now_ms)


def validate_append(view: memoryview, rules: Rules, topic_partition: str,
                    now_ms: int) -> tuple[Optional[Refusal], Any]:
    """Kafka's UnifiedLog.analyzeAndValidateRecords and LogValidator for the one batch in ``view`` (which
    check_request passed): (refusal, None) or (None, the batch)."""
    size = len(view)
    base_offset = _BASE_OFFSET.unpack_from(view, 0)[0]
    if base_offset != 0:
        return _refuse(ErrorCode.INVALID_RECORD, f"The baseOffset of the record batch in the append to "
                                                 f"{topic_partition} should be 0, but it is {base_offset}"), None
    if size > rules.max_message_bytes:
        return _refuse(ErrorCode.MESSAGE_TOO_LARGE, f"The record batch size in the append to {topic_partition} is "
                                                    f"{size} bytes which exceeds the maximum configured value of "
                                                    f"{rules.max_message_bytes}."), None
    if size < V2_OVERHEAD or _CRC.unpack_from(view, 17)[0] != crc32c(view[21:]):
        return _refuse(ErrorCode.CORRUPT_MESSAGE, f"Record is corrupt in topic partition {topic_partition}"), None
    codec = view[22] & 0x07
    if codec > ZSTD:
        return _refuse(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown compression type id: {codec}"), None
    return _validate_batch(view, rules, topic_partition, now_ms)


def _validate_batch(view: memoryview, rules: Rules, topic_partition: str,
                    now_ms: int) -> tuple[Optional[Refusal], Any]:
    """LogValidator.validateBatch, then every record (validateRecord) of the one v2 batch in ``view``."""
    last_offset_delta, = struct.unpack_from(">i", view, 23)
    count, = struct.unpack_from(">i", view, 57)
    if last_offset_delta + 1 <= 0:
        return _refuse(ErrorCode.INVALID_RECORD, f"Batch has an invalid offset range: [0, {last_offset_delta}] in "
                                                 f"topic partition {topic_partition}"), None
    if count <= 0:
        return _refuse(ErrorCode.INVALID_RECORD, f"Invalid reported count for record batch: {count} in topic "
                                                 f"partition {topic_partition}"), None
    if last_offset_delta + 1 != count:
        return _refuse(ErrorCode.INVALID_RECORD, f"Inconsistent batch offset range [0, {last_offset_delta}] and "
                                                 f"count of records {count} in topic partition {topic_partition}"), None
    try:
        batch = next(iter_batches(view, verify_crc=False, zero_copy=True, max_uncompressed=rules.max_uncompressed))
    except RecordsError as e:  # a record count the records cannot hold
        return _refuse(ErrorCode.INVALID_RECORD, str(e)), None
    if batch.is_control:
        return _refuse(ErrorCode.INVALID_RECORD, f"Clients are not allowed to write control records in topic "
                                                 f"partition {topic_partition}"), None
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        return _refuse(ErrorCode.INVALID_RECORD, f"Invalid sequence number {batch.base_sequence} in record batch "
                                                 f"with producerId {batch.producer_id} in topic partition "
                                                 f"{topic_partition}"), None
    try:
        batch.payload()
    except RecordsError as e:
        over = "over the limit" in str(e)
        return _refuse(ErrorCode.INVALID_RECORD if over else ErrorCode.UNKNOWN_SERVER_ERROR, str(e)), None
    compressed = bool(batch.attributes & 0x07)
    if _records_pass(batch, rules, now_ms) and not (compressed and _body_over(batch.payload(), rules.max_record_body)):
        return None, batch
    try:
        records = batch.records()
    except RecordsError as e:  # Kafka's DefaultRecord.readFrom and the batch's record iterator
        if not compressed and e.path.endswith(".length") and "longer than" in e.reason:
            # a plain record's length is read by ByteUtils.readVarint outside readFrom's catch: its
            # IllegalArgumentException escapes the validator
            return _refuse(ErrorCode.UNKNOWN_SERVER_ERROR, str(e)), None
        return _refuse(ErrorCode.INVALID_RECORD, str(e)), None
    if compressed and _body_over(batch.payload(), rules.max_record_body):
        return _refuse(ErrorCode.INVALID_RECORD, f"a record's body is over max.decompressed.message.bytes "
                                                 f"({rules.max_record_body})"), None
    errors = _record_errors(batch, records, rules, topic_partition, now_ms)
    return (_record_refusal(errors) if errors else None), batch


def _records_pass(batch: Any, rules: Rules, now_ms: int) -> bool:
    """Whether every record of ``batch`` reads and passes validateKey and validateTimestamp, judged from one walk
    without an object per record (``record_summary``: its timestamp range holds every record's); False when a
    record may fail, which the record-by-record checks then decide (and name)."""
    if rules.compacted or batch.attributes & 0x08:  # a key per record to see, or LogAppendTime records refused
        return False
    try:
        summary = record_summary(batch)
    except RecordsError:
        return False
    if rules.log_append_time:
        return True
    lo, hi = summary.min_timestamp, summary.max_timestamp
    # no NO_TIMESTAMP (exempt) nor negative record, no 64-bit wrap: the range's ends decide for every record
    return (lo is not None and hi is not None and 0 <= lo and hi < 1 << 62
            and now_ms - lo <= rules.before_max_ms and hi - now_ms <= rules.after_max_ms)


def _body_over(payload: Any, limit: int) -> bool:
    """Whether a record's body (what its length varint says) is over ``limit``: Kafka reads each record of a
    compressed batch into a buffer of that size once it has checked it against max.decompressed.message.bytes
    (DefaultRecord.readFrom of a stream). The records are known whole: ``records()`` read them."""
    if len(payload) <= limit:
        return False
    pos, end = 0, len(payload)
    while pos < end:
        value = shift = 0
        while True:
            b = payload[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        value &= 0xFFFFFFFF  # a varint's bits past 32 are dropped, as Kafka's (and kcodec's) readers drop them
        length = (value >> 1) ^ -(value & 1)
        if length > limit:
            return True
        pos += length
    return False


def _java_long(v: int) -> int:
    """``v`` as Java's long arithmetic leaves it (wrapped to 64 bits)."""
    v &= _I64 - 1
    return v - _I64 if v >= 1 << 63 else v


def _record_errors(batch: Any, records: list, rules: Rules, topic_partition: str,
                   now_ms: int) -> list[tuple[int, str, ErrorCode]]:
    """LogValidator.validateKey and validateTimestamp for each record: (batch index, message, code)."""
    out = []
    append_time_batch = bool(batch.attributes & 0x08)
    for index, r in enumerate(records):
        if rules.compacted and r.key is None:
            out.append((index, f"Compacted topic cannot accept message without key in topic partition "
                               f"{topic_partition}", ErrorCode.INVALID_RECORD))
        elif not rules.log_append_time and r.timestamp != NO_TIMESTAMP:
            diff = _java_long(now_ms - r.timestamp)
            if diff > rules.before_max_ms or _java_long(-diff) > rules.after_max_ms:
                out.append((index, f"Timestamp {r.timestamp} of message with offset {r.offset} is out of range. "
                                   f"The timestamp should be within [{_java_long(now_ms - rules.before_max_ms)}, "
                                   f"{_java_long(now_ms + rules.after_max_ms)}]", ErrorCode.INVALID_TIMESTAMP))
        elif append_time_batch:
            out.append((index, f"Invalid timestamp type in message {_java_record(r)}. Producer should not set "
                               "timestamp type to LogAppendTime.", ErrorCode.INVALID_TIMESTAMP))
    return out


def _java_record(r: Any) -> str:
    """Kafka's DefaultRecord.toString."""
    key, value = len(r.key) if r.key is not None else 0, len(r.value) if r.value is not None else 0
    return f"DefaultRecord(offset={r.offset}, timestamp={r.timestamp}, key={key} bytes, value={value} bytes)"


def _record_refusal(errors: list[tuple[int, str, ErrorCode]]) -> Refusal:
    """LogValidator.processRecordErrors: INVALID_TIMESTAMP if any record's is, else INVALID_RECORD."""
    record_errors = tuple((index, message) for index, message, _ in errors)
    if any(code == ErrorCode.INVALID_TIMESTAMP for _, _, code in errors):
        return Refusal(ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp",
                       record_errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in record_errors[:3])
    return Refusal(ErrorCode.INVALID_RECORD, f"One or more records have been rejected due to {len(errors)} record "
                                             f"errors in total, and only showing the first three errors at most: "
                                             f"[{shown}]", record_errors)
