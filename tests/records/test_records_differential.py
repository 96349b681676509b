"""Differential fuzzing of the record backends: the Cython twin against the reference (the oracle).

Well-formed batches from hypothesis, mutations of them and random bytes: both backends must write the same
bytes, decode the same records, and refuse the same inputs with the same RecordsError.
"""

from __future__ import annotations

import pytest
from needs import need_extension
from hypothesis import given
from hypothesis import strategies as st

from kcodec.records import RecordsError, _pure, crc32c, read_batches
from kcodec.records._pure import record_tuple
from kcodec.records._select import available

pytestmark = pytest.mark.fuzz

FAST = available().get("cython")
need_extension(FAST, "the Cython record backend (kcodec.records._crecords): a C compiler and Cython at install")

blob = st.one_of(st.none(), st.binary(max_size=40))
header = st.tuples(st.text(max_size=8), blob)
record = st.tuples(blob, blob, st.lists(header, max_size=3), st.integers(-2**40, 2**45))
records = st.lists(record, min_size=1, max_size=12)


def written(module, rows) -> bytes:
    w = module.RecordsWriter()
    for k, v, h, ts in rows:
        w.append(k, v, h, ts)
    assert w.writer_state()[0] == len(rows)
    return w.records_bytes()


def outcome(fn, *args):
    try:
        return [record_tuple(r) for r in fn(*args)]
    except RecordsError as e:
        return ("error", str(e), e.offset, e.path)


def both(buf, count, base_offset=1000, base_ts=5, append=None, zero_copy=False):
    args = (buf, 0, len(buf), count, base_offset, base_ts, append, zero_copy, 0, False, 3)
    ref = outcome(_pure.decode_records, *args)
    assert outcome(FAST.decode_records, *args) == ref
    assert outcome(lambda *a: list(FAST.iter_records(*a)), *args) == ref
    fast = FAST.decode_fast(*args[:8])
    assert (fast is None) == (isinstance(ref, tuple)), (fast, ref)
    if fast is not None:
        assert [record_tuple(r) for r in fast] == ref
    assert columns(FAST, args) == columns(_pure, args)
    return ref


def columns(module, args):
    import numpy as np
    n = max(args[3], 0)
    cols = {name: np.full(n, -7, np.int64) for name in ("offset", "timestamp", "key_offset", "value_offset")}
    cols.update({name: np.full(n, -7, np.int32) for name in ("key_length", "value_length", "header_count",
                                                               "batch")})
    cols["attributes"] = np.full(n, -7, np.int16)
    try:
        module.fill_columns([(*args[:7], 100, 0, *args[8:], 2, 5)], cols)
    except RecordsError as e:
        return ("error", str(e))
    return {k: v.tolist() for k, v in cols.items()}


@pytest.mark.parametrize("size", [0, 55, 56, 57, 58, 8183, 8184, 8185, 8186, 1_048_567, 1_048_568, 1_048_569])
@pytest.mark.parametrize("key", [None, b"k" * 5])
def test_writers_agree_where_the_record_length_takes_another_byte(size, key):
    # the Cython writer leaves 2 bytes for a headerless record's length and moves the body when it takes 1 or
    # 3 (bodies under 64 or from 8,192); with no key these sizes put bodies either side of 64, 8,192 and 2**20
    rows = [(key, b"v" * size, (), 5), (b"x", b"", (), 2**40), (key, b"w" * size, (), 6)]
    data = written(_pure, rows)
    assert written(FAST, rows) == data
    assert [r[3] for r in both(data, len(rows), base_ts=5)] == [row[1] for row in rows]


@given(records, st.booleans(), st.one_of(st.none(), st.integers(0, 2**41)))
def test_writers_agree_and_both_readers_read_it_back(rows, zero_copy, append):
    data = written(_pure, rows)
    assert written(FAST, rows) == data
    got = both(data, len(rows), base_ts=rows[0][3], append=append, zero_copy=zero_copy)
    want = [(1000 + i, append if append is not None else ts, k, v, list(h), 0)
            for i, (k, v, h, ts) in enumerate(rows)]
    assert got == [(o, t, k, v, h, a) for o, t, k, v, h, a in want]


@given(records, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(-2, 2))
def test_mutated_records_fail_alike(rows, flips, count_delta):
    data = bytearray(written(_pure, rows))
    for where, byte in flips:
        data[where % len(data)] = byte
    both(bytes(data), max(len(rows) + count_delta, 0))


@given(st.binary(max_size=200), st.integers(0, 30))
def test_random_bytes_fail_alike(data, count):
    both(data, count)


@given(st.lists(st.integers(0, 255), min_size=1, max_size=12))
def test_varints_at_their_limits(raw):
    # a record whose length and timestamp varints are arbitrary byte runs, long and overflowing ones included
    data = bytes([0x80 | b for b in raw[:-1]] + [raw[-1] & 0x7F]) + bytes(raw) * 2
    both(data, 1)


I64, I32, I16 = (st.integers(-2**(n - 1), 2**(n - 1) - 1) for n in (64, 32, 16))


@given(records, I64, I32, st.integers(0, 7).map(lambda bits: bits << 3), I64, I16, I32)  # (no codec bits)
def test_writers_write_the_same_batch_header(rows, base_offset, epoch, attributes, pid, producer_epoch, sequence):
    # finish writes the whole uncompressed batch: header fields from the arguments and the writer's state
    fields = (base_offset, epoch, attributes, pid, producer_epoch, sequence, crc32c)
    got = []
    for module in (_pure, FAST):
        w = module.RecordsWriter()
        for k, v, h, ts in rows:
            w.append(k, v, h, ts)
        got.append(w.finish(*fields))
    assert got[0] == got[1]
    batch = read_batches(got[0]).batches[0]
    assert (batch.base_offset, batch.partition_leader_epoch, batch.attributes, batch.producer_id,
            batch.producer_epoch, batch.base_sequence, batch.record_count) == (*fields[:6], len(rows))


def test_writers_agree_whatever_size_the_last_batch_had():
    # the Cython writer grows a batch past 4 KB at once to about the last finished one's size: after a big
    # batch, a small one, and one past the hint (several growths) are written as the reference writes them
    for n in (2000, 1, 40, 9000, 3, 2000):
        batches = []
        for module in (_pure, FAST):
            w = module.RecordsWriter()
            for i in range(n):
                w.append(b"k%d" % i, b"v" * (i % 300), (), i)
            batches.append(w.finish(0, -1, 0, -1, -1, -1, crc32c))
        assert batches[0] == batches[1] and read_batches(batches[1]).batches[0].record_count == n


@pytest.mark.parametrize("at, bad", [(0, 2**63), (1, 2**31), (2, -2**15 - 1), (3, -2**63 - 1), (4, 2**15),
                                     (5, -2**31 - 1), (1, 1.5), (4, "1")])
def test_writers_refuse_the_same_header_fields(at, bad):
    fields = [0, -1, 0, -1, -1, -1, crc32c]
    fields[at] = bad
    for module in (_pure, FAST):
        w = module.RecordsWriter()
        w.append(b"k", b"v", (), 1)
        with pytest.raises(OverflowError if isinstance(bad, int) else TypeError):
            w.finish(*fields)
        fields[at] = 0 if at != 1 else -1
        assert read_batches(w.finish(*fields)).batches[0].record_count == 1  # nothing was handed out before
        fields[at] = bad


@pytest.mark.parametrize("bad", ["text", 1.5, object()])
def test_writers_refuse_the_same_values(bad):
    for module in (_pure, FAST):
        with pytest.raises(TypeError):
            module.RecordsWriter().append(bad, b"v", (), 1)
        with pytest.raises(TypeError):
            module.RecordsWriter().append(b"k", b"v", [(bad, b"x")] if bad != "text" else [(b"k", b"x")], 1)
    for module in (_pure, FAST):
        with pytest.raises(TypeError):
            module.RecordsWriter().append(b"k", b"v", (), 1.5)


def headers(data: bytes, verify: bool, monkeypatch=None):
    from kcodec.records import read_batches
    try:
        got = read_batches(data, verify_crc=verify)
    except RecordsError as e:
        return ("error", str(e))
    fields = ("magic", "base_offset", "last_offset_delta", "partition_leader_epoch", "crc", "attributes",
              "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count",
              "size", "offset", "index")
    return [tuple(getattr(b, f) for f in fields) for b in got.batches], got.partial_bytes, got.partial_offset


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=3), st.integers(0, 40),
       st.booleans())
def test_the_fast_batch_scan_reads_headers_as_the_reference(shape, flips, cut, verify):
    from kcodec.records import BatchBuilder, Compression
    from kcodec.records import _reader
    parts = []
    for codec, n, magic in shape:
        b = BatchBuilder(magic=magic, compression=Compression(codec if magic == 2 else min(codec, 3)),
                         base_offset=len(parts) * 10, producer_id=5 if magic == 2 else -1)
        for i in range(n):
            b.append(b"k", b"v" * i, timestamp=i)
        parts.append(b.build())
    data = bytearray(b"".join(parts))
    for where, byte in flips:
        data[where % len(data)] = byte
    data = bytes(data[:len(data) - cut])
    fast = headers(data, verify)
    saved = _reader.backend
    _reader.backend = _pure
    try:
        assert headers(data, verify) == fast
    finally:
        _reader.backend = saved


def test_the_compiled_scan_refuses_a_class_it_cannot_fill():
    """scan_v2 fills the objects it makes as BatchHeaders; given another class (as a hand-made mix of the
    backends would pass) it is a TypeError, not a write past the object."""
    from kcodec.records import BatchBuilder

    b = BatchBuilder()
    b.append(b"k", b"v", timestamp=1)
    data = b.build()

    class NotAHeader:
        pass

    with pytest.raises(TypeError, match="not a BatchHeader"):
        FAST.scan_v2(data, memoryview(data), 0, 0, True, False, 1 << 20, NotAHeader, lambda b: 0)
