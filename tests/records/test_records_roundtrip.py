"""Batches built by kcodec.records read back to what was appended: every magic, codec and option."""

from __future__ import annotations

import pytest

import kcodec
from kcodec.messages import FetchResponse, ProduceRequest
from kcodec.records import (BACKEND, BatchBuilder, Compression, RecordBatch, TimestampType, fetched, iter_batches,
                            produced, read_batches, read_records, records_field)

CODECS = list(Compression)
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def sample(n: int = 30) -> list[tuple]:
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else b"key-%d" % i
        value = None if i % 11 == 5 else bytes([i % 256]) * (i * 13)
        headers = [("h%d" % j, None if j == 1 else b"v" * j) for j in range(i % 3)]
        if i == 4:
            headers.append(("ünï", b"\x00"))
        out.append((key, value, headers, 1_700_000_000_000 + (i * 37) % 500))
    return out


def plain(r) -> tuple:
    b = lambda v: None if v is None else bytes(v)  # noqa: E731
    return (r.offset, r.timestamp, b(r.key), b(r.value), [(k, b(v)) for k, v in r.headers])


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("zero_copy", [False, True])
def test_v2_round_trip(codec, zero_copy):
    rows = sample()
    b = BatchBuilder(compression=codec, base_offset=1000, producer_id=42, producer_epoch=3, base_sequence=17,
                     partition_leader_epoch=9)
    for i, (k, v, h, ts) in enumerate(rows):
        assert b.append(k, v, headers=h, timestamp=ts) == i
    data = b.build()
    assert b.encoded_size() == len(data)
    (batch,) = list(iter_batches(data, zero_copy=zero_copy))
    assert isinstance(batch, RecordBatch)
    assert (batch.magic, batch.base_offset, batch.last_offset, batch.record_count, batch.size) == \
        (2, 1000, 1029, 30, len(data))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.partition_leader_epoch) == \
        (42, 3, 17, 9)
    assert batch.compression == codec and batch.timestamp_type == TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control
    assert batch.base_timestamp == rows[0][3] and batch.max_timestamp == max(r[3] for r in rows)
    got = [plain(r) for r in batch]
    assert got == [(1000 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(rows)]
    if zero_copy:
        assert any(isinstance(r.value, memoryview) for r in batch)
    else:
        assert all(r.value is None or type(r.value) is bytes for r in batch)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_legacy_round_trip(magic, codec):
    rows = sample(12)
    b = BatchBuilder(magic=magic, compression=codec, base_offset=500)
    for k, v, _, ts in rows:
        b.append(k, v, timestamp=ts)
    data = b.build()
    assert b.encoded_size() == len(data)
    batches = list(iter_batches(data))
    assert len(batches) == (1 if codec else 12)
    assert all(x.magic == magic and x.compression == codec for x in batches)
    got = [plain(r) for x in batches for r in x]
    want = [(500 + i, ts if magic else -1, k, v, []) for i, (k, v, _, ts) in enumerate(rows)]
    assert got == want
    assert batches[0].base_offset == 500 and batches[-1].last_offset == 511


def test_log_append_time_gives_every_record_the_batch_time():
    b = BatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)
    b.append(b"a", b"1", timestamp=5)
    b.append(b"b", b"2", timestamp=9)
    (batch,) = iter_batches(b.build())
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch] == [9, 9]
    lb = BatchBuilder(magic=1, compression=Compression.GZIP, timestamp_type=TimestampType.LOG_APPEND_TIME)
    lb.append(b"a", b"1", timestamp=5)
    lb.append(b"b", b"2", timestamp=9)
    assert [r.timestamp for r in read_records(lb.build())] == [9, 9]


def test_many_batches_and_a_partial_tail():
    parts = []
    for n in range(5):
        b = BatchBuilder(base_offset=n * 10, compression=Compression(n % 5))
        for i in range(n + 1):
            b.append(b"k", b"v%d" % i, timestamp=i)
        parts.append(b.build())
    legacy = BatchBuilder(magic=1, base_offset=50)
    legacy.append(b"old", b"msg", timestamp=1)
    parts.append(legacy.build())
    data = b"".join(parts)
    whole = read_batches(data)
    assert len(whole.batches) == 6 and whole.partial_bytes == 0 and whole.partial_offset == -1
    assert [b.index for b in whole.batches] == list(range(6))
    assert [b.offset for b in whole.batches] == [sum(map(len, parts[:i])) for i in range(6)]
    for cut in (1, 11, 12, 30, len(parts[-1]) - 1):
        got = read_batches(data[:-cut])
        assert len(got.batches) == 5
        assert got.partial_bytes == len(parts[-1]) - cut and got.partial_offset == len(data) - len(parts[-1])
        assert len(list(iter_batches(data[:-cut]))) == 5
    assert read_batches(b"") == ([], 0, -1)
    assert read_batches(data[:5]) == ([], 5, 0)


def test_any_buffer_and_encode_into():
    b = BatchBuilder(compression=Compression.LZ4)
    b.append(b"k", b"v" * 100, timestamp=1)
    data = b.build()
    for buf in (bytearray(data), memoryview(data), memoryview(bytearray(b"xx" + data))[2:]):
        assert [bytes(r.value) for r in read_records(buf)] == [b"v" * 100]
    out = bytearray(len(data) + 10)
    assert b.encode_into(out, 10) == len(data) and out[10:] == data
    with pytest.raises(kcodec.EncodeError):
        b.encode_into(bytearray(len(data) - 1))


def test_builder_rejects_what_the_format_cannot_hold():
    with pytest.raises(kcodec.EncodeError):
        BatchBuilder(magic=1, compression=Compression.ZSTD)
    with pytest.raises(kcodec.EncodeError):
        BatchBuilder(magic=0, transactional=True)
    with pytest.raises(kcodec.EncodeError):
        BatchBuilder(magic=1).append(b"k", b"v", headers=[("h", b"1")])
    with pytest.raises(kcodec.EncodeError):
        BatchBuilder().build()
    for codec in (Compression.NONE, Compression.GZIP):  # the writer's header and the compressed batch's alike
        for field in ({"producer_epoch": 2**15}, {"base_offset": 2**63}, {"partition_leader_epoch": 1.5}):
            b = BatchBuilder(compression=codec, **field)
            b.append(b"k", b"v", timestamp=1)
            with pytest.raises(kcodec.EncodeError, match="header"):
                b.build()
    with pytest.raises(TypeError):
        BatchBuilder().append("text", b"v")
    with pytest.raises(TypeError):
        BatchBuilder().append(b"k", b"v", headers=[(b"bytes key", b"v")])


def test_build_after_more_appends_includes_them():
    b = BatchBuilder()
    b.append(b"1", b"1", timestamp=1)
    first = b.build()
    kept = bytes(bytearray(first))
    b.append(b"2", b"2", timestamp=2)
    assert len(b.build()) > len(first) and [r.key for r in read_records(b.build())] == [b"1", b"2"]
    # the Cython writer hands out its own buffer as the batch: a batch once built never changes after
    assert first == kept and [r.key for r in read_records(first)] == [b"1"]
    b.clear_records()
    b.append(b"3", b"3", timestamp=3)
    assert first == kept and [r.key for r in read_records(b.build())] == [b"3"]


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_a_build_after_clear_records_or_a_changed_setting_is_built_anew(magic, codec):
    # the built batch is kept for a build again (a compressed one is compressed once), but never past a change
    b = BatchBuilder(magic=magic, compression=codec)
    b.append(b"1", b"1", timestamp=1)
    first = b.build()
    assert b.build() is first
    b.clear_records()
    b.append(b"2", b"2", timestamp=2)  # the same count as the batch built
    assert [r.key for r in read_records(b.build())] == [b"2"]
    b.base_offset = 100
    assert [r.offset for r in read_records(b.build())] == [100]


def test_append_returns_each_offset_delta_past_the_cached_ones():
    # the Cython writer hands out ints it made once up to a cap, and new ones past it (tests/records: both backends)
    b = BatchBuilder()
    got = [b.append(None, b"", (), 0) for _ in range(70_000)]
    assert got == list(range(70_000))
    batch = next(iter_batches(b.build()))
    assert batch.last_offset_delta == 69_999


def test_a_records_view_is_the_records_and_a_held_one_never_changes():
    b = BatchBuilder()
    b.append(b"k", b"v" * 5000, timestamp=1)
    with b.records_view() as view:
        assert bytes(view) == b.records_bytes()
    if BACKEND == "cython":  # its buffer grows in place only while nothing else holds it
        held = b.records_view()
        kept = bytes(held)
        for i in range(10):
            b.append(b"k", b"w" * 5000, timestamp=2)
        assert bytes(held) == kept and len(b.records_bytes()) > len(kept)
    assert read_records(b.build())[-1].value[:1] == (b"w" if BACKEND == "cython" else b"v")


def test_a_held_records_view_never_changes_with_room_left_or_after_clear_records():
    b = BatchBuilder()
    b.append(b"k", b"v", timestamp=1)  # the buffer has room for the next records
    held = b.records_view()
    kept = bytes(held)
    if BACKEND == "cython":  # (the reference's bytearray refuses to grow while a view is held)
        b.clear_records()
        b.append(b"x", b"\xfe" * 200, timestamp=3)
        assert bytes(held) == kept and held.obj.find(b"\xfe" * 200) == -1
        assert [r.value for r in read_records(b.build())] == [b"\xfe" * 200]
    held.release()
    assert bytes(b.records_view()) == b.records_bytes()


def test_a_timestamp_defaults_to_now():
    import time
    b = BatchBuilder()
    before = time.time_ns() // 1_000_000
    b.append(b"k", b"v")
    (r,) = read_records(b.build())
    assert before <= r.timestamp <= time.time_ns() // 1_000_000


def test_fetch_and_produce_messages_carry_batches():
    b1 = BatchBuilder(base_offset=0)
    b1.append(b"a", b"1", timestamp=1)
    b2 = BatchBuilder(base_offset=1, compression=Compression.ZSTD)
    b2.append(b"b", b"2", timestamp=2)
    records = records_field(b1, b2.build())
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=3, records=records)])])
    back = kcodec.decode(ProduceRequest, kcodec.encode(req, version=9), version=9)
    (p,) = produced(back)
    assert (p.topic, p.partition, [len(b) for b in p.batches]) == ("t", 3, [1, 1])
    resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.PartitionData(partition_index=3, high_watermark=2, records=records[:-5])])])
    back = kcodec.decode(FetchResponse, kcodec.encode(resp, version=12), version=12, zero_copy=True)
    (p,) = fetched(back)
    assert p.partial_bytes == len(b2.build()) - 5
    assert [bytes(r.value) for b in p.batches for r in b] == [b"1"]


def test_backend_is_the_expected_one():
    import os
    want = os.environ.get("KCODEC_EXPECT_BACKEND")
    if os.environ.get("KCODEC_PURE", "") not in ("", "0"):
        assert BACKEND == "python"
    elif want:
        assert BACKEND == want


def test_record_fields_read_alike_on_every_backend():
    """The compiled Record's fields are member descriptors (read from their slots, read-only), the same
    values the reference's give, for every field kind: int64, objects (bytes, None), int."""
    from kcodec.records._select import available

    b = BatchBuilder(base_offset=2**40)
    b.append(b"k", None, headers=[("h", None)], timestamp=-2**50)
    b.append(None, b"v" * 300, timestamp=2**50)
    data = b.build()
    seen = {}
    for name, module in available().items():
        cls = module.Record
        if name == "cython":
            for field in ("offset", "timestamp", "key", "value", "attributes"):
                assert type(cls.__dict__[field]).__name__ == "member_descriptor", field
        (batch,) = iter_batches(data)
        records = module.decode_records(*batch._decode_args())
        seen[name] = [(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for r in records]
        if name == "cython":
            with pytest.raises(AttributeError):
                records[0].key = b"x"
    assert all(v == seen["python"] for v in seen.values())
    assert seen["python"][0] == (2**40, -2**50, b"k", None, [("h", None)], 0)


def test_share_fetch_partitions_by_topic_id():
    import uuid

    from kcodec.messages import ShareFetchResponse
    b = BatchBuilder(base_offset=5)
    b.append(b"k", b"shared", timestamp=1)
    tid = uuid.UUID(int=7)
    resp = ShareFetchResponse(responses=[ShareFetchResponse.ShareFetchableTopicResponse(topic_id=tid, partitions=[
        ShareFetchResponse.PartitionData(partition_index=2, records=b.build())])])
    version = ShareFetchResponse.VALID_VERSIONS[1]
    back = kcodec.decode(ShareFetchResponse, kcodec.encode(resp, version=version), version=version)
    (p,) = fetched(back)
    assert p.topic == tid and p.partition == 2 and [r.value for b in p.batches for r in b] == [b"shared"]
