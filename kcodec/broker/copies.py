"""Followers' copies of their partitions: which replicas lag behind the log, and how far.

The brokers share one log per partition, the leader's. A follower copies from its leader at once while it
can: while its broker runs, the partition has a leader, and its replication is not paused
(``Cluster.pause_replication``, a follower whose fetcher stalls). When it cannot, its copy stops where the
log ended then (``Copy``: that log end offset, which was also the high watermark the follower had learned,
and the last stable offset then). Such a copy lags once the leader appends past it; a lagging replica is
out of the ISR (Kafka's leader drops it after replica.lag.time.max.ms; here at once) and serves consumers
its own copy, as Kafka's followers do (Partition.fetchRecords reads the local log). It catches up, and
rejoins the ISR, as soon as it can copy again. A leader always holds the whole log: a lagging replica that
an unclean election (or the first-live-replica rule) makes leader keeps the records it lacked, where
Kafka's would lose them.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, NamedTuple, Optional

from .leaders import NO_LEADER

if TYPE_CHECKING:
    from .log import LogStore
    from .state import ClusterState

Key = tuple[uuid.UUID, int, int]  # (topic id, partition index, node id)


class Copy(NamedTuple):
    end: int  # the copy's log end offset, and the high watermark its follower reports
    last_stable_offset: int


class FollowerCopies:
    """The copies that stopped following their leader, and the brokers whose replication is paused."""

    def __init__(self, logs: "LogStore") -> None:
        self.logs = logs
        self.paused: set[int] = set()
        self._held: dict[Key, Copy] = {}

    def __bool__(self) -> bool:
        return bool(self._held)

    def get(self, topic_id: uuid.UUID, index: int, node: int) -> Optional[Copy]:
        return self._held.get((topic_id, index, node))

    def lagging(self, topic_id: uuid.UUID, index: int, node: int) -> Optional[Copy]:
        """The copy ``node`` holds of the partition when it lacks records the log has, else None."""
        held = self._held.get((topic_id, index, node)) if self._held else None
        if held is None:
            return None
        plog = self.logs.logs.get((topic_id, index))
        return held if plog is not None and held.end < plog.next_offset else None

    def lags(self, topic_id: uuid.UUID, index: int, node: int) -> bool:
        return self.lagging(topic_id, index, node) is not None

    def forget(self, topic_id: uuid.UUID) -> None:
        for key in [k for k in self._held if k[0] == topic_id]:
            del self._held[key]

    def replicate(self, state: "ClusterState") -> None:
        """After a change of brokers, leaders or pauses: each follower that can copy catches up (and, with
        leaders kept, rejoins the ISR); each that cannot keeps the copy it has, or starts one at the log's end."""
        running = set(state.brokers) or set(state.broker_ids)  # none started: a state without servers
        if not self._held and not self.paused and running.issuperset(state.broker_ids):
            return  # every replica copies: none lags
        for topic in state.topics.values():
            for index, replicas in enumerate(topic.replicas):
                now = state.partition_leadership(topic, index)
                for node in replicas:
                    key = (topic.topic_id, index, node)
                    if node == now.leader:
                        self._held.pop(key, None)  # a leader holds the log
                    elif node in running and node not in self.paused and now.leader != NO_LEADER:
                        self._held.pop(key, None)
                        if node not in now.isr:
                            state.leadership.rejoin(topic, index, node)
                    elif key not in self._held:
                        plog = self.logs.logs.get((topic.topic_id, index))
                        self._held[key] = Copy(plog.next_offset, plog.last_stable_offset) if plog else Copy(0, 0)
