"""A partition's leader epoch history: the start offset of each epoch, as Kafka's LeaderEpochFileCache.

Entries are ``[epoch, start offset]`` in rising order of both. A batch appended with a new epoch adds an
entry (Kafka's assign: entries at or after it, by epoch or offset, are dropped first, so an epoch that
wrote nothing before the next began leaves no trace); a log start moving forward drops the entries
before it and moves the last of them up to the new start (truncateFromStart); a log truncated at its end
drops the entries from there on (truncateFromEnd).

The log keeps only what its batches say. The leader's current epoch, which Kafka assigns at the log end
when the leader is elected, is added by ``with_current`` when a lookup is answered: the result is the
same, and the history needs no entry for a partition that never held a batch.
"""

from __future__ import annotations

from typing import Optional

Entries = list[list[int]]
UNDEFINED = (-1, -1)  # Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET


def assign(entries: Entries, epoch: int, start: int) -> None:
    """Record that ``epoch`` starts at ``start`` (a no-op for the latest epoch at or after its start)."""
    if epoch < 0 or start < 0:
        return
    if entries and entries[-1][0] == epoch and start >= entries[-1][1]:
        return
    while entries and (entries[-1][0] >= epoch or entries[-1][1] >= start):
        entries.pop()
    entries.append([epoch, start])


def truncate_from_start(entries: Entries, start: int) -> None:
    """Drop the entries that start at or before ``start``; the last of them now starts there."""
    k = 0
    while k < len(entries) and entries[k][1] <= start:
        k += 1
    if k:
        epoch = entries[k - 1][0]
        del entries[:k]
        entries.insert(0, [epoch, start])


def truncate_from_end(entries: Entries, end: int) -> None:
    """Drop the entries of epochs that start at or after ``end`` (the log was truncated there)."""
    while entries and entries[-1][1] >= end:
        entries.pop()


def with_current(entries: Entries, current: Optional[int], log_end: int) -> Entries:
    """The history as the leader of epoch ``current`` holds it (None: no leader, the history as is)."""
    view = [list(e) for e in entries]
    if current is not None:
        assign(view, current, log_end)
    return view


def end_offset_for(entries: Entries, requested: int, log_end: int) -> tuple[int, int]:
    """OffsetForLeaderEpoch's (epoch, end offset) for ``requested``: the log end for the latest epoch; else
    the largest epoch at most ``requested`` and the start of the next higher one (``requested`` itself
    when it is below every epoch held); UNDEFINED for -1 or an epoch above every one held."""
    if requested == -1:
        return UNDEFINED
    if entries and entries[-1][0] == requested:
        return requested, log_end
    higher = next((e for e in entries if e[0] > requested), None)
    if higher is None:
        return UNDEFINED
    floor = [e for e in entries if e[0] <= requested]
    return (floor[-1][0] if floor else requested), higher[1]


def epoch_for_offset(entries: Entries, offset: int) -> int:
    """The epoch that wrote ``offset`` (-1: none held)."""
    found = -1
    for epoch, start in entries:
        if start == offset:
            return epoch
        if start > offset:
            return found
        found = epoch
    return found


def earliest_epoch(entries: Entries, log_start: int) -> int:
    """ListOffsets EARLIEST's epoch: the first entry's, when it starts at or before the log start."""
    return entries[0][0] if entries and entries[0][1] <= log_start else -1
