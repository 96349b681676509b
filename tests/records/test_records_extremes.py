"""Timestamps and offsets at the ends of int64: deltas and sums wrap as Java's long arithmetic does (Kafka's
DefaultRecord), on both backends, so a batch whose timestamps span more than 2**63 reads back as built."""

import kcodec.records as r

LO, HI = -(1 << 63), (1 << 63) - 1


def _batch() -> bytes:
    b = r.BatchBuilder(base_offset=HI - 2)
    for ts in (LO, HI, 5):
        b.append(b"k", b"v", timestamp=ts)
    return b.build()


def test_extreme_timestamps_and_offsets_read_back_as_built():
    data = _batch()
    assert [(x.offset, x.timestamp) for x in r.read_records(data)] == [(HI - 2, LO), (HI - 1, HI), (HI, 5)]
    cols = r.record_columns(data)
    assert list(cols.offset) == [HI - 2, HI - 1, HI] and list(cols.timestamp) == [LO, HI, 5]
    s = r.record_summary(next(iter(r.iter_batches(data))))
    assert (s.records, s.min_timestamp, s.max_timestamp) == (3, LO, HI)
