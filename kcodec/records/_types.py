"""The record layer's enums, constants, error and result types (shared by both backends)."""

from __future__ import annotations

import enum
import struct
import time
from typing import NamedTuple, Optional

from ..exceptions import DecodeError


class Compression(enum.IntEnum):
    """The codec in attribute bits 0-2 of a batch (or of a magic 0/1 wrapper message)."""
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """Attribute bit 3: who set the timestamps (magic 1 and 2; magic 0 has none)."""
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


# The members by value, made once: a builder's settings are looked up here, not through the enum's call.
COMPRESSIONS = {int(c): c for c in Compression}
TIMESTAMP_TYPES = {int(t): t for t in TimestampType}

# v2 batch attribute bits
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

# Sizes on the wire. LOG_OVERHEAD: the offset and length in front of every batch or message.
LOG_OVERHEAD = 12
V2_HEADER_SIZE = 61          # up to and including the record count
V2_CRC_START = 21            # the CRC32C covers attributes .. end
# base offset, batch length, leader epoch, magic, CRC, attributes, last offset delta, first and max timestamp,
# producer id and epoch, base sequence, record count
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
V2_MIN_RECORD_SIZE = 7       # length, attributes, timestamp, offset, key, value, header count: 1 byte each
V0_HEADER_SIZE = 14          # crc, magic, attributes, key length, value length (after LOG_OVERHEAD)
V1_HEADER_SIZE = 22          # + timestamp
NO_TIMESTAMP = -1

# A batch whose records inflate past this many bytes is refused (decompression bombs); per batch.
DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024


class RecordsError(DecodeError):
    """Bytes of a records field that do not decode: the reason, the byte offset in the buffer given, and
    which batch / record (``batches[3].records[12].key``)."""

    def __init__(self, reason: str, offset: int = 0, path: str = "", message: Optional[str] = None,
                 version: Optional[int] = None) -> None:
        super().__init__(reason, offset, path, message, version)

    def _text(self) -> str:
        where = f" in {self.path}" if self.path else ""
        return f"{self.reason} at byte {self.offset} of the records{where}"


class RecordsRead(NamedTuple):
    """What :func:`read_batches` found: the complete batches, and the size and offset of a cut-off tail
    (a Fetch response cut at its max bytes ends this way; that is not an error)."""
    batches: list
    partial_bytes: int
    partial_offset: int


def now_ms() -> int:
    """The time now in ms since the epoch (the default timestamp of an appended record)."""
    return time.time_ns() // 1_000_000
