"""Partition reassignments (KIP-455) as KRaft's controller keeps them.

A reassignment lists a partition's replicas as the target followed by the replicas being removed, with
``adding`` and ``removing`` beside them (Kafka's PartitionRegistration). It completes when every replica
that stays is in the ISR: the brokers share one log, so a live added replica is caught up at once and a
reassignment completes in the request that starts it unless an added replica's broker is stopped, in
which case it stays pending until that broker starts again. On completion the removed replicas leave the
list and the ISR, and a leader that is not among the remaining replicas hands over (leaders.py).

The rules raise AdminError with Kafka's codes and messages; ``ClusterState`` applies them under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from kcodec.errors import ErrorCode

from .admin_error import AdminError
from .assignments import validate_target

if TYPE_CHECKING:
    from .topic import Topic


@dataclass
class Reassignment:
    adding: list[int] = field(default_factory=list)    # sorted, as Kafka's TreeSet leaves them
    removing: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, list[int]]:
        return {"adding": self.adding, "removing": self.removing}

    @classmethod
    def from_json(cls, data: dict[str, list[int]]) -> "Reassignment":
        return cls([int(b) for b in data.get("adding", [])], [int(b) for b in data.get("removing", [])])


def heading_size(topic: "Topic", index: int) -> int:
    """How many replicas the partition is headed for: the replicas and the ones being added, less the
    ones being removed (Kafka's validatePartitionReplicationFactorUnchanged)."""
    ongoing = topic.reassigning.get(index)
    if ongoing is None:
        return len(topic.replicas[index])
    return len((set(topic.replicas[index]) | set(ongoing.adding)) - set(ongoing.removing))


def plan_change(topic: "Topic", index: int, target: list[int], brokers: list[int],
                allow_rf_change: bool) -> tuple[list[int], Reassignment]:
    """The replicas and reassignment a new target gives (PartitionReassignmentReplicas): the target, then
    the current replicas it drops. As Kafka's PartitionChangeBuilder, an empty adding or removing set
    leaves the one of a reassignment in progress as it was."""
    validate_target(target, brokers)
    if not allow_rf_change:
        now = heading_size(topic, index)
        if now != len(target):
            raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"The replication factor is changed from {now} to {len(target)}")
    current = topic.replicas[index]
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    before = topic.reassigning.get(index) or Reassignment()
    return list(target) + removing, Reassignment(adding or list(before.adding), removing or list(before.removing))


def plan_cancel(topic: "Topic", index: int, isr: list[int]) -> tuple[list[int], list[int]]:
    """The replicas and ISR that cancelling gives back (PartitionReassignmentRevert): the replicas less
    the ones being added, in their current order (a target that reordered them keeps its order). An ISR
    of added replicas only would need an unclean election, which the topic's
    unclean.leader.election.enable must allow."""
    ongoing = topic.reassigning.get(index)
    if ongoing is None:
        raise AdminError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")
    replicas = [b for b in topic.replicas[index] if b not in ongoing.adding]
    kept_isr = [b for b in isr if b not in ongoing.adding]
    if not kept_isr:  # the first remaining replica joins the ISR: an unclean election
        if topic.configs.get("unclean.leader.election.enable", "false").lower() != "true":
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment "
                             f"for {topic.name}:{index} because it would require an unclean leader election.")
        kept_isr = replicas[:1]
    return replicas, kept_isr


def completed(replicas: list[int], ongoing: Reassignment, isr: list[int]) -> Optional[tuple[list[int], list[int]]]:
    """The replicas and ISR once the reassignment can complete (maybeCompleteReassignment), else None:
    the ISR less the removed replicas must hold every replica that stays, and not be empty."""
    staying = [b for b in replicas if b not in ongoing.removing]
    staying_isr = [b for b in isr if b not in ongoing.removing]
    if not staying or not staying_isr or not set(staying) <= set(staying_isr):
        return None
    return staying, staying_isr
