"""AdminError: a refusal with Kafka's error code and message (here so that modules state.py imports
can raise it too; state.py re-exports it)."""

from __future__ import annotations

from kcodec.errors import ErrorCode


class AdminError(Exception):
    """A refusal with Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
