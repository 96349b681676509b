"""A thin blocking-socket adapter: a ClientConnection over a socket, buffer lists sent with sendmsg.

    with BlockingConnection.connect("127.0.0.1", 9092, client_id="me") as conn:
        conn.negotiate()
        resp = conn.request(MetadataRequest(topics=None))      # a Response event; .message

Bytes are received straight into the connection's buffer (``recv_into``: no copy) and sent as the
buffers the connection built (``sendmsg``: record batches leave from the caller's own buffers; a TLS
socket, which has no sendmsg, sends them one by one). ``send`` and ``receive`` are there for pipelining:
send several requests, then collect their answers, which ``wait`` files by correlation id.
"""

from __future__ import annotations

import os
import socket
import ssl
from typing import Any, Optional, TypeVar

from .client import ClientConnection
from .events import ClientEvent, Outgoing, Request, Response, Token, TokenReceived, response_of
from .sasl import Authentication, Sasl
from .versions import Versions

X = TypeVar("X")
try:
    IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024)
except (AttributeError, ValueError, OSError):  # no sysconf (Windows): POSIX's minimum
    IOV_MAX = 16


def send_buffers(sock: socket.socket, buffers: list[Any]) -> None:
    """Write every buffer, in order, whole: sendmsg of at most IOV_MAX buffers at a time, partial writes
    carried on from where they stopped; sendall of each where the socket has no sendmsg (TLS)."""
    sendmsg = getattr(sock, "sendmsg", None)
    if sendmsg is None or isinstance(sock, ssl.SSLSocket):  # TLS: sendmsg is not implemented
        for b in buffers:
            sock.sendall(b)
        return
    pending = [memoryview(b).cast("B") for b in buffers if memoryview(b).nbytes]
    while pending:
        sent = sendmsg(pending[:IOV_MAX])
        while sent and pending:
            n = len(pending[0])
            if sent >= n:
                sent -= n
                pending.pop(0)
            else:
                pending[0] = pending[0][sent:]
                sent = 0


class BlockingConnection:
    """Requests and exchanges over a blocking socket on one ClientConnection (``conn``)."""

    def __init__(self, sock: socket.socket, conn: Optional[ClientConnection] = None, **conn_kwargs: Any) -> None:
        self.sock = sock
        self.conn = conn or ClientConnection(**conn_kwargs)
        self._answers: dict[int, ClientEvent] = {}  # answers received while waiting for another
        self._tokens: list[TokenReceived] = []

    @classmethod
    def connect(cls, host: str, port: int, *, timeout: Optional[float] = 30.0, tls: Any = None,
                **conn_kwargs: Any) -> BlockingConnection:
        """Connect (TLS when ``tls`` is an SSLContext); ``timeout`` bounds every socket operation."""
        sock = socket.create_connection((host, port), timeout=timeout)
        if tls is not None:
            sock = tls.wrap_socket(sock, server_hostname=host)
        return cls(sock, **conn_kwargs)

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, outgoing: Outgoing) -> None:
        send_buffers(self.sock, outgoing.buffers)

    def receive(self) -> list[ClientEvent]:
        """Read once (blocking) into the connection's buffer; the events that completes. The peer's
        hang-up is ConnectionError; a bad frame or an answer to no request the protocol's error."""
        room = self.conn.get_buffer()
        n = self.sock.recv_into(room)
        if n == 0:
            raise ConnectionError("the peer closed the connection")
        return self.conn.buffer_updated(n)

    def wait(self, outgoing: Outgoing) -> ClientEvent:
        """The answer to a request or token sent, reading until it comes (other answers are kept)."""
        while True:
            if isinstance(outgoing, Token):
                if self._tokens:
                    return self._tokens.pop(0)
            elif outgoing.correlation_id in self._answers:
                return self._answers.pop(outgoing.correlation_id)
            for event in self.receive():
                if isinstance(event, TokenReceived):
                    self._tokens.append(event)
                else:
                    self._answers[event.request.correlation_id] = event

    def roundtrip(self, outgoing: Outgoing) -> Optional[ClientEvent]:
        self.send(outgoing)
        if isinstance(outgoing, Request) and not outgoing.expects_response:
            return None
        return self.wait(outgoing)

    def request(self, message: Any, version: Optional[int] = None, *, api_key: Optional[int] = None) -> Response:
        """Send a request (the negotiated version when none is given) and return its Response; a body that
        does not decode raises its KcodecError."""
        outgoing = self.conn.send(message, version, api_key=api_key)
        return response_of(outgoing, self.roundtrip(outgoing))

    def run(self, exchange: X) -> X:
        """Drive an exchange (a Negotiation, an Authentication) to its end."""
        outgoing = exchange.start()  # type: ignore[attr-defined]
        while outgoing is not None:
            outgoing = exchange.receive(self.roundtrip(outgoing))  # type: ignore[attr-defined]
        return exchange

    def negotiate(self, **kwargs: Any) -> Versions:
        self.run(self.conn.negotiation(**kwargs))
        return self.conn.versions

    def authenticate(self, sasl: Sasl) -> Authentication:
        return self.run(Authentication(self.conn, sasl))

    def close(self) -> None:
        self.conn.close()
        self.sock.close()
