"""kcodec.spark and `kcodec analyze` on local[2], over captures real clients made through `kcodec tap`.

confluent-kafka and kafka-python talk to a real broker through the tap; the same conversations are also
written as a pcap (with dpkt, reordered and retransmitted). `kcodec analyze` runs on both, and what it
reports is checked against what the clients did: messages produced, Metadata calls, versions, bytes.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pytest

import kcodec
import kafka_upstream as ku
import pcap_writer
from kcodec.messages import ListTopicsResponse
from kcodec.tap import capture
from kcodec.tap.frames import read_frames

pytestmark = [pytest.mark.spark, pytest.mark.interop,
              pytest.mark.filterwarnings("ignore::kcodec.TrailingBytesWarning")]  # librdkafka's Metadata request

CK_MESSAGES, KPY_MESSAGES, KPY_LIST_TOPICS = 30, 10, 3
# The clients the fixture frees (`del`) rather than drains: librdkafka's destroy drops what is in flight, so
# a Metadata refresh sent just before can close its connection unanswered. kafka-python's are drained: its
# admin waits for every answer, its producer's close() runs until nothing is in flight.
FREED_IN_FLIGHT = {"ck-admin", "ck-producer"}


@pytest.fixture(scope="module")
def real_capture(tmp_path_factory, kafka_upstream):
    """A tap capture of confluent-kafka and kafka-python producing, listing topics, consuming."""
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaAdminClient, KafkaProducer

    out = tmp_path_factory.mktemp("kcap")
    with ku.tap(kafka_upstream.address, out) as t:
        admin = AdminClient({"bootstrap.servers": t.bootstrap, "client.id": "ck-admin"})
        admin.create_topics([NewTopic("spark-ck", 3, 1)])["spark-ck"].result(15)
        with pytest.raises(KafkaException) as again:  # the broker answers TOPIC_ALREADY_EXISTS
            admin.create_topics([NewTopic("spark-ck", 3, 1)])["spark-ck"].result(15)
        assert again.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        assert "spark-ck" in admin.list_topics(timeout=10).topics
        delivered: list[bool] = []
        p = Producer({"bootstrap.servers": t.bootstrap, "client.id": "ck-producer", "linger.ms": 5})
        for i in range(CK_MESSAGES):
            p.produce("spark-ck", f"c{i}".encode(), partition=i % 3,
                      on_delivery=lambda err, msg: delivered.append(err is None))
        assert p.flush(15) == 0
        del admin, p  # librdkafka's clients keep reconnecting to the stopped tap until they are freed

        kadmin = KafkaAdminClient(bootstrap_servers=t.bootstrap, client_id="kpy-admin", request_timeout_ms=10000)
        for _ in range(KPY_LIST_TOPICS):
            assert "spark-ck" in kadmin.list_topics()
        kadmin.close()
        kp = KafkaProducer(bootstrap_servers=t.bootstrap, client_id="kpy-producer")
        for i in range(KPY_MESSAGES):
            kp.send("spark-ck", f"k{i}".encode(), partition=0).get(timeout=10)
        kp.close()
        t.stop()
    assert delivered == [True] * CK_MESSAGES
    files = sorted(out.glob("*.kcap"))
    frames = [f for path in files for f in read_frames(path.read_bytes())[0]]
    return out, files, frames


@pytest.fixture(scope="module")
def as_pcap(real_capture, tmp_path_factory):
    """The same conversations as tcpdump would have seen them on port 9092: reordered, retransmitted."""
    _, _, frames = real_capture
    packets = []
    for n, conn in enumerate(sorted({f.conn for f in frames})):
        mine = [(f.direction, f.data) for f in frames if f.conn == conn]
        packets += pcap_writer.disorder(pcap_writer.conversation(mine, sport=41000 + n, segment=300,
                                                                 t0=1_700_000_000 + n), seed=n)
    packets.sort(key=lambda p: p[0])
    return pcap_writer.write(tmp_path_factory.mktemp("pcap") / "kafka.pcapng", packets, ng=True)


@pytest.fixture(scope="module")
def analyzed(spark, real_capture, as_pcap, tmp_path_factory):
    from kcodec.spark.analyze import analyze

    out = tmp_path_factory.mktemp("report")
    lines: list[str] = []
    agg = analyze(spark, [str(real_capture[0] / "*.kcap"), str(as_pcap)], out, ports=[9092],
                  print_=lambda *a, **k: lines.append(" ".join(map(str, a))))
    ex = spark.read.parquet(str(out / "tables" / "exchanges")).toPandas()
    return out, agg, ex, lines


def _record_count(records: bytes) -> int:
    """Records in a Produce request's record batches (the count sits at byte 57 of each batch)."""
    n, pos = 0, 0
    while pos + 61 <= len(records):
        length = struct.unpack_from(">i", records, pos + 8)[0]
        n += struct.unpack_from(">i", records, pos + 57)[0]
        pos += 12 + length
    return n


def _answered(view):
    """The exchanges of one capture view that were answered, having checked the rest: each is the last request
    on its connection, unanswered, from a client freed with requests in flight (FREED_IN_FLIGHT)."""
    waiting = view[view.pairing != "answered"]
    last = view.groupby("conn").exchange.transform("max")
    assert (waiting.pairing == "unanswered").all(), Counter(waiting.pairing)
    assert (waiting.exchange == last[waiting.index]).all(), waiting[["conn", "exchange", "api_name"]]
    assert set(waiting.client_id) <= FREED_IN_FLIGHT, waiting[["client_id", "api_name"]]
    assert waiting.response_bytes.isna().all()
    return view[view.pairing == "answered"]


def test_exchanges_match_what_the_clients_did(analyzed, real_capture):
    out, agg, ex, _ = analyzed
    _, _, frames = real_capture
    tap = ex[ex.source.str.endswith(".kcap")]
    requests = [f for f in frames if f.direction == 0]
    assert len(tap) == len(requests)
    assert tap.decode_error.isna().all(), tap.decode_error.dropna().tolist()
    answered = _answered(tap)
    assert (answered.response_bytes.notna()).all() and (answered.latency_ns >= 0).all()
    # Bytes and versions are the frames' own, request for request.
    direct = Counter((kcodec.decode_request_header(f.data, strict=False)[0].client_id,
                      f.data[5], f.data[7], len(f.data)) for f in requests)
    assert Counter(zip(tap.client_id, tap.api_key, tap.api_version, tap.request_bytes)) == direct
    assert tap.request_bytes.sum() + tap.response_bytes.sum() == sum(len(f.data) for f in frames)

    # Messages produced, counted in the Produce requests' record batches, per client.
    produced = Counter()
    for f in requests:
        header, req = kcodec.decode_request(f.data, strict=False)
        if header.request_api_key == 0:
            produced[header.client_id] += sum(_record_count(p.records) for t in req.topic_data for p in t.partition_data)
    assert produced == {"ck-producer": CK_MESSAGES, "kpy-producer": KPY_MESSAGES}
    prod = tap[tap.api_name == "Produce"]
    assert set(prod.client_id) == {"ck-producer", "kpy-producer"} and (prod.error_count == 0).all()
    assert prod.partitions.sum() >= 3 + 1

    # The one error the clients met: creating a topic twice (TOPIC_ALREADY_EXISTS, 36).
    errors = tap[tap.error_count > 0]
    assert [(r.client_id, r.api_name, list(r.error_codes)) for r in errors.itertuples()] == [
        ("ck-admin", "CreateTopics", [36])]

    # kafka-python's admin asked for all topics at least once a list_topics() call.
    kpy_md = tap[(tap.client_id == "kpy-admin") & (tap.api_name == "Metadata")]
    assert kpy_md.metadata_all_topics.sum() >= KPY_LIST_TOPICS
    # Each client opens with ApiVersions at the version it is known to use first.
    first = tap.sort_values("request_ts_ns").groupby("client_id").first()
    assert first.loc["kpy-producer", "api_name"] == "ApiVersions" and first.loc["kpy-producer", "api_version"] == 4
    assert first.loc["ck-producer", "api_name"] == "ApiVersions" and first.loc["ck-producer", "api_version"] == 3


def test_metadata_what_if_figures(analyzed, real_capture):
    _, agg, ex, _ = analyzed
    _, _, frames = real_capture
    md = _answered(ex[ex.source.str.endswith(".kcap")]).query("api_name == 'Metadata'")
    assert md.list_topics_v1_bytes.notna().all() and md.dtp_bytes.notna().all()
    full = md[md.topics >= 1]
    assert len(full) and (full.list_topics_v1_bytes < full.response_bytes).all()
    # Recompute one by hand: the ListTopics response naming the same topics, framed.
    row = full.iloc[0]
    resp = next(f for f in frames if f.conn == row.conn and f.direction == 1
                and struct.unpack_from(">i", f.data, 4)[0] == row.correlation_id)
    _, m = kcodec.decode_response(resp.data, 3, int(row.api_version), strict=False)
    lt = ListTopicsResponse(topics=[ListTopicsResponse.Topic(name=t.name, internal=t.is_internal) for t in m.topics],
                            error_code=m.error_code, throttle_time_ms=m.throttle_time_ms)
    assert len(kcodec.encode_response(lt, 1, int(row.correlation_id))) == row.list_topics_v1_bytes
    clients = {r["client_id"] for r in agg["metadata"]}
    assert {"ck-admin", "kpy-admin", "kpy-producer"} <= clients


def test_pcap_gives_the_same_exchanges(analyzed):
    _, _, ex, _ = analyzed
    cols = ["client_id", "api_name", "api_version", "request_bytes", "response_bytes", "error_count",
            "list_topics_v1_bytes"]
    tap = ex[ex.source.str.endswith(".kcap")]
    pcap = ex[ex.source.str.endswith(".pcapng")]
    assert len(pcap) == len(tap)
    key = lambda df: Counter(tuple(None if v != v else v for v in row) for row in df.itertuples(index=False))  # noqa: E731
    assert key(pcap[cols]) == key(tap[cols])
    assert pcap.decode_error.isna().all(), pcap.decode_error.dropna().tolist()
    assert Counter(pcap.pairing) == Counter(tap.pairing) and len(_answered(pcap)) == len(_answered(tap))


def test_report_tables_and_console(analyzed, spark):
    out, agg, ex, lines = analyzed
    report = (out / "report.md").read_text()
    for svg in ("bytes_by_api.svg", "metadata_vs_list_topics.svg", "versions.svg", "errors.svg"):  # (tests/test_spark_charts.py tests the charts)
        assert (out / svg).read_text().startswith("<svg") and f"]({svg})" in report
    assert "## By API" in report and "| Produce | 0 |" in report and "ck-producer" in report
    assert "| 36 | TOPIC_ALREADY_EXISTS | CreateTopics | 2 |" in report  # once in the capture, once in the pcap
    t = agg["total"]
    assert t["exchanges"] == len(ex) and t["orphan_responses"] == 0 and t["capture_files"] == 2
    files = spark.read.parquet(str(out / "tables" / "files")).toPandas()
    assert len(files) == 2 and files.summary.str.contains('"kind": "pcap"').sum() == 1
    frames = spark.read.parquet(str(out / "tables" / "frames"))
    assert frames.where("direction = 0").count() == t["requests"] == len(ex)
    assert "frame" not in frames.columns and "size" in frames.columns  # no copy of the capture by default
    assert lines[0].startswith("[1/3]") and any(line.startswith("[3/3]") for line in lines)
    assert any("Metadata for ck-admin" in line and "ListTopics v1" in line for line in lines)


def test_bad_input_never_fails_the_job(spark, tmp_path):
    from kcodec import spark as ks
    from kcodec.messages import MetadataRequest

    good = kcodec.encode_request(MetadataRequest(topics=None), 12, 1, client_id="bad-client")
    for session in (9, 10):  # 10: a capture whose writer died in its last record
        w = capture.CaptureWriter(tmp_path / str(session), session=session)
        w.write(capture.REQUEST, 1, 10, good)
        w.write(capture.RESPONSE, 1, 20, b"\x00\x00\x00\x08\x00\x00\x00\x01\xff\xff\xff\xff")  # no Metadata body
        w.write(capture.REQUEST, 1, 30, good[:4] + b"\x00\x03\x00\x0c\x00\x00\x00\x02" + b"\xff" * (len(good) - 12))
        w.write(capture.REQUEST, 1, 40, b"\x00\x00\x00\x02\x00\x03")  # too short for a header
        w.close()
        w.files[0].rename(tmp_path / f"s{session}.kcap")
    (tmp_path / "junk.kcap").write_bytes(b"this is not a capture at all")
    cut = tmp_path / "s10.kcap"
    cut.write_bytes(cut.read_bytes()[:-5])
    frames = ks.read_frames(spark, [str(tmp_path / "*.kcap")])
    ex = ks.exchanges(frames).toPandas()
    files = ks.files(frames).toPandas()
    assert files.summary.str.contains("not a kcodec capture|not a capture").sum() == 1
    assert files.summary.str.contains("needs").sum() == 1  # the cut one
    errors = ex.decode_error.dropna().tolist()
    assert any(e.startswith("response: DecodeError") for e in errors)
    assert any(e.startswith("request: DecodeError") for e in errors)
    # The cut file's whole records are read (as a pcap cut short is), the cut one reported.
    assert len(ex) == 3 + 2 and set(ex.conn) == {"tap-9/1", "tap-10/1"}


def test_the_command_end_to_end(real_capture, tmp_path):
    """`kcodec analyze` as a user runs it: its own local[2] session, exit status, report, summary."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    reports = []
    for keep in ([], ["--keep-frame-bytes"]):  # the first run keeps its JVM's classes (kcodec.spark.jvm), the
        # second starts from them, and keeps the frames' bytes
        run = subprocess.run([sys.executable, "-m", "kcodec", "analyze", str(real_capture[0]), "--out",
                              str(tmp_path / "out"), "--master", "local[2]", *keep], capture_output=True, text=True,
                             env=env, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "[1/3] reading 1 capture path(s)" in run.stdout and "Metadata for kpy-admin" in run.stdout
        assert (tmp_path / "out" / "report.md").is_file() and (tmp_path / "out" / "tables" / "exchanges").is_dir()
        reports.append((tmp_path / "out" / "report.md").read_text())
        saving = "saving Spark's classes" in run.stdout
        assert saving == (len(reports) == 1), run.stdout
        assert "cds" not in run.stderr.lower(), run.stderr  # the archive's notes stay off the console
        assert "Traceback" not in run.stderr and "Exception" not in run.stderr, run.stderr  # a quiet stop
    assert len(list((tmp_path / "cache" / "kcodec").glob("spark-classes-*.jsa"))) == 1
    assert reports[0] == reports[1]
    import pyarrow.parquet as pq

    frames = pq.read_table(tmp_path / "out" / "tables" / "frames").to_pylist()
    _, _, expected = real_capture
    assert sorted(f["frame"] for f in frames if f["direction"] in (0, 1)) == sorted(f.data for f in expected)
    assert all(f["size"] == len(f["frame"]) for f in frames if f["direction"] in (0, 1))
