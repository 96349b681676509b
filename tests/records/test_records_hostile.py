"""Hostile record bytes: each is a RecordsError naming the byte offset and the batch / record, nothing else."""

from __future__ import annotations

import importlib.util
import struct
import tracemalloc
from pathlib import Path

import pytest

from kcodec import DecodeError
from kcodec.records import (BatchBuilder, Compression, RecordsError, iter_batches, read_batches, read_records,
                            record_columns)
from kcodec.records._checksum import crc32, crc32c


def batch(n: int = 3, codec: Compression = Compression.NONE, **kw) -> bytes:
    b = BatchBuilder(compression=codec, **kw)
    for i in range(n):
        b.append(b"key%d" % i, b"value%d" % i, headers=[("h", b"x")], timestamp=100 + i)
    return b.build()


def recrc(data: bytearray) -> bytes:
    """Rewrite a v2 batch's CRC after tampering, so the tampering itself is what is caught."""
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def error_of(data, **kw) -> RecordsError:
    """The error of reading every record, the same whether the records come as lists or one at a time."""
    with pytest.raises(RecordsError) as e:
        for b in iter_batches(data, **kw):
            b.records()
    with pytest.raises(RecordsError) as lazily:
        for b in iter_batches(data, **kw):
            for _ in b:
                pass
    assert isinstance(e.value, DecodeError) and str(lazily.value) == str(e.value)
    return e.value


def test_bad_crc_names_the_batch_and_can_be_skipped():
    good = batch()
    bad = bytearray(good + good)
    bad[len(good) + 70] ^= 0xFF
    e = error_of(bytes(bad))
    assert "CRC32C mismatch" in str(e) and e.offset == len(good) + 17 and e.path == "batches[1].crc"
    assert len(list(iter_batches(bytes(bad[:len(good)])))) == 1
    assert len(list(iter_batches(bytes(bad), verify_crc=False))) == 2


def test_legacy_bad_crc():
    b = BatchBuilder(magic=1)
    b.append(b"k", b"v", timestamp=1)
    data = bytearray(b.build())
    data[-1] ^= 1
    e = error_of(bytes(data))
    assert "CRC32 mismatch" in str(e) and e.offset == 12 and e.path == "batches[0].crc"


def test_lengths_under_the_minimum_are_errors_not_partial():
    data = bytearray(batch())
    struct.pack_into(">i", data, 8, 13)
    e = error_of(bytes(data))
    assert e.offset == 8 and "batch length 13" in str(e)
    struct.pack_into(">i", data, 8, 40)
    e = error_of(bytes(data))
    assert "under the v2 header" in str(e) and e.path == "batches[0].batch_length"


def test_a_huge_length_is_a_partial_tail_as_in_kafka():
    data = bytearray(batch())
    struct.pack_into(">i", data, 8, 2**31 - 1)
    got = read_batches(bytes(data))
    assert got.batches == [] and got.partial_bytes == len(data) and got.partial_offset == 0


def test_unknown_magic_and_codec():
    data = bytearray(batch())
    data[16] = 3
    assert "unknown magic 3" in str(error_of(bytes(data)))
    data = bytearray(batch())
    struct.pack_into(">h", data, 21, 6)
    e = error_of(recrc(data))
    assert "compression codec 6" in str(e) and e.path == "batches[0].attributes"


@pytest.mark.parametrize("count", [4, 2, -1, 2**31 - 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_lying_record_counts(count, codec):
    data = bytearray(batch(3, codec))
    struct.pack_into(">i", data, 57, count)
    e = error_of(recrc(data))
    assert e.path.startswith("batches[0]")
    assert e.offset >= 0


def test_record_length_past_the_end():
    data = bytearray(batch(1))
    data[61] = 0x7E  # the first record's length varint: 63 bytes, more than there are
    e = error_of(recrc(data))
    assert e.offset == 61 and e.path == "batches[0].records[0].length"


def test_over_long_varints():
    data = bytearray(batch(1))
    rec = 61
    # timestamp delta (after length and attributes) as 11 continuation bytes: longer than a varlong
    body = bytes(data[rec:])
    forged = bytes([0x80] * 11)
    new = body[:2] + forged + body[3:]
    out = bytearray(data[:rec]) + new
    struct.pack_into(">i", out, 8, len(out) - 12)
    e = error_of(recrc(out))
    assert "longer than 10 bytes" in str(e) and e.path == "batches[0].records[0].timestamp_delta"
    assert e.offset == 63


def test_key_longer_than_its_record():
    data = bytearray(batch(1))
    # record: length, attributes 0, ts delta 0, offset delta 0, key length (zigzag 4 -> 8)
    assert data[65] == 8
    data[65] = 0x40  # 32 bytes of key in a record of far fewer
    e = error_of(recrc(data))
    assert "key length 32" in str(e) and e.path == "batches[0].records[0].key"


def test_header_key_not_utf8_reads_as_java_reads_it():
    """Java's String (Kafka's broker stores such a batch, its clients read it) puts U+FFFD for bytes that are
    not UTF-8; so do both backends, in records and in columns."""
    b = BatchBuilder()
    b.append(b"k", b"v", headers=[("hh", b"x")], timestamp=1)
    data = bytearray(b.build())
    i = data.index(b"hh")
    data[i] = 0xFF
    (batch,) = iter_batches(recrc(data))
    assert [r.headers for r in batch] == [[("\ufffdh", b"x")]] == [r.headers for r in batch.records()]
    if importlib.util.find_spec("numpy") is not None:
        assert list(record_columns(recrc(data)).header_count) == [1]


def test_errors_in_compressed_records_name_the_batch_and_the_decompressed_byte():
    b = BatchBuilder(compression=Compression.GZIP)
    b.append(b"k", b"v", timestamp=1)
    good = b.build()
    from kcodec.records._compression import compress
    inner = bytes([0x7E]) + b"\x00" * 10
    payload = compress(Compression.GZIP, inner)
    data = bytearray(good[:61]) + payload
    struct.pack_into(">i", data, 8, len(data) - 12)
    e = error_of(recrc(data))
    assert e.offset == 0 and "decompressed records" in str(e) and e.path.startswith("batches[0]")


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_decompression_bombs_are_refused(codec):
    b = BatchBuilder(compression=codec)
    for i in range(40):
        b.append(None, b"\x00" * 100_000, timestamp=1)
    data = b.build()
    assert len(data) < 200_000
    e = error_of(data, max_uncompressed=1_000_000)
    assert "over the limit of 1000000" in str(e) and e.path == "batches[0].records"
    assert len(read_records(data, max_uncompressed=5_000_000)) == 40


def test_garbage_compressed_bytes():
    for codec in (1, 2, 3, 4):
        data = bytearray(batch(2, Compression(codec)))
        for i in range(61, len(data)):
            data[i] ^= 0x5A
        e = error_of(recrc(data))
        assert e.path.startswith("batches[0]")


def legacy_message(magic: int, attributes: int, value: bytes, offset: int = 0) -> bytes:
    body = bytes([magic, attributes]) + (struct.pack(">q", 1) if magic else b"") + struct.pack(">i", -1) \
        + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, 4 + len(body), crc32(body)) + body


def test_nested_wrappers_are_refused():
    import gzip
    inner = legacy_message(1, 0, b"x")
    wrapper = legacy_message(1, 1, gzip.compress(inner))
    nested = legacy_message(1, 1, gzip.compress(wrapper))
    assert [r.value for r in read_records(wrapper)] == [b"x"]
    e = error_of(nested)
    assert "nested" in str(e) and e.path == "batches[0].records[0].attributes"


def test_inner_magic_must_match_the_wrapper():
    import gzip
    e = error_of(legacy_message(1, 1, gzip.compress(legacy_message(0, 0, b"x"))))
    assert "magic 0 in a magic 1 wrapper" in str(e)


def test_legacy_key_length_past_the_message():
    msg = bytearray(legacy_message(0, 0, b"abc"))
    struct.pack_into(">i", msg, 18 + 4, 99)  # value length
    struct.pack_into(">I", msg, 12, crc32(bytes(msg[16:])))
    e = error_of(bytes(msg))
    assert "value length 99" in str(e) and e.path == "batches[0].value" and e.offset == 22


def test_random_bytes_raise_only_records_errors():
    import random
    rng = random.Random(7)
    good = batch(5) + batch(2, Compression.SNAPPY)
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        for verify in (True, False):
            for lazily in (False, True):
                try:
                    for b in iter_batches(bytes(data), verify_crc=verify):
                        list(b) if lazily else b.records()
                except RecordsError:
                    pass


FUZZ_VECTORS = Path(__file__).resolve().parent / "fuzz_vectors"


@pytest.mark.parametrize("verify", [True, False])
def test_a_lying_compressed_record_count_does_not_size_the_columns(verify):
    """Found by fuzz/campaign.py (seed 1, input 114): a gzip batch claiming 16,777,216 records in 517 bytes.
    record_columns allocated its columns for that count (800 MB) before inflating the batch; with a larger
    count the allocation itself failed (MemoryError). The count is checked against the inflated records first."""
    data = (FUZZ_VECTORS / "columns-lying-compressed-count.bin").read_bytes()
    tracemalloc.start()
    try:
        with pytest.raises(RecordsError) as e:
            record_columns(data, verify_crc=verify)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    assert str(e.value) == str(error_of(data, verify_crc=verify))


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.ZSTD])
def test_a_lying_count_in_a_good_compressed_batch_fails_before_the_columns(codec):
    data = bytearray(batch(3, codec))
    struct.pack_into(">i", data, 57, 10**7)
    data = recrc(data)
    tracemalloc.start()
    try:
        with pytest.raises(RecordsError) as e:
            record_columns(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    assert "record count 10000000 cannot fit" in str(e.value) and e.value.path == "batches[0].record_count"


def test_a_magic_1_wrapper_cannot_shift_inner_offsets_past_int64():
    """Found by fuzz/campaign.py (seed 1, input 5343): a magic 1 gzip wrapper at offset -2**63 whose inner
    offsets are relative to it gave offsets below int64: an OverflowError from the Cython Record (the
    reference made a Python int), not a RecordsError."""
    data = (FUZZ_VECTORS / "legacy-inner-offset-overflow.bin").read_bytes()
    e = error_of(data, verify_crc=False)
    assert "outside int64" in str(e) and e.offset == 0 and e.path == "batches[0].offset"
    with pytest.raises(RecordsError, match="outside int64"):
        record_columns(data, verify_crc=False)


def test_max_uncompressed_negative_or_not_an_int_is_refused_on_both_backends():
    """(crash4: the compiled backend said OverflowError for one past int64, TypeError for a float, where the
    pure one read on)"""
    data = batch()
    for bad, error in ((-1, ValueError), (-2**70, ValueError), (1.5, TypeError)):
        with pytest.raises(error):
            read_records(data, max_uncompressed=bad)
        with pytest.raises(error):
            record_columns(data, max_uncompressed=bad)
    assert len(read_records(data, max_uncompressed=2**70)) == 3
