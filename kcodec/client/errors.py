"""The client's exceptions. Per-topic failures are not exceptions: they come back as result values."""

from __future__ import annotations

from typing import Optional

from kcodec.errors import ErrorCode
from kcodec.exceptions import KcodecError


class ClientError(KcodecError):
    """Base of the client's errors."""


class KafkaConnectionError(ClientError, ConnectionError):
    """A broker could not be reached, or closed the connection; pending requests fail with it."""


class RequestTimeoutError(ClientError, TimeoutError):
    """No response within the request timeout. A late response is dropped; the connection stays up."""


class CallTimeoutError(ClientError, TimeoutError):
    """A call did not finish within its overall deadline (``timeout=``), retries included; says how
    many attempts were made and the last failure (``last``: the exception, or None)."""

    def __init__(self, what: str, timeout: float, attempts: int, last: Optional[BaseException]) -> None:
        self.what, self.timeout, self.attempts, self.last = what, timeout, attempts, last
        why = f"; last failure: {last}" if last is not None else ""
        super().__init__(f"{what}: no result within its {timeout:g}s deadline "
                         f"after {attempts} attempt{'s' if attempts != 1 else ''}{why}")


class RetriableTopics(ClientError):
    """Some topics of a call failed with a retriable error (NOT_CONTROLLER, ...): the call sends them
    again. Seen only as a CallTimeoutError's ``last`` when they never succeed."""

    def __init__(self, what: str, errors: dict[str, ErrorCode]) -> None:
        self.errors = errors
        shown = ", ".join(f"{n} {e.name}" for n, e in list(errors.items())[:5])
        more = f" and {len(errors) - 5} more" if len(errors) > 5 else ""
        super().__init__(f"{what}: retriable errors: {shown}{more}")


class ProtocolError(ClientError):
    """The broker sent something that is not a Kafka response (bad frame, unknown correlation id,
    undecodable header). The connection is closed, because its stream can no longer be trusted."""


class AuthenticationError(ClientError):
    """SASL failed: mechanism not enabled, credentials refused, or the broker lacks SASL support.

    ``reason``: "mechanism" (not enabled), "credentials" (refused by the broker: its message says why),
    "server-signature" (the broker could not prove it knows the SCRAM credential), "token", "nonce",
    "malformed" (the broker's SASL message), or "" when unknown."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class UnsupportedApiError(ClientError):
    """The broker does not speak any version of an API that this client also speaks."""


class BrokerError(ClientError):
    """A whole-request error from a broker (not a per-topic one), with Kafka's error name."""

    def __init__(self, api: str, code: int, message: Optional[str] = None) -> None:
        self.api = api
        self.error = error_of(code)
        self.code = code
        self.message = message
        text = f"{api}: {self.error.name} ({code})"
        super().__init__(f"{text}: {message}" if message else text)


def error_of(code: int) -> ErrorCode:
    """Kafka's error by code; a code newer than kcodec's table reads as UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(code)  # type: ignore[call-arg]  # by value: the enum lookup
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
