"""Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords and InitProducerId over the wire."""

from __future__ import annotations

import signal
import struct
import subprocess
import sys
import threading
import time
import uuid

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import (CreateTopicsRequest, DeleteRecordsRequest, FetchRequest, InitProducerIdRequest, ListOffsetsRequest,
                             OffsetForLeaderEpochRequest, ProduceRequest)
from kcodec.records import BatchBuilder, Compression, TimestampType, iter_batches

import kcodec


def batch(*values: bytes, pid: int = -1, epoch: int = -1, seq: int = -1, ts: int = 0,
          compression: int = Compression.NONE) -> bytes:
    b = BatchBuilder(compression=compression, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    ts = ts or int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(None, v, timestamp=ts + i)
    return b.build()


def produce(topic: str, partition: int, records, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)])])


def fetch(topic: str, partition: int, offset: int, **kw) -> FetchRequest:
    kw.setdefault("max_wait_ms", 0)
    kw.setdefault("max_bytes", 1 << 20)
    pmax = kw.pop("partition_max_bytes", 1 << 20)
    kw.setdefault("session_epoch", -1)
    return FetchRequest(replica_id=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
        FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=pmax,
                                    current_leader_epoch=-1)])], **kw)


def values(records) -> list[bytes]:
    return [r.value for b in iter_batches(records) for r in b]


def leader_wire(c: Cluster, topic: str, partition: int = 0) -> Wire:
    leader = c.state.leader(c.topics()[topic], partition)
    return Wire(c.addresses[c.state.broker_ids.index(leader)])


@pytest.fixture
def one() -> Cluster:
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 2)
        yield c


def _p(resp):
    return resp.responses[0].partition_responses[0]


def test_produce_then_fetch_every_version(one):
    with Wire(one.addresses[0]) as w:
        for v in range(3, 14):
            req = produce("t", 0, batch(b"v%d" % v))
            if v >= 13:
                req.topic_data[0].topic_id = one.topics()["t"].topic_id
            assert _p(w.call(req, v)).error_code == 0
        for v in range(4, 19):
            req = fetch("t", 0, 0)
            if v >= 13:
                req.topics[0].topic_id = one.topics()["t"].topic_id
            p = w.call(req, v).responses[0].partitions[0]
            assert p.error_code == 0 and p.high_watermark == 11 and p.last_stable_offset == 11
            assert values(p.records) == [b"v%d" % v for v in range(3, 14)]
        offsets = [r.offset for b in iter_batches(p.records) for r in b]
        assert offsets == list(range(11))


def test_acks_zero_gets_no_response_and_is_appended(one):
    with Wire(one.addresses[0]) as w:
        w.send(kcodec.encode_request(produce("t", 0, batch(b"a"), acks=0), 9, correlation_id=1))
        r = w.call(fetch("t", 0, 0), 12)  # the next answer is this fetch's: nothing came for acks=0
        assert values(r.responses[0].partitions[0].records) == [b"a"]
    with Wire(one.addresses[0]) as w:  # a failed acks=0 produce closes the connection, as Kafka does
        w.send(kcodec.encode_request(produce("nope", 0, batch(b"a"), acks=0), 9, correlation_id=1))
        assert w.closed_by_peer()


def test_bad_batches_are_refused_and_nothing_is_appended(one):
    good = batch(b"x", b"y")
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    cut_count = bytearray(good)
    struct.pack_into(">i", cut_count, 23, 5)  # last offset delta disagrees with the record count
    with Wire(one.addresses[0]) as w:
        for records, code in [(bytes(corrupt), ErrorCode.CORRUPT_MESSAGE), (good[:-3], ErrorCode.INVALID_RECORD),
                              (good + good, ErrorCode.INVALID_RECORD), (None, ErrorCode.INVALID_RECORD),
                              (bytes(cut_count), ErrorCode.CORRUPT_MESSAGE)]:
            p = _p(w.call(produce("t", 0, records), 9))
            assert p.error_code == code, (records, p)
            assert p.error_message is None  # as Kafka's: its validator's exceptions carry no message to the client
        legacy = kcodec.records.BatchBuilder(magic=1)
        legacy.append(None, b"old")
        assert _p(w.call(produce("t", 0, legacy.build()), 9)).error_code == ErrorCode.INVALID_RECORD
        p = w.call(fetch("t", 0, 0), 12).responses[0].partitions[0]
        assert p.high_watermark == 0 and p.records == b""


def test_unknown_topics_partitions_and_acks(one):
    with Wire(one.addresses[0]) as w:
        assert _p(w.call(produce("nope", 0, batch(b"a")), 9)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _p(w.call(produce("t", 7, batch(b"a")), 9)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _p(w.call(produce("t", 0, batch(b"a"), acks=2), 9)).error_code == ErrorCode.INVALID_REQUIRED_ACKS
        assert _p(w.call(produce("__consumer_offsets", 0, batch(b"a")), 9)).error_code == \
            ErrorCode.INVALID_TOPIC_EXCEPTION
        p = w.call(fetch("t", 0, 5), 12).responses[0].partitions[0]
        assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        p = w.call(fetch("nope", 0, 0), 12).responses[0].partitions[0]
        assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        req = fetch("t", 0, 0)
        req.topics[0].topic_id = uuid.uuid4()
        assert w.call(req, 13).responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_not_leader_on_other_brokers():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        c.create_topic("t", 3)
        replicas = c.topics()["t"].replicas
        for index in range(3):
            leader = replicas[index][0]
            for node in c.state.broker_ids:
                with Wire(c.addresses[c.state.broker_ids.index(node)]) as w:
                    code = _p(w.call(produce("t", index, batch(b"a")), 10)).error_code
                    fcode = w.call(fetch("t", index, 0), 12).responses[0].partitions[0].error_code
                expected = ErrorCode.NONE if node == leader else ErrorCode.NOT_LEADER_OR_FOLLOWER
                assert (code, fcode) == (expected, expected)


def test_log_append_time_rewrites_the_batch_with_a_valid_crc(one):
    one.create_topic("lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    with Wire(one.addresses[0]) as w:
        p = _p(w.call(produce("lat", 0, batch(b"a", b"b", ts=5)), 9))
        assert p.log_append_time_ms >= before
        records = w.call(fetch("lat", 0, 0), 12).responses[0].partitions[0].records
    (b,) = iter_batches(records, verify_crc=True)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == p.log_append_time_ms
    assert [r.timestamp for r in b] == [p.log_append_time_ms] * 2


def test_fetch_size_rules(one):
    with Wire(one.addresses[0]) as w:
        for i in range(4):
            w.call(produce("t", 0, batch(b"x" * 1000)), 9)
            w.call(produce("t", 1, batch(b"y" * 1000)), 9)
        size = len(batch(b"x" * 1000))
        # the first batch comes whole even over both limits; then nothing more
        req = fetch("t", 0, 0, max_bytes=10, partition_max_bytes=10)
        req.topics[0].partitions.append(FetchRequest.FetchPartition(partition=1, fetch_offset=0,
                                                                    partition_max_bytes=10, current_leader_epoch=-1))
        parts = w.call(req, 12).responses[0].partitions
        assert [len(values(p.records)) for p in parts] == [1, 0]
        # partition max bytes bound each partition, max_bytes the response
        req = fetch("t", 0, 0, max_bytes=3 * size, partition_max_bytes=2 * size)
        req.topics[0].partitions.append(FetchRequest.FetchPartition(partition=1, fetch_offset=0,
                                                                    partition_max_bytes=2 * size, current_leader_epoch=-1))
        parts = w.call(req, 12).responses[0].partitions
        assert [len(values(p.records)) for p in parts] == [2, 1]


def test_the_brokers_fetch_max_bytes_bounds_every_response():
    # Kafka's broker fetch.max.bytes (KIP-541): below what the request allows, the first batch still whole
    with Cluster(brokers=1, system_topic_partitions=1, fetch_max_bytes=4096) as c:
        c.create_topic("t", 2)
        with Wire(c.addresses[0]) as w:
            for i in range(4):
                w.call(produce("t", 0, batch(b"x" * 1500)), 9)
                w.call(produce("t", 1, batch(b"y" * 5000)), 9)
            req = fetch("t", 0, 0, max_bytes=1 << 20, partition_max_bytes=1 << 20)
            req.topics[0].partitions.append(FetchRequest.FetchPartition(
                partition=1, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1))
            parts = w.call(req, 12).responses[0].partitions
            assert [len(values(p.records)) for p in parts] == [2, 0]
            alone = w.call(fetch("t", 1, 0, max_bytes=1 << 20, partition_max_bytes=1 << 20), 12)
            assert values(alone.responses[0].partitions[0].records) == [b"y" * 5000]  # over the limit, whole
    with pytest.raises(ValueError, match="at least 1024"):
        Cluster(fetch_max_bytes=1000)
    with pytest.raises(ValueError, match="positive"):
        Cluster(max_partition_bytes=0)


@pytest.mark.parametrize("option", ["--fetch-max-bytes", "--max-partition-bytes", "--producer-id-expiration-ms",
                                    "--telemetry-max-bytes"])
def test_the_cli_refuses_a_zero_limit(option):
    # 0 once meant "the default" (a falsy value fell back to it) and started a broker: now it is refused
    # like any bad value (a subprocess, so that a broker started by mistake is stopped by the timeout)
    out = subprocess.run([sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", option, "0"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "must be" in out.stderr, out.stderr


def test_min_bytes_beyond_the_responses_limit_is_answered_at_once(one):
    # Kafka counts the bytes available against min_bytes, not those that fit: a response cut at its limit
    # cannot grow by waiting (the 5 s socket timeout of Wire would fail a wait of max_wait_ms)
    with Wire(one.addresses[0]) as w:
        for i in range(4):
            w.call(produce("t", 0, batch(b"x" * 1000)), 9)
        size = len(batch(b"x" * 1000))
        r = w.call(fetch("t", 0, 0, max_bytes=2 * size, min_bytes=10 * size, max_wait_ms=60_000), 12)
        assert len(values(r.responses[0].partitions[0].records)) == 2


def test_a_large_fetch_response_over_tls_arrives_whole(test_certs):
    # TLS transports take a response's pieces at once (kcodec.protocol.writes); the socket's reader is slow
    import ssl

    client = ssl.create_default_context(cafile=str(test_certs.ca))
    stored = [b"%d" % i * 300_000 for i in range(10)]  # 3 MB and more, beyond what the sockets hold
    with Cluster(tls=(test_certs.cert, test_certs.key), system_topic_partitions=1) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            w.sock = client.wrap_socket(w.sock, server_hostname="127.0.0.1")
            for value in stored:
                w.call(produce("t", 0, batch(value)), 9)
            sent = w.request(fetch("t", 0, 0, max_bytes=1 << 26, partition_max_bytes=1 << 26), 12)
            time.sleep(0.3)
            assert values(w.receive(sent).responses[0].partitions[0].records) == stored


def test_long_poll_waits_and_wakes_on_append(one):
    with Wire(one.addresses[0]) as w, Wire(one.addresses[0]) as producer:
        t0 = time.monotonic()
        r = w.call(fetch("t", 0, 0, max_wait_ms=300, min_bytes=1), 12)
        assert time.monotonic() - t0 >= 0.25 and r.responses[0].partitions[0].records == b""
        timer = threading.Timer(0.2, lambda: producer.call(produce("t", 0, batch(b"late")), 9))
        timer.start()
        t0 = time.monotonic()
        r = w.call(fetch("t", 0, 0, max_wait_ms=5000, min_bytes=1), 12)
        timer.join()
        assert values(r.responses[0].partitions[0].records) == [b"late"] and time.monotonic() - t0 < 4


def test_incremental_fetch_sessions(one):
    with Wire(one.addresses[0]) as w:
        w.call(produce("t", 0, batch(b"a")), 9)
        req = fetch("t", 0, 0, session_id=0, session_epoch=0)
        req.topics[0].partitions.append(FetchRequest.FetchPartition(partition=1, fetch_offset=0,
                                                                    partition_max_bytes=1 << 20, current_leader_epoch=-1))
        full = w.call(req, 12)
        assert full.session_id > 0 and [p.partition_index for p in full.responses[0].partitions] == [0, 1]
        sid = full.session_id
        # the client moves partition 0 on; nothing changed since: nothing is said
        nothing = w.call(fetch("t", 0, 1, session_id=sid, session_epoch=1), 12)
        assert nothing.error_code == 0 and nothing.responses == []
        w.call(produce("t", 1, batch(b"b")), 9)
        changed = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_id=sid, session_epoch=2,
                                      topics=[]), 12)
        assert [(p.partition_index, values(p.records)) for p in changed.responses[0].partitions] == [(1, [b"b"])]
        forget = FetchRequest(replica_id=-1, max_bytes=1 << 20, session_id=sid, session_epoch=3, topics=[],
                              forgotten_topics_data=[FetchRequest.ForgottenTopic(topic="t", partitions=[1])])
        assert w.call(forget, 12).responses == []
        w.call(produce("t", 1, batch(b"c")), 9)
        w.call(produce("t", 0, batch(b"d")), 9)
        after = w.call(FetchRequest(replica_id=-1, max_bytes=1 << 20, session_id=sid, session_epoch=4, topics=[]), 12)
        assert [(p.partition_index, values(p.records)) for p in after.responses[0].partitions] == [(0, [b"d"])]
        stale = w.call(FetchRequest(replica_id=-1, session_id=sid, session_epoch=9, topics=[]), 12)
        assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        unknown = w.call(FetchRequest(replica_id=-1, session_id=sid + 99, session_epoch=1, topics=[]), 12)
        assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_list_offsets_and_leader_epochs(one):
    with Wire(one.addresses[0]) as w:
        w.call(produce("t", 0, batch(b"a", b"b", ts=1000)), 9)
        w.call(produce("t", 0, batch(b"c", ts=5000)), 9)
        w.call(produce("t", 0, batch(b"d", ts=2000)), 9)

        def offset(ts):
            r = w.call(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name="t", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts,
                                                                              current_leader_epoch=-1)])]), 8)
            p = r.topics[0].partitions[0]
            return p.error_code, p.offset, p.timestamp
        assert offset(-1) == (0, 4, -1) and offset(-2) == (0, 0, -1)
        assert offset(1001) == (0, 1, 1001) and offset(1500) == (0, 2, 5000) and offset(9999) == (0, -1, -1)
        assert offset(-3) == (0, 2, 5000)
        r = w.call(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
            topic="t", partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=0, leader_epoch=0)])]), 4)
        p = r.topics[0].partitions[0]
        assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, 4)


def test_delete_records_and_retention(one):
    one.create_topic("small", 1, configs={"retention.bytes": "3000"})
    with Wire(one.addresses[0]) as w:
        for i in range(5):
            w.call(produce("t", 0, batch(b"%d" % i)), 9)
            w.call(produce("small", 0, batch(b"z" * 1000)), 9)
        r = w.call(DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=3)])]), 2)
        assert r.topics[0].partitions[0].low_watermark == 3
        p = w.call(fetch("t", 0, 3), 12).responses[0].partitions[0]
        assert p.log_start_offset == 3 and values(p.records) == [b"3", b"4"]
        assert w.call(fetch("t", 0, 1), 12).responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        r = w.call(DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
            name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=99)])]), 2)
        assert r.topics[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        p = w.call(fetch("small", 0, 3), 12).responses[0].partitions[0]
        assert p.log_start_offset == 3 and p.high_watermark == 5  # whole old batches dropped under 3000 bytes
    with one.state.lock:
        assert one.state.logs.bounds(one.topics()["t"].topic_id, 0) == (3, 5)
        assert one.state.logs.bounds(one.topics()["t"].topic_id, 1) == (0, 0)


def test_idempotent_producer_sequences():
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            r = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
            pid, epoch = r.producer_id, r.producer_epoch
            assert r.error_code == 0 and pid >= 0 and epoch == 0
            first = _p(w.call(produce("t", 0, batch(b"a", b"b", pid=pid, epoch=0, seq=0)), 9))
            second = _p(w.call(produce("t", 0, batch(b"c", pid=pid, epoch=0, seq=2)), 9))
            dup = _p(w.call(produce("t", 0, batch(b"a", b"b", pid=pid, epoch=0, seq=0)), 9))
            assert (first.base_offset, second.base_offset, dup.error_code, dup.base_offset) == (0, 2, 0, 0)
            gap = _p(w.call(produce("t", 0, batch(b"e", pid=pid, epoch=0, seq=7)), 9))
            assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            bumped = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000,
                                                  producer_id=pid, producer_epoch=0), 4)
            assert (bumped.producer_id, bumped.producer_epoch) == (pid, 1)
            assert _p(w.call(produce("t", 0, batch(b"f", pid=pid, epoch=1, seq=0)), 9)).error_code == 0
            old = _p(w.call(produce("t", 0, batch(b"g", pid=pid, epoch=0, seq=3)), 9))
            assert old.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
            fenced = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000,
                                                  producer_id=pid, producer_epoch=0), 4)
            assert fenced.error_code == ErrorCode.PRODUCER_FENCED
            assert values(w.call(fetch("t", 0, 0), 12).responses[0].partitions[0].records) == [b"a", b"b", b"c", b"f"]


def test_data_survives_a_restart_and_a_torn_tail(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c:
        c.create_topic("t", 1)
        with Wire(c.addresses[0]) as w:
            for i in range(3):
                w.call(produce("t", 0, batch(b"%d" % i, compression=Compression.GZIP)), 9)
            w.call(DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
                name="t", partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=1)])]), 2)
    data = tmp_path / "state.json.data"
    with open(data, "ab") as f:
        f.write(b"\x00\x00\x01\x00torn")  # a write cut by a crash
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c, Wire(c.addresses[0]) as w:
        p = w.call(fetch("t", 0, 1), 12).responses[0].partitions[0]
        assert (p.log_start_offset, p.high_watermark, values(p.records)) == (1, 3, [b"1", b"2"])
        assert _p(w.call(produce("t", 0, batch(b"3")), 9)).base_offset == 3
    assert not data.read_bytes().endswith(b"torn")


def test_retention_by_time_spares_the_newest_segment(one):
    one.create_topic("aged", 1, configs={"retention.ms": "60000", "segment.ms": "0"})
    with Wire(one.addresses[0]) as w:
        w.call(produce("aged", 0, batch(b"old", ts=1000)), 9)
        w.call(produce("aged", 0, batch(b"new")), 9)
        p = w.call(fetch("aged", 0, 1), 12).responses[0].partitions[0]
    assert (p.log_start_offset, values(p.records)) == (1, [b"new"])


def _start_broker(state, port: int = 0):
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", f"127.0.0.1:{port}",
                             "--state", str(state)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    bootstrap = line.split("bootstrap ")[1].split(",")[0]
    host, _, p = bootstrap.rpartition(":")
    return proc, (host, int(p))


def test_sigkill_loses_nothing_acknowledged(tmp_path):
    state = tmp_path / "state.json"
    proc, address = _start_broker(state)
    try:
        with Wire(address) as w:
            w.call(CreateTopicsRequest(timeout_ms=1000, topics=[CreateTopicsRequest.CreatableTopic(
                name="t", num_partitions=1, replication_factor=1)]), 5)
            acked = [_p(w.call(produce("t", 0, batch(b"m%d" % i)), 9)).base_offset for i in range(50)]
        assert acked == list(range(50))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    proc, address = _start_broker(state)
    try:
        with Wire(address) as w:
            p = w.call(fetch("t", 0, 0), 12).responses[0].partitions[0]
        assert p.high_watermark == 50 and values(p.records) == [b"m%d" % i for i in range(50)]
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_journal_of_mostly_dropped_data_is_rewritten_at_load(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c:
        c.create_topic("gone", 1, 1)
        c.create_topic("kept", 1, 1)
        with Wire(c.addresses[0]) as w:
            pid = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).producer_id
            for i in range(40):
                w.call(produce("gone", 0, batch(b"x" * 100_000, pid=pid, epoch=0, seq=i)), 9)
            w.call(produce("kept", 0, batch(b"k")), 9)
        c.state.delete_topic(c.topics()["gone"])
    before = (tmp_path / "state.json.data").stat().st_size
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c, Wire(c.addresses[0]) as w:
        assert (tmp_path / "state.json.data").stat().st_size < before // 10
        assert values(w.call(fetch("kept", 0, 0), 12).responses[0].partitions[0].records) == [b"k"]
        again = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).producer_id
        assert again > pid  # a producer id is never given out twice, even once its data is gone
    with Cluster(brokers=1, system_topic_partitions=1, state_file=state) as c, Wire(c.addresses[0]) as w:
        assert values(w.call(fetch("kept", 0, 0), 12).responses[0].partitions[0].records) == [b"k"]
        assert w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).producer_id > again


def test_acls_cover_write_read_and_idempotent_write():
    acls = ["ANONYMOUS:Read:topic:r", "ANONYMOUS:Write:topic:w", "ANONYMOUS:Describe:topic:*"]
    with Cluster(brokers=1, system_topic_partitions=1, acls=acls) as c:
        c.create_topic("r", 1, 1)
        c.create_topic("w", 1, 1)
        with Wire(c.addresses[0]) as w:
            assert _p(w.call(produce("r", 0, batch(b"a")), 9)).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
            assert _p(w.call(produce("w", 0, batch(b"a")), 9)).error_code == 0
            assert w.call(fetch("r", 0, 0), 12).responses[0].partitions[0].error_code == 0
            assert w.call(fetch("w", 0, 0), 12).responses[0].partitions[0].error_code == \
                ErrorCode.TOPIC_AUTHORIZATION_FAILED
            # Write on some topic allows an idempotent producer id (KIP-679)
            assert w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4).error_code == 0
    with Cluster(brokers=1, system_topic_partitions=1, acls=["ANONYMOUS:Read:topic:*"]) as c, \
            Wire(c.addresses[0]) as w:
        r = w.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
        assert r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
