"""One deadline per call, exponential backoff with jitter, and which failures deserve another attempt.

A call (``create_topics``, ``describe_topics``, ...) gets one overall deadline; every connect, request
and backoff sleep inside it is capped by what is left of it, so a call never outlives its ``timeout``.
"""

from __future__ import annotations

import asyncio
import random
from typing import Callable, Optional

from kcodec.errors import ErrorCode

from .errors import BrokerError, CallTimeoutError, KafkaConnectionError, RequestTimeoutError, RetriableTopics

# Retriable in Kafka's table, but an answer to an admin call rather than a passing state: retrying
# would only repeat it (unknown topics), or the broker may have done the work (request timed out).
_ANSWERS = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.REQUEST_TIMED_OUT,
            ErrorCode.ELECTION_NOT_NEEDED}


def retriable(error: ErrorCode) -> bool:
    """A per-topic or whole-request error worth a metadata refresh and another attempt (NOT_CONTROLLER,
    NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE, ...)."""
    return error.retriable and error not in _ANSWERS


def retriable_failure(exc: BaseException) -> bool:
    """A failure worth another attempt: the connection went away, the request timed out, the broker
    answered a retriable whole-request error, or some topics a retriable one."""
    if isinstance(exc, (KafkaConnectionError, RequestTimeoutError, RetriableTopics)):
        return True
    return isinstance(exc, BrokerError) and retriable(exc.error)


class Deadline:
    """The end of one call, ``timeout`` seconds from now on the running loop's clock."""

    def __init__(self, timeout: float, what: str) -> None:
        if timeout <= 0:
            raise ValueError(f"{what}: the timeout must be positive, not {timeout}")
        self.timeout = timeout
        self.what = what
        self._loop = asyncio.get_running_loop()
        self.end = self._loop.time() + timeout

    def remaining(self) -> float:
        return max(0.0, self.end - self._loop.time())

    def cap(self, seconds: float) -> float:
        """``seconds`` or what is left of the deadline, whichever is less (never 0: 0 means no limit
        to Connection.request)."""
        return max(1e-3, min(seconds, self.remaining()))

    def expired(self, attempts: int, last: Optional[BaseException]) -> CallTimeoutError:
        return CallTimeoutError(self.what, self.timeout, attempts, last)


class Backoff:
    """Delays between attempts: ``base * 2**attempt``, at most ``cap``, each scaled by a random
    factor in [1 - jitter, 1 + jitter] so that many clients do not retry in step."""

    def __init__(self, base: float = 0.1, cap: float = 2.0, jitter: float = 0.2,
                 rand: Callable[[], float] = random.random) -> None:
        if base <= 0 or cap < base:
            raise ValueError(f"backoff needs 0 < base <= cap, not base={base} cap={cap}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), not {jitter}")
        self.base, self.cap, self.jitter, self._rand = base, cap, jitter, rand

    def delay(self, attempt: int) -> float:
        plain = min(self.cap, self.base * 2 ** min(attempt, 30))
        return plain * (1 - self.jitter + 2 * self.jitter * self._rand())

