"""Load on ``kcodec broker``: C concurrent connections x N requests each, every response checked.

    python benchmarks/broker_load.py [--connections 100] [--requests 1000] [--request metadata]
    python benchmarks/broker_load.py --greedy 5    # a latency probe beside a pipelining neighbour

Starts the broker in its own process (so the load generator does not share its interpreter), creates a
topic, then each connection sends its requests one after another, waiting for each answer: a response
whose correlation id is not the one sent, or one that never comes, counts as lost. Prints throughput
and latency percentiles; ``run`` returns them for the pytest-benchmark wrapper (test_broker_load.py).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Optional

import kcodec
from kcodec.messages import ApiVersionsRequest, CreateTopicsRequest, ListTopicsRequest, MetadataRequest

TOPIC = "load"
REQUESTS = {
    "metadata": (MetadataRequest(topics=[MetadataRequest.Topic(name=TOPIC)], allow_auto_topic_creation=False), 12),
    "apiversions": (ApiVersionsRequest(client_software_name="load", client_software_version="1"), 3),
    "listtopics": (ListTopicsRequest(list_internal=True), 1),
}
_I32 = struct.Struct(">i")


@dataclass
class LoadResult:
    connections: int
    requests: int
    sent: int
    answered: int
    lost: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def throughput(self) -> float:
        return self.answered / self.seconds if self.seconds else 0.0

    def table(self) -> str:
        return (f"{self.connections} connections x {self.requests} requests: {self.answered}/{self.sent} answered, "
                f"{self.lost} lost, {self.seconds:.2f} s, {self.throughput:,.0f} requests/s, "
                f"p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, max {self.max_ms:.2f} ms")


def _installed_env() -> dict[str, str]:
    """The environment for a broker run as an installed package runs: its modules' bytecode compiled (once,
    here) and read, not compiled again at every start (PYTHONDONTWRITEBYTECODE would make each broker
    compile some 300 modules, a third of a second of its CPU)."""
    import compileall

    import kcodec_broker

    for package in (kcodec, kcodec_broker):
        compileall.compile_dir(os.path.dirname(package.__file__), quiet=1)
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def start_broker(extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen[str], str, int]:
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, text=True, env=_installed_env())
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "bootstrap" not in line:
        proc.kill()
        raise RuntimeError(f"the broker did not start: {line!r}")
    host, port = line.split("bootstrap ")[1].split(",")[0].split(":")
    return proc, host, int(port)


def stop_broker(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(2)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


async def _create_topic(host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=3,
                                                                         replication_factor=1)])
    writer.write(kcodec.encode_request(req, 7, correlation_id=1, client_id="load"))
    size = _I32.unpack(await reader.readexactly(4))[0]
    _, resp = kcodec.decode_response(_I32.pack(size) + await reader.readexactly(size), 19, 7)
    assert resp.topics[0].error_code in (0, 36), resp
    writer.close()


async def _connection(host: str, port: int, frame: bytes, n: int, latencies: list[float], counts: list[int],
                      timeout: float) -> None:
    buf = bytearray(frame)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for i in range(n):
            _I32.pack_into(buf, 8, i)  # the correlation id follows size, api key and version
            t = time.perf_counter()
            writer.write(buf)
            counts[0] += 1
            head = await asyncio.wait_for(reader.readexactly(8), timeout)
            size, correlation = _I32.unpack_from(head, 0)[0], _I32.unpack_from(head, 4)[0]
            await asyncio.wait_for(reader.readexactly(size - 4), timeout)
            if correlation == i:
                latencies.append(time.perf_counter() - t)
                counts[1] += 1
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        pass  # whatever was not answered counts as lost
    finally:
        writer.close()


async def _load(host: str, port: int, connections: int, requests: int, request: str,
                timeout: float) -> LoadResult:
    await _create_topic(host, port)
    msg, version = REQUESTS[request]
    frame = kcodec.encode_request(msg, version, correlation_id=0, client_id="load")
    latencies: list[float] = []
    counts = [0, 0]  # sent, answered
    started = time.perf_counter()
    await asyncio.gather(*(_connection(host, port, frame, requests, latencies, counts, timeout)
                           for _ in range(connections)))
    seconds = time.perf_counter() - started
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3 if latencies else float("nan")

    total = connections * requests
    return LoadResult(connections, requests, counts[0], counts[1], total - counts[1], seconds, pct(0.50), pct(0.99),
                      latencies[-1] * 1e3 if latencies else float("nan"))


@dataclass
class FairnessResult:
    """A latency probe's round trips beside a greedy neighbour that pipelines requests without pause."""
    seconds: float
    probes: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    neighbour_answers: int

    def table(self) -> str:
        return (f"probe beside a pipelining neighbour, {self.seconds:.0f} s: {self.probes} round trips, "
                f"p50 {self.p50_ms:.2f} ms, p99 {self.p99_ms:.2f} ms, max {self.max_ms:.2f} ms; "
                f"the neighbour got {self.neighbour_answers:,} answers")


async def _greedy(host: str, port: int, frame: bytes, stop: asyncio.Event, answered: list[int]) -> None:
    """Write 256 pipelined requests at a time as fast as the socket takes them, and read every answer."""
    reader, writer = await asyncio.open_connection(host, port)
    frames = frame * 256

    async def write() -> None:
        while not stop.is_set():
            writer.write(frames)
            await writer.drain()

    async def read() -> None:
        while not stop.is_set():
            head = await reader.readexactly(4)
            await reader.readexactly(_I32.unpack(head)[0])
            answered[0] += 1
    tasks = [asyncio.ensure_future(write()), asyncio.ensure_future(read())]
    await stop.wait()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    writer.close()


async def _fairness(host: str, port: int, seconds: float, interval: float, timeout: float) -> FairnessResult:
    await _create_topic(host, port)
    msg, version = REQUESTS["metadata"]
    frame = kcodec.encode_request(msg, version, correlation_id=0, client_id="greedy")
    stop, answered = asyncio.Event(), [0]
    neighbour = asyncio.ensure_future(_greedy(host, port, frame, stop, answered))
    await asyncio.sleep(0.5)  # its pipeline full
    reader, writer = await asyncio.open_connection(host, port)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            writer.write(frame)
            try:
                head = await asyncio.wait_for(reader.readexactly(4), max(deadline - t, 0.001) + timeout)
            except asyncio.TimeoutError:
                break
            await reader.readexactly(_I32.unpack(head)[0])
            latencies.append(time.perf_counter() - t)
            await asyncio.sleep(interval)
    finally:
        writer.close()
        stop.set()
        await neighbour
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3 if latencies else float("nan")
    return FairnessResult(seconds, len(latencies), pct(0.50), pct(0.99), latencies[-1] * 1e3 if latencies else
                          float("nan"), answered[0])


def run_fairness(seconds: float = 5.0, interval: float = 0.02, timeout: float = 10.0) -> FairnessResult:
    """A probe's Metadata round trip every ``interval`` s for ``seconds`` beside a greedy neighbour, against a
    broker started here in its own process."""
    proc, host, port = start_broker()
    try:
        return asyncio.run(_fairness(host, port, seconds, interval, timeout))
    finally:
        stop_broker(proc)


def run(connections: int = 100, requests: int = 1000, request: str = "metadata", timeout: float = 30.0,
        address: Optional[tuple[str, int]] = None) -> LoadResult:
    """Load a broker at ``address``, or one started here in its own process."""
    if address is not None:
        return asyncio.run(_load(address[0], address[1], connections, requests, request, timeout))
    proc, host, port = start_broker()
    try:
        return asyncio.run(_load(host, port, connections, requests, request, timeout))
    finally:
        stop_broker(proc)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--connections", type=int, default=100)
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--request", choices=sorted(REQUESTS), default="metadata")
    p.add_argument("--json", action="store_true", help="--greedy's figures as one JSON line")
    p.add_argument("--greedy", type=float, metavar="SECONDS",
                   help="instead: a latency probe beside one connection that pipelines requests for SECONDS")
    args = p.parse_args()
    p_json = args.json
    if args.greedy:
        fair = run_fairness(args.greedy)
        print(json.dumps(dataclasses.asdict(fair)) if p_json else fair.table())
        return 0
    print(f"kcodec backend {kcodec.BACKEND} (KCODEC_PURE={os.environ.get('KCODEC_PURE', '')}), "
          f"request {args.request}")
    result = run(args.connections, args.requests, args.request)
    print(result.table())
    return 0 if result.lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
