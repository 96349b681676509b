"""Scale: `kcodec analyze`'s three Spark passes over a synthetic capture of >= 1 GB and >= 1 M frames, local[2].

Not in CI (marked slow; `make bench` leaves it out too). Run it with

    .venv/bin/python -m pytest benchmarks/test_spark_scale.py -m slow -s --benchmark-disable-gc

It writes rotated .kcap files like `kcodec tap` (64 MB each), then times the one pass that writes every
table (frames, exchanges, record batches: ``kcodec.spark.pipeline.write_tables``), sampling the RSS of the
Python driver, the JVM (driver and, in local mode, executor) and the Python workers. The pcap benchmark
beside tshark is benchmarks/analyze_bench.py.
KCODEC_SCALE_FRAMES sets the frame count (default 1,000,000).
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import kcodec
from kcodec.messages import (FetchRequest, FetchResponse, MetadataRequest, MetadataResponse, ProduceRequest,
                             ProduceResponse)
from kcodec.records import BatchBuilder
from kcodec.tap import capture

pytestmark = [pytest.mark.slow, pytest.mark.spark]

FRAMES = int(os.environ.get("KCODEC_SCALE_FRAMES", "1000000"))
CONNECTIONS = 200


def _templates() -> list[tuple[float, bytes, bytes]]:
    """(share, request frame, response frame) of a producer/consumer-heavy mix, ~1.1 KB a frame."""
    rng = random.Random(7)

    def batch(n: int, size: int, offset: int) -> bytes:  # n records of ``size`` random value bytes
        b = BatchBuilder(base_offset=offset, producer_id=42, producer_epoch=0, base_sequence=offset)
        for i in range(n):
            b.append(b"key-%d" % i, bytes(rng.getrandbits(8) for _ in range(size)), timestamp=1_700_000_000_000 + i)
        return b.build()

    records = batch(20, 80, 0)  # ~1.9 KB
    P, R, FQ, FR = ProduceRequest, ProduceResponse, FetchRequest, FetchResponse
    produce = kcodec.encode_request(P(acks=-1, timeout_ms=30000, topic_data=[P.TopicProduceData(
        name="orders", partition_data=[P.PartitionProduceData(index=3, records=records)])]), 9, 0, client_id="producer")
    produced = kcodec.encode_response(R(responses=[R.TopicProduceResponse(name="orders", partition_responses=[
        R.PartitionProduceResponse(index=3, base_offset=123456)])]), 9, 0)
    rejected = kcodec.encode_response(R(responses=[R.TopicProduceResponse(name="orders", partition_responses=[
        R.PartitionProduceResponse(index=3, error_code=6, base_offset=-1)])]), 9, 0)
    fetch = kcodec.encode_request(FQ(max_wait_ms=500, min_bytes=1, topics=[FQ.FetchTopic(
        topic="orders", partitions=[FQ.FetchPartition(partition=p, fetch_offset=1000, partition_max_bytes=1 << 20)
                                    for p in range(4)])]), 11, 0, client_id="consumer")
    fetched = kcodec.encode_response(FR(responses=[FR.FetchableTopicResponse(topic="orders", partitions=[
        FR.PartitionData(partition_index=p, high_watermark=5000, records=batch(4, 80, 1000 + p * 4)) for p in range(4)])]),
        11, 0)
    M = MetadataResponse
    md_request = kcodec.encode_request(MetadataRequest(topics=None), 12, 0, client_id="admin-tool")
    mix = [(0.70, produce, produced), (0.01, produce, rejected), (0.25, fetch, fetched)]
    for shift in range(16):  # the cluster changes now and then: 16 distinct Metadata answers (leaders move)
        metadata = kcodec.encode_response(M(
            brokers=[M.Broker(node_id=i, host=f"broker-{i}.kafka.internal", port=9092) for i in range(3)],
            topics=[M.Topic(name=f"service-{t:03d}.events.v1", partitions=[
                M.Partition(partition_index=p, leader_id=(p + shift) % 3, leader_epoch=shift, replica_nodes=[0, 1, 2],
                            isr_nodes=[0, 1, 2]) for p in range(6)]) for t in range(40)]), 12, 0)
        mix.append((0.04 / 16, md_request, metadata))
    return mix


def write_capture(directory: Path, frames: int) -> tuple[int, int]:
    """Rotated .kcap files holding ``frames`` frames; returns (files, bytes)."""
    templates = _templates()
    rng = random.Random(1)
    weights = [t[0] for t in templates]
    picks = rng.choices(range(len(templates)), weights, k=frames // 2)
    w = capture.CaptureWriter(directory, session=1, max_bytes=64 * 1024 * 1024)
    ts = 1_700_000_000_000_000_000
    corr = [0] * CONNECTIONS
    for i, k in enumerate(picks):
        conn = i % CONNECTIONS
        corr[conn] += 1
        req, resp = bytearray(templates[k][1]), bytearray(templates[k][2])
        struct.pack_into(">i", req, 8, corr[conn])
        struct.pack_into(">i", resp, 4, corr[conn])
        if i % 10007 == 0:  # now and then a response cut short: it must land in decode_error
            resp = resp[:4] + resp[4:20]
            struct.pack_into(">i", resp, 0, len(resp) - 4)
        ts += 20_000
        w.write(capture.REQUEST, conn, ts, bytes(req))
        w.write(capture.RESPONSE, conn, ts + 700_000, bytes(resp))
    w.close()
    return len(w.files), sum(p.stat().st_size for p in w.files)


class PeakRSS:
    """Peak resident memory of this process, its JVM and its Python workers, sampled every 100 ms."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.peaks = {"python driver": 0, "jvm (driver + local executor)": 0, "python workers": 0}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            try:
                kids = self.me.children(recursive=True)
                jvm = sum(p.memory_info().rss for p in kids if "java" in p.name())
                workers = sum(p.memory_info().rss for p in kids if "python" in p.name())
            except psutil.Error:
                continue
            for key, v in zip(self.peaks, (self.me.memory_info().rss, jvm, workers)):
                self.peaks[key] = max(self.peaks[key], v)

    def __enter__(self) -> "PeakRSS":
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def test_spark_scale(benchmark):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from kcodec import spark as ks
    from kcodec.spark import pipeline

    work = Path(tempfile.mkdtemp(prefix="kcodec-scale-"))
    try:
        t = time.perf_counter()
        nfiles, nbytes = write_capture(work / "captures", FRAMES)
        print(f"\nsynthetic capture: {FRAMES} frames, {nbytes / 1e9:.2f} GB in {nfiles} files "
              f"({time.perf_counter() - t:.0f} s to write)")
        assert FRAMES >= 1_000_000 or os.environ.get("KCODEC_SCALE_FRAMES")
        spark = (ks.session("local[2]", app_name="kcodec scale", ui=False))
        spark.conf.set("spark.sql.shuffle.partitions", "16")
        spark.sparkContext.setLogLevel("ERROR")
        times: dict[str, float] = {}

        def run() -> None:
            t0 = time.perf_counter()
            pipeline.write_tables(spark, [str(work / "captures" / "*.kcap")], str(work / "tables"))
            t1 = time.perf_counter()
            times.update(frames_s=t1 - t0, exchanges_s=0.0, batches_s=0.0)

        with PeakRSS() as mem:
            benchmark.pedantic(run, rounds=1, iterations=1)
        ex = spark.read.parquet(str(work / "tables" / "exchanges"))
        n_ex, n_err = ex.count(), ex.where("decode_error is not null").count()
        rb = spark.read.parquet(str(work / "tables" / "batches"))
        n_rb, rb_err = rb.count(), rb.where("error is not null").count()
        n_records = rb.where("error is null").agg({"record_count": "sum"}).collect()[0][0]
        spark.stop()
        total = times["frames_s"] + times["exchanges_s"] + times["batches_s"]
        figures = {
            "frames": FRAMES, "capture_bytes": nbytes, "files": nfiles, "backend": kcodec.BACKEND,
            "tables_s": round(total, 1), "frames_per_s": round(FRAMES / total), "mb_per_s": round(nbytes / 1e6 / total, 1),
            "batches": n_rb, "records": n_records,
            **{f"peak_rss_mb {k}": round(v / 1e6) for k, v in mem.peaks.items()},
        }
        benchmark.extra_info.update(figures)
        for k, v in figures.items():
            print(f"  {k}: {v}")
        assert n_ex == FRAMES // 2
        assert 0 < n_err <= FRAMES // 2 // 10007 + 1
        assert 0 < rb_err <= n_err  # the Fetch responses cut short (a Produce request is never cut)
    finally:
        shutil.rmtree(work, ignore_errors=True)
