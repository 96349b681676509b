"""CRC32C (v2 batches) through the hardware-accelerated ``crc32c`` package, CRC32 (magic 0/1) through zlib."""

from __future__ import annotations

import zlib

import crc32c as _crc32c_pkg

# True where the package runs SSE4.2 / ARMv8 CRC instructions; a test asserts it on x86_64 and aarch64, so
# a silently slow software fallback shows up as a failure, not as a slow consumer.
CRC32C_HARDWARE: bool = bool(getattr(_crc32c_pkg, "hardware_based", False))

_crc32c = _crc32c_pkg.crc32c


def crc32c(data, value: int = 0) -> int:
    """CRC32C (Castagnoli) of a buffer, as Kafka's v2 batches carry it (unsigned 32 bits)."""
    return _crc32c(data, value)


def crc32(data, value: int = 0) -> int:
    """CRC32 (IEEE) of a buffer, as magic 0/1 messages carry it (unsigned 32 bits)."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
