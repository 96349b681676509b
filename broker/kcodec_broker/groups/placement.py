"""Which broker coordinates a group or a transactional id: Kafka's partition of its internal topic.

Kafka maps a key to partition ``abs(key.hashCode()) % partitions`` of __consumer_offsets (groups) or
__transaction_state (transactional ids); that partition's leader is the coordinator. Doing the same
spreads groups over the cluster's brokers and moves them when a broker stops, as clients expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..state import ClusterState

GROUP_KEY, TRANSACTION_KEY = 0, 1
INTERNAL_TOPICS = {GROUP_KEY: "__consumer_offsets", TRANSACTION_KEY: "__transaction_state"}


def java_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's Utils.abs(hashCode) % partitions (abs of MIN_VALUE is 0 there)."""
    h = java_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def coordinator_for(state: "ClusterState", key: str, key_type: int = GROUP_KEY) -> int:
    """The node id coordinating ``key``, or -1 when the partition's replicas are all stopped."""
    topic = state.topics[INTERNAL_TOPICS[key_type]]
    return state.leader(topic, partition_for(key, len(topic.replicas)))
