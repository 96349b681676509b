"""SASL on a client connection: kcodec.protocol.sasl's exchange (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER; handshake
v1's SaslAuthenticate or v0's bare tokens), with the client's errors, and KIP-368 re-authentication on asyncio.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Optional

from kcodec.protocol.sasl import MECHANISMS, Authentication, Sasl, SaslError, reauthentication_due

from .errors import AuthenticationError, KafkaConnectionError

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["MECHANISMS", "Reauthentication", "Sasl", "authenticate"]


async def authenticate(conn: Connection, sasl: Sasl) -> Optional[int]:
    """Run the exchange on ``conn``; the session lifetime in ms the broker granted (KIP-368), if any.
    Raises AuthenticationError with ``reason``: "mechanism", "credentials", "server-signature", ..."""
    try:
        auth = await conn.run(Authentication(conn.protocol, sasl))
    except SaslError as e:
        raise AuthenticationError(f"{sasl.who} at {conn.address}: {e}", e.reason) from None
    except KafkaConnectionError as e:  # brokers often just hang up on bad credentials (always with v0)
        raise AuthenticationError(f"{sasl.who}: {e}", "credentials") from None
    return auth.lifetime_ms


class Reauthentication:
    """KIP-368 on the client: before the first request past 85-95 % of the session lifetime the broker
    granted (a random point, as Kafka's Java client picks), authenticate again on the same connection.
    Requests wait while that runs; the exchange's own requests pass."""

    def __init__(self, conn: Connection, sasl: Sasl, lifetime_ms: int) -> None:
        self.conn, self.sasl = conn, sasl
        self.count = 0
        self._lock = asyncio.Lock()
        self._owner: Optional[asyncio.Task[object]] = None
        self._due = reauthentication_due(lifetime_ms, time.monotonic())

    async def before_request(self) -> None:
        if asyncio.current_task() is self._owner or (not self._lock.locked() and time.monotonic() < self._due):
            return
        async with self._lock:
            if time.monotonic() < self._due:
                return  # another request re-authenticated meanwhile
            self._owner = asyncio.current_task()
            try:
                lifetime = await authenticate(self.conn, self.sasl)
            finally:
                self._owner = None
            self.count += 1
            self.conn.session_lifetime_ms = lifetime
            self._due = reauthentication_due(lifetime, time.monotonic())
