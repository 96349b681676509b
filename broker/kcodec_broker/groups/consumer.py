"""KIP-848 consumer groups: ConsumerGroupHeartbeat with the assignment computed by the broker.

Each heartbeat carries the member's epoch and, when they change, its subscription and owned partitions.
A change of members or subscriptions bumps the group epoch and recomputes the target assignment (the
uniform assignor: each topic's partitions spread over its subscribers in member-id order). A member then
reconciles toward its target: first it is told to give up what is no longer its own (its epoch stays
until it reports them gone), then it moves to the target epoch and receives each new partition as soon
as its previous owner has released it, so no partition ever has two owners.

A member subscribes by names, by a regex (``SubscribedTopicRegex``, broker/regex.py) or both: its
subscription is resolved against the cluster's topics (internal ones excluded, and only those it may
describe) at each heartbeat of the group, so a matching topic that appears or goes bumps the epoch.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from kcodec.errors import ErrorCode

from ..regex import InvalidRegex, compile_pattern, matching

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger("kcodec_broker")
E = ErrorCode
Assignment = dict[uuid.UUID, set[int]]
ASSIGNORS = ("uniform", "range")
_RESOLVED_MAX = 1024  # distinct patterns whose resolution is kept
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: Optional[str] = None
    rack_id: Optional[str] = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed: list[str] = field(default_factory=list)  # the names it sent
    regex: Optional[str] = None                            # and the pattern it sent
    may_describe: Callable[[str], bool] = lambda topic: True  # its principal's view, for what the regex matches
    epoch: int = 0
    previous_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)   # what the member owns (or was told it owns)
    revoking: Assignment = field(default_factory=dict)   # what it must give up before its epoch advances
    sent: Optional[Assignment] = None                    # the assignment last sent to it
    expiry: Optional[asyncio.TimerHandle] = None
    revoke_deadline: Optional[asyncio.TimerHandle] = None  # its rebalance timeout to release ``revoking``


@dataclass
class HeartbeatResult:
    error: int
    member_id: Optional[str] = None
    epoch: int = 0
    assignment: Optional[Assignment] = None  # None: unchanged since the last answer
    message: Optional[str] = None


def _unknown_member(hb: "Heartbeat") -> HeartbeatResult:
    return HeartbeatResult(E.UNKNOWN_MEMBER_ID, hb.member_id, hb.epoch,
                           message=f"Member {hb.member_id} is not a member of group {hb.group_id}.")


def _minus(a: Assignment, b: Assignment) -> Assignment:
    out = {t: ps - b.get(t, set()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


@dataclass
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    metadata: dict[str, Optional[tuple[uuid.UUID, int]]] = field(default_factory=dict)  # what the target saw

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState names."""
        if not self.members:
            return "Empty"
        if self.target_epoch != self.epoch:
            return "Assigning"
        if any(m.epoch != self.target_epoch or m.revoking or m.assigned != self.target.get(m.member_id, {})
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def compute_target(self, partitions_of: Callable[[str], Optional[tuple[uuid.UUID, int]]],
                       subscriptions: dict[str, set[str]]) -> None:
        """The uniform assignor, sticky as Kafka's (UniformHomogeneousAssignmentBuilder): each subscribed topic's
        partitions spread evenly over its subscribers (``subscriptions``: each member's resolved topic names),
        each keeping the lowest of the partitions the previous target gave it, up to its share (the members that
        held more than the even share get the extra partitions first); the rest go, lowest first, to the members
        still short of their share, in member id order."""
        target: dict[str, Assignment] = {m: {} for m in self.members}
        topics = sorted({t for names in subscriptions.values() for t in names})
        for name in topics:
            found = partitions_of(name)
            if found is None:
                continue
            topic_id, count = found
            subscribers = sorted(m for m, names in subscriptions.items() if name in names)
            base, extra = divmod(count, len(subscribers))
            kept: dict[str, list[int]] = {}
            quota: dict[str, int] = {}
            for m in subscribers:
                held = sorted(p for p in self.target.get(m, {}).get(topic_id, ()) if p < count)
                quota[m] = base + (1 if len(held) > base and extra > 0 else 0)
                extra -= quota[m] - base
                kept[m] = held[:quota[m]]
            for m in subscribers:
                if extra > 0 and quota[m] == base:
                    quota[m], extra = base + 1, extra - 1
            taken = {p for ps in kept.values() for p in ps}
            free = [p for p in range(count) if p not in taken]
            for m in subscribers:
                while len(kept[m]) < quota[m]:
                    kept[m].append(free.pop(0))
                if kept[m]:
                    target[m][topic_id] = set(kept[m])
        self.target = target
        self.target_epoch = self.epoch

    def owned_by_others(self, member_id: str) -> Assignment:
        out: Assignment = {}
        for m in self.members.values():
            if m.member_id != member_id:
                for t, ps in m.assigned.items():
                    out.setdefault(t, set()).update(ps)
        return out

    def reconcile(self, member: ConsumerMember, owned: Optional[Assignment]) -> None:
        """Move ``member`` toward its target as far as the others' releases allow."""
        if member.revoking:
            still = {t: ps & owned.get(t, set()) for t, ps in member.revoking.items()} if owned is not None \
                else member.revoking
            if any(still.values()):
                return  # it has not let them go yet
            member.assigned = _minus(member.assigned, member.revoking)
            member.revoking = {}
        desired = self.target.get(member.member_id, {})
        if member.epoch < self.target_epoch:
            to_revoke = _minus(member.assigned, desired)
            if to_revoke:
                member.revoking = to_revoke
                return
            member.previous_epoch, member.epoch = member.epoch, self.target_epoch
        free = _minus(_minus(desired, member.assigned), self.owned_by_others(member.member_id))
        for t, ps in free.items():
            member.assigned.setdefault(t, set()).update(ps)

    def answer(self, member: ConsumerMember, force: bool) -> Optional[Assignment]:
        """The assignment to send: what the member may own now, when it changed (or ``force``)."""
        current = _minus(member.assigned, member.revoking)
        if not force and member.sent == current:
            return None
        member.sent = {t: set(ps) for t, ps in current.items()}
        return current


@dataclass
class Heartbeat:
    """One ConsumerGroupHeartbeat, as the coordinator needs it."""

    group_id: str
    member_id: str
    epoch: int
    instance_id: Optional[str]
    rack_id: Optional[str]
    rebalance_timeout_ms: int
    subscribed: Optional[list[str]]
    regex: Optional[str]
    assignor: Optional[str]
    owned: Optional[Assignment]
    client_id: str
    client_host: str
    server_generates_id: bool  # v0: the broker names new members; v1+: the client does
    may_describe: Callable[[str], bool] = lambda topic: True  # the sender's Describe right on a topic


class ConsumerGroups:
    """The KIP-848 groups of a cluster, beside the classic ones of ``owner``."""

    def __init__(self, owner: "GroupCoordinator") -> None:
        self.owner = owner
        self.groups: dict[str, ConsumerGroup] = {}
        # pattern -> (the topics' names_version it was resolved at, the names it matches): a heartbeat
        # lists the topics only when one was created or deleted since (Kafka refreshes on a timer)
        self._resolved: dict[str, tuple[int, frozenset[str]]] = {}

    def _partitions_of(self, name: str) -> Optional[tuple[uuid.UUID, int]]:
        topic = self.owner.state.topics.get(name)
        return (topic.topic_id, len(topic.replicas)) if topic is not None else None

    def _subscriptions(self, group: ConsumerGroup) -> dict[str, set[str]]:
        """Each member's topics: its names, plus the topics its regex matches that it may describe (Kafka
        resolves a regex with the member's principal, internal topics included)."""
        matched = {m.regex: self._resolve(m.regex) for m in group.members.values() if m.regex}
        return {m.member_id: set(m.subscribed) | {t for t in matched.get(m.regex or "", ()) if m.may_describe(t)}
                for m in group.members.values()}

    def subscribed_topics(self, group_id: str) -> Optional[set[str]]:
        """The topics the members of group ``group_id`` subscribe to, by name or by regex (None: no such
        group): OffsetDelete keeps their offsets (Kafka's ConsumerGroup.isSubscribedToTopic)."""
        group = self.groups.get(group_id)
        return None if group is None else set().union(*self._subscriptions(group).values())

    def _resolve(self, pattern: str) -> frozenset[str]:
        """The topics ``pattern`` matches, internal ones included (Kafka's refreshRegularExpressions goes
        through every topic of the metadata image), listed again only when the topic names changed."""
        state = self.owner.state
        known = self._resolved.get(pattern)
        if known is not None and known[0] == state.names_version:
            return known[1]
        names = frozenset(matching(pattern, state.topics))
        if len(self._resolved) >= _RESOLVED_MAX:  # patterns no member uses any more: drop them all
            self._resolved.clear()
        self._resolved[pattern] = (state.names_version, names)
        return names

    def heartbeat(self, hb: Heartbeat) -> HeartbeatResult:
        if not hb.group_id:
            return HeartbeatResult(E.INVALID_REQUEST, message="GroupId can't be empty.")
        if not hb.member_id and not hb.server_generates_id:
            return HeartbeatResult(E.INVALID_REQUEST, message="MemberId can't be empty.")
        if hb.regex:
            try:
                compile_pattern(hb.regex)
            except InvalidRegex as e:
                return HeartbeatResult(E.INVALID_REGULAR_EXPRESSION, message=f"SubscribedTopicRegex `{hb.regex}` "
                                       f"is not a valid regular expression: {e}.")
        if hb.assignor is not None and hb.assignor not in ASSIGNORS:
            return HeartbeatResult(E.UNSUPPORTED_ASSIGNOR, message=f"Assignor {hb.assignor} is not supported.")
        if hb.epoch == 0 and hb.subscribed is None and not hb.regex:
            return HeartbeatResult(E.INVALID_REQUEST,
                                   message="SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        classic = self.owner.get(hb.group_id)
        if classic is not None and classic.members:
            return HeartbeatResult(E.GROUP_ID_NOT_FOUND, message=f"Group {hb.group_id} is not a consumer group.")
        group = self.groups.get(hb.group_id)
        if hb.epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            member = group.members.get(hb.member_id) if group is not None else None
            if group is None or member is None:
                return _unknown_member(hb)
            self.remove(group, member, "left")
            return HeartbeatResult(E.NONE, hb.member_id, hb.epoch)
        if hb.epoch == 0:
            if group is None:
                group = self.groups[hb.group_id] = ConsumerGroup(hb.group_id)
                self.owner.groups.pop(hb.group_id, None)  # an empty classic group becomes this one (offsets stay)
            member = self._join(group, hb)
            force = True
        else:
            member = group.members.get(hb.member_id) if group is not None else None
            if group is None or member is None:
                return _unknown_member(hb)
            if hb.epoch not in (member.epoch, member.previous_epoch):
                which = "greater" if hb.epoch > member.epoch else "smaller"
                return HeartbeatResult(E.FENCED_MEMBER_EPOCH, hb.member_id, hb.epoch, message=(
                    f"The consumer group member has a {which} member epoch ({hb.epoch}) than the one known by the "
                    f"group coordinator ({member.epoch}). The member must abandon all its partitions and rejoin."))
            force = hb.epoch != member.epoch  # an answer it missed: say it again
        if hb.subscribed is not None and sorted(set(hb.subscribed)) != member.subscribed:
            member.subscribed = sorted(set(hb.subscribed))
            group.epoch += 1
        if hb.regex is not None and (hb.regex or None) != member.regex:  # "": no regex any more
            member.regex = hb.regex or None
            group.epoch += 1
        member.may_describe = hb.may_describe
        member.client_id, member.client_host, member.rack_id = hb.client_id, hb.client_host, hb.rack_id
        if hb.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms
        subscriptions = self._subscriptions(group)
        metadata = {t: self._partitions_of(t) for names in subscriptions.values() for t in names}
        if metadata != group.metadata:  # a subscribed topic appeared (or matched), went or grew
            group.metadata = metadata
            group.epoch += 1
        if group.epoch != group.target_epoch:
            group.compute_target(self._partitions_of, subscriptions)
        group.reconcile(member, hb.owned)
        self._schedule_expiry(group, member)
        self._watch_revocation(group, member)
        return HeartbeatResult(E.NONE, member.member_id, member.epoch, group.answer(member, force))

    def _join(self, group: ConsumerGroup, hb: Heartbeat) -> ConsumerMember:
        if hb.instance_id is not None:  # a static member replaces the one that had its instance id
            for old in [m for m in group.members.values() if m.instance_id == hb.instance_id
                        and m.member_id != hb.member_id]:
                self.remove(group, old, f"replaced by {hb.instance_id}'s new member")
        member_id = hb.member_id or str(uuid.uuid4())
        member = group.members.get(member_id)
        if member is not None:  # a member that starts over gives up what it had
            member.assigned, member.revoking, member.epoch, member.previous_epoch = {}, {}, 0, -1
        else:
            member = group.members[member_id] = ConsumerMember(member_id, hb.instance_id)
            log.info("consumer group %s: member %s joined", group.group_id, member_id)
        group.epoch += 1
        return member

    def _watch_revocation(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A member that keeps partitions it was told to release past its rebalance timeout is removed,
        so the others get them (Kafka's revocation timeout)."""
        if not member.revoking:
            if member.revoke_deadline is not None:
                member.revoke_deadline.cancel()
                member.revoke_deadline = None
            return
        if member.revoke_deadline is None:
            def fence() -> None:
                if group.members.get(member.member_id) is member and member.revoking:
                    self.remove(group, member, "did not release its partitions within its rebalance timeout")
            member.revoke_deadline = self.owner.later(member.rebalance_timeout_ms / 1000, fence)

    def remove(self, group: ConsumerGroup, member: ConsumerMember, why: str) -> None:
        for timer in (member.expiry, member.revoke_deadline):
            if timer is not None:
                timer.cancel()
        group.members.pop(member.member_id, None)
        group.epoch += 1
        log.info("consumer group %s: member %s %s", group.group_id, member.member_id, why)

    def _schedule_expiry(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        if member.expiry is not None:
            member.expiry.cancel()

        def expire() -> None:
            if group.members.get(member.member_id) is member:
                self.remove(group, member, "timed out")
        member.expiry = self.owner.later(self.owner.settings.consumer_session_timeout_ms / 1000, expire)

    def close(self) -> None:
        for group in self.groups.values():
            for m in group.members.values():
                for timer in (m.expiry, m.revoke_deadline):
                    if timer is not None:
                        timer.cancel()
