"""Where brokers advertise their addresses, so the tap can point clients at its own listeners.

Metadata (key 3) and DescribeCluster (key 60) responses list brokers; FindCoordinator (key 10) names the
coordinator at the top level up to v3 and in ``coordinators`` from v4. Everything else passes untouched.
"""

from __future__ import annotations

import warnings
from typing import Any, Awaitable, Callable, Optional, Union

import kcodec

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60
REWRITTEN = frozenset({METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})

# Given the broker's advertised (host, port), the (host, port) clients should use instead.
Mapper = Callable[[str, int], Awaitable[tuple[str, int]]]


def endpoints(api_key: int, msg: Any) -> list[Any]:
    """The objects in a response that carry ``host`` and ``port`` of a broker."""
    if api_key in (METADATA, DESCRIBE_CLUSTER):
        return list(msg.brokers)
    if api_key == FIND_COORDINATOR:
        found = list(msg.coordinators) + [msg]
        return [c for c in found if c.host and c.port > 0]  # an error answer has host "" and port -1
    return []


async def rewrite_response(frame: Union[bytes, memoryview], api_key: int, api_version: int, correlation_id: int,
                           mapper: Mapper) -> Optional[bytes]:
    """The frame re-encoded with every advertised address mapped, or None when nothing changes.

    A response that does not decode is forwarded as it is (None): the tap never blocks traffic it
    cannot read.
    """
    if api_key not in REWRITTEN:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kcodec.TrailingBytesWarning)
            _, msg = kcodec.decode_response(frame, api_key, api_version, strict=False)
    except kcodec.KcodecError:
        return None
    changed = False
    for ep in endpoints(api_key, msg):
        host, port = await mapper(ep.host, ep.port)
        if (host, port) != (ep.host, ep.port):
            ep.host, ep.port, changed = host, port, True
    if not changed:
        return None
    return kcodec.encode_response(msg, api_version, correlation_id)
