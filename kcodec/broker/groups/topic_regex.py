"""KIP-848 regex subscriptions: the pattern a member sends in ``SubscribedTopicRegex``.

Kafka compiles it with RE2/J and matches it against whole topic names (``matcher(name).matches()``).
Python's ``re`` with ``fullmatch`` stands in. RE2 has no backtracking constructs, so what it would refuse
is refused here too: backreferences, lookahead/lookbehind, atomic groups and possessive repeats (and the
conditional ``(?(1)...)``). Other differences remain: RE2's ``\\C``, ``\\pN`` one-letter Unicode classes
and ``(?U)`` ungreedy flag are not Python's, and a few Python-only escapes are accepted.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Iterable, Optional

if sys.version_info >= (3, 11):  # the parser ``re`` itself uses
    import re._constants as _c
    import re._parser as _parser
else:  # pragma: no cover
    import sre_constants as _c
    import sre_parse as _parser

# Backtracking constructs RE2 does not have.
_NOT_RE2 = {_c.GROUPREF, _c.GROUPREF_EXISTS, _c.ASSERT, _c.ASSERT_NOT}
for _name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
    if hasattr(_c, _name):
        _NOT_RE2.add(getattr(_c, _name))


class InvalidRegex(ValueError):
    """The pattern does not compile (or uses what RE2 lacks); the message says why."""


def _refuse_backtracking(node: object) -> None:
    """Walk the parsed pattern: (op, argument) pairs whose arguments nest further sub-patterns."""
    if isinstance(node, _parser.SubPattern):
        node = node.data
    if isinstance(node, tuple) and node and node[0] in _NOT_RE2:
        raise InvalidRegex(f"{str(node[0]).lower()} is not supported (RE2 has no backtracking)")
    if isinstance(node, (tuple, list)):
        for child in node:
            _refuse_backtracking(child)


@functools.lru_cache(maxsize=256)
def compile_topic_regex(pattern: str) -> "re.Pattern[str]":
    """The compiled pattern, or InvalidRegex (cached: every heartbeat of the group resolves it again)."""
    try:
        _refuse_backtracking(_parser.parse(pattern))
        return re.compile(pattern)
    except re.error as e:
        raise InvalidRegex(str(e)) from None


def matching(pattern: Optional[str], topics: Iterable[str]) -> set[str]:
    """The topic names ``pattern`` matches as a whole (none when there is no pattern)."""
    if not pattern:
        return set()
    compiled = compile_topic_regex(pattern)
    return {t for t in topics if compiled.fullmatch(t)}
