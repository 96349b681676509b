"""What a connection's failure tells its user: the cause OpenSSL or the operating system gave, and the likely
reason behind it when TLS is involved (the broker's certificate, a plaintext listener, mutual TLS).

TLS 1.3 ends the client's side of the handshake before the broker checks the client's certificate, so a
broker that refuses the certificate (or its absence) is seen either as an alert during the handshake or, as
often, as a connection closed or reset at the first read, before any answer: both say mutual TLS.
"""

from __future__ import annotations

import ssl
from typing import Optional

PLAINTEXT_HINT = "is the listener plaintext, not TLS?"
MTLS_HINT = "does the broker require a client certificate (mutual TLS) and refuse ours, or its absence?"
MTLS_REFUSED = "the broker requires a client certificate from a CA it trusts: mutual TLS"
# OpenSSL's reasons for a broker refusing the client's certificate, and for a TLS hello met by plaintext.
_MTLS_ALERTS = ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "TLSV1_ALERT_UNKNOWN_CA", "SSLV3_ALERT_BAD_CERTIFICATE")
_PLAINTEXT_REASONS = ("WRONG_VERSION_NUMBER", "UNEXPECTED_EOF_WHILE_READING", "RECORD_LAYER_FAILURE")


def describe_failure(address: str, error: Optional[OSError], *, tls: bool, handshake: bool = False,
                     answered: bool = False) -> str:
    """The message for a connection to ``address`` that failed with ``error`` (None: the broker closed it),
    while connecting (``handshake``) or reading, over TLS or not, after the broker ``answered`` or before."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"{address}: TLS handshake failed: the broker's certificate does not verify: {error.verify_message}"
    early = "" if handshake or answered or not tls else " before any answer"
    if isinstance(error, ssl.SSLError):
        reason = getattr(error, "reason", None) or str(error)
        if reason in _MTLS_ALERTS:
            hint = MTLS_REFUSED
        elif handshake and (reason in _PLAINTEXT_REASONS or "EOF" in str(error)):
            hint = PLAINTEXT_HINT
        else:
            hint = MTLS_HINT if early else ""
        stage = "TLS handshake failed" if handshake else "TLS"
        return f"{address}: {stage}: {reason}{early}{f' ({hint})' if hint else ''}"
    # A TLS hello that a plaintext listener, or a broker refusing the certificate, hangs up on.
    if handshake and tls and isinstance(error, ConnectionError) and not isinstance(error, ConnectionRefusedError):
        return f"{address}: TLS handshake failed: the broker closed the connection ({PLAINTEXT_HINT} {MTLS_HINT})"
    hint = f"{early} ({MTLS_HINT})" if early else ""
    if error is None:
        return f"{address} closed the connection{hint}"
    return f"{address}: {error.strerror or str(error) or type(error).__name__}{hint}"
