"""A Fetch response frame with the stored batches spliced in, as pieces written one after the other: no
copy of the record bytes before the socket (the codec's encoding would make three).

The response is encoded by kcodec with a unique 16-byte marker as each partition's records; each marker
(and its length prefix: int32, or a one-byte uvarint in flexible versions) is then replaced by the real
length and the stored batches, and the frame size corrected. Markers are random per response and found
in order, after the previous one, so record bytes are never searched.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import kcodec

MARKER_SIZE = 16
_I32 = struct.Struct(">i")
_COUNTER = [0]


def new_marker() -> bytes:
    """A 16-byte value that occurs nowhere else in the response (8 random bytes and a counter)."""
    _COUNTER[0] += 1
    return os.urandom(8) + _COUNTER[0].to_bytes(8, "big")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_spliced(resp: Any, version: int, correlation_id: int,
                   records: list[tuple[bytes, list[Any]]]) -> list[Any]:
    """The frame of ``resp`` whose partitions carry the markers of ``records`` ((marker, batches), in the
    order the partitions appear in the response), with the batches in the markers' place: its pieces."""
    frame = kcodec.encode_response(resp, version, correlation_id)
    if not records:
        return [frame]
    flexible = version >= 12
    prefix = 1 if flexible else 4  # uvarint(16 + 1) is one byte; int32 is four
    view = memoryview(frame)
    pieces: list[Any] = []
    pos = 4
    for marker, batches in records:
        at = frame.find(marker, pos)
        if at < 0:
            raise ValueError("a records marker is missing from the encoded Fetch response")
        pieces.append(view[pos:at - prefix])
        n = sum(len(b) for b in batches)
        pieces.append(_uvarint(n + 1) if flexible else _I32.pack(n))
        pieces.extend(batches)
        pos = at + MARKER_SIZE
    pieces.append(view[pos:])
    return [_I32.pack(sum(len(p) for p in pieces)), *pieces]
