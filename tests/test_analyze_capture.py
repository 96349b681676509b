"""benchmarks/analyze_capture.replicate: copies of a recording whose record batches are each copy's own."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import kcodec
from kcodec.messages import FetchRequest, FetchResponse, ProduceRequest, ProduceResponse
from kcodec.records import BatchBuilder, Compression, iter_batches, record_summary
from kcodec.tap import pcap

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import analyze_capture  # noqa: E402
import pcap_writer  # noqa: E402

PORT = 9092
V2_MAGIC_AT = 16


def _recording(path: Path) -> Path:
    """A producer's LZ4 batch and a consumer's fetch of it (the same bytes from the magic on), plus an
    uncompressed one, in 300-byte segments with reordered and retransmitted packets."""
    batches = []
    for n, codec in ((40, Compression.LZ4), (15, Compression.NONE)):
        b = BatchBuilder(base_offset=0, compression=codec)
        for i in range(n):
            b.append(b"k%d" % i, b"value %d " % i * 3, timestamp=1_700_000_000_000 + 7 * i)
        batches.append(b.build())
    P, R, FQ, FR = ProduceRequest, ProduceResponse, FetchRequest, FetchResponse
    frames = []
    for corr, records in enumerate(batches):
        frames.append((0, kcodec.encode_request(P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
            name="t", partition_data=[P.PartitionProduceData(index=0, records=records)])]), 9, corr, client_id="p")))
        frames.append((1, kcodec.encode_response(R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
            R.PartitionProduceResponse(index=0, base_offset=corr)])]), 9, corr)))
    fetched = b"".join(bytes(8) + r[8:] for r in batches)  # the broker's offsets: before the magic
    frames.append((0, kcodec.encode_request(FQ(max_wait_ms=1, min_bytes=1, topics=[FQ.FetchTopic(
        topic="t", partitions=[FQ.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
        11, 9, client_id="c")))
    frames.append((1, kcodec.encode_response(FR(responses=[FR.FetchableTopicResponse(topic="t", partitions=[
        FR.PartitionData(partition_index=0, high_watermark=2, records=fetched)])]), 11, 9)))
    packets = pcap_writer.conversation(frames, dport=PORT, segment=300)
    return pcap_writer.write(path, pcap_writer.disorder(packets, seed=3, swaps=3, duplicates=4))


def _batches_by_copy(path: Path) -> dict[str, list[tuple[bytes, int | None, int | None]]]:
    """Per client address: (bytes from the magic on, min and max timestamp) of every batch, as read back."""
    frames, _ = pcap.read_pcap(path.read_bytes(), ports=[PORT])
    got: dict[str, list[tuple[bytes, int | None, int | None]]] = defaultdict(list)
    asked: dict[tuple[str, int], tuple[int, int]] = {}
    for f in frames:
        if f.direction == 0:
            header, msg = kcodec.decode_request(f.data, zero_copy=False)
            asked[(f.conn, header.correlation_id)] = (header.request_api_key, header.request_api_version)
            fields = [p.records for t in getattr(msg, "topic_data", []) for p in t.partition_data]
        else:
            key, version = asked[(f.conn, int.from_bytes(f.data[4:8], "big"))]
            fields = [] if key != 1 else [p.records for t in kcodec.decode_response(f.data, key, version)[1].responses
                                          for p in t.partitions]
        for field in fields:
            for b in iter_batches(field, verify_crc=True):  # a bad CRC raises: every copy's CRCs are redone
                s = record_summary(b)
                got[f.conn.split(":")[0]].append((bytes(field[b.offset + V2_MAGIC_AT:b.offset + b.size]),
                                                  s.min_timestamp, s.max_timestamp))
    return got


def test_each_copy_holds_batches_of_its_own_and_a_fetch_still_repeats_its_produce(tmp_path):
    base = _recording(tmp_path / "base.pcap")
    out = analyze_capture.replicate(base, tmp_path / "copies.pcap", 4 * base.stat().st_size, PORT)
    assert out["copies"] == 4 and out["batches"] == 4 and out["magic0"] == 0
    by_copy = _batches_by_copy(tmp_path / "copies.pcap")
    assert len(by_copy) == 4
    originals = sorted(_batches_by_copy(base).values())[0]
    seen: dict[bytes, str] = {}
    for k in range(4):
        got = by_copy[f"127.1.0.{k}"]
        assert len(got) == 4
        # the LZ4 and the plain batch, produced then fetched: the fetch repeats the produce exactly
        assert got[0] == got[2] and got[1] == got[3] and got[0] != got[1]
        for (data, lo, hi), (_, lo0, hi0) in zip(got, originals):
            assert (lo, hi) == (lo0 + k, hi0 + k)
            assert seen.setdefault(data, str(k)) == str(k), "a copy repeats another copy's batch"


def test_the_copies_frames_are_read_as_the_recordings(tmp_path):
    base = _recording(tmp_path / "base.pcap")
    analyze_capture.replicate(base, tmp_path / "copies.pcap", 3 * base.stat().st_size, PORT)
    frames0, _ = pcap.read_pcap(base.read_bytes(), ports=[PORT])
    frames, _ = pcap.read_pcap((tmp_path / "copies.pcap").read_bytes(), ports=[PORT])
    assert len(frames) == 3 * len(frames0)
    sizes = defaultdict(list)
    for f in frames:
        sizes[f.conn.split(":")[0]].append(len(f.data))
    assert all(v == [len(f.data) for f in frames0] for v in sizes.values())
