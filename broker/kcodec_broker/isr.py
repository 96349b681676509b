"""The leader's side of the ISR: dropping followers that lag for too long, and what acks=all waits for.

A follower that stops copying (copies.py) stays in the ISR until it has not been caught up for
replica.lag.time.max.ms; the leaders look every replica.lag.time.max.ms / 2 (Kafka's isr-expiration task,
ReplicaManager.maybeShrinkIsr), against ``ClusterState.clock`` (tests may replace it and call
``shrink_isr`` themselves). Meanwhile an acks=all produce waits for it as Kafka's DelayedProduce does:
until every replica in the ISR holds the records (it catches up) or the ISR no longer names it, then
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR has fallen below min.insync.replicas, or REQUEST_TIMED_OUT
at the request's timeout. An ISR already below min.insync.replicas refuses the append
(NOT_ENOUGH_REPLICAS, Partition.appendRecordsToLeader).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Optional

from kcodec.errors import ErrorCode

from .broker_configs import topic_value

if TYPE_CHECKING:
    from .state import ClusterState
    from .topic import Topic


def shrink_isr(state: "ClusterState") -> bool:
    """One run of the ISR check: followers not caught up for replica.lag.time.max.ms leave the ISR (one
    AlterPartition each, in Kafka); acks=all produces waiting on them are answered. True when one left."""
    with state.lock:
        if not state.copies.shrink(state.clock(), state.replica_lag_time_max_ms):
            return False
        state.quorum.record()  # the controller's PartitionChangeRecord for the new ISR
        state.progress_reassignments()
        state._settle_all()
    state.logs._wake()  # produces waiting for the dropped followers, long polls
    return True


async def run_isr_expiration(state: "ClusterState") -> None:
    """Kafka's isr-expiration task: ``shrink_isr`` every replica.lag.time.max.ms / 2, until cancelled."""
    while True:
        await asyncio.sleep(state.replica_lag_time_max_ms / 2000.0)
        shrink_isr(state)


def min_isr(state: "ClusterState", topic: "Topic", index: int) -> int:
    """min.insync.replicas (the topic's, else the cluster's), at most the replication factor
    (Partition.effectiveMinIsr)."""
    value = topic_value(state.broker_configs, state.leader(topic, index), topic.configs, "min.insync.replicas")
    return min(int(value), len(topic.replicas[index]))


def refuse_append(state: "ClusterState", topic: "Topic", index: int) -> Optional[str]:
    """Why an acks=all produce may not append (NOT_ENOUGH_REPLICAS), or None."""
    needed = min_isr(state, topic, index)
    if needed <= 1:
        return None  # the leader is in the ISR
    isr = state.partition_leadership(topic, index).isr
    if len(isr) >= needed:
        return None
    return (f"The size of the current ISR Set({', '.join(map(str, isr))}) is insufficient to satisfy the "
            f"min.isr requirement of {needed} for partition {topic.name}-{index}")


def acks_all_result(state: "ClusterState", topic: "Topic", index: int, node: int, required: int) -> Optional[ErrorCode]:
    """An acks=all produce whose records end at ``required``: None while an in-sync follower still lacks
    them, else its error (Partition.checkEnoughReplicasReachOffset; NOT_LEADER_OR_FOLLOWER if ``node``
    no longer leads)."""
    now = state.partition_leadership(topic, index)
    if now.leader != node:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if state.copies.behind(topic.topic_id, index, [b for b in now.isr if b != node], required):
        return None
    return ErrorCode.NONE if len(now.isr) >= min_isr(state, topic, index) else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
