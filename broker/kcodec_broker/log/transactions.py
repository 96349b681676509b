"""One partition's transactions: the open ones (for the last stable offset) and the aborted ones.

Kafka's ProducerStateManager and transaction index: a transactional batch of a producer with no open
transaction on the partition opens one at its base offset; a COMMIT or ABORT marker closes it, and an
ABORT records (producer id, first offset, marker offset) for read_committed fetches. Rebuilt from the
batches when the data file is replayed.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, NamedTuple, Optional

from kcodec.records import ControlType, RecordsError, control_type, iter_batches

TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
COORDINATOR_EPOCH = 0  # the one coordinator epoch: coordinators move with brokers, never fail over


class Aborted(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def marker_kind(batch: Any) -> Optional[int]:
    """COMMIT or ABORT of a control batch's first record (None for another control record)."""
    try:
        for b in iter_batches(bytes(batch), verify_crc=False):
            for record in b:
                kind = control_type(record)
                return kind if kind in (ControlType.ABORT, ControlType.COMMIT) else None
    except RecordsError:
        return None
    return None


class PartitionTxns:
    __slots__ = ("open", "aborted", "_ends")

    def __init__(self) -> None:
        self.open: dict[int, int] = {}      # producer id -> first offset of its open transaction
        self.aborted: list[Aborted] = []    # in marker order, so by last offset
        self._ends: list[int] = []          # their last offsets, for bisecting

    def on_append(self, batch: Any, attributes: int, producer_id: int, base: int) -> None:
        """Note a stored batch (``attributes`` from its header)."""
        if producer_id < 0 or not attributes & TRANSACTIONAL_BIT:
            return
        if not attributes & CONTROL_BIT:
            self.open.setdefault(producer_id, base)
            return
        first = self.open.pop(producer_id, None)
        if first is not None and marker_kind(batch) == ControlType.ABORT:
            self.aborted.append(Aborted(producer_id, first, base))
            self._ends.append(base)

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the earliest open transaction, else the high watermark."""
        return min(self.open.values(), default=high_watermark)

    def aborted_in(self, start: int, end: int) -> list[Aborted]:
        """Aborted transactions that overlap offsets [start, end): ended at or after ``start``, begun
        before ``end`` (Kafka's collectAbortedTxns)."""
        i = bisect_left(self._ends, start)
        return [a for a in self.aborted[i:] if a.first_offset < end]

    def forget_before(self, log_start: int) -> None:
        """Drop aborted transactions wholly before the log start (retention, DeleteRecords)."""
        k = bisect_left(self._ends, log_start)
        if k:
            del self.aborted[:k], self._ends[:k]
