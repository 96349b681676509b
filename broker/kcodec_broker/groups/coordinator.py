"""The classic group coordinator: joins, syncs, heartbeats, leaves, session and rebalance timeouts.

It follows Kafka's GroupCoordinator. A JoinGroup or SyncGroup that must wait for the other members gets
an asyncio future the server awaits before it answers (and before it reads that connection's next
request, as Kafka mutes a channel while a request is in flight); timers run on the brokers' event loop.
Everything here runs on that loop, under the cluster state's lock.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

from kcodec.errors import ErrorCode

from .consumer import ConsumerGroups
from .group import Group, GroupState, JoinResult, Member, Membership, SyncResult

if TYPE_CHECKING:
    from ..state import ClusterState

log = logging.getLogger("kcodec_broker")

E = ErrorCode
PREPARING, COMPLETING, STABLE = (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                 GroupState.STABLE)
Joined = Union[JoinResult, "asyncio.Future[JoinResult]"]
Synced = Union[SyncResult, "asyncio.Future[SyncResult]"]


@dataclass(frozen=True)
class GroupSettings:
    """Kafka's group.* broker settings. ``initial_rebalance_delay_ms`` is 3000 in Kafka; 0 here, so tests
    do not wait; ``max_size`` None: no limit. The consumer_* ones are the KIP-848 groups'."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 0
    max_size: Optional[int] = None
    consumer_session_timeout_ms: int = 45_000     # KIP-848 groups: group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5_000   # group.consumer.heartbeat.interval.ms


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    joined: Membership
    require_known_member: bool   # JoinGroup v4+: MEMBER_ID_REQUIRED first
    skip_assignment: bool        # JoinGroup v9+: a static leader's rejoin need not rebalance

    @property
    def instance_id(self) -> Optional[str]:
        return self.joined.instance_id

    @property
    def protocols(self) -> list[tuple[str, bytes]]:
        return self.joined.protocols


class GroupCoordinator:
    def __init__(self, state: "ClusterState", settings: Optional[GroupSettings] = None) -> None:
        self.state = state
        self.settings = settings or GroupSettings()
        self.groups: dict[str, Group] = {g: Group(g) for g in state.offsets.groups()}
        self.consumer = ConsumerGroups(self)  # KIP-848 groups

    # -- helpers ---------------------------------------------------------------------------------------
    def _loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def later(self, seconds: float, fn: object, *args: object) -> asyncio.TimerHandle:
        def run() -> None:
            with self.state.lock:
                fn(*args)  # type: ignore[operator]
        return self._loop().call_later(seconds, run)

    def _waiter(self) -> "asyncio.Future[object]":
        return self._loop().create_future()

    def _schedule_expiry(self, group: Group, member: Member) -> None:
        if member.expiry is not None:
            member.expiry.cancel()
        member.expiry = self.later(member.session_timeout_ms / 1000, self._expire, group, member)

    def _expire(self, group: Group, member: Member) -> None:
        member.expiry = None
        if group.members.get(member.member_id) is not member:
            return
        if member.awaiting_join or member.awaiting_sync:  # a member waiting on us is alive
            self._schedule_expiry(group, member)
            return
        log.info("group %s: member %s timed out", group.group_id, member.member_id)
        self._remove_member(group, member)

    def get(self, group_id: str) -> Optional[Group]:
        group = self.groups.get(group_id)
        return group if group is not None and group.state != GroupState.DEAD else None

    # -- JoinGroup ---------------------------------------------------------------------------------------
    def join(self, req: JoinRequest) -> Joined:
        s = self.settings
        if not req.group_id:
            return JoinResult(E.INVALID_GROUP_ID, req.member_id)
        if not s.min_session_timeout_ms <= req.joined.session_timeout_ms <= s.max_session_timeout_ms:
            return JoinResult(E.INVALID_SESSION_TIMEOUT, req.member_id)
        kip848 = self.consumer.groups.get(req.group_id)
        if kip848 is not None:
            if kip848.members:  # a KIP-848 group takes no classic members
                return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
            del self.consumer.groups[req.group_id]  # an empty one becomes classic (its offsets stay)
        group = self.get(req.group_id)
        if group is None:
            if req.member_id:
                return JoinResult(E.UNKNOWN_MEMBER_ID, req.member_id)
            group = self.groups[req.group_id] = Group(req.group_id)
        if not group.supports(req.joined.protocol_type, [name for name, _ in req.protocols]):
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if not req.member_id:
            return self._join_unknown(group, req)
        return self._join_known(group, req)

    def _full(self, group: Group) -> bool:
        return self.settings.max_size is not None and len(group.members) + len(group.pending) >= self.settings.max_size

    def _join_unknown(self, group: Group, req: JoinRequest) -> Joined:
        new_id = f"{req.instance_id or req.joined.client_id}-{uuid.uuid4()}"
        if req.instance_id is not None:
            old = group.static.get(req.instance_id)
            if old is not None:
                return self._replace_static(group, group.members[old], new_id, req)
        if self._full(group):
            return JoinResult(E.GROUP_MAX_SIZE_REACHED, "")
        if req.instance_id is None and req.require_known_member:
            # KIP-394: hand out the id first; the member joins with it (or the id expires)
            group.pending[new_id] = self.later(req.joined.session_timeout_ms / 1000, self._expire_pending, group,
                                                new_id)
            return JoinResult(E.MEMBER_ID_REQUIRED, new_id)
        return self._add_and_rebalance(group, new_id, req)

    def _expire_pending(self, group: Group, member_id: str) -> None:
        if group.pending.pop(member_id, None) is not None:
            self._try_complete_join(group)

    def _join_known(self, group: Group, req: JoinRequest) -> Joined:
        timer = group.pending.pop(req.member_id, None)
        if timer is not None:
            timer.cancel()
            return self._add_and_rebalance(group, req.member_id, req)
        member = group.members.get(req.member_id)
        if member is None:
            return JoinResult(E.UNKNOWN_MEMBER_ID, req.member_id)
        if req.instance_id is not None and group.static.get(req.instance_id) != req.member_id:
            return JoinResult(E.FENCED_INSTANCE_ID, req.member_id)
        if group.state == PREPARING:
            return self._update_and_wait(group, member, req)
        if group.state == COMPLETING:
            if member.matches(req.protocols):  # a resend of a join it already had an answer to
                return group.join_result(member)
            return self._update_and_rebalance(group, member, req)
        if group.state == STABLE:
            if member.member_id == group.leader or not member.matches(req.protocols):
                return self._update_and_rebalance(group, member, req)
            return group.join_result(member)
        return JoinResult(E.UNKNOWN_MEMBER_ID, req.member_id)

    def _add_and_rebalance(self, group: Group, member_id: str, req: JoinRequest) -> Joined:
        member = group.members[member_id] = Member.of(member_id, req.joined)
        if req.instance_id is not None:
            group.static[req.instance_id] = member_id
        if group.leader is None:
            group.leader = member_id
        if not group.protocol_type:
            group.protocol_type = req.joined.protocol_type
        member.join_waiter = self._waiter()  # type: ignore[assignment]
        waiter = member.join_waiter
        self._schedule_expiry(group, member)
        if group.state == PREPARING:
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"{member_id} joined")
        assert waiter is not None
        return waiter

    def _update_and_wait(self, group: Group, member: Member, req: JoinRequest) -> Joined:
        member.update(req.joined)
        member.answer_join(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))  # an older join of its own
        member.join_waiter = self._waiter()  # type: ignore[assignment]
        waiter = member.join_waiter
        self._try_complete_join(group)
        assert waiter is not None
        return waiter

    def _update_and_rebalance(self, group: Group, member: Member, req: JoinRequest) -> Joined:
        self._prepare_rebalance(group, f"{member.member_id} rejoined", complete=False)
        return self._update_and_wait(group, member, req)

    def _replace_static(self, group: Group, old: Member, new_id: str, req: JoinRequest) -> Joined:
        """KIP-345: a restarted static member takes its old place under a new id; the old id is fenced.
        In a stable group whose protocol stays the same this is no rebalance: the member gets the current
        generation and, at SyncGroup, its old assignment."""
        old.fence(E.FENCED_INSTANCE_ID)
        member = Member.of(new_id, req.joined, old.assignment)
        group.members = {(new_id if k == old.member_id else k): (member if k == old.member_id else m)
                         for k, m in group.members.items()}
        assert req.instance_id is not None
        group.static[req.instance_id] = new_id
        if group.leader == old.member_id:
            group.leader = new_id
        if group.state == STABLE and group.select_protocol() == group.protocol_name:
            # A leader learns it leads: from v9 told to skip the assignment (KIP-814); before, it may
            # compute one, which SyncGroup in a stable group ignores (every member keeps its own)
            self._schedule_expiry(group, member)
            log.info("group %s: static member %s rejoined as %s", group.group_id, req.instance_id, new_id)
            return group.join_result(member, skip_assignment=req.skip_assignment)
        self._schedule_expiry(group, member)
        if group.state == PREPARING:
            return self._update_and_wait(group, member, req)
        return self._update_and_rebalance(group, member, req)

    # -- rebalances --------------------------------------------------------------------------------------
    def _prepare_rebalance(self, group: Group, reason: str, complete: bool = True) -> None:
        if group.state == COMPLETING:  # assignments of the generation being formed are void
            for m in group.members.values():
                m.assignment = b""
                m.answer_sync(SyncResult(E.REBALANCE_IN_PROGRESS))
        was_empty = group.state == GroupState.EMPTY
        group.state = PREPARING
        if group.join_timer is not None:
            group.join_timer.cancel()
        delay_ms = self.settings.initial_rebalance_delay_ms if was_empty else 0
        group.initial_delay = delay_ms > 0
        if not group.initial_delay:
            delay_ms = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.join_timer = self.later(delay_ms / 1000, self._complete_join, group)
        log.info("group %s: rebalancing (generation %d): %s", group.group_id, group.generation, reason)
        if complete:
            self._try_complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if group.state != PREPARING or group.initial_delay or group.pending:
            return
        if all(m.awaiting_join for m in group.members.values()):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.state != PREPARING:
            return
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_delay = False
        for m in [m for m in group.members.values() if not m.awaiting_join and m.instance_id is None]:
            log.info("group %s: member %s did not rejoin in time", group.group_id, m.member_id)
            m.fence(E.UNKNOWN_MEMBER_ID)
            group.remove(m.member_id)
        group.generation += 1
        if not group.members:
            group.state, group.protocol_name, group.leader = GroupState.EMPTY, None, None
            return
        if group.leader not in group.members or not group.members[group.leader].awaiting_join:
            joined = [m for m in group.members if group.members[m].awaiting_join]
            group.leader = joined[0] if joined else next(iter(group.members))
        group.protocol_name = group.select_protocol()
        group.protocol_type = next(iter(group.members.values())).protocol_type
        group.state = COMPLETING
        log.info("group %s: generation %d with %d members, protocol %s", group.group_id, group.generation,
                 len(group.members), group.protocol_name)
        for m in group.members.values():
            if m.awaiting_join:
                m.answer_join(group.join_result(m))
                self._schedule_expiry(group, m)

    def _remove_member(self, group: Group, member: Member) -> None:
        member.fence(E.UNKNOWN_MEMBER_ID)
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._prepare_rebalance(group, f"{member.member_id} left")
        elif group.state == PREPARING:
            self._try_complete_join(group)

    # -- SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------------------
    def _current(self, group: Optional[Group], member_id: str, instance_id: Optional[str],
                 generation: Optional[int]) -> tuple[int, Optional[Member]]:
        """Kafka's validateCurrentMember: the member, or the error to answer."""
        if group is None:
            return E.UNKNOWN_MEMBER_ID, None
        if instance_id is not None and group.static.get(instance_id, member_id) != member_id:
            return E.FENCED_INSTANCE_ID, None
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID, None
        if instance_id is not None and member.instance_id != instance_id:
            return E.FENCED_INSTANCE_ID, None
        if generation is not None and generation != group.generation:
            return E.ILLEGAL_GENERATION, None
        return E.NONE, member

    def sync(self, group_id: str, generation: int, member_id: str, instance_id: Optional[str],
             protocol_type: Optional[str], protocol_name: Optional[str],
             assignments: dict[str, bytes]) -> Synced:
        group = self.get(group_id)
        error, member = self._current(group, member_id, instance_id, generation)
        if member is None or group is None:
            return SyncResult(error)
        if (protocol_type is not None and protocol_type != group.protocol_type) or \
                (protocol_name is not None and protocol_name != group.protocol_name):
            return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.state == PREPARING:
            return SyncResult(E.REBALANCE_IN_PROGRESS)
        if group.state == STABLE:
            self._schedule_expiry(group, member)
            return SyncResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)
        if group.state != COMPLETING:
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        member.answer_sync(SyncResult(E.REBALANCE_IN_PROGRESS))
        member.sync_waiter = self._waiter()  # type: ignore[assignment]
        waiter = member.sync_waiter
        self._schedule_expiry(group, member)
        if member_id == group.leader:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.state = STABLE
            for m in group.members.values():
                m.answer_sync(SyncResult(E.NONE, group.protocol_type, group.protocol_name, m.assignment))
        assert waiter is not None
        return waiter

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: Optional[str]) -> int:
        group = self.get(group_id)
        error, member = self._current(group, member_id, instance_id, generation)
        if member is None or group is None:
            return error
        self._schedule_expiry(group, member)
        return E.REBALANCE_IN_PROGRESS if group.state == PREPARING else E.NONE

    def leave(self, group_id: str, leaving: list[tuple[str, Optional[str]]]) -> list[int]:
        """Per (member id, instance id): NONE, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID."""
        group = self.get(group_id)
        out: list[int] = []
        for member_id, instance_id in leaving:
            if group is None:
                out.append(E.UNKNOWN_MEMBER_ID)
                continue
            if instance_id is not None:
                known = group.static.get(instance_id)
                if known is None:
                    out.append(E.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    out.append(E.FENCED_INSTANCE_ID)
                    continue
                member_id = known
            timer = group.pending.pop(member_id, None)
            if timer is not None:
                timer.cancel()
                self._try_complete_join(group)
                out.append(E.NONE)
                continue
            member = group.members.get(member_id)
            if member is None:
                out.append(E.UNKNOWN_MEMBER_ID)
                continue
            log.info("group %s: member %s left", group_id, member_id)
            self._remove_member(group, member)
            out.append(E.NONE)
        return out

    # -- offsets and administration -------------------------------------------------------------------
    def validate_commit(self, group_id: str, generation: int, member_id: str, instance_id: Optional[str]) -> int:
        """Whether an OffsetCommit may store offsets: members of the current generation, or anyone with
        generation -1 while the group has no members (a simple consumer; the group is created). In a
        KIP-848 group the generation is the member's epoch."""
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            cm = cg.members.get(member_id)
            if member_id or generation >= 0:
                if cm is None:
                    return E.UNKNOWN_MEMBER_ID
                return E.NONE if generation in (cm.epoch, cm.previous_epoch) else E.STALE_MEMBER_EPOCH
            return E.NONE if not cg.members else E.UNKNOWN_MEMBER_ID
        group = self.get(group_id)
        if group is None:
            if generation >= 0 or member_id or instance_id is not None:
                return E.ILLEGAL_GENERATION if generation >= 0 else E.UNKNOWN_MEMBER_ID
            self.groups[group_id] = Group(group_id)
            return E.NONE
        if generation >= 0 or member_id or instance_id is not None:
            error, member = self._current(group, member_id, instance_id, generation)
            if member is None:
                return error
            if group.state == COMPLETING:
                return E.REBALANCE_IN_PROGRESS
            self._schedule_expiry(group, member)
            return E.NONE
        return E.NONE if group.state == GroupState.EMPTY else E.UNKNOWN_MEMBER_ID

    def delete(self, group_id: str) -> int:
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            if cg.members:
                return E.NON_EMPTY_GROUP
            del self.consumer.groups[group_id]
            self.state.offsets.delete_group(group_id)
            self.state.save()
            return E.NONE
        group = self.get(group_id)
        if group is None:
            return E.GROUP_ID_NOT_FOUND
        if group.members or group.state != GroupState.EMPTY:
            return E.NON_EMPTY_GROUP
        group.state = GroupState.DEAD
        del self.groups[group_id]
        self.state.offsets.delete_group(group_id)
        self.state.save()
        return E.NONE

    def close(self) -> None:
        """Stop every timer (the cluster stops)."""
        self.consumer.close()
        for group in self.groups.values():
            if group.join_timer is not None:
                group.join_timer.cancel()
            for timer in group.pending.values():
                timer.cancel()
            for m in group.members.values():
                if m.expiry is not None:
                    m.expiry.cancel()
