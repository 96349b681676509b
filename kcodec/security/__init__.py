"""What kcodec's client and broker share to secure a connection: SASL mechanisms and TLS.

Modules: scram (RFC 5802 / RFC 7677 computations and messages, both sides), oauthbearer (RFC 7628
client messages, Kafka's unsecured JWS tokens), tls (SSL contexts from files, client certificates and
Kafka's ssl.client.auth), dn (a certificate's subject in RFC 2253 form: a TLS client's principal),
principal_rules (Kafka's ssl.principal.mapping.rules over that subject), certs
(a throw-away CA, server and client certificates for tests; needs the ``cryptography`` package). Pure functions over bytes: no
sockets, no kcodec messages.
"""

from __future__ import annotations

from kcodec.exceptions import KcodecError


class SaslError(KcodecError):
    """A SASL message is malformed or fails a check; ``reason`` names which, for callers and tests.

    reasons: "malformed", "unknown-user", "credentials", "server-signature", "nonce", "token", "scope"
    (an OAUTHBEARER token without the required scope), "mechanism", "principal", "error-challenge" (the
    exchange ended after an OAUTHBEARER error challenge: the message is the challenge, Kafka's message).
    """

    def __init__(self, message: str, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


__all__ = ["SaslError"]
