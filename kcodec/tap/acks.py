"""A Produce request sent with acks=0 gets no answer (Kafka's protocol): the tap must not wait for one, and
the analysis pairs such requests apart. Both read acks from the request's bytes, without a full decode."""

from __future__ import annotations

import struct
from typing import Optional, Union

import kcodec

PRODUCE = 0


def produce_acks(frame: Union[bytes, memoryview], pos: int, end: int, version: int) -> Optional[int]:
    """The acks of a Produce request body at ``pos`` (before it, from v3, the transactional id: a
    nullable string, compact from v9); None when the body is too short to say."""
    if version >= 3:
        if version >= 9:
            n, shift = 0, 0
            while pos < end and shift < 35:
                b = frame[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            pos += max(0, n - 1)
        elif pos + 2 <= end:
            pos += 2 + max(0, struct.unpack_from(">h", frame, pos)[0])
    if pos + 2 > end:
        return None
    return int(struct.unpack_from(">h", frame, pos)[0])


def expects_answer(frame: Union[bytes, memoryview]) -> bool:
    """Whether a request frame gets a response: all do but a Produce with acks=0 (when in doubt: yes)."""
    if len(frame) < 6 or struct.unpack_from(">h", frame, 4)[0] != PRODUCE:
        return True
    try:
        h = kcodec.peek_request_header(frame, strict=False)
    except kcodec.KcodecError:
        return True
    return produce_acks(frame, h.body_offset, h.end, h.api_version) != 0
