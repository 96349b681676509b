"""The codecs as Kafka's writers use them, each bounded; the checksums."""

from __future__ import annotations

import gzip
import platform
import struct

import cramjam
import pytest

from kcodec.records import CRC32C_HARDWARE, BatchBuilder, Compression, crc32, crc32c, iter_batches, read_records
from kcodec.records._compression import CodecError, XERIAL_MAGIC, compress, decompress

DATA = b"".join(b"record %06d " % i + bytes(range(i % 50)) for i in range(3000))  # ~120 KB


def with_payload(codec: Compression, payload: bytes, magic: int = 2) -> bytes:
    """A batch whose records section is ``payload``, compressed by hand (as another writer would)."""
    b = BatchBuilder(magic=magic)
    b.append(b"k", DATA, timestamp=1)
    plain = b.build()
    if magic == 2:
        records = plain[61:]
        return rebuild_v2(plain[:61], payload(records), codec)
    inner = plain
    body = bytes([magic, int(codec)]) + (struct.pack(">q", 1) if magic else b"") + struct.pack(">i", -1)
    value = payload(inner)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, 4 + len(body), crc32(body)) + body


def rebuild_v2(header: bytes, records: bytes, codec: Compression) -> bytes:
    h = bytearray(header)
    struct.pack_into(">i", h, 8, 49 + len(records))
    struct.pack_into(">h", h, 21, int(codec))
    struct.pack_into(">I", h, 17, crc32c(bytes(h[21:]) + records))
    return bytes(h) + records


def values(data: bytes) -> list:
    return [r.value for r in read_records(data)]


def test_crc_vectors_and_hardware():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32(b"123456789") == 0xCBF43926
    if platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64"):
        assert CRC32C_HARDWARE, "the crc32c package runs its software fallback here"


def test_snappy_raw_as_well_as_xerial():
    assert values(with_payload(Compression.SNAPPY, lambda r: bytes(cramjam.snappy.compress_raw(r)))) == [DATA]
    framed = compress(Compression.SNAPPY, DATA)
    assert framed.startswith(XERIAL_MAGIC) and framed.count(XERIAL_MAGIC) == 1
    assert decompress(Compression.SNAPPY, framed, len(DATA)) == DATA  # several 32 KB blocks
    assert decompress(Compression.SNAPPY, framed + compress(Compression.SNAPPY, b"more"), 10**6) == DATA + b"more"


def test_gzip_members_and_zstd_frames_concatenated():
    assert decompress(Compression.GZIP, gzip.compress(DATA[:10]) + gzip.compress(DATA[10:]), 10**6) == DATA
    two = bytes(cramjam.zstd.compress(DATA[:999])) + bytes(cramjam.zstd.compress(DATA[999:]))
    assert decompress(Compression.ZSTD, two, 10**6) == DATA
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    assert decompress(Compression.ZSTD, skippable + two, 10**6) == DATA


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_of_legacy_messages(magic):
    frame = bytearray(cramjam.lz4.compress(read_inner(magic)))
    if magic == 0:  # Kafka's magic 0 writer hashed the wrong bytes for the header checksum (KAFKA-3160)
        hc = 4 + 2 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
        frame[hc] ^= 0xFF
    data = with_payload(Compression.LZ4, lambda _: bytes(frame), magic)
    assert values(data) == [DATA]


def read_inner(magic: int) -> bytes:
    b = BatchBuilder(magic=magic)
    b.append(b"k", DATA, timestamp=1)
    return b.build()


def test_a_wrong_lz4_header_checksum_is_an_error_from_magic_1():
    frame = bytearray(cramjam.lz4.compress(read_inner(1)))
    hc = 6 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    frame[hc] ^= 0xFF
    with pytest.raises(Exception) as e:
        values(with_payload(Compression.LZ4, lambda _: bytes(frame), 1))
    assert "lz4" in str(e.value) and e.typename == "RecordsError"


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_caps_hold_exactly(codec):
    packed = compress(codec, DATA)
    assert decompress(codec, packed, len(DATA)) == DATA
    with pytest.raises(CodecError, match="over the limit"):
        decompress(codec, packed, len(DATA) - 1)


def test_declared_sizes_are_refused_before_inflating():
    # a snappy block that declares 1 GB: refused from its preamble alone
    lying = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00" * 10
    with pytest.raises(CodecError, match="1073741824"):
        decompress(Compression.SNAPPY, lying, 1 << 20)


@pytest.mark.parametrize("codec", list(Compression)[1:])
@pytest.mark.parametrize("level", [None, 1])
def test_levels(codec, level):
    b = BatchBuilder(compression=codec, level=level)
    b.append(None, DATA, timestamp=1)
    (batch,) = iter_batches(b.build())
    assert batch.compression == codec and [r.value for r in batch] == [DATA]
