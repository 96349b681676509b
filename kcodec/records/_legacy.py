"""Magic 0 and 1 message sets: one message, or one compressed wrapper whose value is an inner message set.

Rare today (Kafka 0.10 and before wrote them; brokers still serve them); plain Python for both backends.
In magic 1 a wrapper's inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of
the last; in magic 0 the inner offsets are absolute. A LOG_APPEND_TIME wrapper's timestamp is every
inner record's.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from ._checksum import crc32
from ._compression import CodecError, inflate
from ._types import (LOG_OVERHEAD, NO_TIMESTAMP, TIMESTAMP_TYPE_BIT, V0_HEADER_SIZE, V1_HEADER_SIZE, Compression,
                     RecordsError)

_HEAD = struct.Struct(">qiIbb")   # offset, size, crc, magic, attributes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")


class Message:
    """One decoded magic 0/1 message (the caller's buffer positions of its value for the wrapper case)."""
    __slots__ = ("offset", "size", "crc", "magic", "attributes", "timestamp", "key", "value", "value_pos")
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: Any
    value: Any
    value_pos: int


def parse_message(view: memoryview, pos: int, where: Callable[[str], str], verify_crc: bool,
                  zero_copy: bool, origin: int) -> Message:
    """The message at ``pos`` (its whole size known to be in ``view``); errors at ``origin`` + position."""
    offset, size, crc, magic, attributes = _HEAD.unpack_from(view, pos)
    end = pos + LOG_OVERHEAD + size
    if size < (V0_HEADER_SIZE if magic == 0 else V1_HEADER_SIZE):
        raise RecordsError(f"message size {size} under the minimum of a magic {magic} message", origin + pos + 8,
                           where("size"))
    if verify_crc:
        actual = crc32(view[pos + 16:end])
        if actual != crc:
            raise RecordsError(f"CRC32 mismatch: stored {crc:#010x}, computed {actual:#010x}", origin + pos + 12,
                               where("crc"))
    m = Message()
    m.offset, m.size, m.crc, m.magic, m.attributes = offset, size, crc, magic, attributes
    p = pos + 18
    if magic == 1:
        (m.timestamp,) = _I64.unpack_from(view, p)
        p += 8
    else:
        m.timestamp = NO_TIMESTAMP
    for name in ("key", "value"):
        if p + 4 > end:
            raise RecordsError(f"{name} length past the end of the message", origin + p, where(name))
        (n,) = _I32.unpack_from(view, p)
        p += 4
        if n < -1 or p + max(n, 0) > end:
            raise RecordsError(f"{name} length {n} does not fit the message's {end - p} bytes left", origin + p - 4,
                               where(name))
        data = None
        if n >= 0:
            data = view[p:p + n] if zero_copy else bytes(view[p:p + n])
            if name == "value":
                m.value_pos = p
        p += max(n, 0)
        setattr(m, name, data)
    if p != end:
        raise RecordsError(f"{end - p} bytes after the value of the message", origin + p, where("value"))
    return m


def inner_messages(wrapper: Message, view: memoryview, batch_index: int, origin: int, verify_crc: bool,
                   zero_copy: bool, max_uncompressed: int) -> list[Message]:
    """Decompress a wrapper's value once and parse its inner message set (no nesting, same magic)."""
    codec = wrapper.attributes & 0x07
    if wrapper.value is None:
        raise RecordsError("compressed message without a value", origin, f"batches[{batch_index}].value")
    try:
        inner = inflate(codec, view[wrapper.value_pos:wrapper.value_pos + len(wrapper.value)],
                           max_uncompressed, wrapper.magic)
    except CodecError as e:
        raise RecordsError(str(e), origin + wrapper.value_pos, f"batches[{batch_index}].value") from None
    iv = memoryview(inner)
    out, pos, i = [], 0, 0
    while pos < len(inner):
        def where(field: str, i: int = i) -> str:
            return f"batches[{batch_index}].records[{i}].{field}"
        if pos + LOG_OVERHEAD + 6 > len(inner):
            raise RecordsError(f"inner message set cut at byte {pos} of the decompressed value", origin,
                               where("size"))
        (size,) = _I32.unpack_from(iv, pos + 8)
        if size < V0_HEADER_SIZE or pos + LOG_OVERHEAD + size > len(inner):
            raise RecordsError(f"inner message size {size} does not fit the decompressed value at its byte {pos}",
                               origin, where("size"))
        magic = inner[pos + 16]
        if magic != wrapper.magic:
            raise RecordsError(f"inner message of magic {magic} in a magic {wrapper.magic} wrapper", origin,
                               where("magic"))
        try:
            m = parse_message(iv, pos, where, verify_crc, zero_copy, 0)
        except RecordsError as e:
            raise RecordsError(f"{e.reason} (byte {e.offset} of the decompressed value)", origin, e.path) from None
        if m.attributes & 0x07:
            raise RecordsError("compressed message nested in a compressed message", origin, where("attributes"))
        out.append(m)
        pos += LOG_OVERHEAD + size
        i += 1
    if not out:
        raise RecordsError("compressed message with an empty inner message set", origin,
                           f"batches[{batch_index}].value")
    return out


def legacy_records(wrapper: Message, inner: list[Message], record_class, pos: int, index: int) -> list:
    """The records of a wrapper (or of a single uncompressed message when ``inner`` is [wrapper]) at byte
    ``pos``, batch ``index``."""
    if inner[0] is wrapper:
        return [record_class(wrapper.offset, wrapper.timestamp, wrapper.key, wrapper.value, [], wrapper.attributes)]
    append_time = wrapper.magic == 1 and wrapper.attributes & TIMESTAMP_TYPE_BIT
    if wrapper.magic == 1:
        shift = wrapper.offset - inner[-1].offset
    else:
        shift = 0
    for m in (min(inner, key=lambda m: m.offset), max(inner, key=lambda m: m.offset)):
        # magic 1 inner offsets are relative to the wrapper's (its offset is the last inner one's): a hostile
        # pair can place them outside an int64 offset
        if not -(1 << 63) <= m.offset + shift < 1 << 63:
            raise RecordsError(f"inner offset {m.offset} in a wrapper at offset {wrapper.offset} is offset "
                               f"{m.offset + shift}, outside int64", pos, f"batches[{index}].offset")
    return [record_class(m.offset + shift, wrapper.timestamp if append_time else m.timestamp, m.key, m.value, [],
                         m.attributes) for m in inner]


def codec_of(attributes: int) -> int:
    codec = attributes & 0x07
    if codec > Compression.ZSTD:
        raise ValueError(codec)
    return codec
