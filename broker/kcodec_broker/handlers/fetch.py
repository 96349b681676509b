"""Fetch v4 and later: whole stored batches, long polling, KIP-74 size rules, KIP-227 sessions.

Size rules (KIP-74): the first batch of the first partition with data is returned whole even when it
exceeds max_bytes or partition_max_bytes; after it a partition gets batches up to
min(partition_max_bytes, what is left of max_bytes), max_bytes being at most the broker's fetch_max_bytes
(Kafka's broker config fetch.max.bytes, KIP-541). A request with less than min_bytes ready waits up to
max_wait_ms on the event loop (the handler answers ``Later``) and is answered as soon as appends make
min_bytes, or at the deadline.

Fetching from followers (KIP-392, replicas.py): from v11 a consumer's Fetch may be served by any replica (one
out of the ISR serves its lagging copy: copies.py), and a leader with a replica selector may answer it with
``preferred_read_replica`` and no records.
"""

from __future__ import annotations

import asyncio
import struct
import time
from typing import Any, Optional

from kcodec import Buffers
from kcodec.errors import ErrorCode
from kcodec.messages import FetchRequest, FetchResponse

from ..context import Context
from ..log.sessions import FetchSession, FetchSessions, Key
from ..replicas import NO_PREFERENCE, preferred_read_replica
from . import Later, handles
from .metadata import current_leader

_Part = FetchResponse.PartitionData
_Aborted = FetchResponse.AbortedTransaction
READ_COMMITTED = 1
_BASE_AND_DELTA = struct.Struct(">q15xi")  # base offset (bytes 0..8), last offset delta (bytes 23..27)


def _next_offset(batch: Any) -> int:
    base, delta = _BASE_AND_DELTA.unpack_from(batch, 0)
    return int(base + delta + 1)


def _sessions(ctx: Context) -> FetchSessions:
    return ctx.state.logs.fetch_sessions


def _wanted(ctx: Context, req: Any) -> tuple[list[tuple[Key, int, int, int]], list[Key]]:
    """(key, fetch offset, partition max bytes, current leader epoch: -1 below v9) of each partition named,
    and the forgotten keys."""
    by_id = ctx.version >= 13
    checked = ctx.version >= 9
    wanted = [((t.topic_id if by_id else t.topic, p.partition), p.fetch_offset, p.partition_max_bytes,
               p.current_leader_epoch if checked else -1) for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id if by_id else t.topic, p) for t in req.forgotten_topics_data or () for p in t.partitions] \
        if ctx.version >= 7 else []
    return wanted, forgotten


def _refused(out: _Part, code: int) -> _Part:
    """A partition refused before any read: Kafka's error entry, whose aborted transactions are an empty list
    (not null) whatever the isolation level."""
    out.error_code, out.aborted_transactions = code, []
    return out


def _read(ctx: Context, key: Key, offset: int, max_bytes: int, leader_epoch: int, committed: bool,
          first: bool, endpoints: dict[int, Any], rack: Optional[str]) -> tuple[_Part, int, bool]:
    """One partition's answer, its record bytes (``records``: the stored batches themselves, which the
    connection writes to the socket uncopied), and whether a batch was left out for ``max_bytes``. A client's
    ``leader_epoch`` (v9+; negative: unchecked) is checked as Kafka's Partition.getLocalLog does. From v11
    (``rack``: the consumer's rack_id, None below) a follower serves too, and a leader may name a
    preferred read replica instead of reading, as Kafka's ReplicaManager.readFromLog does."""
    state = ctx.state
    name_or_id, index = key
    out = _Part(partition_index=index, error_code=0, high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                aborted_transactions=[] if committed else None, preferred_read_replica=-1, records=b"")
    if ctx.version >= 13:
        topic = next((t for t in state.topics.values() if t.topic_id == name_or_id), None)
        if topic is None:  # Kafka: an unknown id first, then Read on the topic it names
            return _refused(out, ErrorCode.UNKNOWN_TOPIC_ID), 0, False
        if not ctx.allowed("Read", "topic", topic.name):
            return _refused(out, ErrorCode.TOPIC_AUTHORIZATION_FAILED), 0, False
    else:
        topic = state.topics.get(name_or_id)
        if not ctx.allowed("Read", "topic", name_or_id):
            return _refused(out, ErrorCode.TOPIC_AUTHORIZATION_FAILED), 0, False
    if topic is None or not 0 <= index < len(topic.replicas):
        return _refused(out, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), 0, False
    code = state.leader_error(topic, index, ctx.node_id, leader_epoch if leader_epoch >= 0 else None,
                              leader_only=rack is None)
    if code:
        out.error_code = code
        # KIP-951 (v16+): where the leader is, as Kafka tells it for these two errors only
        if ctx.version >= 16 and code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
            out.current_leader = current_leader(ctx, topic, index, FetchResponse.LeaderIdAndEpoch,
                                                FetchResponse.NodeEndpoint, endpoints)
        return out, 0, False
    plog = state.logs.log(topic.topic_id, index)
    # a follower that lags (copies.py) serves its own copy, up to the high watermark it learned, and answers
    # an offset past its log end OFFSET_OUT_OF_RANGE, as Kafka's reads its local log (LocalLog.read)
    copy = state.lagging_copy(topic, index, ctx.node_id) if rack is not None else None
    if copy is None:
        out.high_watermark, out.last_stable_offset = plog.next_offset, plog.last_stable_offset
    else:
        out.high_watermark, out.last_stable_offset = copy.end, copy.last_stable_offset
    out.log_start_offset = plog.log_start
    if not plog.log_start <= offset <= out.high_watermark:  # Kafka's failed read: no offsets either
        out.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        out.high_watermark = out.last_stable_offset = out.log_start_offset = -1
        return out, 0, False
    selector = ctx.runtime.replica_selector
    if selector is not None and rack and state.leader(topic, index) == ctx.node_id:
        # an offset out of range is in no follower's range either (one shared log): only here is one named
        out.preferred_read_replica = preferred_read_replica(state, topic, index, ctx.node_id, selector, rack,
                                                            ctx.session.listener.name)
        if out.preferred_read_replica != NO_PREFERENCE:
            out.aborted_transactions = None  # Kafka skips the read: no list, even for read_committed
            return out, 0, False
    # read_committed stops at the last stable offset and lists the aborted transactions it overlaps
    batches, size, cut = plog.read(offset, max(max_bytes, 0),
                                   out.last_stable_offset if committed else out.high_watermark)
    if batches and not first and size > max_bytes:
        return out, 0, True  # only the response's first batch may exceed the limits
    if batches:
        out.records = Buffers(batches, size)  # type: ignore[assignment]  # the codec takes Buffers for bytes
        if committed:
            end = _next_offset(batches[-1])
            out.aborted_transactions = [_Aborted(producer_id=a.producer_id, first_offset=a.first_offset)
                                        for a in plog.txns.aborted_in(offset, end)]
    return out, size, cut


def _respond(ctx: Context, req: Any, wanted: list[tuple[Key, int, int, int]], session: Optional[FetchSession],
             incremental: bool, final: bool) -> Optional[FetchResponse]:
    """The response, or None when not final and under min_bytes."""
    committed = req.isolation_level == READ_COMMITTED
    rack = req.rack_id if ctx.version >= 11 else None
    if session is not None:
        wanted = [(k, v[0], v[1], v[5]) for k, v in session.partitions.items()]
    left = min(req.max_bytes if req.max_bytes > 0 else 0x7FFFFFFF, ctx.runtime.fetch_max_bytes)
    total = 0
    full = False  # a batch was left out for the response's limit: waiting cannot make it bigger
    results: list[tuple[Key, _Part]] = []
    endpoints: dict[int, Any] = {}
    for key, offset, pmax, leader_epoch in wanted:
        part, size, cut = _read(ctx, key, offset, min(pmax, left), leader_epoch, committed, total == 0, endpoints,
                                rack)
        full = full or cut and left < pmax
        total += size
        left -= size
        results.append((key, part))
    # Kafka answers once min_bytes are available, though fewer fit the response (min_bytes above max_bytes),
    # and at once for an error or a preferred read replica
    if not final and total < req.min_bytes and not full and not any(
            p.error_code or p.preferred_read_replica != NO_PREFERENCE for _, p in results):
        return None
    topics: dict[Any, list[_Part]] = {}
    sessions = _sessions(ctx)
    for key, part in results:
        news = bool(part.records) or part.preferred_read_replica != NO_PREFERENCE  # always sent (CachedPartition)
        if incremental and session is not None and not sessions.changed(
                session, key, part.high_watermark, part.last_stable_offset, part.log_start_offset, part.error_code,
                news):
            continue
        if session is not None and not incremental:
            sessions.changed(session, key, part.high_watermark, part.last_stable_offset, part.log_start_offset,
                             part.error_code, news)
        topics.setdefault(key[0], []).append(part)
    responses = []
    for name_or_id, parts in topics.items():
        r = FetchResponse.FetchableTopicResponse(partitions=parts)
        if ctx.version >= 13:
            r.topic_id = name_or_id
        else:
            r.topic = name_or_id
        responses.append(r)
    resp = FetchResponse(error_code=0, session_id=session.id if session is not None else 0, responses=responses,
                         node_endpoints=[endpoints[n] for n in sorted(endpoints)])
    batches = 0
    for r in responses:
        for p in r.partitions:
            records: Any = p.records  # b"", or the log's batches
            batches += len(records) if isinstance(records, Buffers) else 0
    if batches:
        ctx.runtime.usage.served_batches(ctx.node_id, ctx.header.client_id, batches)
    return resp


@handles(FetchRequest, FetchResponse, min_version=4)
def fetch(ctx: Context, req: Any) -> Any:
    if ctx.version >= 15 and req.replica_state.replica_id >= 0 or ctx.version < 15 and req.replica_id >= 0:
        return FetchResponse(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, session_id=0, responses=[])
    wanted, forgotten = _wanted(ctx, req)
    session: Optional[FetchSession] = None
    incremental = False
    if ctx.version >= 7:
        error, session, incremental = _sessions(ctx).resolve(ctx.node_id, req.session_id, req.session_epoch,
                                                              wanted, forgotten)
        if error:
            return FetchResponse(error_code=error, session_id=0, responses=[])
    resp = _respond(ctx, req, wanted, session, incremental, final=req.max_wait_ms <= 0)
    if resp is not None:
        return resp
    deadline = time.monotonic() + req.max_wait_ms / 1000.0
    lock = ctx.state.lock

    async def wait() -> FetchResponse:
        while True:
            left = deadline - time.monotonic()
            with lock:
                changed = ctx.state.logs.changed() if left > 0 else None
            if changed is not None:
                try:
                    await asyncio.wait_for(changed, left)
                except asyncio.TimeoutError:
                    pass
            with lock:
                out = _respond(ctx, req, wanted, session, incremental, final=time.monotonic() >= deadline)
            if out is not None:
                return out
    return Later(wait)

