"""Frames cut out of a byte stream without copying them twice: each is a memoryview of the bytes received.

A ``FrameReader`` takes bytes however they arrive, as chunks (``feed``) or written straight into its
buffer (``get_buffer`` / ``buffer_updated``: ``socket.recv_into``, ``asyncio.BufferedProtocol``), and
returns every whole frame (size prefix included) as a read-only memoryview:

- chunks that are ``bytes`` are not copied at all: their whole frames are views of them, and only a frame
  cut at the chunk's end is copied, into the reader's buffer;
- bytes written into the reader's buffer are never copied again: frames are views of it.

A frame keeps the buffer it views alive, and no byte of it is ever overwritten: the reader writes only
past what it has handed out, and takes a new buffer when its own is full (carrying over the unfinished
frame, at most one). Copy a frame (``bytes(frame)``) to keep it long while the stream goes on.

A size prefix that is negative or larger than ``max_frame_size`` is a ``kcodec.DecodeError`` at its
offset in the stream before anything is buffered for it: frames completed before it are returned first,
the next call raises.
"""

from __future__ import annotations

import struct
from typing import Any, Optional

from kcodec.core.coerce import flat_view
from kcodec.exceptions import DecodeError
from kcodec.framing import DEFAULT_MAX_FRAME

_SIZE = struct.Struct(">i")
DEFAULT_BUFFER = 65536


class FrameReader:
    """Whole frames, as memoryviews, out of a byte stream (see the module's text)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME, *, buffer_size: int = DEFAULT_BUFFER) -> None:
        self.max_frame_size = max_frame_size
        self.buffer_size = buffer_size
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._start = 0  # the first byte not yet returned in a frame
        self._end = 0  # the end of the bytes received
        self._lent = False  # whether a frame views the current buffer (its bytes are then never reused)
        self._consumed = 0  # bytes of the stream before _start (for error offsets)

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole frame."""
        return self._end - self._start

    @property
    def unfinished(self) -> Optional[int]:
        """The size (prefix aside) of the frame being received, once its prefix is in; else None."""
        if self._end - self._start < 4:
            return None
        return int(_SIZE.unpack_from(self._view, self._start)[0])

    @property
    def position(self) -> int:
        """The stream offset of the next frame: every byte returned in frames so far."""
        return self._consumed

    def feed(self, data: Any) -> list[memoryview]:
        """Add a chunk; return every frame it completes, in order. A ``bytes`` chunk is not copied (its
        whole frames are views of it); any other bytes-like one is copied once (the caller may reuse it), a
        non-contiguous one twice."""
        if type(data) is bytes and self._start == self._end:
            view = memoryview(data)
            frames, used = self._cut(view, 0, len(view))
            if used < len(view):
                self._append(view[used:])
            return frames
        self._append(flat_view(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data)
        return self._frames()

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Writable room at the end of the reader's buffer, for ``socket.recv_into`` or
        ``asyncio.BufferedProtocol.get_buffer``; report what was written with ``buffer_updated``."""
        self._reserve(max(sizehint, 1) if sizehint > 0 else self._wanted())
        return self._view[self._end:]

    def buffer_updated(self, nbytes: int) -> list[memoryview]:
        """``nbytes`` were written into the room ``get_buffer`` gave: every frame they complete."""
        if not 0 <= nbytes <= len(self._buf) - self._end:
            raise ValueError(f"{nbytes} bytes do not fit the {len(self._buf) - self._end} given")
        self._end += nbytes
        return self._frames()

    # -- inside ------------------------------------------------------------------------------------------

    def _cut(self, view: memoryview, start: int, end: int) -> tuple[list[memoryview], int]:
        """The whole frames in view[start:end], and where the first unfinished one starts."""
        frames: list[memoryview] = []
        unpack = _SIZE.unpack_from
        while end - start >= 4:
            size = unpack(view, start)[0]
            if size < 0 or size > self.max_frame_size:
                if frames:  # hand over the good frames first; the next call raises
                    break
                raise DecodeError(f"frame size {size} is outside 0..{self.max_frame_size}",
                                  self._consumed + (start - self._start if view.obj is self._buf else start))
            if end - start < 4 + size:
                break
            frames.append(view[start:start + 4 + size].toreadonly())
            start += 4 + size
        if frames and view.obj is not self._buf:
            self._consumed += start
        return frames, start

    def _frames(self) -> list[memoryview]:
        frames, start = self._cut(self._view, self._start, self._end)
        if frames:
            self._consumed += start - self._start
            self._start = start
            self._lent = True
        if self._start == self._end and not self._lent:
            self._start = self._end = 0  # nothing views this buffer: its room is free again
        return frames

    def _wanted(self) -> int:
        """Room worth offering: the rest of the unfinished frame when its size is known, else a chunk."""
        held = self._end - self._start
        if held >= 4:
            size = _SIZE.unpack_from(self._view, self._start)[0]
            if 0 <= size <= self.max_frame_size and 4 + size > held:
                return 4 + size - held
        return self.buffer_size

    def _reserve(self, n: int) -> None:
        """At least n bytes of room after _end, in this buffer or in a new one holding the unfinished frame."""
        if len(self._buf) - self._end >= n:
            return
        held = self._end - self._start
        if not self._lent and held + n <= len(self._buf):  # nothing views it: move the unfinished frame down
            self._view[:held] = self._view[self._start:self._end]
        else:
            buf = bytearray(max(self.buffer_size, held + n))
            buf[:held] = self._view[self._start:self._end]
            self._buf, self._view, self._lent = buf, memoryview(buf), False
        self._start, self._end = 0, held

    def _append(self, data: Any) -> None:
        n = len(data)
        self._reserve(max(n, self._wanted() if self._end - self._start >= 4 else n))
        self._view[self._end:self._end + n] = data
        self._end += n
