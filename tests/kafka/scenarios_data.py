"""The data plane as conformance diffs: Produce with every codec and acks, Fetch, ListOffsets, the
idempotent producer (sequences, duplicates, gaps, epochs)."""

from __future__ import annotations

import uuid
from typing import Any, Optional

from conformance import Recorder, scenario
from scenarios_admin import create, delete, new_topic

from kcodec.messages import (FetchRequest, InitProducerIdRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest)
from kcodec.records import BatchBuilder, Compression

TS = 1_600_000_000_000  # record timestamps: fixed, so both brokers store the same batches
CODECS = {"none": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY, "lz4": Compression.LZ4,
          "zstd": Compression.ZSTD}


def batch(n: int, start: int = 0, compression: int = Compression.NONE, pid: int = -1, epoch: int = -1,
          seq: int = -1, transactional: bool = False) -> bytes:
    b = BatchBuilder(compression=compression, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                     transactional=transactional)
    for i in range(start, start + n):
        b.append(f"key-{i}".encode(), f"value-{i}".encode() * 3, headers=[("h", str(i).encode())],
                 timestamp=TS + i)
    return b.build()


def produce_request(topic: str, records: bytes, acks: int = -1, partition: int = 0, version: int = 9,
                    topic_id: Optional[uuid.UUID] = None, transactional_id: Optional[str] = None) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData(
        partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])
    if version >= 13:
        data.topic_id = topic_id
    else:
        data.name = topic
    return ProduceRequest(acks=acks, timeout_ms=10000, topic_data=[data], transactional_id=transactional_id)


def produce(r: Recorder, step: str, topic: str, records: bytes, acks: int = -1, version: int = 9,
            partition: int = 0, user: Optional[str] = None, **kw: Any) -> Any:
    return r.call(step, produce_request(topic, records, acks, partition, version, **kw), version, user=user)


def topic_id(r: Recorder, name: str) -> uuid.UUID:
    md = r.quiet(MetadataRequest(topics=[MetadataRequest.Topic(name=name)], allow_auto_topic_creation=False), 12)
    return md.topics[0].topic_id


def fetch_request(topic: str, offset: int = 0, partition: int = 0, version: int = 12, max_bytes: int = 1 << 20,
                  partition_max_bytes: int = 1 << 20, isolation: int = 0, topic_id_: Optional[uuid.UUID] = None,
                  session_id: int = 0, session_epoch: int = -1, max_wait_ms: int = 50) -> FetchRequest:
    part = FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes,
                                       current_leader_epoch=-1 if version < 9 else 0, log_start_offset=-1)
    ft = FetchRequest.FetchTopic(partitions=[part])
    if version >= 13:
        ft.topic_id = topic_id_
    else:
        ft.topic = topic
    return FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                        isolation_level=isolation, session_id=session_id, session_epoch=session_epoch, topics=[ft])


def fetch(r: Recorder, step: str, topic: str, version: int = 12, user: Optional[str] = None, **kw: Any) -> Any:
    return r.call(step, fetch_request(topic, version=version, **kw), version, user=user)


def consume(r: Recorder, step: str, topic: str, partition: int = 0, isolation: int = 0, version: int = 12) -> None:
    """Fetch from offset 0 until the end, as a consumer does, and record what it saw: the batches, the aborted
    transactions named on the way, the last answer's offsets. (How much one Fetch returns is the broker's
    choice: Kafka may stop at a batch boundary before its limits, e.g. before transaction markers.)"""
    from conformance import batches

    offset, seen, aborted = 0, [], []
    for _ in range(50):
        resp = r.quiet(fetch_request(topic, offset, partition, version, isolation=isolation), version)
        p = resp.responses[0].partitions[0]
        got = [b for b in batches(p.records) or [] if "records" in b]
        aborted += [{"producer_id": a.producer_id, "first_offset": a.first_offset}
                    for a in p.aborted_transactions or [] if a.first_offset >= offset]
        seen += got
        end = p.last_stable_offset if isolation else p.high_watermark
        if p.error_code or not got or got[-1]["base_offset"] + got[-1]["last_offset_delta"] + 1 >= end:
            break
        offset = got[-1]["base_offset"] + got[-1]["last_offset_delta"] + 1
    r.note(step, {"error_code": p.error_code, "high_watermark": p.high_watermark,
                  "last_stable_offset": p.last_stable_offset, "log_start_offset": p.log_start_offset,
                  "aborted_transactions": aborted, "batches": seen})


def list_offsets(r: Recorder, step: str, topic: str, timestamps: list[int], version: int = 9, isolation: int = 0,
                 partition: int = 0, user: Optional[str] = None) -> Any:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=ts,
                                                                        current_leader_epoch=-1)
                                for ts in timestamps])])
    if version >= 10:
        req.timeout_ms = 1000
    return r.call(step, req, version, user=user)


# -- Produce and Fetch ----------------------------------------------------------------------------------------

@scenario()
def scenario_produce_codecs_and_acks(r: Recorder) -> None:
    """Produce with each codec at acks 1 and -1, and acks 0 (no answer: the next answer on the connection
    is the next request's); Produce v3, v9, v11 and v13 (by topic id); Fetch of all of it."""
    t = f"{r.tag}-data"
    create(r, "create", [new_topic(t, 1, 1)])
    offset = 0
    for name, codec in CODECS.items():
        for acks, version in ((1, 9), (-1, 11)):
            produce(r, f"{name} acks={acks} v{version}", t, batch(3, offset, codec), acks, version)
            offset += 3
    r.send_unanswered(produce_request(t, batch(2, offset, Compression.ZSTD), acks=0, version=9), 9)
    offset += 2
    produce(r, "after acks=0", t, batch(1, offset), 1, 9)
    offset += 1
    produce(r, "v3", t, batch(2, offset, Compression.GZIP), -1, 3)
    offset += 2
    produce(r, "v13 by id", t, batch(2, offset), -1, 13, topic_id=topic_id(r, t))
    produce(r, "v13 unknown id", t, batch(1, 0), -1, 13, topic_id=uuid.UUID(int=5))
    produce(r, "unknown partition", t, batch(1, 0), -1, 9, partition=3)
    produce(r, "unknown topic", f"{t}-none", batch(1, 0), -1, 9)
    produce(r, "internal topic", "__consumer_offsets", batch(1, 0), -1, 9)
    consume(r, "consume", t)
    for stamp in (-2, -1, -3):
        list_offsets(r, f"offsets at {stamp}", t, [stamp])
    delete(r, "delete", [t])


@scenario()
def scenario_fetch(r: Recorder) -> None:
    """Fetch at several versions and offsets: a whole log, from inside a batch, at the end, past it
    (OFFSET_OUT_OF_RANGE), with a partition limit smaller than a batch (one batch comes anyway, KIP-74),
    a response limit, unknown partitions and topic ids, fetch sessions (KIP-227)."""
    t = f"{r.tag}-data"
    create(r, "create", [new_topic(t, 2, 1)])
    for i in range(3):
        produce(r, f"produce {i}", t, batch(4, 4 * i, Compression.LZ4 if i == 1 else Compression.NONE), 1)
    tid = topic_id(r, t)
    for version in (4, 7, 11, 12):
        fetch(r, f"v{version}", t, version)
    fetch(r, "v13 by id", t, 13, topic_id_=tid)
    fetch(r, "v16 by id", t, 16, topic_id_=tid)
    fetch(r, "v13 unknown id", t, 13, topic_id_=uuid.UUID(int=9))
    fetch(r, "inside a batch", t, 12, offset=5)
    fetch(r, "at the end", t, 12, offset=12)
    fetch(r, "past the end", t, 12, offset=13)
    fetch(r, "far past", t, 12, offset=1000)
    fetch(r, "small partition limit", t, 12, partition_max_bytes=10)
    fetch(r, "small response limit", t, 12, max_bytes=10)
    fetch(r, "empty partition", t, 12, partition=1)
    fetch(r, "unknown partition", t, 12, partition=7)
    fetch(r, "unknown topic", f"{t}-none", 12)
    first = fetch(r, "new session", t, 12, session_epoch=0)
    fetch(r, "session, nothing new", t, 12, session_id=first.session_id, session_epoch=1)
    fetch(r, "session, wrong epoch", t, 12, session_id=first.session_id, session_epoch=5)
    fetch(r, "unknown session", t, 12, session_id=123456, session_epoch=1)
    delete(r, "delete", [t])


@scenario()
def scenario_list_offsets(r: Recorder) -> None:
    """ListOffsets: earliest (-2), latest (-1), max timestamp (-3, v7+), earliest local (-4, v8+), by
    timestamp (before, inside, after the records), at several versions; unknown partitions and topics."""
    t = f"{r.tag}-data"
    create(r, "create", [new_topic(t, 2, 1)])
    produce(r, "produce", t, batch(5, 0), 1)
    produce(r, "produce more", t, batch(5, 5, Compression.SNAPPY), 1)
    for version in (1, 4, 7, 9):
        for stamp in [-2, -1, TS + 3, TS + 7, TS + 100, TS - 5] + ([-3] if version >= 7 else []):
            list_offsets(r, f"v{version} at {stamp}", t, [stamp], version)
    list_offsets(r, "v8 earliest local", t, [-4], 8)
    list_offsets(r, "one partition twice", t, [-2, -1], 9)
    for stamp in (-2, -1, -3):
        list_offsets(r, f"empty partition at {stamp}", t, [stamp], 9, partition=1)
    list_offsets(r, "unknown partition", t, [-1], 9, partition=5)
    list_offsets(r, "unknown topic", f"{t}-none", [-1], 9)
    list_offsets(r, "read committed", t, [-1], 9, isolation=1)
    delete(r, "delete", [t])


# -- the idempotent producer ------------------------------------------------------------------------------------

@scenario()
def scenario_idempotent_producer(r: Recorder) -> None:
    """InitProducerId without a transactional id; Produce with sequences: in order, a duplicate of the last
    batch (answered with its offsets), a gap (OUT_OF_ORDER_SEQUENCE_NUMBER), an old epoch, a new epoch from 0,
    an unknown producer id; the batches as stored."""
    t = f"{r.tag}-data"
    create(r, "create", [new_topic(t, 1, 1)])
    pid = r.call("init", InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    p, e = pid.producer_id, pid.producer_epoch
    produce(r, "seq 0", t, batch(3, 0, pid=p, epoch=e, seq=0), -1)
    produce(r, "seq 3", t, batch(2, 3, pid=p, epoch=e, seq=3), -1)
    produce(r, "duplicate of seq 3", t, batch(2, 3, pid=p, epoch=e, seq=3), -1)
    produce(r, "duplicate of seq 0", t, batch(3, 0, pid=p, epoch=e, seq=0), -1)
    produce(r, "gap", t, batch(1, 9, pid=p, epoch=e, seq=9), -1)
    produce(r, "seq 5", t, batch(1, 5, pid=p, epoch=e, seq=5), -1)
    produce(r, "new epoch from 0", t, batch(1, 6, pid=p, epoch=e + 1, seq=0), -1)
    produce(r, "old epoch", t, batch(1, 7, pid=p, epoch=e, seq=6), -1)
    produce(r, "new epoch not from 0", t, batch(1, 7, pid=p, epoch=e + 2, seq=4), -1)
    produce(r, "unknown producer from 0", t, batch(1, 8, pid=p + 100000, epoch=0, seq=0), -1)
    produce(r, "unknown producer later", t, batch(1, 9, pid=p + 100001, epoch=0, seq=7), -1)
    again = r.call("init again", InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4)
    r.note("a new producer id", again.producer_id != p)
    consume(r, "consume", t)
    delete(r, "delete", [t])
