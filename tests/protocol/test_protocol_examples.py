"""The guide's two example clients (examples/producer.py, examples/consumer.py) against kcodec broker: what one
produces the other reads back, with SASL, compression and a leader that is not the bootstrap broker; and
they use nothing but kcodec.protocol, kcodec.records and the public API, in at most ~150 lines each.
Against Apache Kafka: tests/kafka/test_examples_real_kafka.py."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from needs import missing

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALLOWED = ("kcodec", "kcodec.protocol", "kcodec.protocol.aio", "kcodec.protocol.blocking", "kcodec.protocol.sasl",
           "kcodec.records", "kcodec.messages", "kcodec.errors")


def example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.exists():
        missing(f"examples/ beside the tests (at {EXAMPLES})")
    return path


@pytest.fixture(scope="module")
def cluster():
    from kcodec_broker import Cluster

    with Cluster(brokers=2, num_partitions=2, users={"alice": "secret"}) as c:
        yield c


def run(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(example(name)), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mechanism, compression", [("PLAIN", "none"), ("SCRAM-SHA-256", "zstd")])
def test_what_the_producer_writes_the_consumer_reads(cluster, mechanism, compression):
    topic = f"orders-{compression}"
    host, port = cluster.addresses[0]
    login = ["--user", "alice", "--password", "secret", "--mechanism", mechanism]
    for round_ in range(2):
        out = run("producer.py", "--bootstrap", f"{host}:{port}", "--topic", topic, "--partition", "1", "--count",
                  "5", "--message", f"round {round_}", "--compression", compression, *login)
        assert out.returncode == 0, out.stderr
        assert f"produced 5 records to {topic}-1 at offset {5 * round_}" in out.stdout
    leaders = {b for b in cluster.addresses if f"leader {b[0]}:{b[1]}" in out.stdout}
    assert len(leaders) == 1  # the partition's leader, found through Metadata
    got = run("consumer.py", "--bootstrap", f"{host}:{port}", "--topic", topic, "--partition", "1", "--count", "10",
              "--idle", "10", *login)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[:2] == [f"{topic}-1@0 key=key-0 value=round 0 #0", f"{topic}-1@1 key=key-1 value=round 0 #1"]
    assert lines[9] == f"{topic}-1@9 key=key-0 value=round 1 #4"
    assert lines[10].startswith(f"consumed 10 records from {topic}-1")


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
