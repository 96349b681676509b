"""Every partition's log of one cluster, the producer ids, the data file, and fetch waiters.

The handlers call this under the cluster lock, on the event loop; long-polling fetches wait on
``changed()``, a future completed by the next append (or by DeleteRecords / a topic deletion).
Producer state expires (``expire_producers``, before every request) the way transactions time out in the
transaction coordinator: nothing is looked at before the earliest due time.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from kcodec.errors import ErrorCode

from .datafile import (BATCH, LOG_END, LOG_START, PRODUCER_IDS, TXN_STATE, DataFile, entry, log_start_entry, split_txn_state,
                       txn_state_entry)
from . import epochs as history
from .partition import PartitionLog, set_log_append_time
from .sessions import FetchSessions
from .producers import DEFAULT_EXPIRATION_MS, NEVER, ProducerIds, check, drop_expired, mark, record
from .transactions import CONTROL_BIT, COORDINATOR_EPOCH, TRANSACTIONAL_BIT

# base offset, length, leader epoch, magic, crc, attributes, last offset delta, base ts, max ts, pid, epoch, seq,
# count
_HEADER = struct.Struct(">qiibIhiqqqhii")
# The default bound on one partition's bytes in memory (retention.bytes applies below it).
DEFAULT_MAX_PARTITION_BYTES = 256 * 1024 * 1024
COMPACT_SLACK = 1 << 20  # a journal is rewritten at load once over twice what it keeps plus this

Key = tuple[uuid.UUID, int]


_RECHECK_MS = 1000  # the soonest a write makes the producer expiry look again


def now_ms() -> int:
    return int(time.time() * 1000)


class LogStore:
    def __init__(self, data_file: Optional[Path] = None,
                 max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
                 producer_id_expiration_ms: int = DEFAULT_EXPIRATION_MS) -> None:
        if producer_id_expiration_ms < 1:
            raise ValueError(f"producer id expiration {producer_id_expiration_ms} ms: it must be at least 1")
        self.logs: dict[Key, PartitionLog] = {}
        self.producer_ids = ProducerIds()
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers_due = NEVER  # no partition's producer state expires before this (ms)
        # the transaction coordinator's state per transactional id, as journaled (txn/journal.py decodes it)
        self.txn_states: dict[str, bytes] = {}
        self.max_partition_bytes = max_partition_bytes
        self.file = DataFile(data_file) if data_file is not None else None
        self._pending: list[bytes] = []
        self._waiters: list[asyncio.Future[None]] = []
        self.fetch_sessions = FetchSessions()

    def log(self, topic_id: uuid.UUID, partition: int) -> PartitionLog:
        key = (topic_id, partition)
        plog = self.logs.get(key)
        if plog is None:
            plog = self.logs[key] = PartitionLog()
        return plog

    def bounds(self, topic_id: uuid.UUID, partition: int) -> tuple[int, int]:
        """(log start offset, high watermark) of a partition (0, 0 before any data): for consumer-group
        lag and OffsetFetch; call it under the cluster lock, as handlers are."""
        plog = self.logs.get((topic_id, partition))
        return (plog.log_start, plog.next_offset) if plog is not None else (0, 0)

    def drop_topic(self, topic_id: uuid.UUID) -> None:
        for key in [k for k in self.logs if k[0] == topic_id]:
            del self.logs[key]
        self._wake()

    # -- writes ----------------------------------------------------------------------------------------
    def append(self, topic_id: uuid.UUID, partition: int, batch: Any, log_append_time: bool,
               retention_bytes: int, retention_ms: int, segment_ms: int, leader_epoch: int) -> tuple[Any, int, int]:
        """Append one validated v2 batch (any buffer) in the leader's ``leader_epoch``: (error code, base
        offset, log append time or -1). An idempotent producer's duplicate is answered with its first
        offset and, as Kafka, the stored batch's timestamp as log append time; it is not appended."""
        plog = self.log(topic_id, partition)
        h = _HEADER.unpack_from(batch, 0)
        pid, epoch, seq, count = h[9], h[10], h[11], h[12]
        if pid in plog.txns.open and not h[5] & TRANSACTIONAL_BIT:
            return ErrorCode.INVALID_TXN_STATE, -1, -1  # Kafka: a transactional write was expected
        if pid >= 0 and seq >= 0:
            error, duplicate = check(plog.producers, pid, epoch, seq, count)
            if error or duplicate is not None:
                return (error, -1, -1) if duplicate is None else (error, *duplicate)
        data = bytearray(batch)
        append_time = -1
        max_ts = h[8]
        now = now_ms()
        if log_append_time:
            append_time = max_ts = now
            set_log_append_time(data, append_time)
        base = plog.append(data, count, max_ts, now, leader_epoch)
        self._note(plog, data, h, base, now)
        if self.file is not None:
            self._pending.append(entry(BATCH, topic_id, partition, data))
        bound = self.max_partition_bytes if retention_bytes < 0 else min(retention_bytes, self.max_partition_bytes)
        plog.enforce(bound, retention_ms, segment_ms, now)
        return 0, base, append_time

    def _note(self, plog: PartitionLog, data: Any, h: tuple[Any, ...], base: int, now: int) -> None:
        """Producer state after a batch was stored: sequences, marker epochs, open transactions."""
        attributes, max_ts, pid, epoch, seq, count = h[5], h[8], h[9], h[10], h[11], h[12]
        if pid >= 0 and (seq >= 0 or attributes & CONTROL_BIT):
            if seq >= 0:
                record(plog.producers, pid, epoch, seq, count, base, max_ts)
            else:
                mark(plog.producers, pid, epoch, COORDINATOR_EPOCH, max_ts)
            # its last timestamp is at least max_ts: it expires no earlier than this. Records stamped long
            # ago (a backfill, a mirror) expire at once; the next look is then a second away, not at the
            # next request, so such a producer does not make every request scan every partition (Kafka
            # looks every producer.id.expiration.check.interval.ms, 10 minutes).
            due = max(max_ts + self.producer_id_expiration_ms, now + _RECHECK_MS)
            self._producers_due = min(self._producers_due, due)
        plog.txns.on_append(data, attributes, pid, base)

    def expire_producers(self, now: Optional[int] = None) -> None:
        """Forget every partition's producers idle past the expiration (producers.drop_expired), then the
        producer ids no partition holds any more (ProducerIds.forget_idle). Runs before every request, so
        it looks at the partitions only once the earliest due time of either has come."""
        now = now_ms() if now is None else now
        expiration = self.producer_id_expiration_ms
        if now >= self._producers_due:
            due = NEVER
            for plog in self.logs.values():
                due = min(due, drop_expired(plog.producers, plog.txns.open, now, expiration))
            self._producers_due = due
        if now >= self.producer_ids.due(expiration):
            active = {pid for plog in self.logs.values() for pid in plog.producers}
            self.producer_ids.forget_idle(now, expiration, active)

    def init_producer_id(self, pid: int, epoch: int) -> tuple[Any, int, int]:
        """InitProducerId (producers.ProducerIds.init); a new id is journaled at once (fsynced), so that
        no id is given out twice across restarts."""
        before = self.producer_ids.next_id
        out = self.producer_ids.init(pid, epoch, now_ms())
        if self.file is not None and self.producer_ids.next_id != before:
            self._pending.append(self._producer_ids_entry())
            self.flush(sync=True)
        return out

    def _producer_ids_entry(self) -> bytes:
        return entry(PRODUCER_IDS, uuid.UUID(int=0), -1, struct.pack(">q", self.producer_ids.next_id))

    def journal_txn_state(self, transactional_id: str, state: bytes) -> None:
        """Journal a transactional id's coordinator state (written by the next flush)."""
        if self.file is not None:
            self.txn_states[transactional_id] = state
            self._pending.append(txn_state_entry(transactional_id, state))

    def forget_txn_state(self, transactional_id: str) -> None:
        """Journal that a transactional id expired (an empty state: the load forgets the id)."""
        if self.file is not None:
            self.txn_states.pop(transactional_id, None)
            self._pending.append(txn_state_entry(transactional_id, b""))

    def delete_records(self, topic_id: uuid.UUID, partition: int, offset: int) -> None:
        plog = self.log(topic_id, partition)
        plog.delete_records(offset)
        if self.file is not None:
            self._pending.append(log_start_entry(topic_id, partition, plog.log_start))

    def truncate(self, topic_id: uuid.UUID, partition: int, end: int, journal: bool = True) -> None:
        """Cut the partition's log at ``end`` (Kafka's truncateTo: a leader whose log ended there was elected).
        Its producer and transaction state is rebuilt from the batches kept, as Kafka reloads it; its epoch
        history loses the epochs from ``end`` on."""
        plog = self.logs.get((topic_id, partition))
        if plog is None or end >= plog.next_offset:
            return
        kept = PartitionLog()
        kept.log_start = min(plog.log_start, end)
        for batch, base, appended in zip(plog.batches, plog.bases, plog.appended):
            if base >= end:
                break
            h = _HEADER.unpack_from(batch, 0)
            kept.restore(batch, base, h[12], h[8], appended)
            self._note(kept, batch, h, base, appended)
        kept.log_start = min(plog.log_start, end)
        kept.next_offset = end
        kept.epochs = plog.epochs
        history.truncate_from_end(kept.epochs, end)
        for name in PartitionLog.__slots__:  # in place: the same object for whoever holds it
            setattr(plog, name, getattr(kept, name))
        if journal:
            if self.file is not None:
                self._pending.append(log_start_entry(topic_id, partition, end, LOG_END))
            self.flush(sync=False)  # journaled, and fetchers waiting past the new end answered

    def flush(self, sync: bool) -> None:
        """Write this request's entries to the data file (and fsync it for acks=-1); wake fetchers."""
        if self.file is not None and self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self.file.write(data)
        if sync and self.file is not None:
            self.file.sync()
        self._wake()

    # -- load ------------------------------------------------------------------------------------------
    def load(self, topic_ids: set[uuid.UUID]) -> int:
        """Replay the data file for the topics that still exist (each partition held to the memory
        bound); the number of batches restored. A journal mostly made of what is gone is rewritten."""
        if self.file is None:
            return 0
        n, now = 0, now_ms()
        for kind, topic_id, partition, body in self.file.replay():
            if kind == PRODUCER_IDS and len(body) == 8:
                self.producer_ids.seen(struct.unpack(">q", body)[0] - 1, 0, now)
                continue
            if kind == TXN_STATE:
                txn = split_txn_state(body)
                if txn is not None and txn[1]:
                    self.txn_states[txn[0]] = txn[1]
                elif txn is not None:  # the id expired
                    self.txn_states.pop(txn[0], None)
                continue
            if kind == BATCH and len(body) >= _HEADER.size:
                h = _HEADER.unpack_from(body, 0)
                base, count, max_ts, pid, epoch = h[0], h[12], h[8], h[9], h[10]
                if pid >= 0:  # ids stay taken even when their topic is gone
                    self.producer_ids.seen(pid, epoch, now)
                if topic_id not in topic_ids:
                    continue
                plog = self.log(topic_id, partition)
                if base < plog.next_offset:
                    continue  # already held: the data file repeats nothing, but stay idempotent
                data = bytearray(body)
                plog.restore(data, base, count, max_ts, now)
                self._note(plog, data, h, base, now)
                plog.enforce(self.max_partition_bytes, -1, 0, now)
                n += 1
            elif kind == LOG_START and len(body) == 8 and topic_id in topic_ids:
                self.log(topic_id, partition).delete_records(struct.unpack(">q", body)[0])
            elif kind == LOG_END and len(body) == 8 and topic_id in topic_ids:
                self.truncate(topic_id, partition, struct.unpack(">q", body)[0], journal=False)
        self._producers_due = now  # a look now, whatever the writes put off:
        self.expire_producers(now)  # the state rebuilt leaves out what had expired (Kafka's snapshot load)
        kept = sum(plog.size for plog in self.logs.values()) + sum(map(len, self.txn_states.values()))
        if self.file.size() > 2 * kept + COMPACT_SLACK:
            self.file.rewrite(self._snapshot())
        return n

    def _snapshot(self) -> list[bytes]:
        """The journal entries that rebuild the present logs: producer ids, the transactional ids' latest
        states, then per partition its log start and its batches."""
        out = [self._producer_ids_entry()]
        out += [txn_state_entry(tid, state) for tid, state in self.txn_states.items()]
        for (topic_id, partition), plog in self.logs.items():
            out.append(log_start_entry(topic_id, partition, plog.log_start))
            out += [entry(BATCH, topic_id, partition, b) for b in plog.batches]
        return out

    def close(self) -> None:
        if self.file is not None:
            self.file.sync()
            self.file.close()

    # -- long polling ----------------------------------------------------------------------------------
    def changed(self) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        return fut

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_complete, fut)


def _complete(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
