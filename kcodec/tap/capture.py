"""The capture format `kcodec tap` writes (``.kcap`` files), its rotating writer and its reader.

A capture file is a header followed by records; all integers are big-endian.

Header, 32 bytes::

    magic    8 bytes   b"KCODECAP"
    version  uint16    1
    flags    uint16    0 (reserved)
    session  uint64    the tap's session id (its start time in ns): connection ids are unique within it
    sequence uint32    the file's number within the session (0, 1, 2, ... as files rotate)
    reserved uint32    0

Record, a 21-byte head and ``length`` bytes of payload::

    kind     uint8     0 = frame client -> broker, 1 = frame broker -> client,
                       2 = connection opened (payload: UTF-8 "client_host:port upstream_host:port"),
                       3 = connection closed (payload: UTF-8 reason, may be empty)
    conn     uint64    connection id, unique within the session
    ts_ns    int64     wall-clock time (ns since the epoch) when the tap had the whole frame
    length   uint32    payload bytes that follow

A frame payload is the whole Kafka frame exactly as it crossed the wire (size prefix, header, body);
a response the tap rewrote (broker addresses) is recorded as the broker sent it. A file ends at a
record boundary; a truncated last record (a crash while writing) is reported, never misread.
"""

from __future__ import annotations

import io
import os
import struct
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

MAGIC = b"KCODECAP"
VERSION = 1
HEADER = struct.Struct(">8sHHQII")
RECORD = struct.Struct(">BQqI")
REQUEST, RESPONSE, OPENED, CLOSED = 0, 1, 2, 3
SUFFIX = ".kcap"


class CaptureError(ValueError):
    """A capture file that is not one, is of an unknown version, or is cut short."""


class Record(NamedTuple):
    kind: int
    conn: int
    ts_ns: int
    payload: bytes


class CaptureHeader(NamedTuple):
    version: int
    session: int
    sequence: int


def parse_header(data: Union[bytes, memoryview]) -> CaptureHeader:
    if len(data) < HEADER.size:
        raise CaptureError(f"capture header needs {HEADER.size} bytes, {len(data)} given")
    magic, version, _flags, session, sequence, _ = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise CaptureError(f"not a kcodec capture (magic {bytes(magic)!r}, expected {MAGIC!r})")
    if version != VERSION:
        raise CaptureError(f"capture format version {version} is not supported (this reader: {VERSION})")
    return CaptureHeader(version, session, sequence)


def iter_records(data: Union[bytes, memoryview]) -> Iterator[Record]:
    """Every record of a whole capture file held in memory (the header is checked first)."""
    parse_header(data)
    return read_records(io.BytesIO(data), HEADER.size)


def read_records(f: BinaryIO, pos: int = HEADER.size) -> Iterator[Record]:
    """Every record of a capture file from byte ``pos`` of a file object, one at a time (bounded memory)."""
    return (record for record, _, _ in _records(f, pos, True))


def record_heads(f: BinaryIO, pos: int = HEADER.size) -> Iterator[tuple[Record, int, int]]:
    """Every record from byte ``pos`` of a seekable file without its payload, which is skipped, not read:
    (the record, its payload empty; where its payload lies in the file; its length)."""
    return _records(f, pos, False)


def _records(f: BinaryIO, pos: int, payloads: bool) -> Iterator[tuple[Record, int, int]]:
    size = 0 if payloads else f.seek(0, io.SEEK_END)
    f.seek(pos)
    while True:
        head = f.read(RECORD.size)
        if not head:
            return
        if len(head) < RECORD.size:
            raise CaptureError(f"record head cut short at byte {pos}")
        kind, conn, ts, length = RECORD.unpack(head)
        if kind > CLOSED:
            raise CaptureError(f"unknown record kind {kind} at byte {pos}")
        at = pos + RECORD.size
        if payloads:
            payload = f.read(length)
        else:
            payload = b""
            f.seek(length, io.SEEK_CUR)
        have = len(payload) if payloads else max(0, min(length, size - at))
        if have < length:
            raise CaptureError(f"record at byte {pos} needs {length} bytes, {have} left")
        yield Record(kind, conn, ts, payload), at, length
        pos = at + length


def read_capture(path: Union[str, Path]) -> tuple[CaptureHeader, list[Record]]:
    data = Path(path).read_bytes()
    return parse_header(data), list(iter_records(data))


class CaptureWriter:
    """Writes records to ``DIR/capture-<session>-<sequence>.kcap``, starting a new file past ``max_bytes``.

    Not thread-safe: one writer thread owns it (the tap's recorder).
    """

    def __init__(self, directory: Union[str, Path], session: int, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.session = session
        self.max_bytes = max_bytes
        self.sequence = -1
        self.files: list[Path] = []
        self.records = 0
        self._file: Optional[BinaryIO] = None
        self._size = 0

    def _rotate(self) -> None:
        self.close()
        self.sequence += 1
        path = self.directory / f"capture-{self.session}-{self.sequence:05d}{SUFFIX}"
        self._file = open(path, "wb")
        self._file.write(HEADER.pack(MAGIC, VERSION, 0, self.session, self.sequence, 0))
        self._size = HEADER.size
        self.files.append(path)

    def write(self, kind: int, conn: int, ts_ns: int, payload: Union[bytes, memoryview]) -> None:
        if self._file is None or (self._size > HEADER.size and self._size + RECORD.size + len(payload) > self.max_bytes):
            self._rotate()
        assert self._file is not None
        self._file.write(RECORD.pack(kind, conn, ts_ns, len(payload)))
        self._file.write(payload)
        self._size += RECORD.size + len(payload)
        self.records += 1

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
