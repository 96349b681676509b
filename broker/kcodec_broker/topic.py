"""A topic as the cluster keeps it, the rules for its name, and the system topics (KIP-619) with the configs
Kafka's coordinators create them with."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Optional

from kcodec.errors import ErrorCode

from . import configs as cfg
from .admin_error import AdminError
from .reassignments import Reassignment

# KIP-619: the system-defined internal topics, present from the start, never deletable.
SYSTEM_TOPICS = ("__consumer_offsets", "__transaction_state")
MAX_TOPIC_NAME = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    replicas: list[list[int]]          # per partition, the leader first
    configs: dict[str, str] = field(default_factory=dict)  # overrides only
    reassigning: dict[int, Reassignment] = field(default_factory=dict)  # partition index: one in progress

    @property
    def system(self) -> bool:
        return self.name in SYSTEM_TOPICS

    @property
    def internal(self) -> bool:
        """KIP-619: system topics and topics whose config says internal=true."""
        return self.system or cfg.is_internal(self.configs)

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0]) if self.replicas else 0


def validate_topic_name(name: Optional[str]) -> str:
    """Kafka's Topic.validate, in its order and words (Kafka 4.4), as an AdminError with INVALID_TOPIC_EXCEPTION."""
    if not name:
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' is not allowed")
    if len(name.encode("utf-16-le")) // 2 > MAX_TOPIC_NAME:  # Java's String.length: UTF-16 units
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: the length of '{name}' is "
                         f"longer than the max allowed length {MAX_TOPIC_NAME}")
    if not _LEGAL_NAME.fullmatch(name):
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: '{name}' contains one or more "
                         "characters other than ASCII alphanumerics, '.', '_' and '-'")
    return name


def system_topic_configs(name: str, brokers: int) -> dict[str, str]:
    """The configs Kafka's coordinators create their topics with (GroupCoordinator's and TransactionLog's
    defaults: offsets.topic.*, transaction.state.log.*, the minimum ISR capped by the broker count)."""
    if name == "__consumer_offsets":
        return {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}
    return {"cleanup.policy": "compact", "compression.type": "uncompressed", "min.insync.replicas": str(min(2, brokers)),
            "segment.bytes": "104857600", "unclean.leader.election.enable": "false"}
