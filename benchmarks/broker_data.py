"""confluent-kafka produces (acks=all) and then consumes N messages through a broker subprocess:
`kcodec broker`, Tansu 0.6.0 (in memory) or Apache Kafka 4.4 (one KRaft node, tests/kafka/real_kafka.py),
measured alike, the client (topic, producer, consumer) a fresh Python process each round
(benchmarks/broker_client.py), started alike for every broker. `python benchmarks/broker_data.py` prints a
table (`--brokers kcodec,kafka` picks brokers, `--rounds N` runs every case N times, the brokers' order in
each round from `schedule()`, `--cases 100x1,100x12` picks cases, `--pin` puts the broker and the client on a
CPU each, `--json FILE` writes every result, `--trace DIR` keeps librdkafka's fetch log of each consume and
says per run what its Fetch requests were); benchmarks/test_broker_data.py runs the same under
pytest-benchmark."""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kafka"))
import broker_client  # noqa: E402
from broker_client import cpu_seconds  # noqa: E402
from broker_load import start_broker  # noqa: E402

from kcodec.sizes.timing import round_order  # noqa: E402

TOPIC = "bench-data"
BROKERS = ("kcodec", "tansu", "kafka")
Case = tuple[int, int]  # (message bytes, partitions)
CASES: list[Case] = [(100, 1), (100, 12), (1000, 1), (1000, 12)]
TOTAL_BYTES = 50_000_000  # per case: 500,000 messages of 100 bytes, 50,000 of 1 KB
# Rounds of each case in benchmarks/test_broker_data.py (KCODEC_BROKER_ROUNDS): one round of the four cases
# through the three brokers takes about 30 s, and a single sample moved a kcodec ÷ Tansu ratio across 1 from
# run to run; three rounds keep the suite near 1.5 minutes (benchmarks/NOTES.md, broker10).
ROUNDS_DEFAULT = 3
# A round's client may take 20 s to create the topic, 30 s for its first message, 120 s to flush and 120 s to
# consume (broker_client.measure()): past this its process is killed and the round fails
CLIENT_TIMEOUT_S = 360.0


def rounds_wanted() -> int:
    """KCODEC_BROKER_ROUNDS, else ROUNDS_DEFAULT."""
    got = os.environ.get("KCODEC_BROKER_ROUNDS", "")
    if not got:
        return ROUNDS_DEFAULT
    if not got.isdigit() or int(got) < 1:
        raise ValueError(f"KCODEC_BROKER_ROUNDS: a whole number of rounds, at least 1, not {got!r}")
    return int(got)


def schedule(kinds: list[str], cases: list[Case], rounds: int) -> Iterator[tuple[int, Case, str]]:
    """(round, case, broker) in the order to run them: round after round, every case in each, the brokers'
    order in a round from ``round_order`` (each broker first equally often and right after every other equally
    often), so that no broker always runs on a machine the same neighbour has just left."""
    for turn in range(rounds):
        for case in cases:
            for i in round_order(len(kinds), turn):
                yield turn, case, kinds[i]


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
    first_s: float = float("nan")  # from assign() to the first consume() that returns messages (10,000)
    produce_cpu_s: float = float("nan")  # the broker's CPU while producing, and while consuming
    consume_cpu_s: float = float("nan")
    fetches: dict[str, Any] = field(default_factory=dict)  # with --trace: fetch_trace()
    # the produce() loop (before flush()): the producing thread's CPU, and its time waiting for a CPU (runnable,
    # not running: other work on the shared cores), from /proc/thread-self/schedstat; the loop never blocks
    loop_s: float = float("nan")
    loop_cpu_s: float = float("nan")
    loop_cpu_wait_s: float = float("nan")
    # the consume() loop likewise: its thread's CPU and wait for a CPU; the rest of consume_s it was blocked in
    # consume(), waiting for librdkafka to have messages (the broker's answers, or the client's parsing of them)
    consume_loop_cpu_s: float = float("nan")
    consume_cpu_wait_s: float = float("nan")
    client_threads_cpu_s: float = float("nan")  # librdkafka's own threads meanwhile (fetching, parsing answers)
    # the client's minor page faults meanwhile: fresh memory for the messages librdkafka holds ahead of consume()
    client_faults: int = -1
    client_major_faults: int = -1
    # each client thread's CPU meanwhile by name, user ("rdk:broker1") and system ("rdk:broker1 sys"): its page faults
    client_threads: dict[str, float] = field(default_factory=dict)
    # the client's process start and imports (broker_client.py, a fresh process each round), before the timed
    # spans: what running the client apart adds to a round's time
    client_start_s: float = float("nan")

    def rate(self, seconds: float) -> tuple[float, float]:
        return self.messages / seconds, self.messages * self.size / seconds / 1e6

    def row(self) -> str:
        pm, pb = self.rate(self.produce_s)
        cm, cb = self.rate(self.consume_s)
        return (f"| {self.broker} | {self.size} B | {self.partitions} | {pm:,.0f} msg/s ({pb:.0f} MB/s) | "
                f"{cm:,.0f} msg/s ({cb:.0f} MB/s) | {self.peak_rss_mb:.0f} MiB | {self.cpu_s:.2f} s |")

    def detail(self) -> str:
        """How the run went: the broker's CPU while producing and consuming, the first message, the Fetches."""
        out = (f"  {self.broker} {self.size} B x {self.partitions}: broker CPU produce {self.produce_cpu_s:.2f} s, "
               f"consume {self.consume_cpu_s:.2f} s; produce() loop {self.loop_s:.2f} s = its thread's CPU "
               f"{self.loop_cpu_s:.2f} s + waiting for a CPU {self.loop_cpu_wait_s:.2f} s; "
               f"first message {self.first_s * 1e3:.0f} ms; consume() loop {self.consume_s:.2f} s = its thread's CPU "
               f"{self.consume_loop_cpu_s:.2f} s + waiting for a CPU {self.consume_cpu_wait_s:.2f} s + for messages "
               f"{self.consume_s - self.consume_loop_cpu_s - self.consume_cpu_wait_s:.2f} s, librdkafka's threads' "
               f"CPU meanwhile {self.client_threads_cpu_s:.2f} s ({self._threads()}), the client's page faults "
               f"{self.client_faults:,} minor, {self.client_major_faults:,} major, its "
               f"process start and imports {self.client_start_s:.2f} s")
        f = self.fetches
        if f:
            out += (f"; {f['count']} Fetch responses, {f['median_kb']:,.0f} KB median (max {f['max_kb']:,.0f}), "
                    f"round trip {f['median_rtt_ms']:.1f} ms median (max {f['max_rtt_ms']:.1f}), last at "
                    f"{f['last_s'] * 1e3:.0f} ms; {f['backoffs']} fetch backoffs")
            if f.get("gap_ms"):
                out += (f"; a response's partitions {f['partitions']['median']:g} median "
                        f"({f['partitions']['min']:g}-{f['partitions']['max']:g}), messages "
                        f"{f['messages']['median']:,.0f} ({f['messages']['min']:,}-{f['messages']['max']:,}), "
                        f"from a response to the next Fetch {f['gap_ms']['median']:.1f} ms median "
                        f"({f['gap_ms']['min']:.1f}-{f['gap_ms']['max']:.1f}), at most {f['queued_max']:,} messages "
                        f"queued ahead of consume()")
        return out

    def _threads(self) -> str:
        return ", ".join(f"{k} {v:.2f}" for k, v in sorted(self.client_threads.items(), key=lambda kv: -kv[1]))


_STAMP = re.compile(r"^%\d+\|(\d+\.\d+)\|")
_RECEIVED = re.compile(r"Received FetchResponse \(v\d+, (\d+) bytes, CorrId \d+, rtt ([\d.]+)ms")
_SENT = re.compile(r"Sent FetchRequest \(")
_ENQUEUED = re.compile(r"Enqueue (\d+) message\(s\) .* on \S+ \[(\d+)\] fetch queue \(qlen (\d+)")


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else {}


def fetch_trace(log: Path, since: float) -> dict[str, Any]:
    """The Fetch responses librdkafka logged (``debug=fetch,protocol``: wall-clock stamps), from ``since``
    (time.time()): how many, their sizes and round trips, when the last came; its fetch backoffs
    (fetch.queue.backoff.ms and the like); and per response the partitions and messages it carried and the
    time from its arrival to the next Fetch sent (librdkafka parses a response before it sends the next)."""
    got: list[dict[str, Any]] = []  # per response: at, bytes, rtt, partitions, messages, gap
    backoffs = 0
    queued = 0  # the most messages librdkafka held ahead of consume() (a partition's fetch queue forwards to
    # the consumer's: its qlen is every partition's), each a fresh allocation until consume() frees it
    for line in log.read_text(errors="replace").splitlines():
        stamp = _STAMP.match(line)
        if stamp is None:
            continue
        at = float(stamp.group(1)) - since
        if m := _RECEIVED.search(line):
            got.append({"at": at, "bytes": int(m.group(1)), "rtt": float(m.group(2)), "partitions": set(),
                        "messages": 0, "gap": None})
        elif (m := _ENQUEUED.search(line)) and got:
            got[-1]["partitions"].add(int(m.group(2)))
            got[-1]["messages"] += int(m.group(1))
            queued = max(queued, int(m.group(3)) + int(m.group(1)))
        elif _SENT.search(line) and got and got[-1]["gap"] is None:
            got[-1]["gap"] = at - got[-1]["at"]
        elif "backoff" in line.lower() and "|FETCH" in line or "|BACKOFF|" in line:
            backoffs += 1
    if not got:
        return {"count": 0, "median_kb": 0, "max_kb": 0, "median_rtt_ms": 0.0, "max_rtt_ms": 0.0, "last_s": 0.0,
                "backoffs": backoffs}
    gaps = [g["gap"] * 1e3 for g in got if g["gap"] is not None]
    return {"count": len(got), "median_kb": statistics.median(g["bytes"] for g in got) / 1e3,
            "max_kb": max(g["bytes"] for g in got) / 1e3, "median_rtt_ms": statistics.median(g["rtt"] for g in got),
            "max_rtt_ms": max(g["rtt"] for g in got), "last_s": max(g["at"] for g in got), "backoffs": backoffs,
            "gap_ms": _spread(gaps), "partitions": _spread([len(g["partitions"]) for g in got]),
            "messages": _spread([g["messages"] for g in got]), "sizes_kb": [round(g["bytes"] / 1e3) for g in got],
            "queued_max": queued}


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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


@contextlib.contextmanager
def pinned(pid: int, on: bool) -> Iterator[None]:
    """With ``on``: the broker's threads on the second CPU, this thread (and the client process it starts,
    which inherits it) on the first, for the block: the broker and the client no longer take each other's
    CPU (other work on the machine still may). The produce() loop never blocks, yet on a shared machine it
    waits for a CPU for as long again as it runs, and that wait moves a run's produce rate more than either
    broker does."""
    if not on:
        yield
        return
    saved = os.sched_getaffinity(0)
    if len(saved) < 2:
        raise RuntimeError("--pin needs two CPUs")
    client, server = sorted(saved)[:2]
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), {server})
    os.sched_setaffinity(0, {client})
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def client(kind: str, spec: broker_client.Spec, timeout: float = CLIENT_TIMEOUT_S) -> dict[str, Any]:
    """One round's client in a fresh Python process (benchmarks/broker_client.py), started alike for every
    broker: what it measured, and ``client_start_s``, its process start and imports (outside the timed spans).
    A client that fails or outlives ``timeout`` (then killed) raises RuntimeError with its stderr's end."""
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(Path(broker_client.__file__)), json.dumps(spec)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        tail = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr or "")[-2000:]
        raise RuntimeError(f"{kind}: the client process did not finish in {timeout:g} s (killed): {tail}") from None
    if done.returncode != 0:
        raise RuntimeError(f"{kind}: the client process exited with {done.returncode}: {done.stderr[-2000:]}")
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"{kind}: the client process printed no result: {done.stdout[-500:]!r}") from None
    got["client_start_s"] = got.pop("ready") - started
    return got


def run(kind: str, size: int, partitions: int, total_bytes: int = TOTAL_BYTES, trace: Optional[Path] = None,
        pin: bool = False) -> Result:
    """One case through a fresh broker, its client a fresh process (client()); ``trace``: a directory for
    librdkafka's fetch log of the consume; ``pin``: the broker and the client each on a CPU of its own
    (pinned(): the client's process inherits this thread's CPU)."""
    with broker(kind) as (bootstrap, pid), pinned(pid, pin):
        log = trace / f"{kind}-{size}x{partitions}-{time.time():.0f}.log" if trace is not None else None
        got = client(kind, {"bootstrap": bootstrap, "broker_pid": pid, "size": size, "partitions": partitions,
                            "total_bytes": total_bytes, "log": None if log is None else str(log)})
        since = got.pop("log_since")
        return Result(kind, size, partitions, peak_rss_mb=peak_rss_mb(pid), cpu_s=cpu_seconds(pid),
                      fetches=fetch_trace(log, since) if log is not None else {}, **got)


HEADER = ("| broker | message | partitions | produce (acks=all) | consume | broker peak RSS | broker CPU |\n"
          "|---|---|---|---|---|---|---|")


def main(argv: list[str]) -> int:
    import argparse
    import dataclasses

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", default="kcodec,tansu", help=f"comma-separated, of {', '.join(BROKERS)}")
    p.add_argument("--rounds", type=int, default=1,
                   help="each case this many times, the brokers' order per round from schedule()")
    p.add_argument("--json", metavar="FILE", help="write every result here")
    p.add_argument("--what", default="", help="a line saying how and where it ran, kept in the JSON")
    p.add_argument("--cases", default=",".join(f"{s}x{n}" for s, n in CASES),
                   help="comma-separated SIZExPARTITIONS, e.g. 100x1,100x12 (default: all four)")
    p.add_argument("--pin", action="store_true",
                   help="each broker on the second CPU, the client on the first (see pinned())")
    p.add_argument("--trace", metavar="DIR", type=Path,
                   help="keep librdkafka's fetch log of each consume here; print each run's Fetches")
    args = p.parse_args(argv)
    kinds = [k for k in args.brokers.split(",") if k]
    if set(kinds) - set(BROKERS):
        p.error(f"unknown broker(s) {set(kinds) - set(BROKERS)}")
    try:
        cases = [(int(c.split("x")[0]), int(c.split("x")[1])) for c in args.cases.split(",") if c]
    except (ValueError, IndexError):
        p.error(f"--cases: SIZExPARTITIONS, comma-separated, not {args.cases!r}")
    results = []
    details: list[str] = []
    if args.trace is not None:
        args.trace.mkdir(parents=True, exist_ok=True)
    print(HEADER)
    for _, (size, partitions), kind in schedule(kinds, cases, args.rounds):
        r = run(kind, size, partitions, trace=args.trace, pin=args.pin)
        results.append(r)
        print(r.row(), flush=True)
        details.append(r.detail())
    print("\n".join(["", *details]))
    if args.json:
        Path(args.json).write_text(json.dumps({"what": args.what, "total_bytes_per_case": TOTAL_BYTES,
                                               "results": [dataclasses.asdict(r) for r in results]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
