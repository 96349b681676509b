"""Manual replica assignments, checked as KRaft's ReplicationControlManager checks them: the brokers of
one partition (validateManualPartitionAssignment: reassignments, CreatePartitions, CreateTopics) and a
CreateTopics entry's whole assignment (createTopic). Each refusal is an AdminError with Kafka's code and
message."""

from __future__ import annotations

from typing import Collection, Optional

from kcodec.errors import ErrorCode

from .admin_error import AdminError


def validate_target(target: list[int], brokers: Collection[int], replication_factor: Optional[int] = None) -> None:
    """Kafka's validateManualPartitionAssignment: not empty, then in broker id order each one registered
    (a stopped broker still is) and named once, then as many as ``replication_factor`` (CreatePartitions:
    partition 0's count; CreateTopics: the previous partition's; a reassignment: not checked)."""
    if not target:
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    previous: Optional[int] = None
    for broker in sorted(target):
        if broker not in brokers:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                             f"broker {broker}, but no such broker is registered.")
        if broker == previous:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                             f"the broker {broker} more than once.")
        previous = broker
    if replication_factor is not None and len(target) != replication_factor:
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a "
                         f"partition with {len(target)} replica(s), but this is not consistent with previous "
                         f"partitions, which have {replication_factor} replica(s).")


def require_running(target: list[int], running: Collection[int], index: int) -> None:
    """A new partition needs a running broker among its replicas, else its ISR would be empty."""
    if not any(b in running for b in target):
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"All brokers specified in the manual partition "
                         f"assignment for partition {index} are fenced or in controlled shutdown.")


def manual_assignment(pairs: list[tuple[int, list[int]]], num_partitions: int, replication_factor: int,
                      brokers: Collection[int], running: Collection[int]) -> list[list[int]]:
    """A CreateTopics entry's (partition index, brokers) pairs as partitions' replicas, in the order of
    ReplicationControlManager.createTopic: both counts left at -1, then each pair in request order (its
    index not given before, validate_target against the previous pair's count, a running broker), then
    the indexes consecutive from 0."""
    if replication_factor != -1:
        raise AdminError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                         "replication factor was not set to -1.")
    if num_partitions != -1:
        raise AdminError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                         "numPartitions was not set to -1.")
    placed: dict[int, list[int]] = {}
    previous: Optional[int] = None
    for index, target in pairs:
        if index in placed:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Found multiple manual partition assignments for partition {index}")
        validate_target(target, brokers, previous)
        previous = len(target)
        require_running(target, running, index)
        placed[index] = list(target)
    if any(i not in placed for i in range(len(placed))):
        raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "partitions should be a consecutive 0-based integer sequence")
    return [placed[i] for i in range(len(placed))]
