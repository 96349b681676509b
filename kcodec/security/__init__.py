"""What kcodec's client, broker and tap share to secure a connection: TLS, and SASL's names for the broker.

Modules: tls (SSL contexts from files, client certificates and Kafka's ssl.client.auth), dn (a
certificate's subject in RFC 2253 form: a TLS client's principal), principal_rules (Kafka's
ssl.principal.mapping.rules over that subject), certs (a throw-away CA, server and client certificates
for tests; needs the ``cryptography`` package). SASL (PLAIN, SCRAM, OAUTHBEARER, both sides) is in
kcodec.protocol.sasl; ``SaslError`` and the modules scram and oauthbearer are re-exported here for
kcodec broker until it moves onto kcodec.protocol. Pure functions over bytes: no sockets.
"""

from __future__ import annotations

from kcodec.protocol.errors import SaslError

__all__ = ["SaslError"]
