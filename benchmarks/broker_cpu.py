"""The CPU ``kcodec broker`` spends per message, without a client's noise: the same Produce and Fetch requests
replayed against a broker subprocess, its CPU per phase measured.

    python benchmarks/broker_cpu.py [--cases 100x1,100x12,1000x1] [--repeat 3] [--callgrind]

Each case produces 50 MB (acks=all, one request in flight, as librdkafka mostly has) in batches the size
librdkafka made of them in broker_data.py's runs (4,500 records of 100 B, 510 a partition for 12 partitions,
990 of 1 KB), then fetches it all back with librdkafka's sizes (1 MiB a partition, 50 MiB a response). The
broker's CPU per phase comes from /proc/PID/task/*/schedstat (nanoseconds, user and system); with
``--callgrind`` the broker runs under valgrind's callgrind and each phase's instructions are counted
(``callgrind_control``: zeroed before, dumped after; user space only, repeatable on a loaded machine).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from broker_load import _installed_env  # noqa: E402

import kcodec  # noqa: E402
from kcodec.messages import CreateTopicsRequest, FetchRequest, ProduceRequest  # noqa: E402
from kcodec.records import BatchBuilder  # noqa: E402

TOPIC = "cpu"
TOTAL_BYTES = 50_000_000
# records a batch in librdkafka's requests in broker_data.py's runs (linger 5 ms, batch.size 1,000,000)
PER_BATCH = {(100, 1): 4500, (100, 12): 510, (1000, 1): 990, (1000, 12): 300}
_I32 = struct.Struct(">i")


class Wire:
    """One blocking connection: requests out, whole responses in (read into one reused buffer)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray(64 << 20)
        self.correlation = 0

    def call(self, frame: bytes) -> memoryview:
        self.sock.sendall(frame)
        view = memoryview(self.buf)
        got = 0
        while got < 4 or got < 4 + _I32.unpack_from(self.buf, 0)[0]:
            n = self.sock.recv_into(view[got:])
            if not n:
                raise ConnectionError("the broker closed the connection")
            got += n
        return view[:got]


def per_batch(size: int, partitions: int) -> int:
    return PER_BATCH.get((size, partitions), max(1, 500_000 // size))


def produce_frames(size: int, partitions: int) -> list[bytes]:
    """The case's Produce v9 requests, one partition's batch each, partitions in turn."""
    per = per_batch(size, partitions)
    n = TOTAL_BYTES // size
    value, ts = b"x" * size, int(time.time() * 1000)
    frames = []
    for i, start in enumerate(range(0, n, per)):
        b = BatchBuilder()
        b.extend([(None, value, (), ts)] * min(per, n - start))
        req = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[ProduceRequest.TopicProduceData(
            name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=i % partitions, records=b.build())])])
        frames.append(kcodec.encode_request(req, 9, correlation_id=i, client_id="rdkafka"))
    return frames


def fetch_frame(offsets: list[int], correlation: int) -> bytes:
    req = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                           FetchRequest.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20,
                                                       current_leader_epoch=-1, log_start_offset=-1)
                           for p, o in enumerate(offsets)])])
    return kcodec.encode_request(req, 11, correlation_id=correlation, client_id="rdkafka")


def fetch_all(w: Wire, partitions: int, messages: int) -> int:
    """Fetch from offset 0 of every partition until every message came back; the number of Fetches."""
    offsets = [0] * partitions
    fetches = 0
    while sum(offsets) < messages:
        fetches += 1
        _, resp = kcodec.decode_response(bytes(w.call(fetch_frame(offsets, fetches))), 1, 11)
        for part in resp.responses[0].partitions:
            assert part.error_code == 0, part
            records = part.records
            if records:
                last = len(records)
                pos = 0  # the next offset after the last whole batch: its base offset plus last offset delta
                while pos + 61 <= last:
                    base, length = struct.unpack_from(">qi", records, pos)
                    delta = _I32.unpack_from(records, pos + 23)[0]
                    if pos + 12 + length > last:
                        break
                    offsets[part.partition_index] = base + delta + 1
                    pos += 12 + length
    return fetches


def cpu_ns(pid: int) -> int:
    """User + system time of every thread of ``pid`` so far (schedstat: nanoseconds)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(Path(path).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def start(callgrind: Optional[str]) -> tuple[subprocess.Popen[str], int]:
    cmd = [sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", "--max-partition-bytes",
           str(2 * TOTAL_BYTES)]
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_installed_env())
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "bootstrap" not in line:
        proc.kill()
        raise RuntimeError(f"the broker did not start: {line!r}")
    return proc, int(line.split("bootstrap ")[1].split(",")[0].rsplit(":", 1)[1])


_TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def _phase(pid: int, callgrind: Optional[str], fn: Callable[[], Any]) -> tuple[float, int, Any]:
    """(broker CPU seconds, instructions or 0, fn's result) of one phase."""
    if callgrind:
        subprocess.run(["callgrind_control", "-z", str(pid)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    before = cpu_ns(pid)
    out = fn()
    cpu = (cpu_ns(pid) - before) / 1e9
    instructions = 0
    if callgrind:
        dumps = set(glob.glob(callgrind + "*"))
        subprocess.run(["callgrind_control", "-d", str(pid)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        new = sorted(set(glob.glob(callgrind + "*")) - dumps)
        found = _TOTAL.search(Path(new[-1]).read_text(errors="replace")) if new else None
        instructions = int(found.group(1)) if found else 0
    return cpu, instructions, out


def run(size: int, partitions: int, callgrind: bool = False, keep: Optional[str] = None) -> dict[str, Any]:
    """One case through a fresh broker; ``keep``: a directory for callgrind's dumps (else dropped)."""
    frames = produce_frames(size, partitions)
    messages = TOTAL_BYTES // size
    with tempfile.TemporaryDirectory(prefix="broker-cpu-") as d:
        out = os.path.join(keep or d, f"cg-{size}x{partitions}.out") if callgrind else None
        proc, port = start(out)
        try:
            w = Wire(port)
            create = CreateTopicsRequest(timeout_ms=30_000, topics=[CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=partitions, replication_factor=1)])
            w.call(kcodec.encode_request(create, 7, correlation_id=0, client_id="rdkafka"))
            w.call(frames[0])  # the first request's one-time costs (the topic's settings) out of the count

            def produce() -> None:
                for f in frames[1:]:
                    w.call(f)
            p_cpu, p_ins, _ = _phase(proc.pid, out, produce)
            f_cpu, f_ins, fetches = _phase(proc.pid, out, lambda: fetch_all(w, partitions, messages))
        finally:
            proc.terminate()
            proc.wait(30)
    n = len(frames) - 1
    return {"case": f"{size}x{partitions}", "produce_requests": n, "produce_cpu_s": p_cpu, "produce_instructions": p_ins,
            "fetches": fetches, "fetch_cpu_s": f_cpu, "fetch_instructions": f_ins,
            "produce_us_per_message": p_cpu / (messages - per_batch(size, partitions)) * 1e6}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="100x1,100x12,1000x1")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every case (interleaved)")
    ap.add_argument("--callgrind", action="store_true", help="count instructions per phase (slow)")
    ap.add_argument("--keep", metavar="DIR", help="with --callgrind: keep the dumps here (callgrind_annotate)")
    args = ap.parse_args(argv)
    cases = [tuple(int(x) for x in c.split("x")) for c in args.cases.split(",") if c]
    for turn in range(args.repeat):
        for size, partitions in cases:
            r = run(size, partitions, args.callgrind, args.keep)
            print(f"round {turn} {r['case']}: produce {r['produce_requests']} requests, broker CPU "
                  f"{r['produce_cpu_s'] * 1e3:.1f} ms ({r['produce_us_per_message']:.3f} us a message), "
                  f"{r['produce_instructions']:,} instructions; fetch {r['fetches']} requests, broker CPU "
                  f"{r['fetch_cpu_s'] * 1e3:.1f} ms, {r['fetch_instructions']:,} instructions", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
