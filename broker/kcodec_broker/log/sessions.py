"""Incremental fetch sessions (KIP-227): which partitions a consumer's session holds and what it was told.

A full fetch (epoch 0) opens a session and is answered in full; an incremental one (epoch > 0) adds,
updates and forgets partitions, and is answered with only the partitions that changed: records, a new
high watermark, last stable offset or log start, or an error. Epoch -1 closes a session.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any, Optional

from kcodec.errors import ErrorCode

FINAL_EPOCH = -1
Key = tuple[Any, int]  # (topic name, or topic id from Fetch v13, partition)
MAX_SESSIONS = 1000  # Kafka's max.incremental.fetch.session.cache.slots


class FetchSession:
    __slots__ = ("id", "epoch", "partitions")

    def __init__(self, session_id: int) -> None:
        self.id = session_id
        self.epoch = 1  # the epoch the next incremental request must carry
        # key -> [fetch offset, partition max bytes, last high watermark, last LSO, last log start,
        #         current leader epoch (-1: unchecked; Kafka's session keeps it too)]
        self.partitions: OrderedDict[Key, list[int]] = OrderedDict()


class FetchSessions:
    """Sessions of all brokers of the cluster, by (node id, session id), least recently used dropped."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[tuple[int, int], FetchSession] = OrderedDict()
        self._ids = itertools.count(1)

    def resolve(self, node_id: int, session_id: int, epoch: int, wanted: list[tuple[Key, int, int, int]],
                forgotten: list[Key]) -> tuple[ErrorCode, Optional[FetchSession], bool]:
        """(error, session or None, incremental) for a request naming ``wanted`` (key, fetch offset,
        max bytes, current leader epoch) and ``forgotten`` keys."""
        if epoch in (0, FINAL_EPOCH):
            if session_id:
                self._sessions.pop((node_id, session_id), None)
            if epoch == FINAL_EPOCH:
                return ErrorCode.NONE, None, False
            session = FetchSession(next(self._ids) & 0x7FFFFFFF or next(self._ids))
            self._sessions[(node_id, session.id)] = session
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
            for key, offset, max_bytes, leader_epoch in wanted:
                session.partitions[key] = [offset, max_bytes, -1, -1, -1, leader_epoch]
            return ErrorCode.NONE, session, False
        found = self._sessions.get((node_id, session_id))
        if found is None:
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND, None, True
        if found.epoch != epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, None, True
        self._sessions.move_to_end((node_id, session_id))
        found.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        for key in forgotten:
            found.partitions.pop(key, None)
        for key, offset, max_bytes, leader_epoch in wanted:
            cached = found.partitions.get(key)
            if cached is None:
                found.partitions[key] = [offset, max_bytes, -1, -1, -1, leader_epoch]
            else:
                cached[0], cached[1], cached[5] = offset, max_bytes, leader_epoch
        return ErrorCode.NONE, found, True

    def changed(self, session: FetchSession, key: Key, hw: int, lso: int, log_start: int, error: int,
                news: bool) -> bool:
        """Whether an incremental response must carry this partition; notes what it is told. ``news``:
        records or a preferred read replica (KIP-392), always sent, as an error is."""
        cached = session.partitions.get(key)
        if cached is None:
            return True
        moved = cached[2] != hw or cached[3] != lso or cached[4] != log_start
        cached[2], cached[3], cached[4] = hw, lso, log_start
        return moved or news or bool(error)
