"""Writes pcap / pcapng files of Kafka conversations with dpkt, as tcpdump would on loopback."""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Optional

import dpkt

CLIENT = "127.0.0.1"
SERVER = "127.0.0.2"


def _packet(src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int, data: bytes) -> bytes:
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % (1 << 32), ack=ack % (1 << 32), flags=flags,
                       data=data)
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_TCP, data=tcp)
    ip.len = len(bytes(ip))
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return bytes(eth)


def conversation(frames: list[tuple[int, bytes]], *, sport: int = 40000, dport: int = 9092,
                 segment: int = 700, handshake: bool = True, isn: tuple[int, int] = (1000, 5000),
                 t0: float = 1_700_000_000.0) -> list[tuple[float, bytes]]:
    """Packets of one TCP connection carrying ``frames`` ((direction, frame) in order), cut in segments."""
    seq = [isn[0], isn[1]]
    out: list[tuple[float, bytes]] = []
    t = t0
    ends = [(CLIENT, sport, SERVER, dport), (SERVER, dport, CLIENT, sport)]
    if handshake:
        out.append((t, _packet(*ends[0], seq[0] - 1, 0, dpkt.tcp.TH_SYN, b"")))
        out.append((t, _packet(*ends[1], seq[1] - 1, seq[0], dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"")))
    for direction, frame in frames:
        for i in range(0, len(frame), segment):
            chunk = frame[i:i + segment]
            t += 0.0001
            out.append((t, _packet(*ends[direction], seq[direction], seq[1 - direction],
                                   dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, chunk)))
            seq[direction] += len(chunk)
    return out


def disorder(packets: list[tuple[float, bytes]], seed: int = 1, swaps: int = 5,
             duplicates: int = 5) -> list[tuple[float, bytes]]:
    """Swap neighbouring packets and retransmit some, as a busy network does."""
    rng = random.Random(seed)
    out = list(packets)
    for _ in range(swaps):
        i = rng.randrange(2, len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    for _ in range(duplicates):
        i = rng.randrange(2, len(out))
        out.insert(min(len(out), i + rng.randrange(1, 4)), out[i])
    return out


def write(path: Path, packets: list[tuple[float, bytes]], ng: bool = False,
          linktype: Optional[int] = None) -> Path:
    with open(path, "wb") as f:
        writer = (dpkt.pcapng.Writer if ng else dpkt.pcap.Writer)(f, snaplen=65535,
                                                                   linktype=linktype or dpkt.pcap.DLT_EN10MB)
        for ts, pkt in packets:
            writer.writepkt(pkt, ts=ts)
    return path
