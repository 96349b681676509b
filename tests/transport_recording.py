"""Recording what a frame's buffers become on their way out: each buffer handed to an asyncio transport
(write, writelines) or, before Python 3.12, to writev on its socket (kcodec.protocol.writes)."""

from __future__ import annotations

import os

import kcodec.protocol.writes as writes
from kcodec.protocol.writes import WRITEV


def record_writes(transport, handed: list, calls: list | None = None) -> None:
    """Record each buffer given to the transport (write, writelines: ``(buffer, bytes buffered before)``,
    None for writelines) or to writev (before 3.12; each call's buffers also in ``calls``), then let the
    transport or the socket have it. Patches ``writes.WRITEV``: restore it with monkeypatch."""
    write, writelines = transport.write, transport.writelines
    if WRITEV is not None:
        def recording_writev(fd: int, buffers) -> int:
            buffers = list(buffers)
            handed.extend((b, None) for b in buffers)
            if calls is not None:
                calls.append(buffers)
            return os.writev(fd, buffers)
        writes.WRITEV = recording_writev

    def recording_write(data) -> None:
        handed.append((data, transport.get_write_buffer_size()))
        write(data)

    def recording_writelines(datas) -> None:
        datas = list(datas)
        handed.extend((d, None) for d in datas)
        writelines(datas)
    transport.write, transport.writelines = recording_write, recording_writelines
