"""The guide's example clients (examples/producer.py, examples/consumer.py) run as a user runs them, and the
round trip both broker suites check: what the producer writes in two rounds, the consumer reads back
(tests/protocol/test_protocol_examples.py against kcodec broker, tests/kafka/test_examples_real_kafka.py
against Apache Kafka)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from needs import missing

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.exists():
        missing(f"examples/ beside the tests (at {EXAMPLES})")
    return path


def run(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(example(name)), *args], capture_output=True, text=True, timeout=120)


def produce_then_consume(bootstrap: str, topic: str, compression: str, login: list[str]) -> str:
    """Five records to partition 1 twice, then the consumer reads the ten back; the producer's last output."""
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
    return out.stdout
