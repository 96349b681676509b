"""One partition's log: raw v2 batches kept as received, an offset index, retention and DeleteRecords.

The broker never decodes records on the produce or fetch path: a batch is stored as the producer's bytes
with its base offset and the leader's epoch (partition leader epoch) written into the header, both outside
the CRC (which covers the bytes from the attributes on), so that, as in Kafka's
DefaultRecordBatch.setPartitionLeaderEpoch, no CRC is recomputed for them; only a LogAppendTime topic
changes a CRC-covered field (attributes and max timestamp) and recomputes the CRC. The epochs the batches
carry make the partition's leader epoch history (epochs.py).
Replication is in-process, so the high watermark is the log end offset; the last stable offset is the
first offset of the earliest open transaction (transactions.py), else the high watermark.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from typing import Any, Optional

from kcodec.records import crc32c, iter_batches

from . import epochs as history
from .transactions import PartitionTxns

_BASE = struct.Struct(">q")          # base offset, bytes 0..8
_EPOCH = struct.Struct(">i")         # partition leader epoch, bytes 12..16
_CRC = struct.Struct(">I")           # bytes 17..21; the CRC covers bytes 21..end
_ATTRIBUTES = struct.Struct(">h")    # bytes 21..23
_MAX_TS = struct.Struct(">q")        # bytes 35..43
LOG_APPEND_TIME_BIT = 0x08


def set_log_append_time(batch: bytearray, now_ms: int) -> None:
    """Mark a batch LogAppendTime with ``now_ms`` as its max timestamp and recompute its CRC."""
    (attributes,) = _ATTRIBUTES.unpack_from(batch, 21)
    _ATTRIBUTES.pack_into(batch, 21, attributes | LOG_APPEND_TIME_BIT)
    _MAX_TS.pack_into(batch, 35, now_ms)
    _CRC.pack_into(batch, 17, crc32c(memoryview(batch)[21:]))


class PartitionLog:
    """Batches in offset order; ``bases[i]`` is the base offset of ``batches[i]``."""

    __slots__ = ("batches", "bases", "max_timestamps", "appended", "size", "log_start", "next_offset", "producers",
                 "txns", "epochs")

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.bases: list[int] = []
        self.max_timestamps: list[int] = []
        self.appended: list[int] = []  # when each batch came (ms): Kafka's active segment is never removed
        self.size = 0
        self.log_start = 0
        self.next_offset = 0      # log end offset = high watermark
        self.producers: dict[int, Any] = {}  # producer id -> idempotence state (producers.py)
        self.txns = PartitionTxns()  # open and aborted transactions (transactions.py)
        self.epochs: history.Entries = []  # [epoch, start offset] of the epochs the batches were written in

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        return self.txns.last_stable_offset(self.next_offset)

    def append(self, batch: bytearray, record_count: int, max_timestamp: int, now_ms: int, leader_epoch: int) -> int:
        """Store ``batch`` (owned by the log from now on) at the log end, written in ``leader_epoch``; its
        base offset."""
        base = self.next_offset
        _BASE.pack_into(batch, 0, base)
        _EPOCH.pack_into(batch, 12, leader_epoch)
        self._put(batch, base, record_count, max_timestamp, now_ms)
        return base

    def restore(self, batch: Any, base: int, record_count: int, max_timestamp: int, now_ms: int) -> None:
        """Put back a batch read from the data file at its recorded offset (gaps from DeleteRecords or
        retention are allowed)."""
        if base < self.next_offset:
            return  # already held: the data file repeats nothing, but stay idempotent
        if not self.batches:  # the batches before it were dropped before the restart
            self.log_start = max(self.log_start, base)
        self._put(batch, base, record_count, max_timestamp, now_ms)
        # a rewritten journal puts the log start before the batches it keeps
        if self.epochs and self.epochs[0][1] < self.log_start:
            history.truncate_from_start(self.epochs, self.log_start)

    def _put(self, batch: Any, base: int, record_count: int, max_timestamp: int, now_ms: int) -> None:
        (epoch,) = _EPOCH.unpack_from(batch, 12)
        if not self.epochs or self.epochs[-1][0] != epoch:
            history.assign(self.epochs, epoch, base)
        self.batches.append(batch)
        self.bases.append(base)
        self.max_timestamps.append(max_timestamp)
        self.appended.append(now_ms)
        self.size += len(batch)
        self.next_offset = base + record_count

    # -- reads -----------------------------------------------------------------------------------------
    def in_range(self, offset: int) -> bool:
        return self.log_start <= offset <= self.next_offset

    def read(self, offset: int, max_bytes: int, upto: Optional[int] = None) -> tuple[list[Any], int, bool]:
        """Whole batches from the one holding ``offset`` on, up to ``max_bytes`` (the first batch always,
        KIP-74), ending before ``upto`` (an offset, e.g. the last stable offset); their byte count; and
        whether a batch before ``upto`` was left out for ``max_bytes``."""
        end = self.next_offset if upto is None else upto
        if offset >= end or not self.batches:
            return [], 0, False
        i = bisect_right(self.bases, offset) - 1
        if i < 0:
            i = 0
        out: list[Any] = []
        total = 0
        batches, bases = self.batches, self.bases
        n = len(batches)
        while i < n and bases[i] < end:
            b = batches[i]
            if out and total + len(b) > max_bytes:
                return out, total, True
            out.append(b)
            total += len(b)
            i += 1
        return out, total, False

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch of its batch) of the first record whose timestamp is at least
        ``timestamp``, or (-1, -1, -1)."""
        for i, max_ts in enumerate(self.max_timestamps):
            if max_ts >= timestamp:
                for batch in iter_batches(bytes(self.batches[i])):
                    append_time = batch.max_timestamp if batch.attributes & LOG_APPEND_TIME_BIT else None
                    for record in batch:
                        ts = append_time if append_time is not None else record.timestamp
                        if ts >= timestamp and record.offset >= self.log_start:
                            return record.offset, ts, max(batch.partition_leader_epoch, -1)
        return -1, -1, -1

    def max_timestamp_offset(self) -> tuple[int, int, int]:
        """(offset, timestamp, epoch) of the first record holding the log's largest timestamp (ListOffsets -3)."""
        if not self.batches:
            return -1, -1, -1
        best = max(self.max_timestamps)
        return self.offset_for_timestamp(best) if best >= 0 else (-1, -1, -1)

    # -- removal ---------------------------------------------------------------------------------------
    def delete_records(self, offset: int) -> None:
        """Move the log start to ``offset`` (at most the high watermark) and drop the batches before it."""
        self.log_start = max(self.log_start, offset)
        # a batch goes once the next one starts at or before the log start (or the log ends there)
        k = bisect_right(self.bases, self.log_start) - 1
        if self.batches and self.next_offset <= self.log_start:
            k = len(self.batches)
        if k > 0:
            self._drop(k)
        self.txns.forget_before(self.log_start)
        history.truncate_from_start(self.epochs, self.log_start)

    def enforce(self, retention_bytes: int, retention_ms: int, segment_ms: int, now_ms: int) -> None:
        """Drop whole batches from the start: while the log exceeds ``retention_bytes`` (-1: no limit) or
        the oldest batch's newest record is older than ``retention_ms`` (-1: kept forever) and the batch
        came more than ``segment_ms`` ago (Kafka deletes by time only segments rolled, by segment.ms)."""
        k, size, n = 0, self.size, len(self.batches)
        while k < n:
            over = 0 <= retention_bytes < size
            old = 0 <= retention_ms and self.max_timestamps[k] < now_ms - retention_ms and \
                self.appended[k] <= now_ms - segment_ms
            if not (over or old):
                break
            size -= len(self.batches[k])
            k += 1
        if k:
            self._drop(k)
            self.log_start = max(self.log_start, self.bases[0] if self.batches else self.next_offset)
            self.txns.forget_before(self.log_start)
            history.truncate_from_start(self.epochs, self.log_start)

    def _drop(self, k: int) -> None:
        """Forget the first ``k`` batches (one slice deletion, not k)."""
        self.size -= sum(len(b) for b in self.batches[:k])
        del self.batches[:k], self.bases[:k], self.max_timestamps[:k], self.appended[:k]
