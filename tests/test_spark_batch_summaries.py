"""A fetched batch summed once: `kcodec analyze`'s batches rows of a compressed v2 batch seen again (the same
bytes from its magic on, as a Fetch response returns what a Produce request sent) come from the worker's
kept summaries (kcodec.spark.record_batches._Summaries), equal to a fresh inflate and sum; different bytes,
a bad CRC or malformed records are never served from it, and what it keeps stays under its bound."""

from __future__ import annotations

import pytest

from kcodec.records import BatchBuilder, Compression, RecordSummary, iter_batches
from kcodec.spark import record_batches as rb

COMPRESSED = [c for c in Compression if c != Compression.NONE]


def batch(codec: Compression, n: int = 5, offset: int = 0, epoch: int = -1, value: bytes = b"v" * 90) -> bytes:
    b = BatchBuilder(compression=codec, base_offset=offset, partition_leader_epoch=epoch)
    for i in range(n):
        b.append(b"key-%d" % i, value + b"%d" % i, timestamp=1_700_000_000_000 + 7 * i)
    return b.build()


@pytest.fixture
def sums(monkeypatch):
    """A fresh, empty store of summaries, and a count of the record sums actually run."""
    store = rb._Summaries()
    monkeypatch.setattr(rb, "_SUMS", store)
    calls = []
    real = rb.record_summary
    monkeypatch.setattr(rb, "record_summary", lambda b: calls.append(b.index) or real(b))
    return store, calls


def _uncached(field: bytes) -> list[dict]:
    rb._SUMS.max_bytes = 0  # nothing kept: every batch inflated and summed
    try:
        return rb.field_rows(field)
    finally:
        rb._SUMS.max_bytes = 16 << 20


@pytest.mark.parametrize("codec", COMPRESSED)
def test_a_batch_fetched_as_produced_is_summed_once(sums, codec):
    store, calls = sums
    produced = rb.field_rows(batch(codec))
    fetched = rb.field_rows(batch(codec, offset=1_000, epoch=3))  # the broker's offset and epoch, same bytes after
    assert len(calls) == 1 and len(store.kept) == 1
    assert fetched[0]["base_offset"] == 1_000 and fetched[0]["last_offset"] == 1_004
    same = ("record_count", "key_bytes", "value_bytes", "uncompressed_bytes", "first_timestamp", "max_timestamp")
    assert [fetched[0][k] for k in same] == [produced[0][k] for k in same]
    assert fetched == _uncached(batch(codec, offset=1_000, epoch=3))
    assert produced[0]["uncompressed_bytes"] == len(batch(Compression.NONE))


def test_other_bytes_under_the_same_crc_and_size_are_summed_afresh(sums):
    store, calls = sums
    data = batch(Compression.LZ4)
    first = rb.field_rows(data)
    (key, (kept, _, s)), = store.kept.items()
    store.kept[key] = (kept[:-1] + bytes([kept[-1] ^ 1]), 999, RecordSummary(1, 2, 3, 4, 5))  # a forged entry
    assert rb.field_rows(data) == first and len(calls) == 2
    assert store.kept[key] == (kept, first[0]["uncompressed_bytes"], s)  # replaced by the real one
    assert store.bytes == len(kept)


def test_uncompressed_bad_crc_and_malformed_batches_are_not_kept(sums):
    store, calls = sums
    plain = batch(Compression.NONE)
    bad_crc = bytearray(batch(Compression.GZIP))
    bad_crc[17] ^= 0xFF  # the stored CRC alone
    broken = bytearray(batch(Compression.NONE, n=3))
    broken[-1] ^= 0xFF  # the last record: a malformed batch (and a wrong CRC)
    for field in (plain, bytes(bad_crc), bytes(broken)):
        assert rb.field_rows(field) == rb.field_rows(field) == _uncached(field)
    assert not store.kept and store.bytes == 0 and len(calls) == 9
    rows = rb.field_rows(bytes(bad_crc))
    assert rows[0]["crc_valid"] is False and rows[0]["key_bytes"] == 5 * 5


def test_the_kept_batches_stay_under_the_bound(sums):
    store, calls = sums
    fields = [batch(Compression.ZSTD, value=bytes([i]) * 90) for i in range(6)]
    store.max_bytes = 2 * len(fields[0])
    for f in fields:
        rb.field_rows(f)
    assert len(store.kept) == 2 and store.bytes <= store.max_bytes
    rb.field_rows(fields[0])  # let go: summed again
    rb.field_rows(fields[5])  # kept: not
    assert len(calls) == 7
    store.max_bytes = 10  # a batch larger than the whole store is not kept
    small = batch(Compression.GZIP, n=2)
    rb.field_rows(small)
    b = next(iter_batches(small))
    assert len(calls) == 8 and (b.crc, b.size) not in store.kept and len(store.kept) == 2
