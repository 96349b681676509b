"""Reading a records field: batches (v2) and messages (magic 0/1), lazily, over any buffer.

A batch is checked (length, magic, CRC) when it is reached; its records are decoded when iterated, by the
selected backend, and a compressed batch is decompressed once, on first use.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Iterator, Optional

from . import _legacy, _pure
from ..core.coerce import as_size
from ._checksum import _crc32c, crc32c
from ._compression import CodecError, inflate
from ._select import backend
from ._types import (COMPRESSION_MASK, CONTROL_BIT, DEFAULT_MAX_UNCOMPRESSED, DELETE_HORIZON_BIT, LOG_OVERHEAD,
                     TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, V0_HEADER_SIZE, V2_CRC_START, V2_HEADER_SIZE,
                     V2_MIN_RECORD_SIZE, Compression, RecordsError, RecordsRead, TimestampType)

_V2 = struct.Struct(">qiibIhiqqqhii")
_LENGTH = struct.Struct(">i")


if TYPE_CHECKING:
    _Header = _pure.BatchHeader
else:
    _Header = backend.BatchHeader  # C fields in the Cython twin


class RecordBatch(_Header):
    """One batch of a records field: a v2 RecordBatch, or a magic 0/1 message (a compressed wrapper's records
    are its inner messages). ``iter(batch)`` / ``batch.records()`` decode the records."""
    __slots__ = ()

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT) and self.magic >= 2

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT) and self.magic >= 2

    @property
    def has_delete_horizon(self) -> bool:
        """v2 attribute bit 6: ``base_timestamp`` is then the delete horizon of a compacted batch."""
        return bool(self.attributes & DELETE_HORIZON_BIT) and self.magic >= 2

    def payload(self) -> Any:
        """The records section as a read-only buffer: a view of the caller's bytes, or the batch's
        decompressed bytes (inflated once, then kept: bytes or a read-only memoryview). For magic 0/1 the
        message (or decompressed inner message set) is not exposed."""
        if self._payload is None:
            codec = self.attributes & COMPRESSION_MASK
            view = memoryview(self._buf)[self._start:self._end]
            if codec == 0:
                self._payload = view
            else:
                try:
                    self._payload = inflate(codec, view, self._max)
                except CodecError as e:
                    raise RecordsError(str(e), self._start, f"batches[{self.index}].records") from None
        return self._payload

    def records(self) -> list:
        """Every record of the batch, decoded (a new list each call; decompression happens once)."""
        if self._legacy is not None:
            return list(self._legacy)
        return backend.decode_records(*self._decode_args())  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator:
        """The records, decoded one at a time as they are asked for."""
        return backend.iter_batch(self)  # type: ignore[no-any-return]

    def _decode_args(self) -> tuple:
        payload = self.payload()
        compressed = bool(self.attributes & COMPRESSION_MASK)
        if compressed:
            if self.record_count * V2_MIN_RECORD_SIZE > len(payload):
                raise RecordsError(f"record count {self.record_count} cannot fit {len(payload)} decompressed bytes",
                                   self.offset + 57, f"batches[{self.index}].record_count")
            buf, pos, end = payload, 0, len(payload)
        else:
            buf, pos, end = self._buf, self._start, self._end
        append_time = self.max_timestamp if self.attributes & TIMESTAMP_TYPE_BIT else None
        return (buf, pos, end, self.record_count, self.base_offset, self.base_timestamp, append_time,
                self._zero_copy, self.offset if compressed else 0, compressed, self.index)

    def __len__(self) -> int:
        return self.record_count

    def __repr__(self) -> str:
        return (f"RecordBatch(magic={self.magic}, base_offset={self.base_offset}, records={self.record_count}, "
                f"compression={self.compression.name}, size={self.size}"
                + (", transactional" if self.is_transactional else "")
                + (", control" if self.is_control else "") + ")")


def _v2_batch(buf, view: memoryview, pos: int, length: int, index: int, verify_crc: bool, zero_copy: bool,
              max_uncompressed: int) -> RecordBatch:
    if length < V2_HEADER_SIZE - LOG_OVERHEAD:
        raise RecordsError(f"batch length {length} under the v2 header's {V2_HEADER_SIZE - LOG_OVERHEAD} bytes",
                           pos + 8, f"batches[{index}].batch_length")
    b = RecordBatch.__new__(RecordBatch)
    (b.base_offset, _, b.partition_leader_epoch, b.magic, b.crc, b.attributes, b.last_offset_delta,
     b.base_timestamp, b.max_timestamp, b.producer_id, b.producer_epoch, b.base_sequence,
     b.record_count) = _V2.unpack_from(view, pos)
    end = pos + LOG_OVERHEAD + length
    if verify_crc:
        actual = crc32c(view[pos + V2_CRC_START:end])
        if actual != b.crc:
            raise RecordsError(f"CRC32C mismatch: stored {b.crc:#010x}, computed {actual:#010x}", pos + 17,
                               f"batches[{index}].crc")
    codec = b.attributes & COMPRESSION_MASK
    if codec > Compression.ZSTD:
        raise RecordsError(f"unknown compression codec {codec}", pos + 21, f"batches[{index}].attributes")
    if b.record_count < 0 or (not codec and b.record_count * V2_MIN_RECORD_SIZE > end - pos - V2_HEADER_SIZE):
        raise RecordsError(f"record count {b.record_count} cannot fit the batch's "
                           f"{end - pos - V2_HEADER_SIZE} bytes of records", pos + 57, f"batches[{index}].record_count")
    b.size = end - pos
    b.offset, b.index = pos, index
    b._buf, b._start, b._end = buf, pos + V2_HEADER_SIZE, end
    b._zero_copy, b._max = zero_copy, max_uncompressed
    b._payload = b._legacy = None
    return b


def _legacy_batch(view: memoryview, pos: int, length: int, index: int, verify_crc: bool, zero_copy: bool,
                  max_uncompressed: int) -> RecordBatch:
    def where(field: str) -> str:
        return f"batches[{index}].{field}"
    m = _legacy.parse_message(view, pos, where, verify_crc, zero_copy and not view[pos + 17] & 0x07, 0)
    codec = m.attributes & COMPRESSION_MASK
    if codec > Compression.LZ4:
        raise RecordsError(f"compression codec {codec} in a magic {m.magic} message", pos + 17, where("attributes"))
    inner = [m] if not codec else _legacy.inner_messages(m, view, index, pos, verify_crc, zero_copy,
                                                            max_uncompressed)
    b = RecordBatch.__new__(RecordBatch)
    b._legacy = _legacy.legacy_records(m, inner, backend.Record, pos, index)
    b.magic, b.crc, b.attributes = m.magic, m.crc, m.attributes
    b.base_offset = b._legacy[0].offset
    b.last_offset_delta = m.offset - b.base_offset
    b.partition_leader_epoch = b.producer_id = b.producer_epoch = b.base_sequence = -1
    b.base_timestamp = b.max_timestamp = m.timestamp
    b.record_count = len(b._legacy)
    b.size, b.offset, b.index = LOG_OVERHEAD + length, pos, index
    b._buf, b._start, b._end = view, pos, pos + LOG_OVERHEAD + length
    b._zero_copy, b._max, b._payload = zero_copy, max_uncompressed, None
    return b


def _scan(buf, verify_crc: bool, zero_copy: bool, max_uncompressed: int) -> Iterator[Any]:
    """Yield each complete batch, then (when the buffer ends in a cut-off batch) its (size, offset)."""
    view = memoryview(buf)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    if zero_copy or not isinstance(buf, bytes):
        buf = view
    n = len(view)
    pos = index = 0
    max_uncompressed = as_size(max_uncompressed)  # (a float: TypeError from both backends, not only the compiled one)
    if max_uncompressed < 0:
        raise ValueError(f"max_uncompressed {max_uncompressed} is negative")
    fast = backend.scan_v2
    while pos < n:
        if fast is not None:  # the Cython twin reads well-formed v2 batches; anything else is read below
            batches, pos, index = fast(buf, view, pos, index, verify_crc, zero_copy, max_uncompressed, RecordBatch,
                                       _crc32c)  # (the package's C function: no Python frame per batch)
            batches.reverse()
            while batches:  # handed over one by one, so that a batch the caller drops is freed
                yield batches.pop()
            if pos >= n:
                return
        if n - pos < LOG_OVERHEAD:
            yield (n - pos, pos)
            return
        (length,) = _LENGTH.unpack_from(view, pos + 8)
        if length < V0_HEADER_SIZE:
            raise RecordsError(f"batch length {length} under the smallest message's {V0_HEADER_SIZE} bytes",
                               pos + 8, f"batches[{index}].batch_length")
        if n - pos < LOG_OVERHEAD + length:
            yield (n - pos, pos)
            return
        magic = view[pos + 16]
        if magic == 2:
            yield _v2_batch(buf, view, pos, length, index, verify_crc, zero_copy, max_uncompressed)
        elif magic in (0, 1):
            yield _legacy_batch(view, pos, length, index, verify_crc, zero_copy, max_uncompressed)
        else:
            raise RecordsError(f"unknown magic {magic}", pos + 16, f"batches[{index}].magic")
        pos += LOG_OVERHEAD + length
        index += 1


def iter_batches(buf, *, verify_crc: bool = True, zero_copy: bool = False,
                 max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> Iterator[RecordBatch]:
    """The batches of a records field, one at a time (a cut-off batch at the end is left out silently;
    :func:`read_batches` reports it). ``zero_copy``: keys, values and header values are memoryview slices
    of ``buf`` (of the decompressed bytes for a compressed batch). ``max_uncompressed``: the most bytes one
    batch may inflate to."""
    for item in _scan(buf, verify_crc, zero_copy, max_uncompressed):
        if isinstance(item, tuple):
            return
        yield item


def read_batches(buf, *, verify_crc: bool = True, zero_copy: bool = False,
                 max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> RecordsRead:
    """Every complete batch of a records field, and the size and offset of a cut-off tail (0 and -1 if none)."""
    batches: list[RecordBatch] = []
    partial: Optional[tuple[int, int]] = None
    for item in _scan(buf, verify_crc, zero_copy, max_uncompressed):
        if isinstance(item, tuple):
            partial = item
        else:
            batches.append(item)
    if partial is None:
        return RecordsRead(batches, 0, -1)
    return RecordsRead(batches, partial[0], partial[1])


def read_records(buf, **options: Any) -> list:
    """Every record of every complete batch in ``buf`` (convenience over :func:`iter_batches`)."""
    out: list = []
    for b in iter_batches(buf, **options):
        out.extend(b.records())
    return out
