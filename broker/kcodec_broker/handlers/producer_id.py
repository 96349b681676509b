"""InitProducerId: producer ids and epochs for idempotent producers and transactional ids.

An idempotent producer's id comes from the log store's allocator (log/producers.py); a transactional
id's from its transaction coordinator (txn/coordinator.py), which fences the previous instance.
"""

from __future__ import annotations

from typing import Any

from kcodec.errors import ErrorCode
from kcodec.messages import InitProducerIdRequest, InitProducerIdResponse

from ..context import Context
from . import handles
from .transactions import fenced_as, txn_error


def _may_write_idempotently(ctx: Context) -> bool:
    """Kafka: IdempotentWrite on the cluster, or Write on any topic (KIP-679)."""
    return ctx.allowed("IdempotentWrite", "cluster") or any(ctx.allowed("Write", "topic", t) for t in ctx.state.topics)


def _answer(code: int, pid: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=pid, producer_epoch=epoch)


# v6 (KIP-939's two-phase commit) is unstable in Kafka 4.3 (which advertises v5): served and advertised only
# with TransactionSettings.two_phase_commit (context.ClusterRuntime.max_versions)
@handles(InitProducerIdRequest, InitProducerIdResponse)
def init_producer_id(ctx: Context, req: Any) -> InitProducerIdResponse:
    pid, epoch = (req.producer_id, req.producer_epoch) if ctx.version >= 3 else (-1, -1)
    tid = req.transactional_id
    if tid is None:
        if not _may_write_idempotently(ctx):
            return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return _answer(*ctx.state.logs.init_producer_id(pid, epoch))
    if not tid:
        return _answer(ErrorCode.INVALID_REQUEST)  # Kafka: an empty transactional id is no id
    two_phase = ctx.version >= 6 and req.enable2_pc
    error = txn_error(ctx, tid)
    if error is None and two_phase and not ctx.allowed("TwoPhaseCommit", "transactional_id", tid):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # KIP-939: Write and TwoPhaseCommit
    if error is not None:
        return _answer(error)
    r = ctx.runtime.txns.init_producer_id(tid, req.transaction_timeout_ms, pid, epoch, two_phase,
                                          ctx.version >= 6 and req.keep_prepared_txn)
    return InitProducerIdResponse(error_code=fenced_as(ctx.version, 4, r.error), producer_id=r.producer_id,
                                  producer_epoch=r.producer_epoch, ongoing_txn_producer_id=r.ongoing_producer_id,
                                  ongoing_txn_producer_epoch=r.ongoing_epoch)
