"""100 concurrent connections x 1,000 requests against `kcodec broker`: 0 lost, throughput and p99 reported;
a latency probe beside a connection that pipelines requests (fair service): its p50 / p99.

`make bench` (or `python benchmarks/broker_load.py`); the figures go to the benchmark's extra_info.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker_load import run, run_fairness  # noqa: E402
from figures.store import stats  # noqa: E402


@pytest.mark.parametrize("request_kind", ["metadata", "listtopics"])
def test_broker_100_connections_x_1000_requests(benchmark, request_kind, bench_record):
    benchmark.group = "broker load"
    result = benchmark.pedantic(run, kwargs=dict(connections=100, requests=1000, request=request_kind),
                                rounds=1, iterations=1)
    benchmark.extra_info.update(requests_per_second=round(result.throughput), p50_ms=round(result.p50_ms, 2),
                                p99_ms=round(result.p99_ms, 2), max_ms=round(result.max_ms, 2), lost=result.lost)
    bench_record("broker-load", f"load[{request_kind}]", {"kcodec": stats(
        [result.throughput], unit="requests/s", p50_ms=result.p50_ms, p99_ms=result.p99_ms, max_ms=result.max_ms,
        lost=result.lost, sent=result.sent, answered=result.answered)}, connections=100, requests=1000)
    print("\n" + result.table())
    assert result.sent == result.answered == 100 * 1000 and result.lost == 0


def test_broker_probe_latency_beside_a_greedy_neighbour(benchmark):
    benchmark.group = "broker fairness"
    result = benchmark.pedantic(run_fairness, kwargs=dict(seconds=5.0), rounds=1, iterations=1)
    benchmark.extra_info.update(probes=result.probes, p50_ms=round(result.p50_ms, 2), p99_ms=round(result.p99_ms, 2),
                                max_ms=round(result.max_ms, 2), neighbour_answers=result.neighbour_answers)
    print("\n" + result.table())
    assert result.probes > 0 and result.neighbour_answers > 0
