"""A batch's records summed without a column or an object per record: what a table of batches needs (how many
records, their key and value bytes, their timestamp range), read by the backend's record loop, which checks
the records as ``record_columns`` does."""

from __future__ import annotations

from typing import NamedTuple, Optional

from ._reader import RecordBatch
from ._select import backend


class RecordSummary(NamedTuple):
    """Sums over a batch's records: ``records``, ``key_bytes`` and ``value_bytes`` (null keys and values count
    0), ``min_timestamp`` and ``max_timestamp`` (the records' own, as ``record_columns`` gives them; None when
    the batch has no record)."""
    records: int
    key_bytes: int
    value_bytes: int
    min_timestamp: Optional[int]
    max_timestamp: Optional[int]


def record_summary(batch: RecordBatch) -> RecordSummary:
    """The summary of one batch's records (v2, or a magic 0/1 message and its inner messages). A compressed v2
    batch is inflated once (``batch.payload()`` keeps it); malformed records raise the ``RecordsError`` that
    reading them would."""
    if batch._legacy is not None:
        msgs = batch._legacy
        stamps = [m.timestamp for m in msgs]
        return RecordSummary(len(msgs), sum(len(m.key) for m in msgs if m.key is not None),
                             sum(len(m.value) for m in msgs if m.value is not None),
                             min(stamps, default=None), max(stamps, default=None))
    buf, pos, end, count, _, base_timestamp, append_time, _, origin, compressed, index = batch._decode_args()
    return RecordSummary(*backend.summarize(buf, pos, end, count, base_timestamp, append_time, origin, compressed,
                                            index))
