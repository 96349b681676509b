"""The data file beside the state file: an append-only journal of appended batches and log-start moves.

Each entry is framed ``length (u32) | crc32c (u32) | kind (u8) | topic id (16) | partition (i32) | body``;
a batch entry's body is the stored batch (its base offset already written), a log-start entry's body the
new log start (i64), a log-end entry's the end the log was truncated to (i64), a transaction-state entry's body one transactional id's coordinator state (the id,
length-prefixed, then what txn/journal.py encodes, or nothing once the id expired; the latest entry of
an id wins). A journal mostly made of dropped data is rewritten at load (atomically). Entries are
written with one ``os.write`` per request (in the OS cache at once: a killed process loses nothing
written) and fsynced before an acks=-1 response. At load a torn or corrupt tail (a crash in the middle of
a write) is cut off, and everything before it replayed.
"""

from __future__ import annotations

import logging
import os
import struct
import uuid
from pathlib import Path
from typing import Iterator, Optional

from kcodec.records import crc32c

log = logging.getLogger("kcodec_broker")

BATCH, LOG_START, PRODUCER_IDS, TXN_STATE = 1, 2, 3, 4  # PRODUCER_IDS: the next producer id, after a rewrite
LOG_END = 5  # the log truncated to this end (a lagging replica became leader)
_FRAME = struct.Struct(">II")
_KEY = struct.Struct(">B16si")
_OFFSET = struct.Struct(">q")
_ID_LENGTH = struct.Struct(">H")
_NO_TOPIC = uuid.UUID(int=0)


def entry(kind: int, topic_id: uuid.UUID, partition: int, body: bytes | bytearray) -> bytes:
    payload = _KEY.pack(kind, topic_id.bytes, partition) + body
    return _FRAME.pack(len(payload), crc32c(payload)) + payload


def log_start_entry(topic_id: uuid.UUID, partition: int, offset: int, kind: int = LOG_START) -> bytes:
    """A LOG_START (or LOG_END) entry: the partition's new log start (or end) offset."""
    return entry(kind, topic_id, partition, _OFFSET.pack(offset))


def txn_state_entry(transactional_id: str, state: bytes) -> bytes:
    name = transactional_id.encode()
    return entry(TXN_STATE, _NO_TOPIC, -1, _ID_LENGTH.pack(len(name)) + name + state)


def split_txn_state(body: bytes) -> Optional[tuple[str, bytes]]:
    """(transactional id, its encoded state) of a transaction-state entry's body; None: malformed."""
    if len(body) < _ID_LENGTH.size:
        return None
    (n,) = _ID_LENGTH.unpack_from(body, 0)
    end = _ID_LENGTH.size + n
    if len(body) < end:
        return None
    try:
        return body[_ID_LENGTH.size:end].decode(), body[end:]
    except UnicodeDecodeError:
        return None


class DataFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._dirty = False

    def replay(self) -> Iterator[tuple[int, uuid.UUID, int, bytes]]:
        """(kind, topic id, partition, body) of every whole entry; then cut a torn tail off the file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        pos, n = 0, len(data)
        while pos + _FRAME.size <= n:
            length, crc = _FRAME.unpack_from(data, pos)
            start, end = pos + _FRAME.size, pos + _FRAME.size + length
            if length < _KEY.size or end > n or crc32c(memoryview(data)[start:end]) != crc:
                break
            kind, tid, partition = _KEY.unpack_from(data, start)
            yield kind, uuid.UUID(bytes=tid), partition, data[start + _KEY.size:end]
            pos = end
        if pos < n:
            log.warning("%s: cutting a torn tail of %d bytes at offset %d", self.path, n - pos, pos)
            with open(self.path, "r+b") as f:
                f.truncate(pos)
                os.fsync(f.fileno())

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def rewrite(self, entries: list[bytes]) -> None:
        """Replace the journal by ``entries`` atomically: a temporary file, fsync, rename, fsync the
        directory. Called at load, before anything is appended."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            for e in entries:
                f.write(e)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        log.info("%s: rewritten with %d entries", self.path, len(entries))

    def write(self, data: bytes) -> None:
        if self._fd < 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self._dirty = True

    def sync(self) -> None:
        if self._dirty and self._fd >= 0:
            os.fsync(self._fd)
            self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
