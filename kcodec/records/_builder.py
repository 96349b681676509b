"""Building batches: v2 RecordBatches (records written as appended, by the selected backend's writer) and
magic 0/1 message sets. Length and CRC are written last; the size is known before writing."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Iterable, Optional

from ..exceptions import EncodeError
from ._checksum import _crc32c, crc32, crc32c
from ._compression import compress
from ._pure import _as_bytes, extend_with
from ._select import backend
from ._types import (COMPRESSIONS, CONTROL_BIT, LOG_OVERHEAD, TIMESTAMP_TYPE_BIT, TIMESTAMP_TYPES, TRANSACTIONAL_BIT,
                     V2_CRC_START, V2_HEADER, V2_HEADER_SIZE, Compression, TimestampType, now_ms)

_MSG_HEAD = struct.Struct(">qiIbb")


class _PyBuilderBase(backend.RecordsWriter):  # type: ignore[misc,name-defined]
    """A v2 batch's settings and its build: the reference, for a backend without ``BuilderBase`` (the Cython
    twin's, in kcodec/records/_cwriter.pyx, does this in C)."""
    __slots__ = ("magic", "compression", "level", "base_offset", "producer_id", "producer_epoch", "base_sequence",
                 "transactional", "control", "partition_leader_epoch", "timestamp_type", "_built", "_built_key",
                 "_messages")

    def __init__(self, magic: int = 2, compression: int = Compression.NONE, level: Optional[int] = None,
                 base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False, control: bool = False, partition_leader_epoch: int = -1,
                 timestamp_type: int = TimestampType.CREATE_TIME) -> None:
        if magic not in (0, 1, 2):
            raise EncodeError(f"magic {magic} is not 0, 1 or 2", "magic")
        self.magic = magic
        # the enum members through dicts (calling an IntEnum costs a microsecond); a value not in them is
        # refused by the enum's own call
        codec = COMPRESSIONS.get(compression)
        self.compression = Compression(compression) if codec is None else codec
        if magic < 2 and self.compression == Compression.ZSTD:
            raise EncodeError("zstd needs magic 2", "compression")
        if magic < 2 and (transactional or control or producer_id != -1):
            raise EncodeError(f"magic {magic} has no producer fields, transactions or control records", "magic")
        self.level = level
        self.base_offset = base_offset
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.transactional, self.control = transactional, control
        self.partition_leader_epoch = partition_leader_epoch
        ts_type = TIMESTAMP_TYPES.get(timestamp_type)
        self.timestamp_type = TimestampType(timestamp_type) if ts_type is None else ts_type
        self._built: Optional[bytes] = None
        self._built_key: Optional[tuple] = None
        # BatchBuilder(magic=0 or 1) is the message-set builder: its class switched here, not chosen by a
        # __new__ (a Python-level call that a producer pays per batch); both have this base's layout
        if type(self) is BatchBuilder and magic in (0, 1):
            self.__class__ = _LegacyBuilder
            self._messages: list[tuple[Optional[bytes], Optional[bytes], int]] = []

    def _key(self, count: int) -> tuple:
        """What a built batch depends on besides the records: a batch built again with the same key is the one
        kept (a compressed batch is compressed once), and any setting changed since builds it anew."""
        return (count, self.magic, self.compression, self.level, self.base_offset, self.producer_id,
                self.producer_epoch, self.base_sequence, self.transactional, self.control,
                self.partition_leader_epoch, self.timestamp_type)

    def _attributes(self) -> int:
        return (int(self.compression) | (TIMESTAMP_TYPE_BIT if self.timestamp_type else 0)
                | (TRANSACTIONAL_BIT if self.transactional else 0) | (CONTROL_BIT if self.control else 0))

    def build(self) -> bytes:
        """The batch: header, records (compressed when asked), batch length and CRC32C."""
        count, base_ts, max_ts = self.writer_state()
        key = self._key(count)
        if self._built is not None and self._built_key == key:
            return self._built
        if count == 0:
            raise EncodeError("a batch needs at least one record", "records")
        if not self.compression:  # the writer writes the header in front of its records: one call, no copy
            try:
                self._built = self.finish(self.base_offset, self.partition_leader_epoch, self._attributes(),
                                          self.producer_id, self.producer_epoch, self.base_sequence, _crc32c)
            except (OverflowError, TypeError) as e:
                raise EncodeError(f"a batch header field does not fit: {e}", "header") from None
        else:
            self._built = self._compressed(count, base_ts, max_ts)  # type: ignore[attr-defined]
        self._built_key = key
        return self._built


if TYPE_CHECKING:
    _Base = _PyBuilderBase
else:
    _Base = getattr(backend, "BuilderBase", _PyBuilderBase)


class BatchBuilder(_Base):
    """Builds one batch: ``append(key, value, headers=(), timestamp=None)`` per record, or ``extend(records)``
    for many (tuples in append's order; returns how many), then ``build()`` (bytes) or
    ``encode_into(buf, offset)``. ``magic`` 0 or 1 builds a message set instead (one wrapper
    message when compressed); those have no headers, producer fields or control records.
    Settings are attributes named as the constructor's arguments (changed ones apply at the next build)."""
    __slots__ = ()

    # Making and building a batch is kept to few Python steps: __new__, __init__ (magic 0 or 1 switches the
    # class to the message-set builder's) and build come from the backend's base, all in C in the Cython twin.

    def clear_records(self) -> None:
        """Drop the records appended so far (the settings stay) to build the next batch."""
        super().clear_records()
        self._built = None

    @property
    def record_count(self) -> int:
        return self.writer_state()[0]  # type: ignore[no-any-return]

    def encoded_size(self) -> int:
        """The bytes :meth:`build` writes (compressed batches are compressed to know it, once)."""
        if not self.compression and self.magic == 2:  # (Compression.NONE is 0: no enum member looked up)
            return V2_HEADER_SIZE + self.records_size()  # type: ignore[no-any-return]
        return len(self.build())

    def _compressed(self, count: int, base_ts: int, max_ts: int) -> bytes:
        """build's compressed v2 batch: the records compressed, then the header and CRC32C in front."""
        with self.records_view() as view:  # (no copy of the records to compress them)
            records = compress(self.compression, view, self.level)
        size = len(records)
        try:
            header = V2_HEADER.pack(self.base_offset, V2_HEADER_SIZE - LOG_OVERHEAD + size,
                                    self.partition_leader_epoch, 2, 0, self._attributes(), count - 1, base_ts, max_ts,
                                    self.producer_id, self.producer_epoch, self.base_sequence, count)
        except struct.error as e:
            raise EncodeError(f"a batch header field does not fit: {e}", "header") from None
        crc = crc32c(records, crc32c(memoryview(header)[V2_CRC_START:]))
        return header[:17] + crc.to_bytes(4, "big") + header[21:] + records

    def encode_into(self, buffer: Any, offset: int = 0) -> int:
        """Write the batch into a writable buffer at ``offset``; returns the bytes written. Too little room
        is an EncodeError, and nothing is written then."""
        data = self.build()
        view = memoryview(buffer).cast("B")
        if offset < 0 or offset + len(data) > len(view):
            raise EncodeError(f"the batch needs {len(data)} bytes at offset {offset}, the buffer has {len(view)}",
                              "records")
        view[offset:offset + len(data)] = data
        return len(data)


def _no_timestamp() -> int:
    return -1  # (magic 0 messages have none)


class _LegacyBuilder(BatchBuilder):
    """Magic 0/1: each append is one message; compressed, they become the inner set of one wrapper. Made by
    ``BatchBuilder(magic=0 or 1)`` (the base's ``__init__`` switches to it and makes ``_messages``)."""
    __slots__ = ()
    _messages: list[tuple[Optional[bytes], Optional[bytes], int]]

    def append(self, key: Any, value: Any, headers: Iterable = (), timestamp: Optional[int] = None) -> int:
        if tuple(headers):
            raise EncodeError(f"magic {self.magic} messages have no headers", "headers")
        if timestamp is None:
            timestamp = now_ms() if self.magic == 1 else -1
        elif not isinstance(timestamp, int):
            raise TypeError(f"timestamp must be an int (ms), not {type(timestamp).__name__}")
        key = _as_bytes(key, "key")  # (bytes-like or None, as v2's writers take them: not bytes(5))
        value = _as_bytes(value, "value")
        self._messages.append((key, value, timestamp))
        return len(self._messages) - 1

    def extend(self, records: Iterable[tuple]) -> int:
        mark = len(self._messages)
        try:
            return extend_with(self.append, records, now_ms if self.magic == 1 else _no_timestamp)
        except BaseException:
            del self._messages[mark:]
            raise

    def writer_state(self) -> tuple[int, int, int]:
        ts = [m[2] for m in self._messages]
        return len(ts), (ts[0] if ts else -1), max(ts, default=-1)

    def _message(self, offset: int, attributes: int, timestamp: int, key: Optional[bytes],
                 value: Optional[bytes]) -> bytes:
        body = bytearray([self.magic, attributes])
        if self.magic == 1:
            body += struct.pack(">q", timestamp)
        for field in (key, value):
            body += struct.pack(">i", -1 if field is None else len(field))
            if field is not None:
                body += field
        return struct.pack(">qiI", offset, 4 + len(body), crc32(body)) + bytes(body)

    def clear_records(self) -> None:
        self._messages.clear()
        self._built = None

    def build(self) -> bytes:
        count = len(self._messages)
        key = self._key(count)
        if self._built is not None and self._built_key == key:
            return self._built
        if count == 0:
            raise EncodeError("a message set needs at least one message", "records")
        ts_bit = TIMESTAMP_TYPE_BIT if self.timestamp_type and self.magic == 1 else 0
        if self.compression == Compression.NONE:
            out = b"".join(self._message(self.base_offset + i, ts_bit, ts, k, v)
                           for i, (k, v, ts) in enumerate(self._messages))
        else:
            inner_base = 0 if self.magic == 1 else self.base_offset  # magic 1 inner offsets are relative
            inner = b"".join(self._message(inner_base + i, 0, ts, k, v) for i, (k, v, ts) in enumerate(self._messages))
            wrapped = compress(self.compression, inner, self.level, self.magic)
            max_ts = max(m[2] for m in self._messages)
            out = self._message(self.base_offset + count - 1, int(self.compression) | ts_bit, max_ts, None, wrapped)
        self._built, self._built_key = out, key
        return out


if hasattr(backend, "builder_classes"):
    backend.builder_classes(BatchBuilder, _LegacyBuilder)
