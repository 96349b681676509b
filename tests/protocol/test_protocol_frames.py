"""FrameReader: whole frames out of a stream in any chunking, as views of the bytes received, never
overwritten later, and a bad size prefix refused before anything is buffered for it."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcodec import DecodeError
from kcodec.protocol import FrameReader


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


bodies = st.lists(st.binary(max_size=300), min_size=1, max_size=12)


def cuts(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(edges, edges[1:])]


@given(bodies, st.lists(st.integers(0, 10_000), max_size=20), st.sampled_from(["bytes", "bytearray", "memoryview"]))
def test_any_chunking_gives_the_same_frames(items, points, kind):
    data = b"".join(frame(b) for b in items)
    reader = FrameReader(buffer_size=64)
    out = []
    for chunk in cuts(data, points):
        wrapped = {"bytes": bytes, "bytearray": bytearray, "memoryview": lambda c: memoryview(bytearray(c))}[kind](chunk)
        out += reader.feed(wrapped)
        if kind != "bytes":
            wrapped[:] = b"\x00" * len(wrapped)  # the caller reuses its buffer: frames must not see it
    assert [bytes(f) for f in out] == [frame(b) for b in items]
    assert reader.pending == 0 and reader.position == len(data)


@given(bodies, st.lists(st.integers(1, 500), max_size=30))
def test_reading_into_the_readers_buffer_gives_the_same_frames(items, sizes):
    data = b"".join(frame(b) for b in items)
    reader = FrameReader(buffer_size=32)
    out, pos, i = [], 0, 0
    while pos < len(data):
        room = reader.get_buffer()
        n = min(len(room), len(data) - pos, sizes[i % len(sizes)] if sizes else len(room))
        room[:n] = data[pos:pos + n]
        pos, i = pos + n, i + 1
        out += reader.buffer_updated(n)
    assert [bytes(f) for f in out] == [frame(b) for b in items]


def test_whole_frames_of_a_bytes_chunk_are_views_of_it():
    chunk = frame(b"one") + frame(b"two") + frame(b"three")[:5]
    reader = FrameReader()
    first, second = reader.feed(chunk)
    assert first.obj is chunk and second.obj is chunk and first.readonly
    (third,) = reader.feed(frame(b"three")[5:])  # the cut one was copied once, into the reader's buffer
    assert bytes(third) == frame(b"three") and third.obj is not chunk


def test_frames_are_never_overwritten():
    reader = FrameReader(buffer_size=16)
    kept = []
    for i in range(200):  # small buffers fill up and are replaced: old frames keep their bytes
        room = reader.get_buffer()
        data = frame(bytes([i % 256]) * (i % 7))
        room[:len(data)] = data
        kept += reader.buffer_updated(len(data))
    assert [bytes(f) for f in kept] == [frame(bytes([i % 256]) * (i % 7)) for i in range(200)]


def test_a_large_frame_gets_room_for_all_of_it_at_once():
    reader = FrameReader(buffer_size=64)
    reader.feed(bytearray(struct.pack(">i", 100_000)))
    room = reader.get_buffer()
    assert len(room) >= 100_000  # the rest goes straight in, no copy on the way
    room[:100_000] = b"x" * 100_000
    (big,) = reader.buffer_updated(100_000)
    assert len(big) == 100_004


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xfe", struct.pack(">i", 1 << 20)])
def test_a_bad_size_is_refused_after_the_good_frames(prefix):
    reader = FrameReader(max_frame_size=1000)
    good = frame(b"ok")
    (f,) = reader.feed(good + prefix + b"junk")
    assert bytes(f) == good
    with pytest.raises(DecodeError, match=r"frame size -?\d+ is outside 0..1000 at byte 6"):
        reader.feed(b"")
    assert reader.pending <= len(prefix) + 4  # nothing was allocated for the claimed size


def test_buffer_updated_refuses_more_than_was_given():
    reader = FrameReader(buffer_size=8)
    room = reader.get_buffer()
    with pytest.raises(ValueError):
        reader.buffer_updated(len(room) + 1)
