"""Regular expressions clients send: a KIP-848 member's ``SubscribedTopicRegex`` and ListTransactions v2's
``TransactionalIdPattern`` (KIP-1152), matched against whole names.

Kafka compiles the first with RE2/J (``matcher(name).matches()``). Here RE2 itself compiles both (the
google-re2 package, a dependency of kcodec-broker): matching takes time linear in the name, whatever the pattern.
Python's ``re`` backtracks: a client's ``(a+)+b`` against a long name would stall the broker's event loop
for ages, so it is not a fallback. Without google-re2 such a pattern is refused (INVALID_REGULAR_EXPRESSION,
saying what to install).
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Optional

try:
    import re2  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - the broker's extra is not installed
    re2 = None

_MAX_MEMORY = 8 << 20  # RE2's budget for one compiled pattern (its default); a larger one fails to compile


class InvalidRegex(ValueError):
    """The pattern does not compile as RE2 (or RE2 is not installed); the message says why."""


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or InvalidRegex (cached: every heartbeat of the group resolves it again)."""
    if re2 is None:
        raise InvalidRegex("regular expressions need RE2: pip install google-re2 (a dependency of kcodec-broker)")
    options = re2.Options()
    options.log_errors = False  # the broker's log, not RE2's stderr, says what was refused
    options.max_mem = _MAX_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else "it does not compile"
        raise InvalidRegex(reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)) from None


def matching(pattern: Optional[str], names: Iterable[str]) -> set[str]:
    """The names ``pattern`` matches as a whole (none when there is no pattern)."""
    if not pattern:
        return set()
    compiled = compile_pattern(pattern)
    return {n for n in names if compiled.fullmatch(n) is not None}
