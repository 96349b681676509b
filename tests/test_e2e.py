"""End to end: real admin clients through `kcodec tap` to `kcodec broker`, the capture on Spark.

confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and kcodec's client administer a
three-broker ``kcodec_broker.Cluster`` (SASL PLAIN) through the tap (``kcodec.showcase.traffic``, the
showcase's own driver); `kcodec analyze` runs on the session's local[2] Spark, and its tables are
checked against the broker's count of what it answered, what each client was told, and the bytes.
Then confluent-kafka's idempotent producer writes with every codec and a consumer group reads it all back.
(tests/test_spark.py and tests/test_spark_real.py send more data traffic, through the tap to Tansu.)
"""

from __future__ import annotations

import struct
from collections import Counter

import pytest
from needs import need_module

from kcodec import definitions
from kcodec.errors import ErrorCode
from kcodec.tap import capture

pytestmark = [pytest.mark.spark, pytest.mark.interop,
              pytest.mark.filterwarnings("ignore::kcodec.TrailingBytesWarning")]  # librdkafka's Metadata request

need_module("pyspark", since=(3, 11))
from kcodec.showcase.e2e import analyze_capture, check, headline  # noqa: E402
from kcodec.showcase.traffic import (CK, CKC, CKP, CODECS, DATA_RECORDS, DATA_TOPIC, KC, KPY,  # noqa: E402
                                     background_topic, drive, told_errors)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    need_module("confluent_kafka")
    need_module("kafka")
    return drive(tmp_path_factory.mktemp("e2e") / "capture", background_topics=120)


@pytest.fixture(scope="module")
def analyzed(spark, traffic, tmp_path_factory):
    out = tmp_path_factory.mktemp("e2e-report")
    lines: list[str] = []
    figs = analyze_capture(spark, traffic, out, print_=lambda *a, **k: lines.append(" ".join(map(str, a))))
    ex = spark.read.parquet(str(out / "tables" / "exchanges")).toPandas()
    return out, figs, ex, lines


def test_every_client_ran_and_the_analysis_agrees(traffic, analyzed):
    _, figs, ex, _ = analyzed
    assert set(traffic.clients) == {CK, CKP, CKC, KPY, KC} and not traffic.skipped
    assert check(traffic, figs) == []
    # Spelled out: exchanges per client, API and version are what the broker answered, one for one.
    assert figs.counts == traffic.served and set(figs.counts) == {CK, CKP, CKC, KPY, KC}
    # The data path: every acknowledged record is in the capture's Produce batches, with its codec, and
    # the consumer read each one back once, as the Fetch responses' batches show.
    assert figs.produced == traffic.produced == {(DATA_TOPIC, c): DATA_RECORDS for c in CODECS}
    assert figs.fetched == traffic.consumed == traffic.produced
    assert {"InitProducerId", "Produce"} <= {api for api, _ in figs.counts[CKP]}
    assert {"FindCoordinator", "JoinGroup", "SyncGroup", "Fetch", "OffsetCommit"} <= {
        api for api, _ in figs.counts[CKC]}
    assert sum(traffic.committed.values()) == sum(traffic.consumed.values())  # offsets from 0, no gaps
    assert figs.counts[KC] == traffic.kcodec_sent
    assert len(ex) == sum(sum(n.values()) for n in traffic.served.values())
    assert ex.decode_error.isna().all() and ex.response_bytes.notna().all()
    # and check() does notice a difference
    import dataclasses
    served = {c: Counter(n) for c, n in traffic.served.items()}
    served[KPY][("Metadata", 13)] += 1
    told = dict(traffic.errors, **{CK: Counter({("CreateTopics", 36): 1})})
    produced, consumed = Counter(traffic.produced), Counter(traffic.consumed)
    produced[(DATA_TOPIC, "zstd")] += 1
    consumed[(DATA_TOPIC, "lz4")] -= 1
    bad = check(dataclasses.replace(traffic, served=served, errors=told, produced=produced, consumed=consumed), figs)
    assert len(bad) == 4 and bad[0].startswith(f"{KPY}: the capture has") and "was told" in bad[1]
    assert bad[2].startswith("records produced per (topic, codec)")
    assert bad[3].startswith("records fetched per (topic, codec)")


def test_versions_each_client_used(analyzed):
    _, figs, _, _ = analyzed
    used = {c: {api: sorted({v for a, v in n if a == api}) for api, _ in n} for c, n in figs.counts.items()}
    # The versions the README's tables give for these releases (confluent-kafka 2.16.1, kafka-python 3.0.12).
    assert {k: used[CK][k] for k in ("ApiVersions", "Metadata", "CreateTopics", "DeleteTopics", "CreatePartitions",
                                     "SaslHandshake", "SaslAuthenticate")} == {
        "ApiVersions": [3], "Metadata": [13], "CreateTopics": [4], "DeleteTopics": [4], "CreatePartitions": [2],
        "SaslHandshake": [1], "SaslAuthenticate": [1]}
    assert {k: used[KPY][k] for k in ("ApiVersions", "Metadata", "CreateTopics", "DeleteTopics",
                                      "CreatePartitions", "SaslAuthenticate")} == {
        "ApiVersions": [4], "Metadata": [13], "CreateTopics": [7], "DeleteTopics": [6], "CreatePartitions": [3],
        "SaslAuthenticate": [2]}
    assert used[KC]["ListTopics"] == [1] and used[KC]["DescribeTopicPartitions"] == [0]
    assert "ListTopics" not in used[CK] and "ListTopics" not in used[KPY]  # they list with Metadata


def test_error_codes_are_what_the_clients_were_told(traffic, analyzed):
    _, figs, ex, _ = analyzed
    told = told_errors(traffic)
    assert figs.errors == told
    exists = int(ErrorCode.TOPIC_ALREADY_EXISTS)
    for client in (CK, KPY, KC):
        assert exists in told[client]["CreateTopics"]
    assert told[CK]["CreateTopics"] == [exists, int(ErrorCode.INVALID_REPLICATION_FACTOR)]
    assert told[KPY]["DeleteTopics"] == [int(ErrorCode.INVALID_TOPIC_EXCEPTION)]  # __consumer_offsets
    assert told[KC] == {"CreateTopics": [exists], "CreatePartitions": [int(ErrorCode.INVALID_PARTITIONS)],
                        "DeleteTopics": [int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]}
    # Per exchange, not only per client: each CreateTopics answer that failed failed for one topic.
    failed = ex[(ex.api_name == "CreateTopics") & (ex.error_count > 0)]
    assert len(failed) == 4 and (failed.error_count == 1).all()


def test_list_topics_frames_decode_and_the_what_if_holds(traffic, analyzed):
    _, figs, ex, _ = analyzed
    lt = ex[ex.api_key == definitions.list_topics_api_key()]
    assert (lt.api_name == "ListTopics").all() and lt.decode_error.isna().all() and len(lt) == 3
    # The last one listed every topic, internal ones too: the 120 the cluster started with, ck-orders,
    # kc-orders, __consumer_offsets and __transaction_state.
    last = lt.sort_values("request_ts_ns").iloc[-1]
    assert last.topics == 120 + 4
    # kafka-python's next all-topics Metadata saw the same topics; what ListTopics would have taken for
    # it is what ListTopics did take, and both are the size KIP-142's layout gives for those names,
    # counted here by hand (not by kcodec's encoder, which made both of the others).
    names = [background_topic(i)[0] for i in range(120)] + ["ck-orders", "kc-orders", "__consumer_offsets",
                                                             "__transaction_state"]
    by_hand = list_topics_v1_frame_bytes(names)
    assert figs.what_if_vs_real == (by_hand, by_hand) and int(last.response_bytes) == by_hand
    nxt = ex[(ex.client_id == KPY) & (ex.api_name == "Metadata") & (ex.request_ts_ns > last.request_ts_ns)
             & ex.metadata_all_topics.eq(True)].sort_values("request_ts_ns").iloc[0]
    assert nxt.topics == last.topics and nxt.list_topics_v1_bytes == last.response_bytes
    # Every Metadata response that lists topics costs more than ListTopics naming them would have.
    md = ex[(ex.api_name == "Metadata") & (ex.topics > 0)]
    assert len(md) and (md.list_topics_v1_bytes < md.response_bytes).all() and (md.dtp_pages >= 1).all()
    per_client = {r["client_id"]: r for r in figs.agg["metadata"]}
    assert per_client[KPY]["all_topics_requests"] >= 3 and per_client[CK]["all_topics_requests"] >= 2
    assert all(r["list_topics_v1_bytes"] * 4 < r["metadata_bytes"] for c, r in per_client.items() if c != KC)


def _uvarint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def list_topics_v1_frame_bytes(names: list[str]) -> int:
    """A ListTopics v1 response frame naming ``names``, from the overlay's layout: size prefix (4), header
    v1 (correlation id 4, no tags 1), throttle_time_ms 4, error_code 2, a compact array (uvarint n+1) of
    (compact string: uvarint len+1 and UTF-8; internal: 1; no tags: 1), no tags 1."""
    encoded = [n.encode() for n in names]
    topics = sum(_uvarint_len(len(b) + 1) + len(b) + 1 + 1 for b in encoded)
    return 4 + 4 + 1 + 4 + 2 + _uvarint_len(len(names) + 1) + topics + 1


def test_list_topics_size_by_hand():
    import kcodec
    from kcodec.messages import ListTopicsResponse

    names = ["a", "é" * 70, "x" * 200]  # one- and two-byte length varints, non-ASCII
    msg = ListTopicsResponse(topics=[ListTopicsResponse.Topic(name=n) for n in names])
    assert list_topics_v1_frame_bytes(names) == len(kcodec.encode_response(msg, 1, correlation_id=1))


def test_describe_topic_partitions_pages(traffic, analyzed):
    _, _, ex, _ = analyzed
    dtp = ex[ex.api_name == "DescribeTopicPartitions"]
    pages = traffic.kcodec_sent[("DescribeTopicPartitions", 0)]
    assert len(dtp) == pages > 5 and dtp.decode_error.isna().all()
    assert (dtp.partitions <= 50).all()  # the client's page size
    # Every partition of every topic, once: 120 topics of 1-8 partitions, ck-orders' 8 after its
    # CreatePartitions, kc-orders' 12, kc-defaults' 3 (the broker's default), the internal topics' 10 each.
    assert dtp.partitions.sum() == sum(background_topic(i)[1] for i in range(120)) + 8 + 12 + 3 + 2 * 10


def test_every_broker_reached_through_its_own_listener(traffic):
    upstreams = Counter()
    for path in traffic.files:
        for r in capture.read_capture(path)[1]:
            if r.kind == capture.OPENED:
                upstreams[r.payload.decode().split()[1]] += 1
    # Clients bootstrap at the last broker and follow the tap's rewritten addresses to the controller
    # (the first) for their admin requests; librdkafka may or may not also pick the middle one.
    brokers = [f"{h}:{p}" for h, p in traffic.brokers]
    assert {brokers[0], brokers[-1]} <= set(upstreams) <= set(brokers)


def test_sasl_exchanges_decode(analyzed):
    _, _, ex, _ = analyzed
    for api in ("SaslHandshake", "SaslAuthenticate"):
        rows = ex[ex.api_name == api]
        assert rows.conn.nunique() == ex.conn.nunique() == len(rows)  # once on every connection
        assert rows.decode_error.isna().all() and (rows.error_count == 0).all()


def test_report_and_headline(traffic, analyzed):
    out, figs, _, lines = analyzed
    report = (out / "report.md").read_text()
    assert "| ListTopics | 1142 |" in report and "| 36 | TOPIC_ALREADY_EXISTS | CreateTopics | 3 |" in report
    assert any(line.startswith("[3/3]") for line in lines)
    text, console = headline(traffic, figs, check(traffic, figs))
    assert "### Versions per client" in text and "they agree" in text and "| ListTopics | 3 |" in text
    assert f"{figs.what_if_vs_real[0]:,} B as ListTopics v1" in console


def _frame(sock) -> bytes:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        data += chunk
    return data


def test_sasl_handshake_v0_raw_tokens(spark, tmp_path):
    """SaslHandshake v0 is followed by a bare token each way (no Kafka header): the tap forwards them, the
    analysis sets them apart (direction 2 and 3) instead of counting a garbage request and an orphan."""
    import socket

    import kcodec
    from kcodec import spark as ks
    from kcodec_broker import Cluster
    from kcodec.messages import MetadataRequest, SaslHandshakeRequest
    from kcodec.tap.process import tap_process

    with Cluster(brokers=1, users={"u": "pw"}) as cluster:
        host, port = cluster.addresses[0]
        with tap_process(f"{host}:{port}", tmp_path) as tap:
            with socket.create_connection(("127.0.0.1", tap.port), timeout=10) as s:
                s.sendall(kcodec.encode_request(SaslHandshakeRequest(mechanism="PLAIN"), 0, 1, client_id="v0"))
                assert kcodec.decode_response(_frame(s), 17, 0)[1].error_code == 0
                s.sendall(struct.pack(">i", 5) + b"\0u\0pw")
                assert _frame(s) == b"\0\0\0\0"  # authenticated: an empty token back
                s.sendall(kcodec.encode_request(MetadataRequest(topics=None), 4, 2, client_id="v0"))
                assert kcodec.decode_response(_frame(s), 3, 4)[1].topics
            tap.stop()
        assert cluster.requests_served() == {"v0": Counter({("SaslHandshake", 0): 1, ("Metadata", 4): 1})}
    frames = ks.read_frames(spark, [str(tmp_path / "*.kcap")]).cache()
    rows = frames.where("direction >= 0").toPandas()
    assert sorted(rows.direction) == [0, 0, 1, 1, 2, 3] and rows.error.isna().all()
    ex = ks.exchanges(frames).toPandas()
    assert sorted(ex.api_name) == ["Metadata", "SaslHandshake"] and ex.decode_error.isna().all()
    assert ks.orphan_responses(frames).count() == 0
    # The same conversation as tcpdump would see it: the pcap reader hands over the same frames.
    import pcap_writer
    from kcodec.spark.decode import sasl_v0_tokens
    from kcodec.tap.frames import read_frames

    kc = [f for p in sorted(tmp_path.glob("*.kcap")) for f in read_frames(p.read_bytes())[0]]
    packets = pcap_writer.conversation([(f.direction, f.data) for f in kc], sport=41000, segment=300, t0=1_700_000_000)
    got, summary = read_frames(pcap_writer.write(tmp_path / "v0.pcapng", packets, ng=True).read_bytes(), [9092])
    assert [f.data for f in got] == [f.data for f in kc] and summary["resyncs"] == 0
    assert sasl_v0_tokens(got) == [False, False, True, True, False, False]


def test_sasl_handshake_v0_scram_tokens(spark, tmp_path):
    """SCRAM after SaslHandshake v0 takes two bare rounds (client-first/server-first, client-final/
    server-final): the tap and the analysis count both off, so kcodec's client's SCRAM login through the
    tap leaves no garbage request and no orphan response."""
    from kcodec import spark as ks
    from kcodec_broker import Cluster
    from kcodec.client import SyncClient
    from kcodec.spark.decode import sasl_v0_tokens
    from kcodec.tap.frames import read_frames
    from kcodec.tap.process import tap_process

    with Cluster(brokers=1, users={"u": "pw"}, sasl_mechanisms=["SCRAM-SHA-256"]) as cluster:
        host, port = cluster.addresses[0]
        with tap_process(f"{host}:{port}", tmp_path) as tap:
            with SyncClient(f"127.0.0.1:{tap.port}", client_id="v0-scram", sasl_user="u", sasl_password="pw",
                            sasl_mechanism="SCRAM-SHA-256", max_versions={17: 0}) as c:
                assert c.list_topics() is not None
            tap.stop()
        served = cluster.requests_served()["v0-scram"]
    assert served[("SaslHandshake", 0)] >= 1 and ("SaslAuthenticate", 0) not in served
    kc = [f for p in sorted(tmp_path.glob("*.kcap")) for f in read_frames(p.read_bytes())[0]]
    tokens = sasl_v0_tokens(kc)
    per_login = [f.direction for f, t in zip(kc, tokens) if t]
    assert per_login and per_login == [0, 1, 0, 1] * (len(per_login) // 4)
    frames = ks.read_frames(spark, [str(tmp_path / "*.kcap")])
    ex = ks.exchanges(frames).toPandas()
    assert ex.decode_error.isna().all() and "SaslHandshake" in set(ex.api_name)
    assert ks.orphan_responses(frames).count() == 0
