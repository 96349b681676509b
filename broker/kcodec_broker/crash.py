"""Kill points for crash tests: the broker kills itself (SIGKILL, as ``kill -9``) at a named point of a
multi-write operation, so a test can restart it from the files a kill at that point leaves.

``KCODEC_BROKER_KILL_AT=NAME:N`` (read at import) kills at the Nth time NAME is reached; unset, each point
costs one comparison. tests/broker/test_broker_txn_crash.py kills a transaction's completion between
every pair of its writes.
"""

from __future__ import annotations

import os
import signal

_AT = os.environ.get("KCODEC_BROKER_KILL_AT", "")
_NAME, _, _COUNT = _AT.partition(":")
_left = int(_COUNT or 1) if _NAME else 0


def kill_point(name: str) -> None:
    """Die here when this is the point (and the time) the environment names."""
    global _left
    if _left and name == _NAME:
        _left -= 1
        if not _left:
            os.kill(os.getpid(), signal.SIGKILL)
