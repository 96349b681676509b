"""kcodec's BatchBuilder writes the same bytes as kafka-python's (`kafka.record`) and aiokafka's (its
Cython `_crecords`) builders for the same records, wherever their output is deterministic.

Where the formats leave a choice, the differences are named and masked, never ignored wholesale:
- gzip: the peers' MTIME is pinned to 0 here (kcodec writes 0), and both compress at level 9, the peers'
  default (both write OS 255 in the gzip header, as Java's GZIPOutputStream does);
- a magic 0/1 wrapper message: the peers write offset 0 and timestamp 0, Kafka's Java client and kcodec the
  last inner offset and the largest timestamp (a broker rewrites the offset anyway);
- kafka-python writes partition leader epoch 0 in a v2 batch, the Java client and kcodec -1; kcodec is
  given 0 when compared with it;
- lz4 frames are not compared: each library picks its own block size, checksum flags and level.
Everything else, the batch CRCs included once those bytes are masked, must match byte for byte.
"""

from __future__ import annotations

import gzip
from typing import Any

import pytest

pytest.register_assert_rewrite("records_expect")  # whichever test module imports it first
from peer_producers import MESSAGES
from records_expect import need

from kcodec.records import BatchBuilder, Compression, iter_batches

pytestmark = pytest.mark.peers
PEERS = ["kafka-python", "aiokafka"]
NONE, GZIP, SNAPPY, ZSTD = Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.ZSTD
PRODUCER = {"producer_id": 4242, "producer_epoch": 3, "base_sequence": 17}
LEGACY_PAYLOAD = {0: 26, 1: 34}  # where a wrapper's value starts: after offset .. key (null) and value length


def builders(peer: str) -> Any:
    """(v2 builder, magic 0/1 builder) classes of a peer."""
    if peer == "kafka-python":
        need("kafka")
        from kafka.record.default_records import DefaultRecordBatchBuilder
        from kafka.record.legacy_records import LegacyRecordBatchBuilder
    else:
        need("aiokafka")
        from aiokafka.record.default_records import DefaultRecordBatchBuilder  # type: ignore[no-redef]
        from aiokafka.record.legacy_records import LegacyRecordBatchBuilder  # type: ignore[no-redef]
    return DefaultRecordBatchBuilder, LegacyRecordBatchBuilder


def peer_batch(peer: str, magic: int, codec: Compression, monkeypatch: Any, transactional: bool = False,
               **producer: int) -> bytes:
    v2, legacy = builders(peer)
    monkeypatch.setattr(gzip.time, "time", lambda: 0.0)  # MTIME 0, as kcodec writes it
    if magic == 2:
        b = v2(magic=2, compression_type=int(codec), is_transactional=transactional,
               producer_id=producer.get("producer_id", -1), producer_epoch=producer.get("producer_epoch", -1),
               base_sequence=producer.get("base_sequence", -1), batch_size=1 << 20)
        for i, (key, value, headers, timestamp) in enumerate(MESSAGES):
            b.append(i, timestamp=timestamp, key=key, value=value, headers=list(headers))
    else:
        b = legacy(magic=magic, compression_type=int(codec), batch_size=1 << 20)
        for i, (key, value, _, timestamp) in enumerate(MESSAGES):
            b.append(i, timestamp=timestamp if magic else None, key=key, value=value)
    return bytes(b.build())


def kcodec_batch(peer: str, magic: int, codec: Compression, transactional: bool = False, **producer: int) -> bytes:
    extra: dict[str, Any] = {"level": 9} if codec is GZIP else {}
    if magic == 2 and peer == "kafka-python":
        extra["partition_leader_epoch"] = 0
    b = BatchBuilder(magic=magic, compression=codec, transactional=transactional, **producer, **extra)
    for key, value, headers, timestamp in MESSAGES:
        b.append(key, value, headers=headers if magic == 2 else (), timestamp=timestamp if magic else None)
    return b.build()


def masked(buf: bytes, magic: int, codec: Compression) -> bytes:
    """``buf`` with the fields the module docstring names zeroed (and the CRC they feed)."""
    b = bytearray(buf)
    if magic == 2:
        payload = 61
    else:
        payload = LEGACY_PAYLOAD[magic]
        if codec is not NONE:
            b[0:8] = bytes(8)  # wrapper offset
            b[12:16] = bytes(4)  # CRC32
            if magic == 1:
                b[18:26] = bytes(8)  # wrapper timestamp
    if codec is GZIP:
        assert b[payload:payload + 3] == b"\x1f\x8b\x08"
    return bytes(b)


CASES = [(2, NONE), (2, SNAPPY), (2, ZSTD), (2, GZIP), (1, NONE), (1, SNAPPY), (1, GZIP), (0, NONE), (0, SNAPPY),
         (0, GZIP)]


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("magic,codec", CASES, ids=[f"magic{m}-{c.name.lower()}" for m, c in CASES])
def test_same_bytes_as_peer_builder(peer: str, magic: int, codec: Compression, monkeypatch: Any) -> None:
    theirs = peer_batch(peer, magic, codec, monkeypatch)
    ours = kcodec_batch(peer, magic, codec)
    assert len(ours) == len(theirs)
    assert masked(ours, magic, codec) == masked(theirs, magic, codec)
    if magic == 2 or codec is NONE:
        assert ours == theirs  # nothing masked
    # and both read back, checksums checked, to the same records
    records = [[(r.offset, r.key, r.value, r.headers, r.timestamp) for b in iter_batches(buf) for r in b]
               for buf in (ours, theirs)]
    assert len(records[0]) == len(MESSAGES)
    if codec is NONE or magic == 0:
        assert records[0] == records[1]
    else:  # the wrapper's offset and timestamp differ (module docstring): compare what remains
        assert [r[1:4] for r in records[0]] == [r[1:4] for r in records[1]]


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("codec", [NONE, ZSTD], ids=["none", "zstd"])
@pytest.mark.parametrize("transactional", [False, True], ids=["idempotent", "transactional"])
def test_same_bytes_with_producer_fields(peer: str, codec: Compression, transactional: bool, monkeypatch: Any) -> None:
    theirs = peer_batch(peer, 2, codec, monkeypatch, transactional, **PRODUCER)
    ours = kcodec_batch(peer, 2, codec, transactional, **PRODUCER)
    assert ours == theirs
    (batch,) = iter_batches(ours)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.is_transactional) == (
        4242, 3, 17, transactional)


def peer_read(peer: str, buf: bytes) -> list[tuple[Any, ...]]:
    """Every record of ``buf`` through the peer's MemoryRecords, its consumers' decoder, CRCs checked."""
    if peer == "kafka-python":
        from kafka.record.memory_records import MemoryRecords
    else:
        from aiokafka.record.memory_records import MemoryRecords  # type: ignore[no-redef]
    records, out = MemoryRecords(buf), []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        out += [(r.offset, r.key, r.value, [tuple(h) for h in (r.headers or [])], r.timestamp) for r in batch]
    return out


# every magic and codec; aiokafka has no magic 0 lz4 (Kafka 0.8/0.9's framing) at all, reading or writing
READ_CASES = [(p, m, c) for p in PEERS for m in (0, 1, 2) for c in Compression
              if not (m < 2 and c is ZSTD) and not (p == "aiokafka" and m == 0 and c is Compression.LZ4)]


@pytest.mark.parametrize("peer,magic,codec", READ_CASES,
                         ids=[f"{p}-magic{m}-{c.name.lower()}" for p, m, c in READ_CASES])
def test_peer_reader_reads_kcodec_batches(peer: str, magic: int, codec: Compression) -> None:
    """kafka-python's and aiokafka's record readers (their consumers' decoders) read kcodec's batches of every
    magic and codec: lz4 too, whose frames are not compared byte for byte above."""
    builders(peer)  # the peer is there (or the test fails in CI / skips elsewhere)
    b = BatchBuilder(magic=magic, compression=codec, base_offset=100)
    for key, value, headers, timestamp in MESSAGES:
        b.append(key, value, headers=headers if magic == 2 else (), timestamp=timestamp if magic else None)
    expected = [(100 + i, key, value, list(headers) if magic == 2 else [], timestamp if magic else None)
                for i, (key, value, headers, timestamp) in enumerate(MESSAGES)]
    assert peer_read(peer, b.build()) == expected
