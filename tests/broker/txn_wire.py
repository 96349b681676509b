"""Transactional requests for the broker tests, over broker_wire's Wire (kcodec's own messages)."""

from __future__ import annotations

import time
from typing import Any, Optional

from broker_wire import Wire

from kcodec.messages import (AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, FetchRequest,
                             InitProducerIdRequest, ProduceRequest, TxnOffsetCommitRequest)
from kcodec.records import BatchBuilder, iter_batches

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def txn_batch(*values: bytes, pid: int, epoch: int, seq: int, transactional: bool = True) -> bytes:
    b = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=transactional)
    now = int(time.time() * 1000)
    for v in values:
        b.append(None, v, timestamp=now)
    return b.build()


def produce(topic: str, partition: int, records: bytes, transactional_id: Optional[str]) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=1000, transactional_id=transactional_id, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=records)])])


def fetch(topic: str, partition: int, offset: int, isolation: int) -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=isolation,
                        session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                            FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                        partition_max_bytes=1 << 20, current_leader_epoch=-1)])])


def values(records: Any) -> list[bytes]:
    return [r.value for b in iter_batches(records or b"") if not b.is_control for r in b]


class Producer:
    """One transactional producer's requests: its id, epoch and per-partition sequences."""

    def __init__(self, wire: Wire, transactional_id: str, timeout_ms: int = 60_000, version: int = 4) -> None:
        self.w, self.tid = wire, transactional_id
        r = wire.call(InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=timeout_ms),
                      version)
        assert r.error_code == 0, r.error_code
        self.pid, self.epoch = r.producer_id, r.producer_epoch
        self.seqs: dict[tuple[str, int], int] = {}

    @classmethod
    def given(cls, wire: Wire, transactional_id: str, pid: int, epoch: int) -> "Producer":
        """A producer with the id and epoch an InitProducerId sent otherwise gave."""
        p = cls.__new__(cls)
        p.w, p.tid, p.pid, p.epoch, p.seqs = wire, transactional_id, pid, epoch, {}
        return p

    def add(self, topic: str, *partitions: int, version: int = 3) -> Any:
        return self.w.call(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.tid, v3_and_below_producer_id=self.pid,
            v3_and_below_producer_epoch=self.epoch, v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=list(partitions))]),
            version)

    def add_code(self, topic: str, *partitions: int, version: int = 3) -> int:
        r = self.add(topic, *partitions, version=version)
        return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code

    def send(self, topic: str, partition: int, *vals: bytes, version: int = 9, transactional: bool = True) -> Any:
        seq = self.seqs.get((topic, partition), 0)
        r = self.w.call(produce(topic, partition, txn_batch(*vals, pid=self.pid, epoch=self.epoch, seq=seq,
                                                            transactional=transactional), self.tid), version)
        p = r.responses[0].partition_responses[0]
        if p.error_code == 0:
            self.seqs[(topic, partition)] = seq + len(vals)
        return p

    def end(self, commit: bool, version: int = 3) -> int:
        return self.w.call(EndTxnRequest(transactional_id=self.tid, producer_id=self.pid, producer_epoch=self.epoch,
                                         committed=commit), version).error_code

    def end_v2(self, commit: bool, epoch: Optional[int] = None) -> tuple[int, int, int]:
        """EndTxn v5 (transaction version 2): (error, producer id, epoch); on success the producer goes on
        with the id and epoch it was given, its sequences from 0."""
        r = self.w.call(EndTxnRequest(transactional_id=self.tid, producer_id=self.pid, committed=commit,
                                      producer_epoch=self.epoch if epoch is None else epoch), 5)
        if r.error_code == 0:
            self.pid, self.epoch = r.producer_id, r.producer_epoch
            self.seqs.clear()
        return r.error_code, r.producer_id, r.producer_epoch

    def add_offsets(self, group: str, version: int = 3) -> int:
        return self.w.call(AddOffsetsToTxnRequest(transactional_id=self.tid, producer_id=self.pid,
                                                  producer_epoch=self.epoch, group_id=group), version).error_code

    def commit_offsets(self, group: str, topic: str, offsets: dict[int, int], version: int = 3) -> list[int]:
        r = self.w.call(TxnOffsetCommitRequest(
            transactional_id=self.tid, group_id=group, producer_id=self.pid, producer_epoch=self.epoch,
            generation_id=-1, member_id="", topics=[TxnOffsetCommitRequest.Topic(name=topic, partitions=[
                TxnOffsetCommitRequest.Partition(partition_index=p, committed_offset=o, committed_leader_epoch=-1)
                for p, o in offsets.items()])]), version)
        return [p.error_code for t in r.topics for p in t.partitions]
