"""benchmarks/broker_data.py's rounds run their client (benchmarks/broker_client.py) in a fresh process: a small
case goes through it and back, and a client that fails or hangs ends the round with an error naming why."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from needs import missing, need_module

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if not (BENCH / "broker_client.py").is_file():  # .ci/test_wheel.py copies benchmarks/ beside the tests too
    missing(f"benchmarks/ beside the tests (at {BENCH})")
sys.path.append(str(BENCH))

import broker_data  # noqa: E402

pytestmark = pytest.mark.checkout  # a benchmark's harness: no codec backend to test against a wheel


def test_a_round_through_kcodec_broker_with_the_client_apart():
    need_module("confluent_kafka")
    r = broker_data.run("kcodec", 100, 3, total_bytes=300_000)
    assert (r.broker, r.size, r.partitions, r.messages) == ("kcodec", 100, 3, 3_000)
    assert 0 < r.loop_s <= r.produce_s and 0 < r.first_s <= r.consume_s
    assert 0 < r.client_start_s < 60  # the process's start and imports, measured apart from the spans
    assert r.cpu_s > 0 and r.peak_rss_mb > 0 and r.client_faults >= 0


def _spec(**change: object) -> dict:
    return {"bootstrap": "127.0.0.1:1", "broker_pid": 1, "size": 100, "partitions": 1, "total_bytes": 1000,
            "log": None, **change}


@pytest.mark.parametrize("change, says", [({"size": 0}, "spec['size']: at least 1, not 0"),
                                          ({"bootstrap": None}, "spec['bootstrap']: a str, not None"),
                                          ({"total_bytes": 150}, "at least two messages of 100 B, not 150")])
def test_a_bad_spec_is_named(change, says):
    with pytest.raises(RuntimeError, match=r"kcodec: the client process exited with 2: .*bad spec") as e:
        broker_data.client("kcodec", _spec(**change))  # type: ignore[arg-type]
    assert says in str(e.value)


def test_a_client_that_hangs_is_killed():
    need_module("confluent_kafka")
    with socket.socket() as s:  # a port that accepts connections and never answers
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(RuntimeError, match=r"tansu: the client process did not finish in 3 s \(killed\)"):
            broker_data.client("tansu", _spec(bootstrap=f"127.0.0.1:{s.getsockname()[1]}"), timeout=3)
