"""The guide's example clients (examples/producer.py, examples/consumer.py) against Apache Kafka itself, as
tests/protocol/test_protocol_examples.py runs them against kcodec broker: SCRAM and PLAIN logins, a
compressed and a plain batch, what one writes the other reads back."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import real_kafka as rk

from kcodec.client import NewTopic, SyncClient

pytestmark = pytest.mark.kafka
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("mechanism, compression", [("SCRAM-SHA-512", "lz4"), ("PLAIN", "none")])
def test_what_the_producer_writes_to_kafka_the_consumer_reads(real_kafka, mechanism, compression):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    with SyncClient(real_kafka.bootstrap, request_timeout=20) as c:  # plaintext: a super user
        [made] = c.create_topics([NewTopic(topic, 2, 1)])
        assert made.error == 0
    bootstrap = real_kafka.sasl_bootstrap
    login = ["--user", "admin", "--password", rk.SASL_USERS["admin"], "--mechanism", mechanism]
    for round_ in range(2):
        out = run("producer.py", "--bootstrap", bootstrap, "--topic", topic, "--partition", "1", "--count", "5",
                  "--message", f"round {round_}", "--compression", compression, *login)
        assert out.returncode == 0, out.stderr
        assert f"produced 5 records to {topic}-1 at offset {5 * round_}" in out.stdout
    got = run("consumer.py", "--bootstrap", bootstrap, "--topic", topic, "--partition", "1", "--count", "10",
              "--idle", "10", *login)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert lines[:2] == [f"{topic}-1@0 key=key-0 value=round 0 #0", f"{topic}-1@1 key=key-1 value=round 0 #1"]
    assert lines[9] == f"{topic}-1@9 key=key-0 value=round 1 #4"
    assert lines[10].startswith(f"consumed 10 records from {topic}-1")
