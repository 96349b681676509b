"""One classic consumer group: its members, state, generation and the answers members wait for.

The states and transitions are Kafka's (ClassicGroup): Empty -> PreparingRebalance -> CompletingRebalance
-> Stable, back to PreparingRebalance when members join, leave or time out, and Dead once deleted.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Optional

from kcodec.errors import ErrorCode


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation: int = -1
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader: str = ""
    members: list[tuple[str, Optional[str], bytes]] = field(default_factory=list)  # (id, instance id, metadata)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: int
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    assignment: bytes = b""


@dataclass
class Membership:
    """What a JoinGroup says about its member, kept until its next join."""

    instance_id: Optional[str]
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


@dataclass
class Member(Membership):
    member_id: str = ""
    assignment: bytes = b""
    join_waiter: Optional["asyncio.Future[JoinResult]"] = None
    sync_waiter: Optional["asyncio.Future[SyncResult]"] = None
    expiry: Optional[asyncio.TimerHandle] = None

    @classmethod
    def of(cls, member_id: str, joined: Membership, assignment: bytes = b"") -> "Member":
        return cls(member_id=member_id, assignment=assignment, **{f.name: getattr(joined, f.name)
                                                                   for f in fields(Membership)})

    def update(self, joined: Membership) -> None:
        for f in fields(Membership):
            setattr(self, f.name, getattr(joined, f.name))

    def metadata(self, protocol: Optional[str]) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None and not self.join_waiter.done()

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None and not self.sync_waiter.done()

    def answer_join(self, result: JoinResult) -> None:
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is not None and not waiter.done():  # done: the connection went away meanwhile
            waiter.set_result(result)

    def answer_sync(self, result: SyncResult) -> None:
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def fence(self, error: int) -> None:
        """Answer whatever this member waits for with ``error`` and stop its session timer."""
        self.answer_join(JoinResult(error, self.member_id))
        self.answer_sync(SyncResult(error))
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: Optional[str] = None
    protocol_name: Optional[str] = None
    leader: Optional[str] = None
    members: dict[str, Member] = field(default_factory=dict)      # in join order
    static: dict[str, str] = field(default_factory=dict)          # group.instance.id -> member id
    pending: dict[str, asyncio.TimerHandle] = field(default_factory=dict)  # ids given with MEMBER_ID_REQUIRED
    join_timer: Optional[asyncio.TimerHandle] = None
    initial_delay: bool = False  # the join waits for the initial rebalance delay, not for the members

    def candidates(self) -> list[str]:
        """The protocols every member supports, in the first member's order of preference."""
        members = list(self.members.values())
        if not members:
            return []
        common = set.intersection(*({name for name, _ in m.protocols} for m in members))
        return [name for name, _ in members[0].protocols if name in common]

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's supportsProtocols: an empty group takes any type; otherwise the same type and at
        least one protocol every current member supports."""
        if self.state == GroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        return any(counts[n] == len(self.members) for n in names)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; most votes wins (ties: preference order)."""
        candidates = self.candidates()
        votes = Counter(next(name for name, _ in m.protocols if name in candidates) for m in self.members.values())
        return max(candidates, key=lambda name: (votes[name], -candidates.index(name)))

    def join_result(self, member: Member, skip_assignment: bool = False) -> JoinResult:
        """The JoinGroup answer of the current generation: the leader gets every member's metadata."""
        leader = member.member_id == self.leader
        members = [(m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values()] \
            if leader else []
        return JoinResult(ErrorCode.NONE, member.member_id, self.generation, self.protocol_type, self.protocol_name,
                          self.leader or "", members, skip_assignment and leader)

    def remove(self, member_id: str) -> Optional[Member]:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def subscribed_topics(self) -> Optional[set[str]]:
        """The topics a consumer-protocol group's members subscribe to (None when they cannot be read)."""
        if self.protocol_type != "consumer" or not self.members:
            return set() if not self.members else None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics


def subscription_topics(metadata: bytes) -> Optional[list[str]]:
    """The topic names of a ConsumerProtocolSubscription (every version starts with int16 version, then
    an int32 count of int16-length strings); None when it is malformed."""
    try:
        count = int.from_bytes(metadata[2:6], "big", signed=True)
        if len(metadata) < 6 or count < 0:
            return None
        pos, out = 6, []
        for _ in range(count):
            n = int.from_bytes(metadata[pos:pos + 2], "big", signed=True)
            if n < 0 or pos + 2 + n > len(metadata):
                return None
            out.append(metadata[pos + 2:pos + 2 + n].decode("utf-8"))
            pos += 2 + n
        return out
    except UnicodeDecodeError:
        return None
