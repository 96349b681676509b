"""The captures of the `kcodec analyze` benchmark: a real confluent-kafka capture, replicated.

``record(path)`` captures (tcpdump on loopback) confluent-kafka producing LZ4-compressed batches to
`kcodec broker`, a consumer in a group reading them back, and an admin listing topics. ``replicate(base,
path, size)`` writes a capture of about ``size`` bytes made of copies of it, each copy on its own client
address (127.1.x.y: distinct connections) and started 1 ms after the previous one, so that the copies'
packets interleave as many clients' would (every byte range of the file holds every connection), and each
copy's record batches its own (``capture_batches``: copy k's timestamps k ms later, checksums redone), so
that no batch repeats another copy's bytes, as in a real capture of many clients.
"""

from __future__ import annotations

import heapq
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from kcodec.tap import pcapfile

from capture_batches import Batches, patched

MESSAGES = 200_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _clients(bootstrap: str, messages: int) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "bench-admin"})
    admin.create_topics([NewTopic("bench", 3, 1)])["bench"].result(15)
    p = Producer({"bootstrap.servers": bootstrap, "client.id": "bench-producer", "compression.type": "lz4",
                  "linger.ms": 20, "batch.size": 256 * 1024})
    for i in range(messages):
        while True:
            try:
                p.produce("bench", key=b"user-%d" % (i % 1000), value=b"event %d of the benchmark: %s" % (i, b"x" * (i % 64)))
                break
            except BufferError:
                p.poll(0.05)
        if i % 10_000 == 0:
            p.poll(0)
            admin.list_topics(timeout=10)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": "bench-consumer", "group.id": "bench-group",
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    c.subscribe(["bench"])
    got, deadline = 0, time.monotonic() + 120
    while got < messages and time.monotonic() < deadline:
        batch = c.consume(10_000, 0.5)
        got += sum(1 for m in batch if m.error() is None)
    c.close()
    del admin, p


def record(path: Path, messages: int = MESSAGES) -> tuple[Path, int]:
    """A tcpdump capture of confluent-kafka against `kcodec broker` on loopback; returns (path, broker port)."""
    port = _free_port()
    broker = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(port)
        user = ["-Z", "root"] if os.geteuid() == 0 else []
        dump = subprocess.Popen([shutil.which("tcpdump") or "tcpdump", "-i", "lo", "--immediate-mode", "-U", "-s", "0",
                                 "-B", "65536", *user, "-w", str(path), "tcp port", str(port)],
                                stderr=subprocess.PIPE, text=True)
        try:
            assert dump.stderr is not None
            line = dump.stderr.readline()
            if "listening" not in line:
                raise RuntimeError(f"tcpdump: {line.strip()}")
            _clients(f"127.0.0.1:{port}", messages)
            time.sleep(1.0)
        finally:
            _stop(dump, signal.SIGINT)
    finally:
        _stop(broker)
    return path, port


_IP4 = 14  # tcpdump -i lo writes Ethernet frames: the IPv4 header follows 14 bytes


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f">{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _moved(packet: bytes, client: bytes, port: int) -> bytes:
    """The packet with the client's address (the end that is not the broker's port) set to ``client``."""
    if len(packet) < _IP4 + 20 or packet[12:14] != b"\x08\x00":
        return packet
    hl = (packet[_IP4] & 0x0F) * 4
    sport, dport = struct.unpack_from(">HH", packet, _IP4 + hl)
    b = bytearray(packet)
    if dport == port:
        b[_IP4 + 12:_IP4 + 16] = client
    elif sport == port:
        b[_IP4 + 16:_IP4 + 20] = client
    b[_IP4 + 10:_IP4 + 12] = b"\0\0"
    struct.pack_into(">H", b, _IP4 + 10, _checksum(bytes(b[_IP4:_IP4 + hl])))
    return bytes(b)


def replicate(base: Path, path: Path, size: int, port: int) -> dict[str, int]:
    """A pcap of about ``size`` bytes: copies of ``base``, each its own client address, 1 ms later and its
    batches' timestamps ``k`` ms later (so every copy's batches are its own)."""
    data = base.read_bytes()
    packets = [(p.ts_ns, p.data) for p in pcapfile.packets(data)]
    batches = Batches([p for _, p in packets], port)
    copies = max(1, round(size / len(data)))

    def copy(k: int) -> Iterator[tuple[int, int, bytes]]:
        client = bytes([127, 1, k >> 8, k & 0xFF])
        patches = batches.shift(k) if k else {}
        for i, (ts, pkt) in enumerate(packets):
            pkt = patched(pkt, patches[i]) if i in patches else pkt
            yield ts + k * 1_000_000, k, _moved(pkt, client, port)

    n = 0
    with open(path, "wb") as f:
        f.write(data[:24])  # the base's header: magic, snap length, link type
        for ts, _, pkt in heapq.merge(*(copy(k) for k in range(copies))):
            f.write(struct.pack("<IIII", ts // 1_000_000_000, ts % 1_000_000_000 // 1000, len(pkt), len(pkt)))
            f.write(pkt)
            n += 1
    return {"copies": copies, "packets": n, "bytes": path.stat().st_size, "batches": len(batches.found),
            "magic0": batches.legacy0}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    base, port = record(out / "base.pcap", int(sys.argv[2]) if len(sys.argv) > 2 else MESSAGES)
    print(base, base.stat().st_size, "bytes, broker port", port)
