"""`kcodec tap` in front of Apache Kafka 4.4, and `kcodec analyze` on what it recorded and on what tcpdump saw
of the same traffic, exact against what the clients sent.

confluent-kafka, kafka-python, aiokafka and kafkajs (tests/real_traffic.py) each produce one message a request,
with acks all (or 1) and acks 0, and consume, through the tap, while tcpdump records the tap's upstream leg on
loopback. Kafka answers no acks=0 request: unlike Tansu's traffic (tests/test_spark_real.py), every acks=0
Produce is ``no_response`` and every other exchange answered, in both captures.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
import kafka_upstream as ku
import real_traffic
from test_spark_real import _drained, _stopped, _tcpdump

from kcodec.client import NewTopic, SyncClient
from kcodec.messages import ListOffsetsRequest

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.interop]

TOPICS = {"confluent-kafka": "real-ck", "kafka-python": "real-kpy", "aiokafka": "real-aio", "kafkajs": "real-js"}
ACKS0 = {"confluent-kafka": "ck-producer-acks0", "kafka-python": "kpy-producer-acks0",
         "aiokafka": "aio-producer-acks0"}


def _leaders_ready(kafka) -> None:
    """The clients' topics made and led (a Produce to a partition whose leader has not taken over yet is
    refused and sent again: one message would then be two requests)."""
    with SyncClient(kafka.bootstrap, request_timeout=30) as c:
        c.create_topics([NewTopic(t, 1, 1) for t in TOPICS.values()])
    import conformance as cf

    rec = cf.Recorder(cf.Target("kafka", kafka.addresses), "leaders")
    try:
        def led() -> bool:
            resp = rec.quiet(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=t, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])
                for t in TOPICS.values()]), 5)
            return all(p.error_code == 0 for t in resp.topics for p in t.partitions)
        rec.until("the clients' topics led", led)
    finally:
        rec.close()


@pytest.fixture(scope="module")
def captured(tmp_path_factory, real_kafka):
    port = real_kafka.nodes[0].port
    base = tmp_path_factory.mktemp("real-kafka-tap")
    for d in ("kcap", "pcap"):
        (base / d).mkdir()
    _leaders_ready(real_kafka)
    started = time.monotonic()
    dump = _tcpdump(port, "-w", str(base / "pcap" / "kafka.pcap"))
    try:
        with ku.tap(f"127.0.0.1:{port}", base / "kcap") as t:
            did = real_traffic.run_all(t.bootstrap)
            t.stop()
        _drained(port, base / "pcap")
    finally:
        _stopped("real-kafka", dump)
    print(f"clients through the tap to Kafka: {time.monotonic() - started:.1f} s")
    return base, did, port


@pytest.fixture(scope="module")
def analyzed(spark, captured):
    from kcodec.spark.analyze import analyze

    base, _, port = captured
    started = time.monotonic()
    analyze(spark, [str(base / "kcap"), str(base / "pcap")], base / "report", ports=[port], print_=lambda *a, **k: None)
    tables = base / "report" / "tables"
    ex = spark.read.parquet(str(tables / "exchanges")).toPandas()
    rb = spark.read.parquet(str(tables / "batches")).toPandas()
    print(f"analyze: {time.monotonic() - started:.1f} s")
    kind = {True: "kcap", False: "pcap"}
    return (ex.assign(kind=ex.capture.str.startswith("tap-").map(kind)),
            rb.assign(kind=rb.capture.str.startswith("tap-").map(kind)))


def test_both_captures_hold_the_same_exchanges(analyzed):
    ex, _ = analyzed
    assert set(ex.kind) == {"kcap", "pcap"}
    assert ex.decode_error.isna().all(), ex.decode_error.dropna().tolist()[:5]
    assert not ex.pairing.isin(["orphan", "overtaken"]).any(), Counter(zip(ex.kind, ex.pairing))
    cols = ["client_id", "api_key", "api_version", "request_bytes", "response_bytes", "pairing", "error_count"]
    views = {k: Counter(tuple(None if v != v else v for v in row) for row in g[cols].itertuples(index=False))
             for k, g in ex.groupby("kind")}
    # Kafka answers every request but acks=0 Produce, so the tap and tcpdump see the same answers too, but for
    # a consumer's last long poll that Kafka answered after the consumer left (tcpdump sees it, the tap may not)
    only_pcap, only_tap = views["pcap"] - views["kcap"], views["kcap"] - views["pcap"]
    assert {(k[1], k[5]) for k in only_pcap} <= {(1, "answered")} and {(k[1], k[5]) for k in only_tap} <= {
        (1, "unanswered"), (1, "no_response")}, (only_pcap, only_tap)
    assert sum(only_pcap.values()) == sum(only_tap.values())
    conns = ex.groupby("kind").conn.nunique()
    assert conns["kcap"] == conns["pcap"]


def test_produce_requests_are_what_each_client_sent(analyzed, captured):
    ex, _ = analyzed
    _, did, _ = captured
    n = real_traffic.N
    for kind, g in ex[ex.api_name == "Produce"].groupby("kind"):
        by = Counter(zip(g.client_id, g.pairing))
        # one message a request; Kafka answers none sent with acks=0
        assert by["ck-producer-acks-1", "answered"] == n and by["ck-producer-acks0", "no_response"] == n, (kind, by)
        assert by["kpy-producer-acks1", "answered"] == n and by["kpy-producer-acks0", "no_response"] == n, (kind, by)
        assert by["aio-producer-acksall", "answered"] == n and by["aio-producer-acks0", "no_response"] == n, (kind, by)
        js = Counter(g[g.client_id == "kafkajs-client"].pairing)
        assert js == {"answered": n, "no_response": n}, (kind, js)
        assert "acks0_answered" not in set(g.pairing)
        assert set(g.pairing) == {"answered", "no_response"}
    assert did["confluent-kafka"]["sent"] == {-1: n, 0: n} and did["kafkajs"]["sent"] == {"-1": n, "0": n}
    assert did["kafka-python"]["sent"] == {1: n, 0: n} and did["aiokafka"]["sent"] == {"all": n, 0: n}


def test_records_per_topic_are_what_the_clients_sent_and_consumed(analyzed, captured):
    _, rb = analyzed
    _, did, _ = captured
    assert rb.error.isna().all(), rb.error.dropna().tolist()[:5]
    assert rb.crc_valid.fillna(True).all()
    data = rb[rb.record_count.notna() & ~rb.control.fillna(False)]
    for kind, g in data.groupby("kind"):
        produced = g[g.direction == "produced"].groupby("topic").record_count.sum().to_dict()
        assert produced == {TOPICS[c]: sum(d["sent"].values()) for c, d in did.items()}, (kind, produced)
        fetched = g[(g.direction == "fetched") & ~g.partial.fillna(False)]
        for client, topic in TOPICS.items():
            offsets = {o for r in fetched[fetched.topic == topic].itertuples()
                       for o in range(int(r.base_offset), int(r.last_offset) + 1)}
            assert did[client]["consumed"] <= len(offsets) <= sum(did[client]["sent"].values()), (kind, client)
