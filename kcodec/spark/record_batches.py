"""What the data carried: one row per record batch of every Produce request and Fetch response (what
Spark's workers run; no Spark import here).

Each Produce request (its records as sent, whether or not it was answered) and each answered Fetch
response is decoded with kcodec (``zero_copy``: the records fields stay slices of the frame) and each
partition's records field is walked batch by batch with ``kcodec.records``: the batch header says
offsets, codec, producer and flags; its records are summed with ``record_summary`` (one loop in C, no
column or object per record), which gives the record count, key and value bytes and timestamp range and
checks that the records are what the header claims. A compressed batch is inflated for that: its key and
value bytes, its timestamps and its inflated size are inside; offsets, counts and flags are read from the
header alone. CRCs are checked apart (``crc_valid``) so that a batch with a
bad checksum is still described. A batch that does not decode gets an ``error``; a records field that
cannot be walked further gets one row for the rest (``position`` onwards); a Fetch response cut at its
max bytes ends in a ``partial`` row (not an error: brokers do this). Nothing here raises for bad input.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any, Iterator, Optional

import pyarrow as pa

import kcodec
from kcodec.records import (CONTROL_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, Compression, RecordsError, TimestampType,
                            crc32, crc32c, iter_batches, record_summary)

from .decode import api_name

PRODUCE, FETCH, METADATA = 0, 1, 3
V2_CRC_START, LEGACY_CRC_START, V2_HEADER = 21, 16, 61
LOG_OVERHEAD = 12  # offset and length (v2) / size (magic 0/1) before every batch or message
LEGACY_HEADER = {0: 14, 1: 22}  # crc, magic, attributes, (timestamp,) key and value lengths
NIL_UUID = uuid.UUID(int=0)

BATCHES = pa.schema([
    ("source", pa.string()),
    ("capture", pa.string()),
    ("conn", pa.string()),
    ("exchange", pa.int64()),        # with conn, the key of the exchanges table's row
    ("client_id", pa.string()),
    ("api_name", pa.string()),       # Produce or Fetch
    ("api_version", pa.int16()),
    ("direction", pa.string()),      # "produced" (a Produce request's) or "fetched" (a Fetch response's)
    ("ts_ns", pa.int64()),           # when the request (produced) or the response (fetched) was captured
    ("topic", pa.string()),          # the name; for versions that name topics by id, resolved from Metadata
    ("topic_id", pa.string()),       # versions that name topics by id (Produce v13+, Fetch v13+)
    ("partition", pa.int32()),
    ("batch", pa.int32()),           # index within the partition's records field
    ("position", pa.int64()),        # byte offset of the batch within the records field
    ("magic", pa.int8()),
    ("codec", pa.string()),          # none, gzip, snappy, lz4, zstd
    ("base_offset", pa.int64()),
    ("last_offset", pa.int64()),
    ("record_count", pa.int32()),
    ("compressed_bytes", pa.int64()),   # the batch on the wire (the rest of the field for an error or partial row)
    ("uncompressed_bytes", pa.int64()),  # the batch with its records inflated (= compressed_bytes when uncompressed)
    ("key_bytes", pa.int64()),
    ("value_bytes", pa.int64()),
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()),
    ("base_sequence", pa.int32()),
    ("transactional", pa.bool_()),
    ("control", pa.bool_()),
    ("crc_valid", pa.bool_()),
    ("timestamp_type", pa.string()),
    ("first_timestamp", pa.int64()),  # the records' smallest and largest timestamps (ms)
    ("max_timestamp", pa.int64()),
    ("partial", pa.bool_()),         # a batch cut off at the end of a Fetch response (not an error)
    ("error", pa.string()),
])

TOPIC_IDS = pa.schema([("topic_id", pa.string()), ("topic_name", pa.string())])


def _crc_valid(b: Any, view: memoryview) -> bool:
    end = b.offset + b.size
    if b.magic >= 2:
        return bool(crc32c(view[b.offset + V2_CRC_START:end]) == b.crc)
    return bool(crc32(view[b.offset + LEGACY_CRC_START:end]) == b.crc)


CODECS = tuple(c.name.lower() for c in sorted(Compression, key=int))  # by the attributes' low 3 bits
TIMESTAMP_TYPES = tuple(t.name.lower() for t in sorted(TimestampType, key=int))  # by attribute bit 3


def batch_row(b: Any, view: memoryview) -> dict[str, Any]:
    """The columns of one batch (``kcodec.records.RecordBatch``) of the records field ``view``. (The
    header's flags are read from the attributes here, as ``RecordBatch``'s properties read them: a
    property call and an enum's name a batch were a tenth of this function's cost.)"""
    attributes, magic, size = b.attributes, b.magic, b.size
    codec = attributes & 0x07
    v2 = magic >= 2
    row: dict[str, Any] = {
        "batch": b.index, "position": b.offset, "magic": magic,
        "codec": CODECS[codec] if codec < len(CODECS) else b.compression.name.lower(),
        "base_offset": b.base_offset, "last_offset": b.base_offset + b.last_offset_delta,
        "record_count": b.record_count, "compressed_bytes": size,
        "transactional": v2 and bool(attributes & TRANSACTIONAL_BIT), "control": v2 and bool(attributes & CONTROL_BIT),
        "timestamp_type": TIMESTAMP_TYPES[(attributes & TIMESTAMP_TYPE_BIT) >> 3], "crc_valid": _crc_valid(b, view),
        "partial": False,
    }
    if v2:
        row.update(producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence)
    try:
        compressed = codec != Compression.NONE
        if magic >= 2:  # inflated once here; record_summary reads the same inflated bytes
            row["uncompressed_bytes"] = V2_HEADER + len(b.payload()) if compressed else size
        s = record_summary(b)
        row["key_bytes"], row["value_bytes"] = s.key_bytes, s.value_bytes
        if s.records:
            row["first_timestamp"], row["max_timestamp"] = s.min_timestamp, s.max_timestamp
        if magic < 2:  # the inner messages as they would be uncompressed: each message's overhead, key, value
            row["uncompressed_bytes"] = (size if not compressed else
                                         s.records * (LOG_OVERHEAD + LEGACY_HEADER[magic]) + s.key_bytes + s.value_bytes)
    except RecordsError as e:
        row["error"] = f"RecordsError: {e}"
    except Exception as e:  # a bug of ours must not fail a job: reported on the row
        row["error"] = f"internal {type(e).__name__}: {e}"
    return row


def field_rows(field: Any) -> list[dict[str, Any]]:
    """Rows for the batches of one records field (bytes or a memoryview), a last row for a cut-off
    tail (``partial``) or for the rest of a field that cannot be walked further (``error``)."""
    if field is None:
        return []
    view = memoryview(field)
    rows: list[dict[str, Any]] = []
    end = 0
    try:
        for b in iter_batches(view, verify_crc=False):
            rows.append(batch_row(b, view))
            end = b.offset + b.size
    except RecordsError as e:
        return rows + [{"batch": len(rows), "position": end, "compressed_bytes": len(view) - end,
                        "partial": False, "error": f"RecordsError: {e}"}]
    if end < len(view):
        rows.append({"batch": len(rows), "position": end, "compressed_bytes": len(view) - end, "partial": True})
    return rows


def _topic(t: Any, name_field: str) -> tuple[Optional[str], Optional[str]]:
    name = getattr(t, name_field, None) or None
    tid = getattr(t, "topic_id", None)
    # the name first: a topic named needs no id, and a UUID's comparison is a Python call
    return name, (str(tid) if name is None and tid is not None and tid != NIL_UUID else None)


def message_rows(key: int, msg: Any) -> Iterator[dict[str, Any]]:
    """Rows for every batch of a decoded ProduceRequest (key 0) or FetchResponse (key 1)."""
    if key == PRODUCE:
        parts = ((_topic(t, "name"), p.index, p.records) for t in msg.topic_data for p in t.partition_data)
    else:
        parts = ((_topic(t, "topic"), p.partition_index, p.records) for t in msg.responses for p in t.partitions)
    for (name, tid), partition, records in parts:
        for row in field_rows(records):
            row.update(topic=name, topic_id=tid, partition=partition)
            yield row


def exchange_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The BATCHES rows of one exchange row (``conn``, ``exchange``, ``api_key``, ``api_version``, the
    ``request`` frame and, for a Fetch, the ``response`` frame); one error row when the message does not decode."""
    key, version = int(r["api_key"]), int(r["api_version"])
    base: dict[str, Any] = {"source": r.get("source"), "capture": r.get("capture"), "conn": r.get("conn"),
            "exchange": r.get("exchange"), "client_id": r.get("client_id"), "api_name": api_name(key),
            "api_version": version}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kcodec.TrailingBytesWarning)
            if key == PRODUCE:
                base.update(direction="produced", ts_ns=r.get("request_ts_ns"))
                _, msg = kcodec.decode_request(r["request"], strict=False, zero_copy=True)
            else:
                base.update(direction="fetched", ts_ns=r.get("response_ts_ns"))
                _, msg = kcodec.decode_response(r["response"], FETCH, version, strict=False, zero_copy=True)
        return [dict(base, **row) for row in message_rows(key, msg)]
    except kcodec.KcodecError as e:
        return [dict(base, error=f"{base['direction']}: {type(e).__name__}: {e}")]
    except Exception as e:
        return [dict(base, error=f"{base.get('direction')}: internal {type(e).__name__}: {e}")]


def topic_ids(resp: Any) -> Iterator[tuple[str, str]]:
    """The (topic id, name) pairs a Metadata response states (v10+), so that batches of versions that
    name topics by id get their names."""
    for t in resp.topics:
        if t.name and getattr(t, "topic_id", None) not in (None, NIL_UUID):
            yield str(t.topic_id), t.name
