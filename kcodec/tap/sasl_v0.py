"""Bare SASL tokens after a SaslHandshake v0 (KIP-43): how many cross each way, by mechanism.

After a successful SaslHandshake v0 the client and the broker exchange size-prefixed tokens with no Kafka
header until the mechanism is done: one round for PLAIN and OAUTHBEARER, two for SCRAM (client-first /
server-first, client-final / server-final). Read as frames they would be garbage requests and orphan
responses, so the tap and the analysis count them off.
"""

from __future__ import annotations

import struct
from typing import Optional, Union

import kcodec
from kcodec.messages import SaslHandshakeRequest

SASL_HANDSHAKE = 17
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
ROUNDS = {"PLAIN": 1, "OAUTHBEARER": 1, "SCRAM-SHA-256": 2, "SCRAM-SHA-512": 2}


def handshake_v0(frame: Union[bytes, memoryview]) -> Optional[tuple[int, int]]:
    """(correlation id, token rounds) when ``frame`` (size prefix included) is a SaslHandshake v0 request,
    else None. An unknown or unreadable mechanism counts one round, as PLAIN."""
    if len(frame) < 12:
        return None
    key, version, corr = _HEAD.unpack_from(frame, 4)
    if (key, version) != (SASL_HANDSHAKE, 0):
        return None
    try:
        _, pos, end = kcodec.decode_request_header(frame, strict=False)
        mechanism = kcodec.decode_from(SaslHandshakeRequest, frame, 0, pos, end)[0].mechanism
    except kcodec.KcodecError:
        mechanism = ""
    return corr, ROUNDS.get(mechanism, 1)
