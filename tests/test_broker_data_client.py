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
    assert r.cpu_s > 0 and r.peak_rss_mb > 0 and r.client_faults >= 0 and r.client_major_faults >= 0
    assert all(v > 0 for v in r.client_threads.values())  # by thread name, user and sys; a tiny case may take no tick


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


def test_the_fetch_trace_says_what_each_response_carried(tmp_path):
    """--trace's reading of librdkafka's log (``debug=fetch,protocol``): per response its partitions and
    messages, the time from its arrival to the next Fetch sent, and the most messages queued ahead of
    consume() (qlen before an enqueue plus the messages enqueued)."""
    head = "|rdkafka#consumer-3| [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: "
    lines = [(100.000, "SEND", "Sent FetchRequest (v16, 461 bytes @ 0, CorrId 3)"),
             (100.050, "RECV", "Received FetchResponse (v16, 2000000 bytes, CorrId 3, rtt 50.00ms)"),
             (100.060, "CONSUME", "Enqueue 900 message(s) (90000 bytes, 900 ops) on bench-data [0] fetch queue "
                                  "(qlen 0, v2, last_offset 899, 0 ctrl msgs, 0 aborted msgsets, uncompressed)"),
             (100.070, "CONSUME", "Enqueue 800 message(s) (80000 bytes, 800 ops) on bench-data [1] fetch queue "
                                  "(qlen 700, v2, last_offset 799, 0 ctrl msgs, 0 aborted msgsets, uncompressed)"),
             (100.080, "SEND", "Sent FetchRequest (v16, 461 bytes @ 0, CorrId 4)"),
             (100.100, "RECV", "Received FetchResponse (v16, 1000000 bytes, CorrId 4, rtt 20.00ms)"),
             (100.110, "CONSUME", "Enqueue 100 message(s) (10000 bytes, 100 ops) on bench-data [1] fetch queue "
                                  "(qlen 50, v2, last_offset 899, 0 ctrl msgs, 0 aborted msgsets, uncompressed)"),
             (100.120, "SEND", "Sent FetchRequest (v16, 461 bytes @ 0, CorrId 5)")]
    log = tmp_path / "fetch.log"
    log.write_text("".join(f"%7|{at:.3f}|{tag}{head}{text}\n" for at, tag, text in lines))
    got = broker_data.fetch_trace(log, since=100.0)
    assert (got["count"], got["sizes_kb"], got["max_rtt_ms"]) == (2, [2000, 1000], 50.0)
    assert got["partitions"] == {"median": 1.5, "min": 1, "max": 2}
    assert got["messages"] == {"median": 900, "min": 100, "max": 1700}
    assert got["gap_ms"] == pytest.approx({"median": 25.0, "min": 20.0, "max": 30.0})
    assert got["queued_max"] == 1500
    assert got["last_s"] == pytest.approx(0.1)
