"""``extend(records)``: many records in one call, byte-identical to appending them one by one, in both writers
and for every magic and codec; a bad item raises append's kind of error naming its index and leaves the
builder exactly as it was."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kcodec.exceptions import EncodeError
from kcodec.records import BatchBuilder, Compression, _pure, read_records
from kcodec.records._select import available

FAST = available().get("cython")
WRITERS = [_pure] + ([FAST] if FAST else [])

blob = st.one_of(st.none(), st.binary(max_size=30), st.binary(max_size=30).map(bytearray))
header = st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=10)))
item = st.one_of(
    st.tuples(blob, blob, st.sampled_from([(), []]), st.integers(-2**40, 2**45)),
    st.tuples(blob, blob, st.lists(header, max_size=2).map(tuple), st.integers(-2**40, 2**45)),
    st.tuples(blob, blob, st.just(()), st.integers(0, 2**41)))
items = st.lists(item, max_size=20)


def appended(module, rows, before=()):
    w = module.RecordsWriter()
    for row in (*before, *rows):
        w.append(*row)
    return w.records_bytes(), w.writer_state()


@settings(max_examples=60, deadline=None)
@given(items, items, st.sampled_from(["list", "tuple", "generator"]))
def test_extend_writes_what_appends_write(before, rows, shape):
    source = {"list": list, "tuple": tuple, "generator": lambda r: (x for x in r)}[shape](rows)
    for module in WRITERS:
        w = module.RecordsWriter()
        for row in before:
            w.append(*row)
        assert w.extend(source if shape != "generator" else iter(list(rows))) == len(rows)
        assert (w.records_bytes(), w.writer_state()) == appended(_pure, rows, before)


@pytest.mark.parametrize("codec,magic", [(c, m) for c in Compression for m in (0, 1, 2)
                                         if m == 2 or c != Compression.ZSTD])  # (zstd needs magic 2)
def test_a_built_batch_is_the_one_appends_build(magic, codec):
    rows = [(b"k%d" % i if i % 7 else None, b"v" * (i % 90), (), 1_700_000_000_000 + i) for i in range(300)]
    if magic == 2:
        rows += [(b"k", bytearray(b"v"), [("h", b"x"), ("g", None)], 5), (memoryview(b"m"), None, [], 6)]
    one = BatchBuilder(magic=magic, compression=codec, base_offset=40)
    for row in rows:
        one.append(*row)
    many = BatchBuilder(magic=magic, compression=codec, base_offset=40)
    assert many.extend(rows[:100]) == 100 and many.extend(iter(rows[100:])) == len(rows) - 100
    assert many.build() == one.build()
    assert [r.value for r in read_records(many.build())] == [None if v is None else bytes(v)
                                                                      for _, v, *_ in rows]


def test_items_of_two_or_three_take_the_time_of_the_call(monkeypatch):
    for module in WRITERS:
        w = module.RecordsWriter()
        assert w.extend([(b"a", b"1"), (b"b", b"2", ()), (b"c", b"3", [("h", b"")], None), (b"d", b"4", (), 9)]) == 4
        count, base, top = w.writer_state()
        assert count == 4 and base == top and base > 1_600_000_000_000  # one now for the call, and 9 below it
    for magic in (0, 1):
        b = BatchBuilder(magic=magic)
        b.extend([(b"a", b"1"), (b"b", b"2")])
        stamps = [r.timestamp for r in read_records(b.build())]
        assert stamps[0] == stamps[1] and (stamps[0] == -1) == (magic == 0)


BAD = [
    ((b"k",), TypeError, "records[2]: a record must be a tuple"),
    ((b"k", b"v", (), 1, 2), TypeError, "records[2]: a record must be a tuple"),
    ([b"k", b"v"], TypeError, "records[2]: a record must be a tuple"),
    (None, TypeError, "records[2]: a record must be a tuple"),
    (("text", b"v"), TypeError, "records[2]: key must be"),
    ((b"k", 5, (), 1), TypeError, "records[2]: value must be"),
    ((b"k", b"v", (), 1.5), TypeError, "records[2]: timestamp must be"),
    ((b"k", b"v", (), 2**63), OverflowError, "records[2]:"),
    ((b"k", b"v", [(b"bytes", b"x")], 1), TypeError, "records[2]: header key must be str"),
    ((b"k", b"v", [("h", 7)], 1), TypeError, "records[2]: header value must be"),
    ((b"k", b"v", [("\ud800", b"x")], 1), ValueError, "records[2]:"),
    ((b"k", b"v", [("h",)], 1), ValueError, "records[2]:"),
]


@pytest.mark.parametrize("bad, kind, says", BAD, ids=[str(i) for i in range(len(BAD))])
@pytest.mark.parametrize("shape", ["list", "tuple", "generator"])
def test_a_bad_item_names_its_index_and_leaves_the_writer_as_it_was(bad, kind, says, shape):
    good = [(b"x" * 5000, b"y" * 3000, (), 10), (b"k", b"v", [("h", b"1")], 3)]  # past the first 4 KB too
    rows = good + [bad, (b"z", b"z", (), 11)]
    for module in WRITERS:
        w = module.RecordsWriter()
        w.append(b"first", b"1", (), 50)
        before = (w.records_bytes(), w.writer_state())
        source = {"list": rows, "tuple": tuple(rows), "generator": (r for r in rows)}[shape]
        with pytest.raises(kind) as e:
            w.extend(source)
        assert str(e.value).startswith(says) and type(e.value) is kind, (module, e.value)
        assert (w.records_bytes(), w.writer_state()) == before
        w.extend(good)
        assert (w.records_bytes(), w.writer_state()) == appended(_pure, good, [(b"first", b"1", (), 50)])


def test_a_failed_extend_on_an_empty_builder_or_after_a_build_changes_nothing():
    for magic in (0, 1, 2):
        b = BatchBuilder(magic=magic)
        with pytest.raises(TypeError, match=r"records\[1\]"):
            b.extend([(b"k", b"v", (), 5), (b"k", 1, (), 6)])
        assert b.record_count == 0
        b.append(b"a", b"b", (), 7)
        built = b.build()
        with pytest.raises(TypeError, match=r"records\[1\]"):  # (one record written into a new buffer first)
            b.extend([(b"ok", b"1", (), 9), (b"k", object())])
        assert b.build() == built and b.record_count == 1
        if magic == 2:  # (the build above may be the one kept: the records themselves too)
            assert b.writer_state() == (1, 7, 7) and b.records_bytes() == built[61:]
        fresh = BatchBuilder(magic=magic)
        fresh.append(b"a", b"b", (), 7)
        b.extend([(b"c", b"d", (), 8)])
        fresh.append(b"c", b"d", (), 8)
        assert b.build() == fresh.build()


def test_a_legacy_item_with_headers_is_an_encode_error_at_its_index():
    b = BatchBuilder(magic=1)
    with pytest.raises(EncodeError) as e:
        b.extend([(b"k", b"v", (), 1), (b"k", b"v", [("h", b"1")], 2)])
    assert e.value.path == "records[1].headers" and b.record_count == 0


def test_an_error_from_the_iterable_itself_rolls_back_and_passes_through():
    def rows():
        yield (b"k", b"v", (), 1)
        raise KeyError("from the caller")
    for module in WRITERS:
        w = module.RecordsWriter()
        with pytest.raises(KeyError, match="from the caller"):
            w.extend(rows())
        assert w.writer_state() == (0, -1, -1) and w.records_bytes() == b""
        with pytest.raises(TypeError):
            w.extend(5)
