"""Kafka's perf tools 4.4 (kafka-tools: org.apache.kafka.tools.ProducerPerformance and ConsumerPerformance,
what kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh run) against kcodec broker and against Apache
Kafka 4.4 (the session's real_kafka), small counts: they must finish and report every record. Their rates are
not judged here (benchmarks/ does that)."""

from __future__ import annotations

import re
from typing import Iterator

import pytest
from interop_support import record
from java_clients import KAFKA_VERSION, SESSION, Target, perf

from kcodec_broker import Cluster

pytestmark = [pytest.mark.interop, pytest.mark.checkout]
RECORDS = 5000
# "5000 records sent, 3762.2 records/sec (0.36 MB/sec), 85.96 ms avg latency, 1210.00 ms max latency, ..."
SENT = re.compile(r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency", re.M)
TOOLS = f"Kafka's perf tools {KAFKA_VERSION}"


@pytest.fixture(params=["kcodec", "kafka"])
def target(request, java) -> Iterator[Target]:
    if request.param == "kafka":
        yield Target("kafka", request.getfixturevalue("real_kafka").bootstrap, java, prefix=f"p{SESSION}-")
        return
    with Cluster(brokers=3, num_partitions=3, default_replication_factor=2, system_topic_partitions=5) as c:
        try:
            yield Target("kcodec", c.bootstrap, java, cluster=c)
        finally:
            record(TOOLS, c)


def test_producer_then_consumer_performance(target):
    topic = target.create_topic("perf", 3, 2)
    produced = perf("ProducerPerformance", "--bootstrap-server", target.bootstrap, "--topic", topic,
                    "--num-records", str(RECORDS), "--record-size", "100", "--throughput", "-1",
                    "--command-property", "acks=all", "compression.type=lz4")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    sent = SENT.findall(produced.stdout)
    assert sent and int(sent[-1]) == RECORDS, produced.stdout
    if target.cluster is not None:
        c = target.cluster
        assert sum(c.state.logs.bounds(c.topics()[topic].topic_id, p)[1] for p in range(3)) == RECORDS
    consumed = perf("ConsumerPerformance", "--bootstrap-server", target.bootstrap, "--topic", topic,
                    "--num-records", str(RECORDS), "--timeout", "30000", "--group", target.name("perf"))
    assert consumed.returncode == 0, consumed.stdout + consumed.stderr
    header, row = [line for line in consumed.stdout.splitlines() if "," in line][-2:]
    stats = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in row.split(",")]))
    assert int(stats["data.consumed.in.nMsg"]) == RECORDS, consumed.stdout
    assert float(stats["data.consumed.in.MB"]) == pytest.approx(RECORDS * 100 / 1024 / 1024, rel=1e-3)
