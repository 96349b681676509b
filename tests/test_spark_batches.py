"""What the data carried: the batches table of `kcodec analyze` (kcodec.spark.record_batches) and its report.

A synthetic tap capture holds Produce requests with every codec, a batch whose records are corrupt, a
batch whose CRC alone is wrong, an acks=0 Produce, Fetch responses with a cut-off tail and with magic 0
and 1 message sets, a Fetch that names its topic by id (resolved from a Metadata response) and a
Produce that does not decode; every batch is accounted for, and none fails the job.
"""

from __future__ import annotations

import uuid

import pytest

import kcodec
from kcodec.messages import FetchResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse
from kcodec.records import BatchBuilder, Compression, iter_batches
from kcodec.spark import record_batches as rb
from kcodec.tap import capture

FR, P = FetchResponse, ProduceRequest
TOPIC_ID = uuid.UUID("5f0c1e9a-0000-4000-8000-00000000abcd")


def batch(codec: Compression = Compression.NONE, n: int = 5, magic: int = 2, offset: int = 0, **kw) -> bytes:
    b = BatchBuilder(compression=codec, magic=magic, base_offset=offset, **kw)
    for i in range(n):
        b.append(b"key-%d" % i, b"value " * 20, timestamp=1_700_000_000_000 + i)
    return b.build()


def corrupt_records() -> bytes:
    data = bytearray(batch(n=3))
    data[-1] ^= 0xFF  # inside the last record: records and CRC both wrong
    return bytes(data)


def bad_crc_only() -> bytes:
    data = bytearray(batch(n=2))
    data[17] ^= 0xFF  # the stored CRC itself: the records are fine
    return bytes(data)


def produce(corr: int, parts: list[tuple[str, int, bytes]], acks: int = -1, client: str = "producer") -> bytes:
    topics: dict[str, list] = {}
    for topic, partition, records in parts:
        topics.setdefault(topic, []).append(P.PartitionProduceData(index=partition, records=records))
    return kcodec.encode_request(P(acks=acks, timeout_ms=1000, topic_data=[
        P.TopicProduceData(name=t, partition_data=ps) for t, ps in topics.items()]), 9, corr, client_id=client)


def fetch(corr: int, version: int, client: str = "consumer") -> bytes:
    from kcodec.messages import FetchRequest
    return kcodec.encode_request(FetchRequest(max_wait_ms=100, min_bytes=1), version, corr, client_id=client)


def fetched(corr: int, version: int, parts: list[tuple[str, int, bytes]]) -> bytes:
    topics = [FR.FetchableTopicResponse(topic=t if version < 13 else "", topic_id=TOPIC_ID if version >= 13 else
                                        uuid.UUID(int=0),
                                        partitions=[FR.PartitionData(partition_index=p, high_watermark=100, records=r)])
              for t, p, r in parts]
    return kcodec.encode_response(FR(responses=topics), version, corr)


CODECS = [c for c in Compression]


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    """The capture and what it holds."""
    out = tmp_path_factory.mktemp("batches")
    w = capture.CaptureWriter(out, session=77)
    ts = 1_700_000_000_000_000_000
    frames: list[tuple[int, bytes]] = []
    codec_parts = [("orders", i, batch(c, n=4 + i, offset=10 * i)) for i, c in enumerate(CODECS)]
    frames += [(0, produce(1, codec_parts)), (1, kcodec.encode_response(ProduceResponse(), 9, 1))]
    frames += [(0, produce(2, [("orders", 0, batch(n=2) + corrupt_records()), ("orders", 1, bad_crc_only())]))]
    frames += [(1, kcodec.encode_response(ProduceResponse(), 9, 2))]
    frames += [(0, produce(3, [("events", 0, batch(Compression.ZSTD, n=7))], acks=0, client="fire-and-forget"))]
    tail = batch(n=3, offset=100) + batch(n=3, offset=103)[:50]
    frames += [(0, fetch(4, 12)), (1, fetched(4, 12, [("orders", 0, tail)]))]
    legacy = batch(n=2, magic=0) + batch(Compression.GZIP, n=3, magic=1, offset=2) + batch(n=1, magic=1, offset=5)
    frames += [(0, fetch(5, 4)), (1, fetched(5, 4, [("legacy", 0, legacy)]))]
    M = MetadataResponse
    frames += [(0, kcodec.encode_request(MetadataRequest(topics=None), 12, 6, client_id="consumer")),
               (1, kcodec.encode_response(M(topics=[M.Topic(name="by-id", topic_id=TOPIC_ID)]), 12, 6))]
    frames += [(0, fetch(7, 13)), (1, fetched(7, 13, [("", 2, batch(Compression.LZ4, n=6))]))]
    garbage = bytearray(produce(8, [("orders", 0, batch())], client="broken")[:28])  # the header whole, the body cut short
    garbage[0:4] = (len(garbage) - 4).to_bytes(4, "big")
    frames += [(0, bytes(garbage))]
    for direction, frame in frames:
        ts += 1_000_000
        w.write(capture.REQUEST if direction == 0 else capture.RESPONSE, 1, ts, frame)
    w.close()
    return out, codec_parts


def test_field_rows_without_spark():
    """The worker's walk over one records field: each batch, a corrupt one, a cut-off tail, message sets."""
    rows = rb.field_rows(batch(Compression.GZIP, n=3) + corrupt_records() + batch(n=1)[:20])
    assert [r.get("error") is None for r in rows] == [True, False, True]
    assert rows[0]["codec"] == "gzip" and rows[0]["uncompressed_bytes"] == len(batch(n=3))
    assert rows[0]["compressed_bytes"] < rows[0]["uncompressed_bytes"] and rows[0]["crc_valid"]
    assert "batches[1].records[2]" in rows[1]["error"] and rows[1]["crc_valid"] is False
    assert rows[2] == {"batch": 2, "position": rows[1]["position"] + rows[1]["compressed_bytes"],
                       "compressed_bytes": 20, "partial": True}
    # A length that points nowhere: the rest of the field is one error row, the batches before it kept.
    bad = bytearray(batch(n=1) + batch(n=1))
    bad[len(bad) // 2 + 8:len(bad) // 2 + 12] = (3).to_bytes(4, "big")
    rows = rb.field_rows(bytes(bad))
    assert len(rows) == 2 and rows[0].get("error") is None and "batch length 3" in rows[1]["error"]
    assert rows[1]["position"] == len(bad) // 2 and rows[1]["compressed_bytes"] == len(bad) // 2
    legacy = rb.field_rows(batch(Compression.SNAPPY, n=4, magic=1) + batch(n=1, magic=0))
    assert [(r["magic"], r["codec"], r["record_count"], r["crc_valid"]) for r in legacy] == [
        (1, "snappy", 4, True), (0, "none", 1, True)]
    assert legacy[0]["uncompressed_bytes"] == 4 * (12 + 22 + 5 + 120) and legacy[1]["first_timestamp"] == -1


@pytest.fixture(scope="module")
def analyzed(spark, conversation, tmp_path_factory):
    from kcodec.spark.analyze import analyze

    out = tmp_path_factory.mktemp("batches-report")
    lines: list[str] = []
    agg = analyze(spark, [str(conversation[0] / "*.kcap")], out, print_=lambda *a, **k: lines.append(" ".join(map(str, a))))
    table = spark.read.parquet(str(out / "tables" / "batches")).toPandas()
    return out, agg, table, lines


@pytest.mark.spark
def test_a_row_per_batch_with_its_facts(analyzed, conversation):
    _, _, table, _ = analyzed
    _, codec_parts = conversation
    good = table[(table.client_id == "producer") & (table.exchange == table.exchange.min())].sort_values("partition")
    assert list(good.codec) == [c.name.lower() for c in CODECS]
    assert list(good.record_count) == [4 + i for i in range(len(CODECS))] and good.error.isna().all()
    assert list(good.compressed_bytes) == [len(r) for _, _, r in codec_parts]
    assert (good.uncompressed_bytes == [len(batch(n=4 + i, offset=10 * i)) for i in range(len(CODECS))]).all()
    assert list(good.base_offset) == [10 * i for i in range(len(CODECS))]
    assert (good.last_offset == good.base_offset + good.record_count - 1).all()
    assert (good.first_timestamp == 1_700_000_000_000).all() and good.crc_valid.all()
    assert set(good.direction) == {"produced"} and set(good.api_name) == {"Produce"} and (good.topic == "orders").all()
    # The second Produce: a good batch, a corrupt one (error, bad CRC), a batch whose CRC alone is wrong.
    second = table[(table.client_id == "producer") & (table.exchange != table.exchange.min())]
    second = second.sort_values(["partition", "batch"])
    assert [(r.partition, r.batch, r.error is None, r.crc_valid) for r in second.itertuples()] == [
        (0, 0, True, True), (0, 1, False, False), (1, 0, True, False)]
    assert "RecordsError" in second.error.dropna().iloc[0]
    # acks=0: no answer, the records were sent all the same.
    fire = table[table.client_id == "fire-and-forget"]
    assert list(zip(fire.topic, fire.record_count, fire.codec)) == [("events", 7, "zstd")]


@pytest.mark.spark
def test_fetch_tails_message_sets_topic_ids_and_bad_messages(analyzed):
    _, _, table, _ = analyzed
    f = table[table.direction == "fetched"]
    orders = f[f.topic == "orders"].sort_values("batch")
    assert list(orders.partial) == [False, True] and orders.error.isna().all()
    assert orders.record_count.iloc[0] == 3 and orders.compressed_bytes.iloc[1] == 50
    legacy = f[f.topic == "legacy"].sort_values("batch")
    assert [(r.magic, r.codec, r.record_count, r.base_offset) for r in legacy.itertuples()] == [
        (0, "none", 1, 0), (0, "none", 1, 1), (1, "gzip", 3, 2), (1, "none", 1, 5)]
    by_id = f[f.topic_id == str(TOPIC_ID)]
    assert list(zip(by_id.topic, by_id.partition, by_id.record_count)) == [("by-id", 2, 6)]
    broken = table[table.error.str.startswith("produced: ", na=False)]
    assert len(broken) == 1 and broken.topic.isna().all()


@pytest.mark.spark
def test_the_report_totals(analyzed):
    out, agg, table, lines = analyzed
    t = agg["batches"]["total"]
    assert t["produced_records"] == sum(4 + i for i in range(len(CODECS))) + 2 + 2 + 7  # corrupt batch left out
    assert t["fetched_records"] == 3 + 1 + 1 + 3 + 1 + 6
    assert t["batch_errors"] == 2 and t["crc_invalid"] == 2 and t["partial_tails"] == 1
    topics = {r["topic"]: r for r in agg["batches"]["by_topic"]}
    assert topics["events"]["produced_records"] == 7 and topics["by-id"]["fetched_records"] == 6
    clients = {r["client_id"]: r for r in agg["batches"]["by_client"]}
    assert clients["consumer"]["fetched_batches"] == 1 + 4 + 1 and clients["fire-and-forget"]["produced_batches"] == 1
    ratios = {(r["direction"], r["codec"]): r["ratio"] for r in agg["batches"]["by_codec"]}
    assert ratios[("produced", "none")] == 1.0 and ratios[("produced", "gzip")] > 2
    report = (out / "report.md").read_text()
    assert "## Record batches" in report and "| events | 1 | 7 |" in report
    assert f"| produced_records | {t['produced_records']} |" in report and "| 4-7 |" in report
    for svg in ("records_by_topic.svg", "batch_sizes.svg"):  # (tests/test_spark_charts.py tests the charts)
        assert (out / svg).read_text().startswith("<svg") and f"]({svg})" in report
    assert any(line.startswith("  record batches:") and "2 did not decode" in line for line in lines)
    assert any(line.startswith("  topic orders:") for line in lines)
    assert len(list(iter_batches(batch()))) == 1  # the helper builds what it says


@pytest.mark.spark
def test_topics_known_by_id_named_by_a_spark_job_off_a_local_master(spark, conversation, tmp_path, monkeypatch):
    """A local master's driver names the batches' topics itself (``kcodec analyze``, once Spark stops); on a
    cluster a Spark job does it, a task a file (``pipeline.name_batches`` given the session)."""
    from kcodec.spark import pipeline

    tables = str(tmp_path / "tables")
    written = pipeline.write_tables(spark, [str(conversation[0] / "*.kcap")], tables, named=False)
    assert written["topic_names"] == {str(TOPIC_ID): "by-id"}
    unnamed = spark.read.parquet(f"{tables}/batches").where("topic_id is not null").toPandas()
    assert unnamed.topic.isna().all()
    monkeypatch.setattr(pipeline, "is_local", lambda s: False)
    sc = pipeline.spark_context(spark)
    sc.setJobGroup("kcodec-naming-test", "naming")
    try:
        pipeline.name_batches(tables, written["topic_names"], spark)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup("kcodec-naming-test")  # a Spark job named them
    named = spark.read.parquet(f"{tables}/batches").where("topic_id is not null").toPandas()
    assert list(named.topic) == ["by-id"]


def test_topics_named_row_group_by_row_group(tmp_path):
    """``tasks.name_topics`` rewrites a batches file a row group at a time (the driver never holds a file whole):
    every row group named, the rows otherwise as they were; a file with nothing to name is left as it is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kcodec.spark import storage, tasks

    rows = [{"conn": f"c{i}", "topic": None if i % 3 else "plain", "topic_id": "id-a" if i % 2 else "id-b"}
            for i in range(30)]
    table = pa.Table.from_pylist(rows, schema=rb.BATCHES)
    out = storage.TableFile(str(tmp_path / "batches"), "part-00000.parquet", rb.BATCHES)
    for batch in table.to_batches(max_chunksize=8):
        out.write(batch)
    out.close()
    uri = str(tmp_path / "batches" / "part-00000.parquet")
    tasks.name_topics(uri, {"id-a": "topic-a"})
    got = pq.ParquetFile(uri)
    assert got.metadata.num_row_groups == 4
    want = [r["topic"] or ("topic-a" if r["topic_id"] == "id-a" else None) for r in rows]
    assert got.read().column("topic").to_pylist() == want
    assert got.read().drop_columns(["topic"]).equals(table.drop_columns(["topic"]))
    before = (tmp_path / "batches" / "part-00000.parquet").stat()
    tasks.name_topics(uri, {"id-a": "topic-a"})  # nothing left to name
    after = (tmp_path / "batches" / "part-00000.parquet").stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
