"""Idempotent producers: producer ids and epochs (InitProducerId) and per-partition sequence checks.

Kafka's rules (ProducerStateManager): a batch repeating one of the producer's last five batches on the
partition is a duplicate, acknowledged with the original base offset and not appended; a sequence that
does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER; an epoch older than the partition has seen
is INVALID_PRODUCER_EPOCH; a new epoch starts at sequence 0. A producer the partition has not seen may
start anywhere (its earlier batches may have been removed by retention, or its state expired).

Expiry (Kafka's producer.id.expiration.ms): a producer with no transaction open on a partition whose last
timestamp there (its newest batch's max timestamp, or its last marker's) is ``expiration_ms`` old is
forgotten by that partition; its next write is then accepted at any sequence, as a new producer's.
"""

from __future__ import annotations

from collections import deque
from typing import Container, Optional

from kcodec.errors import ErrorCode

DUPLICATES_KEPT = 5
MAX_SEQUENCE = 2**31 - 1
MAX_EPOCH = 32767
NEVER = 2 ** 63  # a due time that never comes
DEFAULT_EXPIRATION_MS = 24 * 3600 * 1000  # Kafka's producer.id.expiration.ms


class ProducerEntry:
    """One producer on one partition: its epoch and its last batches (first seq, last seq, base offset);
    for DescribeProducers, the newest timestamp it wrote and the coordinator epoch of its last marker."""

    __slots__ = ("epoch", "recent", "last_timestamp", "coordinator_epoch")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        # (first sequence, last sequence, base offset, max timestamp) of the last batches, for duplicates
        self.recent: deque[tuple[int, int, int, int]] = deque(maxlen=DUPLICATES_KEPT)
        self.last_timestamp = -1
        self.coordinator_epoch = -1

    @property
    def last_sequence(self) -> int:
        return self.recent[-1][1] if self.recent else -1


def _last_sequence(first: int, record_count: int) -> int:
    return (first + record_count - 1) % (MAX_SEQUENCE + 1)


def check(producers: dict[int, ProducerEntry], pid: int, epoch: int, first_seq: int,
          record_count: int) -> tuple[ErrorCode, Optional[tuple[int, int]]]:
    """(error, duplicate): NONE and None to append; NONE and the duplicate's (base offset, max timestamp):
    Kafka answers a duplicate with the stored batch's offset, and its timestamp as the log append time."""
    entry = producers.get(pid)
    if entry is None:
        return ErrorCode.NONE, None
    if epoch < entry.epoch:
        return ErrorCode.INVALID_PRODUCER_EPOCH, None
    if epoch > entry.epoch:
        return (ErrorCode.NONE if first_seq == 0 else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), None
    last = _last_sequence(first_seq, record_count)
    for f, l, base, ts in entry.recent:
        if f == first_seq and l == last:
            return ErrorCode.NONE, (base, ts)
    if entry.recent and first_seq != (entry.recent[-1][1] + 1) % (MAX_SEQUENCE + 1):
        return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None
    return ErrorCode.NONE, None


def record(producers: dict[int, ProducerEntry], pid: int, epoch: int, first_seq: int, record_count: int,
           base_offset: int, timestamp: int = -1) -> None:
    """Note an appended batch (also replayed from the data file at load)."""
    entry = producers.get(pid)
    if entry is None or entry.epoch != epoch:
        entry = producers[pid] = ProducerEntry(epoch)
    entry.recent.append((first_seq, _last_sequence(first_seq, record_count), base_offset, timestamp))
    entry.last_timestamp = max(entry.last_timestamp, timestamp)


def mark(producers: dict[int, ProducerEntry], pid: int, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
    """A transaction marker of ``epoch`` (bumped when the coordinator fenced the producer): older epochs
    are refused from now on, and a newer epoch starts its sequences afresh."""
    entry = producers.get(pid)
    if entry is None or epoch > entry.epoch:
        entry = producers[pid] = ProducerEntry(epoch)
    entry.coordinator_epoch = coordinator_epoch
    entry.last_timestamp = max(entry.last_timestamp, timestamp)


def drop_expired(producers: dict[int, ProducerEntry], open_txns: Container[int], now: int,
                 expiration_ms: int) -> int:
    """Forget the producers with no transaction open whose last timestamp is ``expiration_ms`` old (Kafka's
    removeExpiredProducers: ``now - last_timestamp >= expiration_ms``); when the next one is due (ms)."""
    due, expired = NEVER, []
    for pid, entry in producers.items():
        if pid in open_txns:
            continue  # due again once a marker closes it (the marker's timestamp is its last)
        at = entry.last_timestamp + expiration_ms
        if at <= now:
            expired.append(pid)
        else:
            due = min(due, at)
    for pid in expired:
        del producers[pid]
    return due


class ProducerIds:
    """The cluster's producer id allocator and the current epoch of every id it gave out lately.

    Kafka keeps no such table (an idempotent producer's InitProducerId always gets a new id); it is kept
    here for KIP-360's epoch bumps of idempotent producers, and bounded as the partitions' state is: an id
    whose epoch last changed ``expiration_ms`` ago and that no partition holds state for is forgotten, and
    naming it in InitProducerId then gets a new id, as from Kafka."""

    def __init__(self) -> None:
        self.next_id = 1000
        self.epochs: dict[int, int] = {}
        self._changed: dict[int, int] = {}  # id -> when its epoch last changed (ms), oldest first

    def set_epoch(self, pid: int, epoch: int, now: int) -> None:
        self.epochs[pid] = epoch
        self._changed.pop(pid, None)  # re-inserted last: the dict stays in time order
        self._changed[pid] = now

    def seen(self, pid: int, epoch: int, now: int) -> None:
        """A producer id found in the data file at load: never given out again."""
        if pid >= self.next_id:
            self.next_id = pid + 1
        if epoch > self.epochs.get(pid, -1):
            self.set_epoch(pid, epoch, now)

    def _new(self, now: int) -> tuple[int, int]:
        pid = self.next_id
        self.next_id += 1
        self.set_epoch(pid, 0, now)
        return pid, 0

    def init(self, pid: int, epoch: int, now: int) -> tuple[ErrorCode, int, int]:
        """InitProducerId of an idempotent producer: (error, producer id, epoch). One naming its id and
        current epoch (KIP-360) gets the epoch bumped; an epoch exhausted, or an id forgotten, gives a new
        id. (Transactional ids are the transaction coordinator's, txn/coordinator.py.)"""
        if pid < 0:
            return (ErrorCode.NONE, *self._new(now))
        current = self.epochs.get(pid)
        if current is None:
            if pid < self.next_id:  # given out, then forgotten
                return (ErrorCode.NONE, *self._new(now))
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
        if epoch != current:
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if current >= MAX_EPOCH - 1:
            return (ErrorCode.NONE, *self._new(now))
        self.set_epoch(pid, current + 1, now)
        return ErrorCode.NONE, pid, current + 1

    def due(self, expiration_ms: int) -> int:
        """When forget_idle() next has work (ms)."""
        return next(iter(self._changed.values()), NEVER - expiration_ms) + expiration_ms

    def forget_idle(self, now: int, expiration_ms: int, active: Container[int]) -> None:
        """Forget the ids whose epoch last changed ``expiration_ms`` ago and that no partition holds state
        for (``active``); one still held is looked at again ``expiration_ms`` from now."""
        held = []
        for pid, changed in self._changed.items():
            if changed + expiration_ms > now:
                break
            held.append(pid)
        for pid in held:
            del self._changed[pid]
            if pid in active:
                self._changed[pid] = now
            else:
                del self.epochs[pid]
