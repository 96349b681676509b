"""confluent-kafka produces (acks=all) and then consumes N messages through a broker subprocess:
`kcodec broker`, Tansu 0.6.0 (in memory) or Apache Kafka 4.4 (one KRaft node, tests/kafka/real_kafka.py),
measured alike. `python benchmarks/broker_data.py` prints a table (`--brokers kcodec,kafka` picks brokers,
`--rounds N` alternates them N times, `--json FILE` writes every result); benchmarks/test_broker_data.py
runs the same under pytest-benchmark."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kafka"))
from broker_load import start_broker  # noqa: E402

TOPIC = "bench-data"
BROKERS = ("kcodec", "tansu", "kafka")
CASES = [(100, 1), (100, 12), (1000, 1), (1000, 12)]  # (message bytes, partitions)
TOTAL_BYTES = 50_000_000  # per case: 500,000 messages of 100 bytes, 50,000 of 1 KB


@dataclass
class Result:
    broker: str
    size: int
    partitions: int
    messages: int
    produce_s: float
    consume_s: float
    peak_rss_mb: float
    cpu_s: float  # the broker process's user + system CPU over the whole run (robust to a busy machine)

    def rate(self, seconds: float) -> tuple[float, float]:
        return self.messages / seconds, self.messages * self.size / seconds / 1e6

    def row(self) -> str:
        pm, pb = self.rate(self.produce_s)
        cm, cb = self.rate(self.consume_s)
        return (f"| {self.broker} | {self.size} B | {self.partitions} | {pm:,.0f} msg/s ({pb:.0f} MB/s) | "
                f"{cm:,.0f} msg/s ({cb:.0f} MB/s) | {self.peak_rss_mb:.0f} MiB | {self.cpu_s:.2f} s |")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def broker(kind: str) -> Iterator[tuple[str, int]]:
    """(bootstrap, pid) of a fresh broker subprocess, stopped afterwards."""
    if kind == "tansu":
        import kafka_upstream as ku

        with ku.tansu() as upstream:
            yield upstream.address, upstream.process.pid
        return
    if kind == "kafka":  # one combined KRaft node, Kafka's defaults (real_kafka.COMMON: fewer threads)
        import tempfile

        import real_kafka as rk

        with tempfile.TemporaryDirectory(prefix="bench-kafka-") as d:
            cluster = rk.start(1, directory=Path(d))
            try:
                process = cluster.nodes[0].process
                assert process is not None
                yield cluster.bootstrap, process.pid
            finally:
                cluster.stop()
        return
    proc, host, port = start_broker(("--max-partition-bytes", str(2 * TOTAL_BYTES)))
    try:
        yield f"{host}:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def run(kind: str, size: int, partitions: int, total_bytes: int = TOTAL_BYTES) -> Result:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    n = total_bytes // size
    value = b"x" * size
    with broker(kind) as (bootstrap, pid):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(20)
        time.sleep(0.5)  # Tansu answers CreateTopics before its metadata has the topic
        p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 2_000_000,
                         "message.timeout.ms": 60_000})
        failed: list[str] = []
        p.produce(TOPIC, value, partition=0, on_delivery=lambda e, _m: e and failed.append(str(e)))
        p.flush(30)  # the producer knows the leaders before the clock starts
        t0 = time.perf_counter()
        for i in range(n - 1):
            p.produce(TOPIC, value, partition=i % partitions)
            if i % 100_000 == 0:
                p.poll(0)
        left = p.flush(120)
        produce_s = time.perf_counter() - t0
        if left or failed:
            raise RuntimeError(f"{kind}: {left} undelivered, {failed[:3]}")
        # the whole case may wait in librdkafka's queue: past queued.min.messages (100,000) it pauses fetching
        # for fetch.queue.backoff.ms (1 s), so small messages would measure that pause, not the broker. The
        # fetch sizes are librdkafka's own (max.partition.fetch.bytes 1 MiB, fetch.max.bytes 50 MiB): Tansu
        # answers about 5 MB whatever they are, so a size set here would pace only a broker that honours it
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "queued.min.messages": 2 * n, "queued.max.messages.kbytes": 4 * total_bytes // 1024})
        c.assign([ck.TopicPartition(TOPIC, q, 0) for q in range(partitions)])
        got = 0
        t0 = time.perf_counter()
        deadline = t0 + 120
        while got < n and time.perf_counter() < deadline:
            for m in c.consume(10_000, 0.5):
                if m.error():
                    raise RuntimeError(f"{kind}: {m.error()}")
                got += 1
        consume_s = time.perf_counter() - t0
        c.close()
        del p, admin  # before the broker stops: no reconnect attempts logged
        if got != n:
            raise RuntimeError(f"{kind}: consumed {got} of {n}")
        return Result(kind, size, partitions, n, produce_s, consume_s, peak_rss_mb(pid), cpu_seconds(pid))


HEADER = ("| broker | message | partitions | produce (acks=all) | consume | broker peak RSS | broker CPU |\n"
          "|---|---|---|---|---|---|---|")


def main(argv: list[str]) -> int:
    import argparse
    import dataclasses
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", default="kcodec,tansu", help=f"comma-separated, of {', '.join(BROKERS)}")
    p.add_argument("--rounds", type=int, default=1, help="each case this many times, the brokers alternated")
    p.add_argument("--json", metavar="FILE", help="write every result here")
    p.add_argument("--what", default="", help="a line saying how and where it ran, kept in the JSON")
    args = p.parse_args(argv)
    kinds = [k for k in args.brokers.split(",") if k]
    if set(kinds) - set(BROKERS):
        p.error(f"unknown broker(s) {set(kinds) - set(BROKERS)}")
    results = []
    print(HEADER)
    for _ in range(args.rounds):
        for size, partitions in CASES:
            for kind in kinds:
                r = run(kind, size, partitions)
                results.append(r)
                print(r.row(), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"what": args.what, "total_bytes_per_case": TOTAL_BYTES,
                                               "results": [dataclasses.asdict(r) for r in results]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
