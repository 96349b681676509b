"""The protocol layer's errors: a rule of the connection broken, by the caller or by the peer.

As in h11: a LocalProtocolError is the caller's (a request past the in-flight limit, a correlation id
already in flight, an API the broker does not speak); a RemoteProtocolError is the peer's (an answer to
no request); either way the connection's state says what went wrong and nothing was half done. Frames
that do not parse are ``kcodec.DecodeError`` (what, and at which byte of the stream).
"""

from __future__ import annotations

from kcodec.exceptions import KcodecError


class ProtocolError(KcodecError):
    """A connection's rules broken."""


class LocalProtocolError(ProtocolError):
    """The caller asked for something the connection cannot do (nothing was sent)."""


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol; the connection cannot go on."""


class UnknownCorrelationIdError(RemoteProtocolError):
    """A response whose correlation id answers no request in flight (or one already answered)."""

    def __init__(self, message: str, correlation_id: int) -> None:
        super().__init__(message)
        self.correlation_id = correlation_id


class DuplicateCorrelationIdError(LocalProtocolError):
    """A request given a correlation id that a request in flight already has."""


class InFlightLimitError(LocalProtocolError):
    """A request past the connection's limit of requests in flight."""


class UnsupportedApiError(LocalProtocolError):
    """No version of the API is spoken by both the broker and kcodec (within the caller's caps)."""


class SaslError(ProtocolError):
    """A SASL exchange failed: a malformed message, a failed check, or the peer's refusal; ``reason``
    names which, for callers and tests.

    reasons: "malformed", "unknown-user", "credentials", "server-signature", "nonce", "token", "scope"
    (an OAUTHBEARER token without the required scope), "mechanism", "principal", "state", "error-challenge"
    (the exchange ended after an OAUTHBEARER error challenge: the message is the challenge, Kafka's message).
    """

    def __init__(self, message: str, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


class ResponseError(ProtocolError):
    """An exchange the protocol layer drives (ApiVersions negotiation) failed on the error code of a
    response: ``api`` and ``error_code`` (a ``kcodec.errors.ErrorCode``)."""

    def __init__(self, message: str, api: str, error_code: int) -> None:
        super().__init__(message)
        self.api = api
        self.error_code = error_code
