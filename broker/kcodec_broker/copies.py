"""Followers' copies of their partitions: which replicas lag behind the log, how far, and since when.

The brokers share one log per partition, the leader's. A follower copies from its leader at once while it
can: while its broker runs, the partition has a leader, and its replication is not paused
(``Cluster.pause_replication``, a follower whose fetcher stalls). When it cannot, its copy stops where the
log ended then (``Copy``: that log end offset, which was also the high watermark the follower had learned,
and the last stable offset then), and that moment is the last time it was caught up (Kafka's
lastCaughtUpTimeMs for a fetcher that stalled). Such a copy lags once the leader appends past it. A
lagging replica stays in the ISR until the leader's ISR check (``shrink``, Kafka's isr-expiration task,
every replica.lag.time.max.ms / 2) finds it has not caught up for replica.lag.time.max.ms (Partition's
isFollowerOutOfSync); a stopped broker's copy is out at once (the controller fences the broker). A
lagging replica serves consumers its own copy, as Kafka's followers do (Partition.fetchRecords reads the
local log). It catches up, and rejoins the ISR, as soon as it can copy again.

A lagging replica that becomes leader (an unclean election, a clean one while it lagged within its lag
time, or the first-live-replica rule with none in sync) leads with its copy: the shared log is truncated
to its copy's end, the epochs from there on leave the epoch history (the new leader's epoch starts there),
and the other copies are cut to it, as Kafka's old leader and followers truncate when they follow it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, NamedTuple, Optional

from .leaders import NO_LEADER

if TYPE_CHECKING:
    from .log import LogStore
    from .state import ClusterState

DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000  # Kafka's replica.lag.time.max.ms
Key = tuple[uuid.UUID, int, int]  # (topic id, partition index, node id)


class Copy(NamedTuple):
    end: int  # the copy's log end offset, and the high watermark its follower reports
    last_stable_offset: int
    since_ms: int = 0  # when it was last caught up (it stopped copying then)
    out: bool = False  # out of the ISR once it lags: the leader dropped it, or its broker stopped


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

    def out_of_isr(self, topic_id: uuid.UUID, index: int, node: int) -> bool:
        """Whether ``node``'s copy lags and is out of the ISR (dropped by ``shrink``, or its broker stopped)."""
        held = self.lagging(topic_id, index, node)
        return held is not None and held.out

    def shrink(self, now_ms: int, lag_max_ms: int) -> bool:
        """Kafka's maybeShrinkIsr: every in-sync copy that lags and has not been caught up for more than
        ``lag_max_ms`` leaves the ISR. True when one did."""
        shrunk = False
        for key, held in list(self._held.items()):
            if not held.out and now_ms - held.since_ms > lag_max_ms and self.lagging(*key) is not None:
                self._held[key] = held._replace(out=True)
                shrunk = True
        return shrunk

    def behind(self, topic_id: uuid.UUID, index: int, nodes: list[int], offset: int) -> list[int]:
        """The replicas of ``nodes`` whose copies end before ``offset`` (an acks=all produce waits on them)."""
        if not self._held:
            return []
        return [b for b in nodes if (held := self._held.get((topic_id, index, b))) is not None and held.end < offset]

    def forget(self, topic_id: uuid.UUID) -> None:
        for key in [k for k in self._held if k[0] == topic_id]:
            del self._held[key]

    def replicate(self, state: "ClusterState") -> None:
        """After a change of brokers, leaders or pauses: each follower that can copy catches up (and, with
        leaders kept, rejoins the ISR); each that cannot keeps the copy it has, or starts one at the log's end
        (caught up now; out of the ISR at once if its broker stopped)."""
        running = set(state.brokers) or set(state.broker_ids)  # none started: a state without servers
        if not self._held and not self.paused and running.issuperset(state.broker_ids):
            return  # every replica copies: none lags
        for topic in state.topics.values():
            for index, replicas in enumerate(topic.replicas):
                now = state.partition_leadership(topic, index)
                lead = self._held.pop((topic.topic_id, index, now.leader), None) if self._held else None
                if lead is not None:  # a leader holds the log: its copy's end, if it lacked records
                    self._truncate(topic.topic_id, index, lead)
                for node in replicas:
                    key = (topic.topic_id, index, node)
                    if node == now.leader:
                        continue
                    elif node in running and node not in self.paused and now.leader != NO_LEADER:
                        self._held.pop(key, None)
                        if node not in now.isr:
                            state.leadership.rejoin(topic, index, node)
                    elif key not in self._held:
                        plog = self.logs.logs.get((topic.topic_id, index))
                        end, lso = (plog.next_offset, plog.last_stable_offset) if plog else (0, 0)
                        self._held[key] = Copy(end, lso, state.clock(), node not in running)
                    elif node not in running and not self._held[key].out:
                        self._held[key] = self._held[key]._replace(out=True)  # paused, then stopped

    def _truncate(self, topic_id: uuid.UUID, index: int, lead: Copy) -> None:
        """A replica whose copy lags was elected (unclean, or in the ISR within its lag time): the log ends
        where its copy ends, as Kafka's new leader's does, and the other replicas truncate to it (their
        OffsetForLeaderEpoch to the new leader): the records past it are lost."""
        plog = self.logs.logs.get((topic_id, index))
        if plog is None or lead.end >= plog.next_offset:
            return
        self.logs.truncate(topic_id, index, lead.end)
        for key, held in list(self._held.items()):
            if key[:2] == (topic_id, index) and held.end > lead.end:
                self._held[key] = held._replace(end=lead.end, last_stable_offset=min(held.last_stable_offset, lead.end))
