"""Waiting for what a broker running in another thread logs: it may log a refused connection after its
client has already seen the connection close."""

from __future__ import annotations

import time


def wait_for_log(caplog, text: str, count: int = 1, timeout: float = 5.0) -> int:
    """Until ``text`` is in ``count`` of caplog's records (or ``timeout`` seconds pass); how many are."""
    deadline = time.monotonic() + timeout
    while True:
        seen = sum(text in r.getMessage() for r in caplog.records)
        if seen >= count or time.monotonic() >= deadline:
            return seen
        time.sleep(0.01)
