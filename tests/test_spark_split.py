"""`kcodec analyze` with capture files cut into tiny byte ranges gives the tables of the unsplit run, row for
row: TCP reassembly, frames cut by a range boundary, pairing and record batches are exact across ranges."""

from __future__ import annotations

import json

import pytest

import kcodec
from kcodec.messages import FetchRequest, FetchResponse, ProduceRequest, ProduceResponse
from kcodec.records import BatchBuilder, Compression
from kcodec.tap import capture

import pcap_writer as pcaps

pytestmark = [pytest.mark.spark]


def _batch(n: int, offset: int, codec: Compression) -> bytes:
    b = BatchBuilder(base_offset=offset, compression=codec)
    for i in range(n):
        b.append(b"k%d" % i, b"value %d " % i * 20, timestamp=1_700_000_000_000 + i)
    return b.build()


def _conversation(client: str, n: int, codec: Compression) -> list[tuple[int, bytes]]:
    P, R, FQ, FR = ProduceRequest, ProduceResponse, FetchRequest, FetchResponse
    out = []
    for corr in range(n):
        if corr % 2 == 0:
            out.append((0, kcodec.encode_request(P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
                name="t", partition_data=[P.PartitionProduceData(index=0, records=_batch(5 + corr % 7, corr, codec))])]),
                9, corr, client_id=client)))
            out.append((1, kcodec.encode_response(R(responses=[R.TopicProduceResponse(name="t", partition_responses=[
                R.PartitionProduceResponse(index=0, base_offset=corr)])]), 9, corr)))
        else:
            out.append((0, kcodec.encode_request(FQ(max_wait_ms=10, topics=[FQ.FetchTopic(topic="t", partitions=[
                FQ.FetchPartition(partition=0, fetch_offset=corr, partition_max_bytes=1 << 20)])]), 11, corr,
                client_id=client)))
            out.append((1, kcodec.encode_response(FR(responses=[FR.FetchableTopicResponse(topic="t", partitions=[
                FR.PartitionData(partition_index=0, high_watermark=99, records=_batch(3, corr, codec))])]), 11, corr)))
    return out


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """A rotated pcap set and a nanosecond pcapng of interleaved, reordered, retransmitting connections,
    and a tap file."""
    base = tmp_path_factory.mktemp("split")
    packets = []
    for n, codec in enumerate((Compression.NONE, Compression.GZIP, Compression.ZSTD)):
        conv = pcaps.conversation(_conversation(f"client-{n}", 24, codec), sport=42000 + n, segment=211 + 50 * n,
                                  t0=1_700_000_000.0 + n * 0.00005)
        packets += pcaps.disorder(conv, seed=n, swaps=8, duplicates=8)
    packets.sort(key=lambda p: p[0])
    (base / "rot").mkdir()
    cuts = [0, len(packets) // 3, len(packets) // 3 + 1, 2 * len(packets) // 3, len(packets)]
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        pcaps.write(base / "rot" / f"kafka.pcap{i or ''}", packets[a:b])
    exact = [(int(ts * 1e6) * 1000 + i % 1000, p) for i, (ts, p) in enumerate(packets)]
    pcaps.write_exact(base / "ns.pcapng", exact, kind="pcapng")
    w = capture.CaptureWriter(base / "tap", session=4, max_bytes=5000)
    for t, (d, f) in enumerate(_conversation("tap-client", 12, Compression.LZ4)):
        w.write(d, 1, 1_700_000_000_000_000_000 + t, f)
    w.close()
    return [str(base / "rot"), str(base / "ns.pcapng"), str(base / "tap")]


def _tables(spark, paths, out, split):
    from kcodec.spark import pipeline

    spark.conf.set("spark.kcodec.splitBytes", str(split))
    spark.conf.set("spark.kcodec.partitionBytes", "64k")
    try:
        written = pipeline.write_tables(spark, paths, str(out), frame_bytes=True)  # the frames' bytes compared too
    finally:
        spark.conf.unset("spark.kcodec.splitBytes")
        spark.conf.unset("spark.kcodec.partitionBytes")
    tables = {name: spark.read.parquet(str(out / name)).toPandas() for name in ("frames", "exchanges", "batches")}
    return written, tables


def _value(v):
    if isinstance(v, (str, bytes)) or v is None:
        return v
    if hasattr(v, "__len__"):
        return tuple(v)
    return None if v != v else v


def _rows(df):
    return sorted((tuple(_value(v) for v in row) for row in df.itertuples(index=False)), key=repr)


def test_tiny_ranges_give_the_unsplit_tables(spark, captures, tmp_path):
    whole, expected = _tables(spark, captures, tmp_path / "whole", "1g")
    assert {s.get("ranges") for s in whole["files"].values()} == {1}
    ex = expected["exchanges"]
    assert len(ex) == 3 * 24 * 2 + 12 and (ex.pairing == "answered").all() and ex.decode_error.isna().all()
    assert len(expected["batches"]) == len(ex) and expected["batches"].error.isna().all()
    for split in ("5001", "16k"):
        got, tables = _tables(spark, captures, tmp_path / f"split-{split}", split)
        assert got["unsplit"] == []
        assert max(s.get("ranges", 0) for s in got["files"].values()) > 1
        for name in ("frames", "exchanges", "batches"):
            assert _rows(tables[name]) == _rows(expected[name]), (split, name)
        strip = {p: {k: v for k, v in s.items() if k != "ranges"} for p, s in got["files"].items()}
        assert strip == {p: {k: v for k, v in s.items() if k != "ranges"} for p, s in whole["files"].items()}


def test_an_empty_file_is_reported(spark, tmp_path):
    from kcodec.spark.analyze import analyze

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "empty.pcap").write_bytes(b"")
    pcaps.write(tmp_path / "in" / "one.pcap", pcaps.conversation(_conversation("one", 2, Compression.NONE)))
    lines: list[str] = []
    agg = analyze(spark, [str(tmp_path / "in")], tmp_path / "out", print_=lambda *a, **k: lines.append(" ".join(map(str, a))))
    files = spark.read.parquet(str(tmp_path / "out" / "tables" / "files")).toPandas()
    empty = files[files.source.str.endswith("empty.pcap")]
    assert len(empty) == 1 and json.loads(empty.summary.iloc[0])["kind"] == "empty" and empty.bytes.iloc[0] == 0
    assert agg["total"]["empty_files"] == 1 and agg["total"]["capture_files"] == 2
    assert any("empty.pcap: the file is empty" in line for line in lines)
    assert any("1 empty capture file(s)" in line for line in lines)
    assert "| empty_files | 1 |" in (tmp_path / "out" / "report.md").read_text()
