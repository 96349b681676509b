"""A batch's records summed (``record_summary``): the same sums as the record objects give, the same errors
as reading them, in both record backends."""

from __future__ import annotations

import random
import struct

import pytest

from kcodec.records import (BatchBuilder, Compression, RecordsError, RecordSummary, TimestampType, _select,
                            read_batches, record_summary)
from kcodec.records._checksum import crc32c

BACKENDS = sorted(_select.available())


def field(n: int = 4, codec=Compression.NONE, base_offset: int = 0, magic: int = 2, **kw) -> bytes:
    b = BatchBuilder(magic, compression=codec, base_offset=base_offset, **kw)
    for i in range(n):
        b.append(None if i == 2 else b"key%d" % i, None if i == 3 else b"v" * (i * 5),
                 headers=[] if magic < 2 else [("a", b"1")] * (i % 3), timestamp=1000 + (i * 7) % 5)
    return b.build()


def recrc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def empty() -> bytes:
    """A v2 batch of no record (compaction leaves such batches)."""
    data = bytearray(field(1)[:61])
    struct.pack_into(">i", data, 8, 61 - 12)
    struct.pack_into(">i", data, 57, 0)
    return recrc(data)


def by_objects(b) -> RecordSummary:
    records = b.records()
    stamps = [r.timestamp for r in records]
    return RecordSummary(len(records), sum(len(r.key) for r in records if r.key is not None),
                         sum(len(r.value) for r in records if r.value is not None),
                         min(stamps, default=None), max(stamps, default=None))


def summed(backend: str, b) -> RecordSummary:
    """The summary by one backend's loop (what record_summary runs on the selected one)."""
    if b._legacy is not None:
        return record_summary(b)
    buf, pos, end, count, _, ts, append, _, origin, compressed, index = b._decode_args()
    return RecordSummary(*_select.available()[backend].summarize(buf, pos, end, count, ts, append, origin,
                                                                  compressed, index))


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_codec_and_magic_sums_as_the_records_do(backend):
    parts = [field(6, Compression(c), base_offset=c * 6) for c in range(5)]
    parts += [field(3, Compression.GZIP, magic=1, base_offset=30), field(2, magic=0, base_offset=33),
              field(3, timestamp_type=TimestampType.LOG_APPEND_TIME, base_offset=35), empty()]
    batches = read_batches(b"".join(parts)).batches
    for b in batches:
        assert summed(backend, b) == record_summary(b) == by_objects(b)
    first = record_summary(batches[0])
    assert first == (6, 4 * 5, 5 + 10 + 20 + 25, 1000, 1004)  # key 2 and value 3 null; timestamps not in order
    assert record_summary(batches[-1]) == (0, 0, 0, None, None)
    appended = record_summary(batches[-2])
    assert appended.min_timestamp == appended.max_timestamp == batches[-2].max_timestamp
    assert record_summary(batches[-3]).min_timestamp == -1  # magic 0 has no timestamps


def reading_error(b) -> str:
    with pytest.raises(RecordsError) as e:
        b.records()
    return str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
def test_malformed_records_raise_what_reading_them_raises(backend, codec):
    data = bytearray(field(3))
    data[61] = 0x7E  # the first record's length: more bytes than there are
    bad = read_batches(recrc(data)).batches[0]
    with pytest.raises(RecordsError) as e:
        summed(backend, bad)
    assert str(e.value) == reading_error(bad) and e.value.path == "batches[0].records[0].length"
    lying = bytearray(field(3, codec))
    struct.pack_into(">i", lying, 57, 2)  # a record count short of the records: bytes left over
    b = read_batches(recrc(lying)).batches[0]
    with pytest.raises(RecordsError) as e:
        summed(backend, b)
    assert str(e.value) == reading_error(b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_bytes_sum_or_raise_as_reading_does(backend):
    rng = random.Random(11)
    good = field(5) + field(4, Compression.SNAPPY, base_offset=5)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(61, len(data))] = rng.randrange(256)
        try:
            batches = read_batches(bytes(data), verify_crc=False).batches
        except RecordsError:
            continue
        for b in batches:
            try:
                expected = by_objects(b)
            except RecordsError as e:
                with pytest.raises(RecordsError) as got:
                    summed(backend, b)
                assert str(got.value) == str(e)
                continue
            assert summed(backend, b) == expected
