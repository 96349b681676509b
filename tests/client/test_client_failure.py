"""kcodec.client.failure: one classification of a connection's failure, and the message it gives.

The real failures (a plaintext listener, a certificate that does not verify, a broker requiring mutual TLS)
are met in tests/security/ and tests/broker/test_broker_mtls.py; here each branch, with OpenSSL's errors
made by hand.
"""

from __future__ import annotations

import ssl

import pytest

from kcodec.client.failure import MTLS_HINT, MTLS_REFUSED, PLAINTEXT_HINT, describe_failure

A = "127.0.0.1:9093"


def _ssl_error(reason: str) -> ssl.SSLError:
    e = ssl.SSLError(1, f"[SSL: {reason}] {reason.lower()} (_ssl.c:1000)")
    e.reason = reason  # what OpenSSL sets
    return e


def _unverified() -> ssl.SSLCertVerificationError:
    e = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    e.verify_message = "IP address mismatch"
    return e


@pytest.mark.parametrize("error, tls, handshake, answered, message", [
    (_unverified(), True, True, False,
     f"{A}: TLS handshake failed: the broker's certificate does not verify: IP address mismatch"),
    (_ssl_error("WRONG_VERSION_NUMBER"), True, True, False,
     f"{A}: TLS handshake failed: WRONG_VERSION_NUMBER ({PLAINTEXT_HINT})"),
    (_ssl_error("TLSV13_ALERT_CERTIFICATE_REQUIRED"), True, True, False,
     f"{A}: TLS handshake failed: TLSV13_ALERT_CERTIFICATE_REQUIRED ({MTLS_REFUSED})"),
    (_ssl_error("NO_SHARED_CIPHER"), True, True, False, f"{A}: TLS handshake failed: NO_SHARED_CIPHER"),
    (ConnectionResetError(104, "Connection reset by peer"), True, True, False,
     f"{A}: TLS handshake failed: the broker closed the connection ({PLAINTEXT_HINT} {MTLS_HINT})"),
    # Refused is no handshake: nothing listens there.
    (ConnectionRefusedError(111, "Connect call failed"), True, True, False, f"{A}: Connect call failed"),
    (ConnectionResetError(), False, True, False, f"{A}: ConnectionResetError"),
    (OSError(113, "No route to host"), False, True, False, f"{A}: No route to host"),
    # At the first read, TLS 1.3: the broker checked our certificate (or its absence) after our handshake.
    (None, True, False, False, f"{A} closed the connection before any answer ({MTLS_HINT})"),
    (ConnectionResetError(104, "Connection reset by peer"), True, False, False,
     f"{A}: Connection reset by peer before any answer ({MTLS_HINT})"),
    (_ssl_error("TLSV13_ALERT_CERTIFICATE_REQUIRED"), True, False, False,
     f"{A}: TLS: TLSV13_ALERT_CERTIFICATE_REQUIRED before any answer ({MTLS_REFUSED})"),
    (_ssl_error("DECRYPTION_FAILED"), True, False, False,
     f"{A}: TLS: DECRYPTION_FAILED before any answer ({MTLS_HINT})"),
    # Once the broker has answered, or without TLS, the certificate is not in question.
    (None, True, False, True, f"{A} closed the connection"),
    (None, False, False, False, f"{A} closed the connection"),
    (_ssl_error("DECRYPTION_FAILED"), True, False, True, f"{A}: TLS: DECRYPTION_FAILED"),
    (ConnectionResetError(104, "Connection reset by peer"), False, False, False, f"{A}: Connection reset by peer"),
])
def test_each_failure_says_what_failed(error, tls, handshake, answered, message):
    assert describe_failure(A, error, tls=tls, handshake=handshake, answered=answered) == message
