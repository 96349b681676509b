"""Helpers for the protocol layer's tests: a client and a server connection wired in memory, no sockets.

A module of its own, not conftest, so that tests import it by a name no other test folder uses.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import kcodec
from kcodec.messages import ApiVersionsResponse
from kcodec.protocol import ClientConnection, RequestReceived, ServerConnection, TokenReceived
from kcodec.protocol.events import Outgoing


def api_versions(apis: dict[int, tuple[int, int]], version: int = 3, error: int = 0) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=error, api_keys=[
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(apis.items())])


def joined(outgoing: Outgoing) -> bytes:
    return b"".join(outgoing.buffers)


def answer(request: Any, message: Any, version: Optional[int] = None) -> bytes:
    """The response frame a broker sends for a Request built by a ClientConnection."""
    return kcodec.encode_response(message, request.version if version is None else version, request.correlation_id)


class Wire:
    """A ClientConnection and a ServerConnection joined: ``exchange`` runs a client exchange to its end,
    the server's answers coming from ``handle(event) -> response message`` (or bytes for a token)."""

    def __init__(self, client: ClientConnection, handle: Callable[[Any], Any],
                 server: Optional[ServerConnection] = None) -> None:
        self.client, self.handle = client, handle
        self.server = server or ServerConnection()
        self.seen: list[Any] = []

    def roundtrip(self, outgoing: Outgoing) -> Any:
        self.server.receive_data(joined(outgoing))
        while (event := self.server.next_event()) is not None:
            self.seen.append(event)
            reply = self.handle(event)
            if isinstance(event, TokenReceived):
                self.server.respond_token(event, reply)
            elif isinstance(event, RequestReceived) and not event.expects_response:
                continue
            else:
                self.server.respond(event, reply)
        events = self.client.receive_data(b"".join(self.server.data_to_send()))
        assert len(events) <= 1, events
        return events[0] if events else None

    def run(self, exchange: Any) -> Any:
        outgoing = exchange.start()
        while outgoing is not None:
            outgoing = exchange.receive(self.roundtrip(outgoing))
        return exchange
