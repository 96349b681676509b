"""SASL with no I/O: the mechanisms (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER) on both sides, Kafka's framing of
them on a client connection (``Authentication``) and on a server's (``SaslServer``), and KIP-368
re-authentication (``reauthentication_due``, SaslServer's session lifetime).

Modules: mechanisms (the state machines), scram (RFC 5802 / RFC 7677 computations), oauthbearer (RFC 7628
messages, Kafka's unsecured JWS tokens), client and server (Kafka's framing).
"""

from __future__ import annotations

from ..errors import SaslError
from .client import Authentication, reauthentication_due
from .mechanisms import (MECHANISMS, ClientMechanism, OAuthBearerClient, OAuthBearerServer, PlainClient, PlainServer,
                         Sasl, ScramClientMechanism, ScramServerMechanism, ServerMechanism, unsecured_validator)
from .server import SaslServer, failure_message

__all__ = [
    "MECHANISMS", "Authentication", "ClientMechanism", "OAuthBearerClient", "OAuthBearerServer", "PlainClient",
    "PlainServer", "Sasl", "SaslError", "SaslServer", "ScramClientMechanism", "ScramServerMechanism",
    "ServerMechanism", "failure_message", "reauthentication_due", "unsecured_validator",
]
