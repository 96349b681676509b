"""The server's side of one Kafka connection, with no I/O, for brokers and proxies: requests out of the bytes
received, responses in, written back in the order the requests came.

    conn = ServerConnection()
    conn.receive_data(data)                      # any chunking; or get_buffer / buffer_updated
    while (event := conn.next_event()) is not None:
        if isinstance(event, RequestReceived):   # event.header, event.message, event.frame
            conn.respond(event, handle(event.message))
    await write_buffers(writer, conn.data_to_send())  # kcodec.protocol.aio: the answers that may go now, in order

Frames are views of the bytes received (kcodec.protocol.frames: no copy), and with ``zero_copy`` (the
default) a request's records and bytes values are views of its frame: a log keeps (copies) what it stores.
``zero_copy`` may instead name the api keys decoded so (a broker: Produce's, whose batches its log copies),
the others' values being copies that keep no frame alive.
Responses are encoded as buffers: records values, and bytes values of at least ``splice_threshold``
bytes, are the server's own buffers, never copied (a Fetch response's batches: ``kcodec.Buffers``).

Requests are decoded one at a time, when ``next_event`` is called: a server that learns from a request how
to read the next ones (SaslHandshake v0: bare tokens follow, ``raw_tokens``) sets that before asking for
the next event, as Kafka's broker handles one request of a connection at a time. Responses may be given in
any order (a long-polling Fetch answered later); ``data_to_send`` holds each back until every earlier
request has its answer, so the client sees them in the order it asked. A Produce with acks=0 gets none.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Collection, Optional, Union

import kcodec
from kcodec.buffers import Buffers
from kcodec.exceptions import DecodeError, UnsupportedVersionError
from kcodec.framing import DEFAULT_MAX_FRAME, SPLICE_THRESHOLD

from .errors import LocalProtocolError
from .events import RequestFailed, RequestReceived, ServerEvent, TokenReceived
from .frames import FrameReader

PRODUCE_KEY = 0
Answerable = Union[RequestReceived, RequestFailed, TokenReceived]


class _Slot:
    """One answer owed, in request order: its buffers once given (None: not yet; empty: no answer)."""

    __slots__ = ("buffers",)

    def __init__(self) -> None:
        self.buffers: Optional[Buffers] = None


class ServerConnection:
    """One connection's protocol state, server side (see the module's text)."""

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME, zero_copy: Union[bool, Collection[int]] = True,
                 splice_threshold: int = SPLICE_THRESHOLD) -> None:
        self.reader = FrameReader(max_frame_size)
        self.zero_copy = zero_copy  # True, False, or the api keys whose requests are decoded zero-copy
        self.splice_threshold = splice_threshold
        self.raw_tokens = False  # frames are bare SASL tokens (after SaslHandshake v0) while True
        self._frames: deque[memoryview] = deque()
        self._order: deque[_Slot] = deque()
        self._owed: dict[int, _Slot] = {}  # id of the event -> its slot

    # -- receiving ---------------------------------------------------------------------------------------

    def receive_data(self, data: Any) -> None:
        """Bytes from the client, in any chunking; ``next_event`` hands out what they complete. A size
        prefix that is negative or over the maximum is a DecodeError: the stream cannot go on."""
        self._frames.extend(self.reader.feed(data))

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Room to receive into (``socket.recv_into``, ``asyncio.BufferedProtocol``): no copy at all."""
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._frames.extend(self.reader.buffer_updated(nbytes))

    @property
    def max_frame_size(self) -> int:
        """The largest frame accepted (its size prefix aside); a server may raise it once the peer has
        authenticated, as Kafka bounds frames by sasl.server.max.receive.size until then."""
        return self.reader.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        self.reader.max_frame_size = value

    @property
    def frames_waiting(self) -> int:
        """Frames received and not yet handed out as events."""
        return len(self._frames)

    def next_event(self) -> Optional[ServerEvent]:
        """The next request (or bare token), decoded now; None when no whole frame is waiting. A frame whose
        request header does not parse is a DecodeError (Kafka closes such a connection)."""
        if not self._frames:
            return None
        frame = self._frames.popleft()
        event: ServerEvent
        if self.raw_tokens:
            event = TokenReceived(bytes(frame[4:]))
        else:
            event = self._request(frame)
            if isinstance(event, RequestReceived) and not event.expects_response:
                return event
        slot = _Slot()
        self._order.append(slot)
        self._owed[id(event)] = slot
        return event

    def _request(self, frame: memoryview) -> Union[RequestReceived, RequestFailed]:
        header, pos, end = kcodec.decode_request_header(frame)
        message: Any
        try:
            cls = kcodec.message_class(header.request_api_key, "request")
            zero_copy = self.zero_copy if isinstance(self.zero_copy, bool) else header.request_api_key in self.zero_copy
            message, _ = kcodec.decode_from(cls, frame, header.request_api_version, pos, end, zero_copy=zero_copy)
        except (UnsupportedVersionError, DecodeError) as e:
            return RequestFailed(header, e, frame)
        expects = not (header.request_api_key == PRODUCE_KEY and message.acks == 0)
        return RequestReceived(header, message, frame, expects)

    # -- answering ---------------------------------------------------------------------------------------

    def _slot(self, event: Answerable) -> _Slot:
        slot = self._owed.get(id(event))
        if slot is None:
            raise LocalProtocolError(f"{event!r} is answered already, or needs no answer")
        return slot

    def _give(self, event: Answerable, buffers: Buffers) -> None:
        self._slot(event).buffers = buffers
        del self._owed[id(event)]

    def respond(self, event: Union[RequestReceived, RequestFailed], message: Any,
                version: Optional[int] = None) -> None:
        """The response to a request (at its version unless ``version``: an ApiVersions request of a version
        kcodec lacks is answered at v0). It goes out when every earlier request has its answer."""
        self._slot(event)  # (before encoding: an answer given twice is the caller's error, not the codec's)
        v = event.version if version is None else version
        self._give(event, kcodec.encode_response_buffers(message, v, event.correlation_id,
                                                         threshold=self.splice_threshold))

    def respond_token(self, event: TokenReceived, data: bytes) -> None:
        """The bare answer to a bare SASL token (handshake v0)."""
        self._give(event, Buffers([len(data).to_bytes(4, "big"), bytes(data)], 4 + len(data)))

    def skip(self, event: Answerable) -> None:
        """No answer for this one (a server that closes the connection instead need not call it)."""
        self._give(event, Buffers())

    @property
    def unanswered(self) -> int:
        """Requests whose answers are owed (given or not) and not yet handed to data_to_send."""
        return len(self._order)

    def data_to_send(self) -> Buffers:
        """Every answer that may go now, in request order: buffers to write (``transport.writelines``,
        ``socket.sendmsg``); empty when the next answer owed is not given yet."""
        out = Buffers()
        while self._order and self._order[0].buffers is not None:
            ready = self._order.popleft().buffers
            assert ready is not None
            out.extend(ready)
            out.nbytes += ready.nbytes
        return out
