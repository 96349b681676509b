"""kcodec.protocol: Kafka connections as state machines with no I/O (no sockets, no event loop inside),
for client authors, brokers and proxies; thin asyncio and blocking-socket adapters beside them.

    from kcodec.protocol import ClientConnection
    conn = ClientConnection(client_id="me")
    request = conn.negotiation().start()      # ApiVersions: write request.buffers to the socket
    events = conn.receive_data(data)          # bytes in, any chunking: Response events out

Modules: client (ClientConnection), server (ServerConnection), frames (FrameReader: frames as views of the
bytes received), versions (Versions, Negotiation), sasl (mechanisms both sides, Kafka's framing, KIP-368),
events, errors, aio (asyncio) and blocking (sockets). Guide: docs/client-guide.md.
"""

from __future__ import annotations

from .client import ClientConnection
from .errors import (DuplicateCorrelationIdError, InFlightLimitError, LocalProtocolError, ProtocolError,
                     RemoteProtocolError, ResponseError, SaslError, UnknownCorrelationIdError, UnsupportedApiError)
from .events import (Request, RequestFailed, RequestReceived, Response, ResponseFailed, Token, TokenReceived)
from .frames import FrameReader
from .sasl import Authentication, Sasl, SaslServer
from .server import ServerConnection
from .versions import Negotiation, Versions

__all__ = [
    "Authentication", "ClientConnection", "DuplicateCorrelationIdError", "FrameReader", "InFlightLimitError",
    "LocalProtocolError", "Negotiation", "ProtocolError", "RemoteProtocolError", "Request", "RequestFailed",
    "RequestReceived", "Response", "ResponseError", "ResponseFailed", "Sasl", "SaslError", "SaslServer",
    "ServerConnection", "Token", "TokenReceived", "UnknownCorrelationIdError", "UnsupportedApiError", "Versions",
]
