"""The reference backend of the record layer: v2 records decoded and encoded in plain Python.

It is the oracle the Cython twin (``_crecords.pyx``) is fuzzed against; both expose ``Record``,
``decode_records(...)`` and ``encode_records(...)`` with the same meanings.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ..exceptions import EncodeError
from ._types import LOG_OVERHEAD, V2_HEADER, V2_HEADER_SIZE, RecordsError, now_ms as _now_ms


class Record:
    """One record: absolute offset and timestamp (ms), key, value, headers, attributes."""
    __slots__ = ("offset", "timestamp", "key", "value", "headers", "attributes")

    def __init__(self, offset: int, timestamp: int, key, value, headers: list, attributes: int = 0) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.attributes = attributes

    def __repr__(self) -> str:
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other: object) -> bool:
        if not hasattr(other, "headers"):
            return NotImplemented
        return record_tuple(self) == record_tuple(other)

    __hash__ = None  # type: ignore[assignment]


def record_tuple(r) -> tuple:
    """A record's content as plain values (memoryviews as bytes): what the differential tests compare."""
    def b(v):
        return None if v is None else bytes(v)
    return (r.offset, r.timestamp, b(r.key), b(r.value), [(k, b(v)) for k, v in r.headers], r.attributes)


class BatchHeader:
    """The fields of a batch (the base of kcodec.records.RecordBatch; the Cython twin keeps them in C)."""
    __slots__ = ("magic", "base_offset", "last_offset_delta", "partition_leader_epoch", "crc", "attributes",
                 "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                 "record_count", "size", "offset", "index", "_buf", "_start", "_end", "_zero_copy", "_max",
                 "_payload", "_legacy")
    magic: int
    base_offset: int
    last_offset_delta: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    size: int        # bytes on the wire, offset and length included
    offset: int      # where the batch starts in the buffer it was read from
    index: int       # its position among the batches of that buffer
    _buf: Any
    _start: int
    _end: int
    _zero_copy: bool
    _max: int
    _payload: Any
    _legacy: Optional[list]


scan_v2 = None  # the reference reads every batch header in kcodec.records._reader


class _Fault(Exception):
    """A decoding failure inside the loop: reason, position, field (turned into a RecordsError)."""

    def __init__(self, reason: str, pos: int, field: str) -> None:
        self.reason, self.pos, self.field = reason, pos, field


def _varint(buf, pos: int, end: int, field: str, max_bytes: int = 5) -> tuple[int, int]:
    """A zigzag varint (max_bytes 5) or varlong (10) at pos: (value, next position)."""
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _Fault(f"{field} varint runs past the end", start, field)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:  # bits past 32 (varint) or 64 (varlong) are dropped, as Kafka's readers do
            result &= 0xFFFFFFFF if max_bytes == 5 else 0xFFFFFFFFFFFFFFFF
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if pos - start >= max_bytes:
            raise _Fault(f"{field} varint longer than {max_bytes} bytes", start, field)


def _nullable(buf, pos: int, end: int, field: str) -> tuple[int, int]:
    """A varint length (-1: null) and that many bytes: (their position, their length or -1)."""
    n, pos = _varint(buf, pos, end, field)
    if n < -1 or n > end - pos:
        raise _Fault(f"{field.rpartition('.')[2]} length {n} does not fit the record", pos, field)
    return pos, n


def walk_records(buf, pos: int, end: int, count: int, origin: int, compressed: bool,
                 batch_index: int) -> Iterator[tuple]:
    """The one parser of v2 records in the reference: for each of the ``count`` records in ``buf[pos:end]``
    (every byte used), (attributes, timestamp delta, offset delta, key position, key length, value position,
    value length, [(header key, value position, value length)]); lengths are -1 for null.

    Errors name the position in the caller's buffer: ``origin`` + pos when uncompressed, else the batch's
    offset ``origin`` and the position in the decompressed records."""
    view = memoryview(buf)
    i = 0
    try:
        while i < count:
            start = pos
            length, pos = _varint(buf, pos, end, "length")
            if length < 6 or length > end - pos:
                raise _Fault(f"record length {length} does not fit the {end - pos} bytes left", start, "length")
            rend = pos + length
            attributes = buf[pos]
            ts_delta, pos = _varint(buf, pos + 1, rend, "timestamp_delta", 10)
            off_delta, pos = _varint(buf, pos, rend, "offset_delta")
            kpos, klen = _nullable(buf, pos, rend, "key")
            vpos, vlen = _nullable(buf, kpos + max(klen, 0), rend, "value")
            nh, pos = _varint(buf, vpos + max(vlen, 0), rend, "headers")
            if nh < 0 or nh * 2 > rend - pos:
                raise _Fault(f"header count {nh} does not fit the record", pos, "headers")
            headers = []
            for h in range(nh):
                hk, pos = _varint(buf, pos, rend, f"headers[{h}].key")
                if hk < 0 or hk > rend - pos:
                    raise _Fault(f"header key length {hk} does not fit the record", pos, f"headers[{h}].key")
                # bytes that are not UTF-8 read as U+FFFD, as Java's String (Kafka's brokers and clients) reads them
                hkey = bytes(view[pos:pos + hk]).decode("utf-8", "replace")
                hvpos, hvlen = _nullable(buf, pos + hk, rend, f"headers[{h}].value")
                pos = hvpos + max(hvlen, 0)
                headers.append((hkey, hvpos, hvlen))
            if pos != rend:
                raise _Fault(f"record of {length} bytes has {rend - pos} bytes after its headers", start, "length")
            yield attributes, ts_delta, off_delta, kpos, klen, vpos, vlen, headers
            i += 1
        if pos != end:
            raise _Fault(f"{end - pos} bytes after the last of {count} records", pos, "")
    except _Fault as f:
        raise _records_error(f, i, origin, compressed, batch_index) from None


def decode_records(buf, pos: int, end: int, count: int, base_offset: int, base_timestamp: int,
                   append_time: Optional[int], zero_copy: bool, origin: int, compressed: bool,
                   batch_index: int) -> list:
    """The ``count`` v2 records in ``buf[pos:end]`` (see walk_records). ``append_time``: the batch's max
    timestamp when it is LOG_APPEND_TIME (then every record has it)."""
    view = memoryview(buf)

    def take(p: int, n: int) -> Any:
        if n < 0:
            return None
        return view[p:p + n] if zero_copy else bytes(view[p:p + n])
    out = []
    for attributes, ts_delta, off_delta, kpos, klen, vpos, vlen, hs in walk_records(buf, pos, end, count, origin,
                                                                                    compressed, batch_index):
        ts = append_time if append_time is not None else base_timestamp + ts_delta
        offset = base_offset + off_delta
        if not INT64_MIN <= ts <= INT64_MAX or not INT64_MIN <= offset <= INT64_MAX:
            ts, offset = _wrap64(ts), _wrap64(offset)
        out.append(Record(offset, ts, take(kpos, klen), take(vpos, vlen),
                          [(k, take(p, n)) for k, p, n in hs], attributes))
    return out


def batch_job(batch: Any, row: int, position: int) -> tuple:
    """The fill_columns job of an uncompressed v2 batch read in place."""
    return (batch._buf, batch._start, batch._end, batch.record_count, batch.base_offset, batch.base_timestamp,
            batch.max_timestamp if batch.attributes & 0x08 else None, 0, row, 0, False, batch.index, position,
            batch.attributes)


_COLUMNS = ("offset", "timestamp", "key_offset", "value_offset", "key_length", "value_length", "header_count",
            "batch", "attributes")


def fill_columns(jobs: list, cols: dict) -> None:
    """Write records' columns into ``cols`` (numpy arrays by name). Each job: (buf, pos, end, count,
    base_offset, base_timestamp, append_time, shift, row, origin, compressed, batch_index, batch_position,
    attributes): its records go to rows ``row``.., key and value positions plus ``shift``; or (batch, row,
    batch_position) for an uncompressed v2 batch read in place."""
    if len({len(cols[name]) for name in _COLUMNS}) != 1:  # as the Cython twin, which writes unchecked
        raise ValueError("fill_columns: the columns differ in length")
    for job in jobs:
        if len(job) == 3:
            job = batch_job(*job)
        (buf, pos, end, count, base_offset, base_timestamp, append_time, shift, row, origin, compressed, batch_index,
         batch_position, attributes) = job
        for _, ts_delta, off_delta, kpos, klen, vpos, vlen, hs in walk_records(buf, pos, end, count, origin,
                                                                             compressed, batch_index):
            ts = append_time if append_time is not None else base_timestamp + ts_delta
            offset = base_offset + off_delta
            if not INT64_MIN <= ts <= INT64_MAX or not INT64_MIN <= offset <= INT64_MAX:
                ts, offset = _wrap64(ts), _wrap64(offset)
            cols["offset"][row] = offset
            cols["timestamp"][row] = ts
            cols["key_offset"][row] = kpos + shift if klen >= 0 else -1
            cols["key_length"][row] = klen
            cols["value_offset"][row] = vpos + shift if vlen >= 0 else -1
            cols["value_length"][row] = vlen
            cols["header_count"][row] = len(hs)
            cols["batch"][row] = batch_position
            cols["attributes"][row] = attributes
            row += 1


def iter_records(*args: Any) -> Iterator:
    """An iterator over a batch's records (the reference decodes them all first: errors come at once)."""
    return iter(decode_records(*args))


def iter_batch(batch: Any) -> Iterator:
    """``iter(batch)``: its records."""
    return iter(batch.records())


def _records_error(f: _Fault, index: int, origin: int, compressed: bool, batch_index: int) -> RecordsError:
    path = f"batches[{batch_index}].records[{index}]" + (f".{f.field}" if f.field else "")
    if not f.field:
        path = f"batches[{batch_index}]"
    if compressed:
        return RecordsError(f"{f.reason} (byte {f.pos} of the decompressed records)", origin, path)
    return RecordsError(f.reason, origin + f.pos, path)


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _wrap64(v: int) -> int:
    """v as Java's long arithmetic leaves it (a base plus or minus a delta wraps around)."""
    return ((v - INT64_MIN) & 0xFFFFFFFFFFFFFFFF) + INT64_MIN


def _zigzag(out: bytearray, v: int) -> None:
    v = (v << 1) ^ (v >> 63)
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def encode_records(records: Sequence[tuple], base_timestamp: int) -> bytes:
    """v2 records from (offset_delta, timestamp, key, value, headers) with headers as
    ((str_key_utf8_bytes, value_or_None), ...): the bytes after a batch's record count."""
    out = bytearray()
    body = bytearray()
    for delta, ts, key, value, headers in records:
        body.clear()
        body.append(0)
        ts_delta = ts - base_timestamp
        _zigzag(body, ts_delta if INT64_MIN <= ts_delta <= INT64_MAX else _wrap64(ts_delta))
        _zigzag(body, delta)
        for field in (key, value):
            if field is None:
                body.append(1)  # zigzag(-1)
            else:
                _zigzag(body, len(field))
                body += field
        _zigzag(body, len(headers))
        for hk, hv in headers:
            _zigzag(body, len(hk))
            body += hk
            if hv is None:
                body.append(1)
            else:
                _zigzag(body, len(hv))
                body += hv
        _zigzag(out, len(body))
        out += body
    return bytes(out)


def _as_bytes(v, what: str):
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    raise TypeError(f"{what} must be bytes, bytearray, memoryview or None, not {type(v).__name__}")


def bad_item(item: Any) -> TypeError:
    """An item of ``extend`` that is not ``(key, value[, headers[, timestamp]])``."""
    what = f"a tuple of {len(item)}" if isinstance(item, tuple) else type(item).__name__
    return TypeError(f"a record must be a tuple (key, value[, headers[, timestamp]]), not {what}")


def item_error(e: BaseException, index: int) -> Optional[BaseException]:
    """The error of ``extend``'s item ``index``: the kind ``append`` raised (an EncodeError, or OverflowError,
    TypeError, ValueError), naming the item; None for anything else (raised as it is)."""
    where = f"records[{index}]"
    if isinstance(e, EncodeError):
        return EncodeError(e.reason, f"{where}.{e.path}" if e.path else where)
    for kind in (OverflowError, TypeError, ValueError):
        if isinstance(e, kind):
            return kind(f"{where}: {e}")
    return None


def extend_with(append: Callable[..., Any], records: Iterable[tuple], now: Callable[[], int]) -> int:
    """``extend``'s loop for the reference writers: each item through ``append``; a missing timestamp is
    ``now()``, taken once for the call. Returns the count; the caller rolls back on any error."""
    i = 0
    ts_now = None
    for item in records:
        try:
            n = len(item) if isinstance(item, tuple) else 0
            if not 2 <= n <= 4:
                raise bad_item(item)
            key, value = item[0], item[1]
            headers = item[2] if n > 2 else ()
            ts = item[3] if n > 3 else None
            if ts is None:
                ts = ts_now = now() if ts_now is None else ts_now
            append(key, value, headers, ts)
        except Exception as e:
            err = item_error(e, i)
            if err is None:
                raise
            raise err from None
        i += 1
    return i


class RecordsWriter:
    """The v2 records of a batch being built: ``append`` writes each record as it comes.

    The base of :class:`kcodec.records.BatchBuilder`; the Cython twin writes into a C buffer."""
    __slots__ = ("_out", "_count", "_base_ts", "_max_ts")
    _out: bytearray
    _count: int
    _base_ts: int
    _max_ts: int

    def __new__(cls, *args: Any, **kwargs: Any) -> "RecordsWriter":
        # the state made here, as the twin's __cinit__ makes it: a subclass's __init__ need not call this one
        self = super().__new__(cls)
        self._out = bytearray()
        self._count = 0
        self._base_ts = -1
        self._max_ts = -1
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def append(self, key, value, headers=(), timestamp=None) -> int:
        """Add a record (key and value: bytes-like or None; headers: (str, bytes-like or None) pairs;
        timestamp: ms since the epoch, now when None); returns its offset delta."""
        if timestamp is None:
            timestamp = _now_ms()
        elif not isinstance(timestamp, int):
            raise TypeError(f"timestamp must be an int (ms), not {type(timestamp).__name__}")
        elif not -(1 << 63) <= timestamp < 1 << 63:
            raise OverflowError(f"timestamp {timestamp} does not fit in 64 bits")  # (as the twin's int64)
        key = _as_bytes(key, "key")
        value = _as_bytes(value, "value")
        hs = []
        for h in headers:
            hk, hv = h
            if not isinstance(hk, str):
                raise TypeError(f"header key must be str, not {type(hk).__name__}")
            hs.append((hk.encode("utf-8"), _as_bytes(hv, "header value")))
        if self._count == 0:
            self._base_ts = self._max_ts = timestamp
        elif timestamp > self._max_ts:
            self._max_ts = timestamp
        self._out += encode_records([(self._count, timestamp, key, value, hs)], self._base_ts)
        self._count += 1
        return self._count - 1

    def extend(self, records: Iterable[tuple]) -> int:
        """Append each ``(key, value[, headers[, timestamp]])`` of ``records`` as ``append`` would (a missing
        or None timestamp: now, taken once for the call); returns how many. A bad item raises what append
        would, naming its index (``records[i]``), and leaves the writer as it was before the call."""
        mark = (len(self._out), self._count, self._base_ts, self._max_ts)
        try:
            return extend_with(self.append, records, _now_ms)
        except BaseException:
            if len(self._out) != mark[0]:
                del self._out[mark[0]:]
            self._count, self._base_ts, self._max_ts = mark[1:]
            raise

    def records_bytes(self) -> bytes:
        return bytes(self._out)

    def records_view(self) -> memoryview:
        """The records without a copy: release it (``with``) before the next append."""
        return memoryview(self._out)

    def finish(self, base_offset: int, partition_leader_epoch: int, attributes: int, producer_id: int,
               producer_epoch: int, base_sequence: int, crc_fn: Any) -> bytes:
        """The uncompressed v2 batch: its header from these fields and the writer's count and timestamps, with
        the CRC32C of bytes 21.. at 17. A field that is not an int is a TypeError, one out of its width an
        OverflowError, as in the twin."""
        fields = (base_offset, partition_leader_epoch, attributes, producer_id, producer_epoch, base_sequence)
        try:
            header = V2_HEADER.pack(base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + len(self._out), partition_leader_epoch,
                                    2, 0, attributes, self._count - 1, self._base_ts, self._max_ts, producer_id,
                                    producer_epoch, base_sequence, self._count)
        except struct.error as e:
            if not all(isinstance(f, int) for f in fields):
                raise TypeError(f"a batch header field must be an int: {e}") from None
            raise OverflowError(f"a batch header field is out of range: {e}") from None
        out = bytearray(header) + self._out
        out[17:21] = crc_fn(memoryview(out)[21:]).to_bytes(4, "big")
        return bytes(out)

    def records_size(self) -> int:
        return len(self._out)

    def writer_state(self) -> tuple[int, int, int]:
        """(record count, base timestamp, max timestamp)."""
        return self._count, self._base_ts, self._max_ts

    def clear_records(self) -> None:
        self._out.clear()
        self._count = 0
        self._base_ts = self._max_ts = -1


def summarize(buf, pos: int, end: int, count: int, base_timestamp: int, append_time: Optional[int], origin: int,
              compressed: bool, batch_index: int) -> tuple:
    """(records, key bytes, value bytes, smallest timestamp, largest timestamp) of the ``count`` v2 records in
    ``buf[pos:end]``, read as walk_records reads them (its errors); null keys and values count 0 bytes, the
    timestamps are None when there is no record."""
    n = key_bytes = value_bytes = 0
    lo: Optional[int] = None
    hi: Optional[int] = None
    for _, ts_delta, _, _, klen, _, vlen, _ in walk_records(buf, pos, end, count, origin, compressed, batch_index):
        n += 1
        key_bytes += max(klen, 0)
        value_bytes += max(vlen, 0)
        ts = append_time if append_time is not None else base_timestamp + ts_delta
        if not INT64_MIN <= ts <= INT64_MAX:
            ts = _wrap64(ts)
        lo = ts if lo is None or ts < lo else lo
        hi = ts if hi is None or ts > hi else hi
    return n, key_bytes, value_bytes, lo, hi
