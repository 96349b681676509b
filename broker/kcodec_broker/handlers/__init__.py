"""Per-API request handlers: ``handler(ctx, request) -> response``, registered by request class.

Importing this package registers every handler; ``HANDLERS`` maps api key -> Handler and
``supported_versions()`` is what ApiVersions advertises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..context import Context

HandlerFn = Callable[[Context, Any], Any]


@dataclass(frozen=True)
class Handler:
    request: type
    response: type
    fn: HandlerFn
    min_version: int = 0  # the oldest version served (Produce v3+, Fetch v4+: record batches only)
    max_version: int = 1 << 15  # the newest served, below the definitions' (a version Kafka does not ship)

    @property
    def versions(self) -> tuple[int, int]:
        lo = max(self.request.VALID_VERSIONS[0], self.response.VALID_VERSIONS[0], self.min_version)  # type: ignore[attr-defined]
        hi = min(self.request.VALID_VERSIONS[1], self.response.VALID_VERSIONS[1], self.max_version)  # type: ignore[attr-defined]
        return lo, hi


HANDLERS: dict[int, Handler] = {}

# A handler's answer when the request gets no response at all (Produce with acks=0).
NO_RESPONSE: Any = object()


class CloseConnection:
    """A handler's answer when the connection must close instead: an acks=0 Produce that failed (Kafka's
    only signal), a request Kafka refuses while it parses it (CreateAcls with an UNKNOWN code)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


CLOSE_CONNECTION: Any = CloseConnection("with acks=0 failed")


class Later:
    """A handler's answer computed later (a long-polling Fetch): the server awaits ``result()`` before
    it answers this connection's next request, so responses stay in order."""

    def __init__(self, result: Callable[[], Awaitable[Any]]) -> None:
        self.result = result


def handles(request: type, response: type, min_version: int = 0,
            max_version: int = 1 << 15) -> Callable[[HandlerFn], HandlerFn]:
    def register(fn: HandlerFn) -> HandlerFn:
        HANDLERS[request.API_KEY] = Handler(request, response, fn, min_version, max_version)  # type: ignore[attr-defined]
        return fn
    return register


def supported_versions() -> dict[int, tuple[int, int]]:
    return {key: h.versions for key, h in sorted(HANDLERS.items())}


# Registration happens on import; the order does not matter.
from . import (acl_admin, acls, api_versions, configs, consumer_groups, group_admin, group_offsets,  # noqa: E402,F401
               groups, listing, log_dirs, metadata, sasl, scram, topics)
from . import elections, fetch, offsets, produce, producer_id, transactions, txn_admin, txn_offsets  # noqa: E402,F401
from . import client_quotas, config_resources, quorum, reassignments, telemetry  # noqa: E402,F401
