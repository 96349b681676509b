"""InitProducerId: producer ids and epochs for idempotent (and transactional-id) producers.

Transactions themselves are not implemented: a transactional id only keeps its producer id across calls,
with the epoch bumped each time as Kafka fences the previous instance.
"""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import InitProducerIdRequest, InitProducerIdResponse

from ..context import Context
from . import handles


def _may_write_idempotently(ctx: Context) -> bool:
    """Kafka: IdempotentWrite on the cluster, or Write on any topic (KIP-679)."""
    return ctx.allowed("IdempotentWrite", "cluster") or any(ctx.allowed("Write", "topic", t) for t in ctx.state.topics)


# v6 (KIP-939's two-phase commit) is not in any Kafka release yet (4.3 advertises v5)
@handles(InitProducerIdRequest, InitProducerIdResponse, max_version=5)
def init_producer_id(ctx: Context, req: Any) -> InitProducerIdResponse:
    if not req.transactional_id and not _may_write_idempotently(ctx):
        return InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, producer_id=-1,
                                      producer_epoch=-1)
    pid, epoch = (req.producer_id, req.producer_epoch) if ctx.version >= 3 else (-1, -1)
    code, pid, epoch = ctx.state.logs.init_producer_id(req.transactional_id, pid, epoch)
    return InitProducerIdResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
