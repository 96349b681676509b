"""Fetching from the closest replica (KIP-392): the replica selector a leader asks which replica a consumer
should read from (whether a follower may serve a consumer is ``ClusterState.leader_error``'s, with
``leader_only=False``).

Kafka's broker has no selector by default (``replica.selector.class`` unset): leaders never name another
replica, so consumers read from leaders. With ``RackAwareReplicaSelector`` a leader answers a consumer
Fetch (v11+, which carries the consumer's ``rack_id``) with ``preferred_read_replica`` when the leader is
not in the consumer's rack and an in-sync live follower is; the consumer then fetches from that follower.
Followers serve any consumer Fetch from v11 on, selector or not, as Kafka's do (FetchParams.fetchOnlyLeader
is false once a request carries client metadata).

The brokers share one log: where Kafka's selector takes the most caught-up follower of the rack (log end
offset, then the shortest time since it was last caught up), the first in-sync one in the replica
assignment is chosen, even one lagging within replica.lag.time.max.ms (isr.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .state import ClusterState
    from .topic import Topic

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"  # Kafka's explicit "always the leader"
NO_PREFERENCE = -1  # the leader: Fetch's preferred_read_replica when it names none
_SHORT = {"rack-aware": RACK_AWARE, "RackAwareReplicaSelector": RACK_AWARE, "leader": LEADER_SELECTOR,
          "LeaderSelector": LEADER_SELECTOR}


def replica_selector(name: Optional[str]) -> Optional[str]:
    """The Kafka class name of a selector given by class name or short name ("rack-aware", "leader"); None:
    none (Kafka's default). ValueError for any other."""
    if name is None or name == "":
        return None
    full = _SHORT.get(name, name)
    if full not in (RACK_AWARE, LEADER_SELECTOR):
        raise ValueError(f"unknown replica selector {name!r}: expected {RACK_AWARE} (rack-aware) or "
                         f"{LEADER_SELECTOR} (leader)")
    return full


def preferred_read_replica(state: "ClusterState", topic: "Topic", index: int, leader: int, selector: Optional[str],
                           client_rack: Optional[str], listener: str) -> int:
    """The replica the leader names to a consumer in ``client_rack`` whose fetch offset is in the log's range,
    or -1: the leader itself (no selector, no rack, the leader in the rack, or no in-sync live follower
    there reachable on the client's listener), as ReplicaManager.findPreferredReadReplica and
    RackAwareReplicaSelector decide."""
    if selector != RACK_AWARE or not client_rack:
        return NO_PREFERENCE

    def rack_of(node: int) -> Optional[str]:
        info = state.brokers.get(node)
        return info.rack if info is not None and info.endpoint(listener) is not None else None

    if rack_of(leader) == client_rack:
        return NO_PREFERENCE
    isr = state.partition_leadership(topic, index).isr
    return next((b for b in topic.replicas[index] if b != leader and b in isr and rack_of(b) == client_rack),
                NO_PREFERENCE)
