"""What kcodec's client, broker and tap share to secure a connection: TLS.

Modules: tls (SSL contexts from files, client certificates and Kafka's ssl.client.auth), dn (a
certificate's subject in RFC 2253 form: a TLS client's principal), principal_rules (Kafka's
ssl.principal.mapping.rules over that subject), certs (a throw-away CA, server and client certificates
for tests; needs the ``cryptography`` package). Pure functions over bytes: no sockets.

SASL (PLAIN, SCRAM, OAUTHBEARER, both sides) is kcodec.protocol.sasl's. The old names here, ``SaslError``
and the modules scram and oauthbearer, are deprecated (they warn) and go in kcodec 0.3.0.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name == "SaslError":
        warnings.warn("kcodec.security.SaslError is deprecated and goes in kcodec 0.3.0: use "
                      "kcodec.protocol.SaslError", DeprecationWarning, stacklevel=2)
        from kcodec.protocol.errors import SaslError
        return SaslError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
