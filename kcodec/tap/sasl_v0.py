"""Bare SASL tokens after a SaslHandshake v0 (KIP-43): how many cross each way, by mechanism.

After a successful SaslHandshake v0 the client and the broker exchange size-prefixed tokens with no Kafka
header until the mechanism is done: one round for PLAIN and OAUTHBEARER, two for SCRAM (client-first /
server-first, client-final / server-final). Read as frames they would be garbage requests and orphan
responses, so the tap and the analysis count them off.
"""

from __future__ import annotations

import struct
from typing import Optional

SASL_HANDSHAKE = 17
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
_I16 = struct.Struct(">h")
ROUNDS = {"PLAIN": 1, "OAUTHBEARER": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2}


def handshake_v0(frame: bytes) -> Optional[tuple[int, int]]:
    """(correlation id, token rounds) when ``frame`` (size prefix included) is a SaslHandshake v0 request,
    else None. An unknown or unreadable mechanism counts one round, as PLAIN."""
    if len(frame) < 12:
        return None
    key, version, corr = _HEAD.unpack_from(frame, 4)
    if (key, version) != (SASL_HANDSHAKE, 0):
        return None
    mechanism = ""
    pos = 12
    if pos + 2 <= len(frame):  # request header v1: a nullable client id, then the body's mechanism
        pos += 2 + max(0, _I16.unpack_from(frame, pos)[0])
        if pos + 2 <= len(frame):
            n = _I16.unpack_from(frame, pos)[0]
            mechanism = bytes(frame[pos + 2:pos + 2 + max(0, n)]).decode("utf-8", "replace")
    return corr, ROUNDS.get(mechanism, 1)
