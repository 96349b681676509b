"""ListOffsets (earliest, latest, by timestamp, max timestamp), OffsetForLeaderEpoch and DeleteRecords.

A client's current leader epoch (ListOffsets v4+, OffsetForLeaderEpoch v2+; -1: unchecked) is checked
before leadership, as Kafka's Partition.getLocalLog does (state.leader_error). Answers carry the epochs of
the partition's history (log/epochs.py): the current one for the log end, the batch's own for a
timestamp lookup, Kafka's LeaderEpochFileCache rules for OffsetForLeaderEpoch.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import (DeleteRecordsRequest, DeleteRecordsResponse, ListOffsetsRequest, ListOffsetsResponse,
                             OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse)

from ..context import Context
from ..log import PartitionLog
from ..log import epochs as history
from . import handles

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
UNCHECKED = -1  # a current leader epoch of -1 skips the check (Kafka's UNKNOWN_EPOCH); other negatives do not
READ_COMMITTED = 1


def _partition(ctx: Context, name: str, index: int, operation: str,
               current_epoch: Optional[int] = None) -> tuple[ErrorCode, Optional[PartitionLog], int]:
    """The leader's log of ``name``/``index`` on this broker and its leader epoch, or the error Kafka gives."""
    state = ctx.state
    if not ctx.allowed(operation, "topic", name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, -1
    topic = state.topics.get(name)
    if topic is None or not 0 <= index < len(topic.replicas):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, -1
    code = state.leader_error(topic, index, ctx.node_id, None if current_epoch == UNCHECKED else current_epoch)
    if code:
        return code, None, -1
    return ErrorCode.NONE, state.logs.log(topic.topic_id, index), state.leader_epoch(topic, index)


def _each(topics: Any, parts: Callable[[Any], Any], one: Callable[[str, Any], Any]) -> list[tuple[Any, list[Any]]]:
    return [(t, [one(t.name if hasattr(t, "name") else t.topic, p) for p in parts(t)]) for t in topics]


def _list_one(ctx: Context, name: str, p: Any, isolation_level: int) -> Any:
    out = ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=0,
                                                           timestamp=-1, offset=-1, leader_epoch=-1)
    code, plog, epoch = _partition(ctx, name, p.partition_index, "Describe",
                                   p.current_leader_epoch if ctx.version >= 4 else None)
    if code or plog is None:
        out.error_code = code
        return out
    ts = p.timestamp
    # read_committed (v2+): nothing at or past the last stable offset, as Kafka's lastFetchableOffset
    fetchable = plog.last_stable_offset if ctx.version >= 2 and isolation_level == READ_COMMITTED else \
        plog.next_offset
    held = history.with_current(plog.epochs, epoch, plog.next_offset)
    if ts == LATEST:
        offset, found, written_in = fetchable, -1, epoch
    elif ts == EARLIEST:
        offset, found, written_in = plog.log_start, -1, history.earliest_epoch(held, plog.log_start)
    elif ts == EARLIEST_LOCAL:
        offset, found, written_in = plog.log_start, -1, history.epoch_for_offset(held, plog.log_start)
    elif ts == LATEST_TIERED:
        offset, found, written_in = -1, -1, -1  # nothing is tiered
    elif ts == MAX_TIMESTAMP:
        offset, found, written_in = plog.max_timestamp_offset()
    elif ts < 0:
        out.error_code = ErrorCode.INVALID_REQUEST
        return out
    else:
        offset, found, written_in = plog.offset_for_timestamp(ts)
    if (ts >= 0 or ts == MAX_TIMESTAMP) and offset >= fetchable:
        offset, found, written_in = -1, -1, -1
    if ctx.version == 0:  # v0 has a list of offsets instead of the offset and timestamp fields
        out.old_style_offsets = [offset] if offset >= 0 and p.max_num_offsets > 0 else []
        return out
    out.offset, out.timestamp = offset, found
    out.leader_epoch = written_in if ctx.version >= 4 else -1  # the field is v4+
    return out


@handles(ListOffsetsRequest, ListOffsetsResponse)
def list_offsets(ctx: Context, req: Any) -> ListOffsetsResponse:
    """A partition asked for twice is answered once, with INVALID_REQUEST (Kafka keys its answers by
    partition)."""
    counts = Counter((t.name, p.partition_index) for t in req.topics for p in t.partitions)
    answered: set[tuple[str, int]] = set()

    def one(name: str, p: Any) -> Any:
        key = (name, p.partition_index)
        if counts[key] == 1:
            return _list_one(ctx, name, p, req.isolation_level)
        if key in answered:
            return None
        answered.add(key)
        return ListOffsetsResponse.ListOffsetsPartitionResponse(partition_index=p.partition_index,
                                                                error_code=ErrorCode.INVALID_REQUEST, timestamp=-1,
                                                                offset=-1, leader_epoch=-1)
    return ListOffsetsResponse(topics=[ListOffsetsResponse.ListOffsetsTopicResponse(
        name=t.name, partitions=[x for x in parts if x is not None])
        for t, parts in _each(req.topics, lambda t: t.partitions, one)])


def _epoch_one(ctx: Context, name: str, p: Any) -> Any:
    out = OffsetForLeaderEpochResponse.EpochEndOffset(partition=p.partition, error_code=0, leader_epoch=-1,
                                                      end_offset=-1)
    code, plog, epoch = _partition(ctx, name, p.partition, "Describe",
                                   p.current_leader_epoch if ctx.version >= 2 else None)
    if code or plog is None:
        out.error_code = code
    else:
        held = history.with_current(plog.epochs, epoch, plog.next_offset)
        out.leader_epoch, out.end_offset = history.end_offset_for(held, p.leader_epoch, plog.next_offset)
    return out


@handles(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse)
def offset_for_leader_epoch(ctx: Context, req: Any) -> OffsetForLeaderEpochResponse:
    return OffsetForLeaderEpochResponse(topics=[
        OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic, partitions=parts)
        for t, parts in _each(req.topics, lambda t: t.partitions, lambda n, p: _epoch_one(ctx, n, p))])


def _delete_one(ctx: Context, name: str, p: Any) -> Any:
    out = DeleteRecordsResponse.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                             error_code=0)
    code, plog, _ = _partition(ctx, name, p.partition_index, "Delete")
    if code or plog is None:
        out.error_code = code
        return out
    offset = plog.next_offset if p.offset == -1 else p.offset
    if not 0 <= offset <= plog.next_offset:
        out.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        return out
    topic = ctx.state.topics[name]
    ctx.state.logs.delete_records(topic.topic_id, p.partition_index, offset)
    out.low_watermark = plog.log_start
    return out


@handles(DeleteRecordsRequest, DeleteRecordsResponse)
def delete_records(ctx: Context, req: Any) -> DeleteRecordsResponse:
    results = _each(req.topics, lambda t: t.partitions, lambda n, p: _delete_one(ctx, n, p))
    ctx.state.logs.flush(sync=True)
    return DeleteRecordsResponse(topics=[DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=parts)
                                         for t, parts in results])
