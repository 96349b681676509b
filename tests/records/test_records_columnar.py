"""Columnar records: the same facts as the record objects, as numpy columns."""

from __future__ import annotations

import pytest
from needs import need_module

from kcodec.records import (BatchBuilder, Compression, RecordsError, TimestampType, iter_batches, read_batches,
                            record_columns)

np = need_module("numpy")


def field(n: int = 4, codec=Compression.NONE, base_offset: int = 0, **kw) -> bytes:
    b = BatchBuilder(compression=codec, base_offset=base_offset, **kw)
    for i in range(n):
        b.append(None if i == 2 else b"key%d" % i, None if i == 3 else b"v" * (i * 5),
                 headers=[("a", b"1")] * (i % 3), timestamp=1000 + i)
    return b.build()


def check_against_objects(cols, batches):
    records = [(i, b, r) for i, b in enumerate(batches) for r in b]
    assert len(cols) == len(records)
    for row, (i, b, r) in enumerate(records):
        assert cols.offset[row] == r.offset and cols.timestamp[row] == r.timestamp
        assert cols.key(row) == (None if r.key is None else bytes(r.key))
        assert cols.value(row) == (None if r.value is None else bytes(r.value))
        assert cols.header_count[row] == len(r.headers)
        assert cols.batch[row] == i and cols.attributes[row] == b.attributes


def test_uncompressed_columns_point_into_the_callers_buffer():
    data = field() + field(base_offset=4)
    cols = record_columns(data)
    assert cols.data is data
    assert cols.offset.dtype == np.int64 and cols.key_length.dtype == np.int32
    assert list(cols.key_length) == [4, 4, -1, 4] * 2 and list(cols.value_length) == [0, 5, 10, -1] * 2
    check_against_objects(cols, list(iter_batches(data)))


def test_every_codec_magic_and_a_partial_tail():
    parts = [field(5, Compression(c), base_offset=c * 5) for c in range(5)]
    legacy = BatchBuilder(magic=1, compression=Compression.GZIP, base_offset=25)
    legacy.append(b"old", None, timestamp=7)
    legacy.append(None, b"older", timestamp=8)
    parts.append(legacy.build())
    parts.append(field(2, timestamp_type=TimestampType.LOG_APPEND_TIME, base_offset=27))
    data = b"".join(parts)
    cols = record_columns(data + parts[0][:20])
    assert cols.partial_bytes == 20
    check_against_objects(cols, read_batches(data).batches)
    assert list(cols.timestamp[-2:]) == [1001, 1001]


def test_one_batch_or_a_list_of_batches():
    data = field(3, Compression.ZSTD) + field(2, base_offset=3)
    batches = read_batches(data).batches
    check_against_objects(record_columns(batches[1]), batches[1:])
    check_against_objects(record_columns(batches), batches)
    assert len(record_columns(b"")) == 0


def test_malformed_records_raise_the_same_error_as_the_objects():
    data = bytearray(field(3))
    data[61] = 0x7E
    batches = read_batches(bytes(data), verify_crc=False).batches
    with pytest.raises(RecordsError) as by_objects:
        batches[0].records()
    with pytest.raises(RecordsError) as by_columns:
        record_columns(batches)
    assert str(by_columns.value) == str(by_objects.value)


def test_compressed_batches_copy_no_buffer_they_are_not_read_from():
    """One compressed batch's columns point into its decompressed records as they are; the caller's buffer
    is in ``data`` only when some batch is read in place there."""
    data = field(4, Compression.LZ4) + field(3, Compression.ZSTD, base_offset=4)
    batches = read_batches(data).batches
    one = record_columns(batches[0])
    assert len(one.data) == len(batches[0].payload())
    check_against_objects(one, batches[:1])
    both = record_columns(data)
    assert len(both.data) == sum(len(b.payload()) for b in batches)
    check_against_objects(both, batches)
    mixed = data + field(2, base_offset=7)
    cols = record_columns(mixed)
    assert bytes(cols.data[:len(mixed)]) == mixed
    check_against_objects(cols, read_batches(mixed).batches)


def test_columns_of_unequal_lengths_are_refused_before_a_row_is_written():
    """fill_columns (private: kcodec/records/_columns.py makes its columns of one length) checks their lengths
    once a call, on both backends: the Cython twin writes without bounds checks (crash4)."""
    from kcodec.records._select import backend
    types = {"offset": "i8", "timestamp": "i8", "key_offset": "i8", "value_offset": "i8", "key_length": "i4",
             "value_length": "i4", "header_count": "i4", "batch": "i4", "attributes": "i2"}
    one = next(iter_batches(field()))
    for short in types:
        cols = {name: np.full(2 if name == short else 4, -7, t) for name, t in types.items()}
        with pytest.raises(ValueError, match="differ in length"):
            backend.fill_columns([(one, 0, 0)], cols)
        assert all((c == -7).all() for c in cols.values())
