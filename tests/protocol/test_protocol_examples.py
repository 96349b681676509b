"""The guide's two example clients (examples/producer.py, examples/consumer.py) against kcodec broker: what one
produces the other reads back, with SASL, compression and a leader that is not the bootstrap broker; and
they use nothing but kcodec.protocol, kcodec.records and the public API, in at most ~150 lines each.
Against Apache Kafka: tests/kafka/test_examples_real_kafka.py."""

from __future__ import annotations

import ast

import pytest
from example_clients import example, produce_then_consume, run

ALLOWED = ("kcodec", "kcodec.protocol", "kcodec.protocol.aio", "kcodec.protocol.blocking", "kcodec.protocol.sasl",
           "kcodec.records", "kcodec.messages", "kcodec.errors")


@pytest.fixture(scope="module")
def cluster():
    from kcodec_broker import Cluster

    with Cluster(brokers=2, num_partitions=2, users={"alice": "secret"}) as c:
        yield c


@pytest.mark.parametrize("mechanism, compression", [("PLAIN", "none"), ("SCRAM-SHA-256", "zstd")])
def test_what_the_producer_writes_the_consumer_reads(cluster, mechanism, compression):
    topic = f"orders-{compression}"
    host, port = cluster.addresses[0]
    login = ["--user", "alice", "--password", "secret", "--mechanism", mechanism]
    out = produce_then_consume(f"{host}:{port}", topic, compression, login)
    leaders = {b for b in cluster.addresses if f"leader {b[0]}:{b[1]}" in out}
    assert len(leaders) == 1  # the partition's leader, found through Metadata


def test_refusals_are_reported_not_raised(cluster):
    host, port = cluster.addresses[0]
    out = run("producer.py", "--bootstrap", f"{host}:{port}", "--topic", "t", "--user", "alice", "--password", "no")
    assert out.returncode == 1 and "producer: SaslError: SASL_AUTHENTICATION_FAILED" in out.stderr
    got = run("consumer.py", "--bootstrap", f"{host}:{port}", "--topic", "never-made", "--user", "alice",
              "--password", "secret", "--timeout", "5")
    assert got.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in got.stderr


@pytest.mark.parametrize("name", ["producer.py", "consumer.py"])
def test_examples_use_only_the_public_layers(name):
    source = example(name).read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 150
    used = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            used.update(a.name for a in node.names if a.name.startswith("kcodec"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kcodec"):
            used.add(node.module or "")
    assert used and used <= set(ALLOWED), used - set(ALLOWED)
    assert {"kcodec.protocol", "kcodec.records"} & used
