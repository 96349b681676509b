"""AdminError: a refusal with Kafka's error code and message (here so that modules state.py imports
can raise it too; state.py re-exports it), and the messages Kafka gives codes by default."""

from __future__ import annotations

from kcodec.errors import ErrorCode


class AdminError(Exception):
    """A refusal with Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# Kafka's default messages (Errors.message()) of the codes the broker answers with none of its own.
KAFKA_MESSAGES: dict[int, str] = {
    ErrorCode.NONE: "NONE",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
}
