"""The recording proxy: clients talk to it as to the broker, it records every frame and forwards it.

One listener per upstream broker: the bootstrap one on ``--listen``, and one on an ephemeral port of the
same host for each broker a Metadata, FindCoordinator or DescribeCluster response advertises; those
responses are rewritten to point at the listeners, so clients never leave the proxy.

Memory is bounded twice over: a connection reads its next frame only after the previous one was handed
to the recorder and drained to the other side (TCP backpressure both ways), and the recorder holds at
most ``buffer_bytes`` of frames not yet on disk (a connection waits when it is full). Nothing is
dropped: a frame is queued for the capture before it is forwarded.

A client that hangs up with requests in flight does not lose their answers from the capture: the
connection stays open upstream for at most ``drain_timeout`` seconds, until every request that expects
an answer (all but a Produce sent with acks=0) has one, or the broker closes, and those answers are
recorded, not forwarded. The wire carried them, so a capture of the broker's side (tcpdump) has them too; without this the tap's capture would show
requests a librdkafka client abandoned at its close as unanswered.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import socket
import struct
import time
from pathlib import Path
from typing import Any, Optional, Union

from kcodec.exceptions import DecodeError
from kcodec.protocol import FrameReader
from kcodec.security.tls import looks_like_tls

from . import capture
from .acks import expects_answer
from .rewrite import REWRITTEN, rewrite_response
from .sasl_v0 import handshake_v0

_REQ_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
_CORR = struct.Struct(">i")
READ_CHUNK = 65536
Frame = Union[bytes, memoryview]  # frames are views of the bytes read (kcodec.protocol.FrameReader)


class _Frames:
    """One side's frames: kcodec.protocol's FrameReader over the stream, each frame a view of the bytes read
    (copied at most once, when a read ends inside it). A stream that starts as TLS is refused by name: the
    tap records TLS-free traffic only."""

    def __init__(self, reader: asyncio.StreamReader, who: str, max_frame: int) -> None:
        self.reader, self.who = reader, who
        self.frames = FrameReader(max_frame)
        self.ready: collections.deque[memoryview] = collections.deque()

    async def next(self) -> Optional[Frame]:
        """The next whole frame (size prefix included), or None when the stream ends between frames."""
        while not self.ready:
            data = await self.reader.read(READ_CHUNK)
            if not data:
                held, size = self.frames.pending, self.frames.unfinished
                if size is not None:
                    raise ConnectionError(f"stream ended inside a frame ({held - 4} of {size} bytes)")
                if held:
                    raise ConnectionError(f"stream ended inside a size prefix ({held} bytes)")
                return None
            if self.frames.position == 0 and self.frames.pending == 0 and looks_like_tls(data):
                raise ConnectionError(f"the {self.who} speaks TLS; kcodec tap forwards TLS-free traffic only (use a "
                                      "PLAINTEXT or SASL_PLAINTEXT listener)")
            try:
                self.ready.extend(self.frames.feed(data))
            except DecodeError as e:
                raise ConnectionError(str(e)) from None
        return self.ready.popleft()


class _Flow:
    """One connection's requests awaiting an answer, by correlation id, with (api key, version) for those
    whose response the tap rewrites (else None); bare SASL tokens, which have no id, by count; and whether
    the client left. Answers nobody awaits (a broker answering acks=0, as Tansu does) count for nothing."""

    __slots__ = ("awaiting", "tokens", "client_gone")

    def __init__(self) -> None:
        self.awaiting: dict[int, Optional[tuple[int, int]]] = {}
        self.tokens = 0
        self.client_gone = False

    def answer(self, frame: Frame) -> tuple[int, Optional[tuple[int, int]]]:
        """Count a response off; its correlation id (-1: none) and what to rewrite it as (None: nothing)."""
        corr = _CORR.unpack_from(frame, 4)[0] if len(frame) >= 8 else -1
        if corr in self.awaiting:
            return corr, self.awaiting.pop(corr)
        if self.tokens:
            self.tokens -= 1
        return corr, None

    @property
    def in_flight(self) -> int:
        return len(self.awaiting) + self.tokens


class Recorder:
    """Queues records for one writer thread, holding at most ``budget`` bytes in memory."""

    def __init__(self, writer: capture.CaptureWriter, budget: int) -> None:
        self.writer = writer
        self.budget = budget
        self._queue: collections.deque[tuple[int, int, int, Frame]] = collections.deque()
        self._held = 0
        self._cond = asyncio.Condition()
        self._wake = asyncio.Event()
        self._closing = False
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kcodec-tap-writer")
        self._task: Optional[asyncio.Task[None]] = None
        self.peak_held = 0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def record(self, kind: int, conn: int, ts_ns: int, payload: Frame) -> None:
        n = capture.RECORD.size + len(payload)
        async with self._cond:
            # A frame larger than the whole budget still passes, alone.
            await self._cond.wait_for(lambda: self._held == 0 or self._held + n <= self.budget)
            self._queue.append((kind, conn, ts_ns, payload))
            self._held += n
            self.peak_held = max(self.peak_held, self._held)
        self._wake.set()

    def _write(self, batch: list[tuple[int, int, int, Frame]]) -> None:
        for rec in batch:
            self.writer.write(*rec)
        self.writer.flush()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                batch = list(self._queue)
                self._queue.clear()
                await loop.run_in_executor(self._pool, self._write, batch)
                async with self._cond:
                    self._held -= sum(capture.RECORD.size + len(r[3]) for r in batch)
                    self._cond.notify_all()
            if self._closing:
                return

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        await asyncio.get_running_loop().run_in_executor(self._pool, self.writer.close)
        self._pool.shutdown()


class Tap:
    def __init__(self, listen: tuple[str, int], upstream: tuple[str, int], out: Path, *,
                 advertise: Optional[str] = None, max_file_bytes: int = 64 * 1024 * 1024,
                 buffer_bytes: int = 32 * 1024 * 1024, max_frame: int = 100 * 1024 * 1024,
                 connect_timeout: float = 10.0, drain_timeout: float = 2.0) -> None:
        self.listen = listen
        self.upstream = upstream
        # Clients cannot connect to a wildcard address: tell them this host's name instead.
        self.advertise = advertise or (socket.gethostname() if listen[0] in ("0.0.0.0", "::", "") else listen[0])
        self.session = time.time_ns()
        self.writer = capture.CaptureWriter(out, self.session, max_file_bytes)
        self.buffer_bytes = buffer_bytes
        self.max_frame = max_frame
        self.connect_timeout = connect_timeout
        self.drain_timeout = drain_timeout
        self.listeners: dict[tuple[str, int], tuple[asyncio.Server, int]] = {}
        self._lock = asyncio.Lock()
        self._next_conn = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._draining: set[asyncio.Task[Any]] = set()  # connections whose client left, answers still due
        self.connections = 0
        self.frames = 0
        self.recorder: Optional[Recorder] = None

    @property
    def port(self) -> int:
        """The bootstrap listener's port (useful with ``--listen HOST:0``)."""
        return self.listeners[self.upstream][1]

    @property
    def open_connections(self) -> int:
        """Client connections being served now, those awaiting answers for a departed client included."""
        return len(self._tasks)

    async def start(self) -> None:
        self.recorder = Recorder(self.writer, self.buffer_bytes)
        self.recorder.start()
        await self._listen(self.upstream, self.listen[1])

    async def _listen(self, upstream: tuple[str, int], port: int) -> int:
        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                await self._connection(r, w, upstream)
            finally:
                self._tasks.discard(task)

        server = await asyncio.start_server(handle, self.listen[0], port)
        bound = server.sockets[0].getsockname()[1]
        self.listeners[upstream] = (server, bound)
        return int(bound)

    async def listener_for(self, host: str, port: int) -> tuple[str, int]:
        """The proxy address for an upstream broker, opening a listener the first time it is seen."""
        async with self._lock:
            if (host, port) in self.listeners:
                return self.advertise, self.listeners[(host, port)][1]
            return self.advertise, await self._listen((host, port), 0)

    async def close(self) -> None:
        for server, _ in self.listeners.values():
            server.close()
        for task in list(self._tasks - self._draining):  # draining ones end by themselves, bounded
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server, _ in self.listeners.values():
            await server.wait_closed()
        if self.recorder is not None:
            await self.recorder.close()

    async def _connection(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter,
                          upstream: tuple[str, int]) -> None:
        assert self.recorder is not None
        conn = self._next_conn
        self._next_conn += 1
        self.connections += 1
        peer = cw.get_extra_info("peername") or ("?", 0)
        await self.recorder.record(capture.OPENED, conn, time.time_ns(),
                                   f"{peer[0]}:{peer[1]} {upstream[0]}:{upstream[1]}".encode())
        reason = ""
        uw: Optional[asyncio.StreamWriter] = None
        try:
            ur, up = await asyncio.wait_for(asyncio.open_connection(*upstream), self.connect_timeout)
            uw = up
            flow = _Flow()
            tasks = [asyncio.create_task(self._requests(conn, cr, up, flow)),
                     asyncio.create_task(self._responses(conn, ur, cw, flow))]
            try:
                done, rest = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                if done == {tasks[0]} and tasks[0].exception() is None and flow.in_flight > 0:
                    # The client hung up with answers due: record them as they come (see the module's text).
                    flow.client_gone = True
                    me = asyncio.current_task()
                    assert me is not None
                    self._draining.add(me)
                    try:
                        await asyncio.wait([tasks[1]], timeout=self.drain_timeout)
                    finally:
                        self._draining.discard(me)
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for t in done:
                exc = t.exception()
                reason = reason or (f"{type(exc).__name__}: {exc}" if exc else t.result())
        except (OSError, asyncio.TimeoutError) as e:
            reason = f"upstream {upstream[0]}:{upstream[1]}: {type(e).__name__}: {e}"
        except asyncio.CancelledError:
            reason = "tap stopped"
        finally:
            for w in (cw, uw):
                if w is not None:
                    w.close()
            await self.recorder.record(capture.CLOSED, conn, time.time_ns(), reason.encode())

    async def _requests(self, conn: int, cr: asyncio.StreamReader, uw: asyncio.StreamWriter,
                        flow: _Flow) -> str:
        assert self.recorder is not None
        raw_tokens = 0  # after SaslHandshake v0 the client's tokens come bare, with no header
        frames = _Frames(cr, "client", self.max_frame)
        while True:
            frame = await frames.next()
            if frame is None:
                return "client closed"
            ts = time.time_ns()
            if raw_tokens:
                raw_tokens -= 1
                flow.tokens += 1  # answered by a bare token
            elif len(frame) >= 12:
                key, version, corr = _REQ_HEAD.unpack_from(frame, 4)
                if expects_answer(frame):  # all but a Produce with acks=0
                    flow.awaiting[corr] = (key, version) if key in REWRITTEN else None
                handshake = handshake_v0(frame)
                raw_tokens = handshake[1] if handshake is not None else 0
            await self.recorder.record(capture.REQUEST, conn, ts, frame)
            self.frames += 1
            uw.write(frame)
            await uw.drain()

    async def _responses(self, conn: int, ur: asyncio.StreamReader, cw: asyncio.StreamWriter,
                         flow: _Flow) -> str:
        assert self.recorder is not None
        answered = False
        frames = _Frames(ur, "upstream", self.max_frame)
        while True:
            if flow.client_gone and flow.in_flight <= 0:
                return "client closed"
            frame = await frames.next()
            if frame is None:
                # a TLS listener hangs up on the plaintext it gets from the tap without a word
                return "upstream closed" if answered else ("upstream closed before answering (a TLS listener? "
                                                           "kcodec tap forwards TLS-free traffic only)")
            answered = True
            ts = time.time_ns()
            await self.recorder.record(capture.RESPONSE, conn, ts, frame)
            self.frames += 1
            corr, known = flow.answer(frame)
            if flow.client_gone:
                continue
            if known is not None:
                frame = await rewrite_response(frame, known[0], known[1], corr, self.listener_for) or frame
            cw.write(frame)
            try:
                await cw.drain()
            except ConnectionError:
                if not flow.client_gone:
                    raise
