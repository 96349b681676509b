"""Pass 2 peeks at a request's header once: the body offset of the frames row's peek
(``decode.header_and_body``) goes to the request's decode (``conversation.request_row``), which then gives
the rows it gives when it peeks again itself, whatever the frame holds."""

from __future__ import annotations

import struct
from typing import Any, Optional

import pytest

import kcodec
from kcodec.messages import MetadataRequest, ProduceRequest
from kcodec.records import BatchBuilder, Compression
from kcodec.spark import conversation, decode

P = ProduceRequest


def _produce(version: int) -> bytes:
    b = BatchBuilder(compression=Compression.NONE)
    for i in range(3):
        b.append(b"k%d" % i, b"value %d" % i, timestamp=1_700_000_000_000 + i)
    records = b.build() if version >= 3 else None
    req = P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name="t", partition_data=[P.PartitionProduceData(index=0, records=records)])])
    return kcodec.encode_request(req, version, 7, client_id="c")


def _trailing(frame: bytes, extra: bytes = b"\x00\x01\x02") -> bytes:
    """The frame with bytes after its body, inside its size prefix."""
    return struct.pack(">i", len(frame) - 4 + len(extra)) + frame[4:] + extra


def _rows(frame: bytes, body: Optional[int]) -> tuple[Any, ...]:
    corr, key, version, client, acks, error, _ = decode.header_and_body(0, frame)
    f = {"source": "s", "capture": "c", "conn": "c/1", "position": 3, "correlation_id": corr, "api_key": key,
         "api_version": version, "client_id": client, "ts_ns": 10, "acks": acks, "error": error}
    emitted: list[tuple[str, dict[str, Any]]] = []
    row, key_version = conversation.request_row(f, conversation.Tables(lambda t, r: emitted.append((t, r))), frame,
                                                body)
    return row, key_version, emitted


FRAMES = [pytest.param(_produce(v), id=f"produce-v{v}") for v in (3, 9)] + [
    pytest.param(_trailing(_produce(9)), id="produce-trailing"),
    pytest.param(kcodec.encode_request(MetadataRequest(topics=None), 12, 1, client_id="m"), id="metadata-v12"),
    pytest.param(_trailing(kcodec.encode_request(MetadataRequest(topics=[]), 1, 2)), id="metadata-trailing"),
]


@pytest.mark.parametrize("frame", FRAMES)
def test_the_peeked_body_gives_the_rows_of_a_second_peek(frame):
    *_, body = decode.header_and_body(0, frame)
    assert body == kcodec.decode_request_header(frame)[1]
    assert _rows(frame, body) == _rows(frame, None)


def test_a_frame_longer_than_its_size_is_peeked_again_strictly():
    # Bytes after the frame's size: the lenient peek reads the header, the strict decode must still refuse.
    frame = _produce(9) + b"\x00\x00"
    got = decode.header_and_body(0, frame)
    assert got[1:3] == (0, 9) and got[-1] is None
    row, key_version, emitted = _rows(frame, got[-1])
    assert key_version is None and "bytes after the frame" in row["decode_error"]
    assert [t for t, _ in emitted] == ["batches"] and "bytes after the frame" in emitted[0][1]["error"]


def test_header_and_body_of_responses_and_errors():
    assert decode.header_and_body(1, b"\x00\x00\x00\x04\x00\x00\x00\x05") == (5, None, None, None, None, None, None)
    assert decode.header_and_body(1, b"\x00\x00")[-2:] == ("response frame of 2 bytes has no correlation id", None)
    got = decode.header_and_body(0, b"\x00\x00\x00\x20\x00")
    assert got[:5] == (None,) * 5 and got[5] and got[6] is None
