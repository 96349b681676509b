"""read_committed: which batches a Kafka consumer with isolation.level=read_committed would return.

Kafka's consumer (CompletedFetch): for each batch with a producer id, the fetch's aborted transactions
whose first offset is at or before the batch's last offset mark their producer id as aborted; an ABORT
marker of that producer id clears it; a transactional batch of an aborted producer id is skipped. Control
batches never reach the application.
"""

from __future__ import annotations

import heapq
from typing import Any, Iterable, Iterator

from ._control import ControlType, control_type


def _pair(t: Any) -> tuple[int, int]:
    if isinstance(t, tuple):
        return int(t[0]), int(t[1])
    return int(t.producer_id), int(t.first_offset)  # FetchResponse's AbortedTransaction


def filter_aborted(batches: Iterable[Any], aborted_transactions: Iterable[Any] = (), *,
                   keep_control: bool = False) -> Iterator[Any]:
    """The batches a read_committed consumer keeps, in order. ``aborted_transactions``: a Fetch partition's
    AbortedTransactions (objects with ``producer_id`` and ``first_offset``, or (producer_id, first_offset)
    pairs). Control batches are dropped unless ``keep_control``."""
    pending = [(first, pid) for pid, first in map(_pair, aborted_transactions or ())]
    heapq.heapify(pending)
    aborted: set[int] = set()
    for batch in batches:
        if batch.producer_id >= 0 and batch.magic >= 2:
            while pending and pending[0][0] <= batch.last_offset:
                aborted.add(heapq.heappop(pending)[1])
            if batch.is_control:
                if _is_abort_marker(batch):
                    aborted.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborted:
                continue
        if batch.is_control and not keep_control:
            continue
        yield batch


def _is_abort_marker(batch: Any) -> bool:
    for record in batch.records():
        return control_type(record) == ControlType.ABORT
    return False
