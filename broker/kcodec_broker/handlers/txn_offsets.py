"""TxnOffsetCommit: a transaction's consumer offsets, held by the transaction coordinator until EndTxn.

Served by the group's coordinator, as Kafka does. Write on the transactional id, then Read on the group
and on each topic; from v3 (KIP-447) a member id or generation is checked against the group. The offsets
wait in the transaction (OffsetFetch with require_stable sees UNSTABLE_OFFSET_COMMIT) and reach the
group when the transaction commits; an abort drops them.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from kcodec.errors import ErrorCode
from kcodec.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from ..context import Context
from ..groups.offsets import Committed
from . import handles
from .group_offsets import MAX_METADATA
from .groups import group_error
from .transactions import epoch_error

_Resp = TxnOffsetCommitResponse


def _group_check(ctx: Context, req: Any) -> int:
    error: Optional[int] = None
    if not ctx.allowed("Write", "transactional_id", req.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = group_error(ctx, req.group_id, "Read")
    if error is None and ctx.version >= 3 and (req.member_id or req.generation_id >= 0):
        error = ctx.runtime.groups.validate_commit(req.group_id, req.generation_id, req.member_id,
                                                   req.group_instance_id) or None
    return error or ErrorCode.NONE


@handles(TxnOffsetCommitRequest, TxnOffsetCommitResponse)
def txn_offset_commit(ctx: Context, req: Any) -> TxnOffsetCommitResponse:
    error = _group_check(ctx, req)
    codes: dict[tuple[str, int], int] = {}
    staged: dict[tuple[str, int], Committed] = {}
    now = int(time.time() * 1000)
    for t in req.topics:
        topic = ctx.state.topics.get(t.name)
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if error:
                codes[key] = error
            elif not ctx.allowed("Read", "topic", t.name):
                codes[key] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.replicas):
                codes[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.committed_metadata is not None and len(p.committed_metadata.encode()) > MAX_METADATA:
                codes[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                staged[key] = Committed(p.committed_offset, p.committed_leader_epoch if ctx.version >= 2 else -1,
                                        p.committed_metadata or "", now)
    if staged:
        # v5 (KIP-890 part 2) adds the group to the transaction itself
        code = ctx.runtime.txns.stage_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                              req.group_id, staged, implicit_add=ctx.version >= 5)
        code = epoch_error(code)
        codes.update((key, code) for key in staged)
    return _Resp(topics=[_Resp.Topic(name=t.name, partitions=[
        _Resp.Partition(partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
        for p in t.partitions]) for t in req.topics])
