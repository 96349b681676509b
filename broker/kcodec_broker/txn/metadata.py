"""One transactional id's state, as Kafka's TransactionMetadata holds it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..groups.offsets import Committed

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's TransactionState names (DescribeTransactions and ListTransactions say them)."""
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"  # the decision journaled; its markers and offsets may be half written
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


@dataclass
class Transaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    start_ms: int = -1                    # when the ongoing transaction began; -1 when none is
    partitions: set[TopicPartition] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)          # AddOffsetsToTxn's consumer groups
    # TxnOffsetCommit's offsets, applied to the groups on commit: {group: {(topic, partition): offset}}
    offsets: dict[str, dict[TopicPartition, Committed]] = field(default_factory=dict)
    # the producer id before the last rotation (an epoch exhausted at EndTxn v5), for a retried EndTxn
    previous_producer_id: int = -1
    # the epoch before the last bump (Kafka's lastProducerEpoch): an InitProducerId naming it is a retry
    last_epoch: int = -1
    # when the id's state last changed (Kafka's txnLastUpdateTimestamp): its expiry counts from it
    updated_ms: int = -1
    # the transaction version of the last add that began or grew the transaction (Kafka's
    # clientTransactionVersion): 2 makes its timeout or fence move an exhausted epoch to a new producer id
    transaction_version: int = 1
    # while PREPARE_COMMIT / PREPARE_ABORT: the producer id and epoch its markers carry
    marker: tuple[int, int] = (-1, -1)

    @property
    def ongoing(self) -> bool:
        return self.state is TxnState.ONGOING

    def begin(self, now_ms: int) -> None:
        if not self.ongoing:
            self.state, self.start_ms = TxnState.ONGOING, now_ms

    @property
    def preparing(self) -> bool:
        return self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    def prepare(self, commit: bool, marker: tuple[int, int]) -> None:
        self.state, self.marker = (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT), marker

    def finish(self, committed: bool) -> None:
        self.state = TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT
        self.marker = (-1, -1)
        self.start_ms = -1
        self.partitions.clear()
        self.groups.clear()
        self.offsets.clear()
