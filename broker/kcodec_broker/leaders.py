"""Partition leadership: who leads each partition, which replicas are in sync, and leader elections.

With ``auto_rebalance`` (the default) a partition's first live replica leads: a stopped leader's
partitions move to their next live replica and come back the moment it returns, as Kafka's
auto.leader.rebalance.enable does (without its five-minute wait). While a reassignment is pending the
rule is Kafka's elections': the target's first replica once in sync, else the current leader while in
sync (``_reassigning_leader``). A state file's leaders are the exception: after a restart each saved
leader keeps its partition (and its epoch) until that rebalance next runs, at the first broker stop or
start after the cluster's own start or at a preferred election, as Kafka's leaders stand in its
metadata log until its periodic preferred election (``_pinned``).
Without it the cluster keeps what Kafka's controller keeps: leadership moves only when its leader stops,
a returning broker rejoins the ISR as a follower once it has caught up (at once from a live leader;
copies.py: a replica that cannot copy lags out of the ISR), and a partition whose last in-sync replica
stopped stays offline until that replica returns or an unclean election elects another.
ElectLeaders (KIP-183, KIP-460) moves leaders in both modes.

Leader epochs are KRaft's controller's: 0 when the partition is created, one more at every change of its
leader (to another broker or to none: offline) and at every change of its replicas that drops one
(PartitionChangeBuilder's bump for reassignments: completing, cancelling), none for a change of the ISR
alone (Kafka 3.6+ metadata versions). ``settle`` compares each partition's leader with the one its epoch
was given for, after every change of the brokers or an election. The brokers' first starts are the
cluster's own start: leaders placed then keep epoch 0 (``starting``).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple, Optional, Protocol

from kcodec.errors import ErrorCode

if TYPE_CHECKING:
    from .topic import Topic

NO_LEADER = -1


class PartitionLeadership(NamedTuple):
    leader: int            # NO_LEADER: offline
    isr: list[int]         # in assignment order
    offline: list[int]     # replicas on stopped brokers


Key = tuple[uuid.UUID, int]  # (topic id, partition index)


class Lagging(Protocol):
    """Which replicas' copies lack records of the log and are out of the ISR (copies.py); false when none
    might."""

    def __bool__(self) -> bool: ...

    def out_of_isr(self, topic_id: uuid.UUID, index: int, node: int) -> bool: ...


def _replicated_by(node: int, topics: Iterable["Topic"]) -> Iterator[tuple["Topic", int, list[int]]]:
    """(topic, partition index, replicas) of every partition with a replica on ``node``."""
    for topic in topics:
        for index, replicas in enumerate(topic.replicas):
            if node in replicas:
                yield topic, index, replicas


class Leadership:
    """Leaders and ISRs kept per partition; a partition with none kept follows the first-live-replica rule.
    Each partition's leader epoch is kept with the leader it was given for."""

    def __init__(self, auto_rebalance: bool = True) -> None:
        self.auto_rebalance = auto_rebalance
        self.copies: Optional[Lagging] = None  # a replica lagging out of the ISR (copies.py)
        self._kept: dict[Key, tuple[int, list[int]]] = {}  # (topic id, index): (leader, ISR)
        self._epochs: dict[Key, tuple[int, int]] = {}  # (topic id, index): (leader epoch, its leader)
        self._started: set[int] = set()  # brokers that have run: a second start is a restart
        self._pinned: dict[Key, int] = {}  # auto_rebalance: the leaders a state file saved, until it rebalances

    # -- leader epochs --------------------------------------------------------------------------------
    def epoch_of(self, topic_id: uuid.UUID, index: int) -> int:
        """The partition's leader epoch (0 before it was first settled)."""
        held = self._epochs.get((topic_id, index))
        return held[0] if held is not None else 0

    def starting(self, broker_ids: Iterable[int]) -> bool:
        """True until every broker has started once: the cluster's own start moves no epoch."""
        return not self._started.issuperset(broker_ids)

    def settle(self, topic: "Topic", index: int, up: set[int], replicas_dropped: bool = False) -> bool:
        """Give the partition a new epoch if its leader is not the one its epoch was given for, or its
        replicas just lost one (a partition seen for the first time starts at 0); True when the epoch rose.
        One change is one epoch, even when it both moves the leader and drops replicas."""
        key = (topic.topic_id, index)
        leader = self.current(topic, index, up).leader
        held = self._epochs.get(key)
        if held is None:
            self._epochs[key] = (0, leader)
            return False
        if held[1] == leader and not replicas_dropped:
            return False
        self._epochs[key] = (held[0] + 1, leader)
        return True

    # -- persistence (the state file) -----------------------------------------------------------------
    def to_json(self, topic: "Topic") -> dict[str, Any]:
        """The topic's epochs (with the leader each was given for) and its kept leaders and ISRs."""
        out: dict[str, Any] = {"epochs": [list(self._epochs.get((topic.topic_id, i), (0, NO_LEADER)))
                                          for i in range(len(topic.replicas))]}
        kept = []
        for i in range(len(topic.replicas)):
            held = self._kept.get((topic.topic_id, i))
            if held is not None:
                kept.append([i, held[0], held[1]])
        if kept:
            out["kept"] = kept
        return out

    def load_json(self, topic: "Topic", data: dict[str, Any]) -> None:
        for i, (epoch, leader) in enumerate(data.get("epochs", [])):
            self._epochs[(topic.topic_id, i)] = (int(epoch), int(leader))
            if self.auto_rebalance and int(leader) != NO_LEADER:
                self._pinned[(topic.topic_id, i)] = int(leader)
        for i, leader, isr in data.get("kept", []):
            self._kept[(topic.topic_id, int(i))] = (int(leader), [int(b) for b in isr])

    def current(self, topic: "Topic", index: int, up: set[int]) -> PartitionLeadership:
        replicas = topic.replicas[index]
        offline = [b for b in replicas if b not in up]
        kept = self._kept.get((topic.topic_id, index))
        if kept is not None:
            copies = self.copies
            isr = [b for b in kept[1] if not copies.out_of_isr(topic.topic_id, index, b)] if copies else list(kept[1])
            return PartitionLeadership(kept[0], isr, offline)
        # the first live in-sync replica leads; with none in sync, the first live one (as before lag existed)
        isr = self._in_sync(topic, index, up) or [b for b in replicas if b in up][:1]
        if self._pinned:
            pinned = self._pinned.get((topic.topic_id, index))
            if pinned in isr:  # a stopped saved leader hands over as any leader does
                return PartitionLeadership(pinned, isr, offline)
        if index in topic.reassigning and isr:
            return PartitionLeadership(self._reassigning_leader(topic, index, isr), isr, offline)
        return PartitionLeadership(isr[0] if isr else NO_LEADER, isr, offline)

    def _reassigning_leader(self, topic: "Topic", index: int, isr: list[int]) -> int:
        """Kafka's leader while a reassignment is pending, its periodic preferred election run at once:
        the preferred replica (the target's first) if in sync, else the current leader (the one its epoch
        was given for) while it stays in sync, even if it is being removed, else the first in-sync replica
        (PartitionChangeBuilder's electPreferredLeader, then electAnyLeader)."""
        preferred = topic.replicas[index][0]
        if preferred in isr:
            return preferred
        held = self._epochs.get((topic.topic_id, index))
        return held[1] if held is not None and held[1] in isr else isr[0]

    def forget(self, topic_id: uuid.UUID) -> None:
        for table in (self._kept, self._epochs, self._pinned):
            for key in [k for k in table if k[0] == topic_id]:
                del table[key]

    def rebalance(self) -> None:
        """Kafka's periodic preferred election, which kcodec runs at once (auto_rebalance): the leaders a
        state file saved stop standing, and every partition's first live replica leads."""
        self._pinned.clear()

    # -- brokers stopping and starting (kept leadership only) ---------------------------------------------
    def broker_stopped(self, node: int, topics: Iterable["Topic"], up_before: set[int], up_after: set[int]) -> None:
        """Its partitions lose it from the ISR (Kafka keeps the last member) and, where it led, elect the
        first remaining in-sync live replica, or go offline."""
        if self.auto_rebalance:
            return
        for topic, index, replicas in _replicated_by(node, topics):
            now = self.current(topic, index, up_before)
            isr = [b for b in now.isr if b != node] or now.isr
            leader = now.leader
            if leader == node or leader == NO_LEADER:
                leader = next((b for b in replicas if b in isr and b in up_after), NO_LEADER)
            self._kept[(topic.topic_id, index)] = (leader, isr)

    def broker_started(self, node: int, topics: Iterable["Topic"], up_after: set[int]) -> None:
        """A restarted broker: a led partition takes it back into the ISR; an offline one it was the last
        in-sync replica of elects it (a clean election); an offline one that lost it earlier stays offline.
        (A first start is the cluster's own: the first-live-replica rule places leaders, but for the
        leaders a state file kept, which it treats as a restart does.)"""
        restarted = node in self._started
        self._started.add(node)
        if self.auto_rebalance:
            return
        for topic, index, replicas in _replicated_by(node, topics):
            kept = self._kept.get((topic.topic_id, index))
            if kept is None and not restarted:
                continue
            if kept is None:  # created while it was away: keep the leader it got then
                then = self.current(topic, index, up_after - {node})
                if then.leader == NO_LEADER:
                    continue
                kept = (then.leader, then.isr)
            leader, isr = kept
            if leader == NO_LEADER and node not in isr:
                continue
            if leader == NO_LEADER:
                leader = node
            self._kept[(topic.topic_id, index)] = (leader, self._in_sync(topic, index, up_after))

    def rejoin(self, topic: "Topic", index: int, node: int) -> None:
        """A follower caught up with its leader: it is in the ISR again (Kafka's maybeExpandIsr)."""
        kept = self._kept.get((topic.topic_id, index))
        if kept is not None and node not in kept[1]:
            self._kept[(topic.topic_id, index)] = (kept[0], [b for b in topic.replicas[index]
                                                             if b in kept[1] or b == node])

    # -- reassignments -------------------------------------------------------------------------------------
    def reassigned(self, topic: "Topic", index: int, before: PartitionLeadership, up: set[int],
                   isr: Optional[list[int]] = None) -> None:
        """The partition's replicas changed (a reassignment started, completed or was cancelled). With
        leaders kept: the ISR becomes ``isr`` or, when none is given, gains the live new replicas of a led
        partition (one shared log: caught up at once), always less the replicas no longer listed; a leader
        that is no longer an in-sync replica hands over to the first in-sync live one (none in sync: an
        unclean election, the first live replica). With auto rebalance the first live replica leads (a
        leader a state file saved keeps leading while it stays a replica)."""
        if self.auto_rebalance:
            key = (topic.topic_id, index)
            if self._pinned.get(key, NO_LEADER) not in topic.replicas[index]:
                self._pinned.pop(key, None)
            return
        replicas = topic.replicas[index]
        leader = before.leader
        if isr is None:
            isr = [b for b in replicas if b in before.isr or (leader != NO_LEADER and b in up)]
        isr = [b for b in replicas if b in isr]
        if not isr:
            isr = self._in_sync(topic, index, up)[:1] or [b for b in replicas if b in up][:1]
        if leader not in isr:
            leader = next((b for b in isr if b in up), NO_LEADER)
        self._kept[(topic.topic_id, index)] = (leader, isr)

    def _in_sync(self, topic: "Topic", index: int, up: set[int]) -> list[int]:
        """A led partition's ISR: every live replica whose copy does not lag (copies.py)."""
        copies = self.copies
        if not copies:
            return [b for b in topic.replicas[index] if b in up]
        return [b for b in topic.replicas[index] if b in up and not copies.out_of_isr(topic.topic_id, index, b)]

    # -- elections (ElectLeaders) -------------------------------------------------------------------------
    def elect_preferred(self, topic: "Topic", index: int, up: set[int]) -> ErrorCode:
        """Kafka's PREFERRED election: the first replica leads if it is live and in sync."""
        now = self.current(topic, index, up)
        preferred = topic.replicas[index][0]
        if now.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED
        if preferred not in up or preferred not in now.isr:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        if self.auto_rebalance:  # a saved leader stood: the first live replica, the preferred one, leads
            self._pinned.pop((topic.topic_id, index), None)
            return ErrorCode.NONE
        self._kept[(topic.topic_id, index)] = (preferred, now.isr)
        return ErrorCode.NONE

    def elect_unclean(self, topic: "Topic", index: int, up: set[int]) -> ErrorCode:
        """Kafka's UNCLEAN election (KIP-460): an offline partition elects its first live replica, in
        sync or not."""
        now = self.current(topic, index, up)
        if now.leader != NO_LEADER:
            return ErrorCode.ELECTION_NOT_NEEDED
        live = [b for b in topic.replicas[index] if b in up]
        if not live:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        # the new leader leads with its copy (copies.py truncates the log to it); the others rejoin as they catch up
        in_sync = self._in_sync(topic, index, up)
        self._kept[(topic.topic_id, index)] = (live[0], [b for b in live if b == live[0] or b in in_sync])
        return ErrorCode.NONE
