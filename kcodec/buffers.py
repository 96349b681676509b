"""Buffers: bytes that travel as several buffers, written one after the other, never joined.

``kcodec.encode_buffers`` returns one (a message's bytes with its record batches left as the caller's own
buffers, for ``socket.sendmsg`` or ``transport.writelines``), and a records or bytes field may hold one:
a Fetch response's partition whose batches sit apart in a log is ``records=Buffers([batch1, batch2])``.
``encode`` copies such a value once, into its output; ``encode_buffers`` puts each part in its list.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional


class Buffers(list):  # type: ignore[type-arg]
    """A list of bytes-like objects and ``nbytes``, their total length.

    ``nbytes`` is counted from the parts when not given. Parts are the caller's: they must not change
    while a message that holds them is encoded, nor until its buffers are written.
    """

    nbytes: int

    def __init__(self, parts: Iterable[Any] = (), nbytes: Optional[int] = None) -> None:
        super().__init__(parts)
        self.nbytes = sum(memoryview(p).nbytes for p in self) if nbytes is None else nbytes

    def join(self) -> bytes:
        """The bytes they make, copied into one object (for tests and logs, not for sending)."""
        return b"".join(self)

    def __repr__(self) -> str:
        return f"Buffers({len(self)} parts, {self.nbytes} bytes)"
