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


def metadata_conversation(client: str, n: int) -> list[tuple[int, bytes]]:
    """``n`` Metadata requests (v12, all topics) of ``client``, each answered (brokers' host names vary)."""
    import kcodec
    from kcodec.messages import MetadataRequest, MetadataResponse

    out = []
    for corr in range(n):
        out.append((0, kcodec.encode_request(MetadataRequest(topics=None), 12, corr, client_id=client)))
        out.append((1, kcodec.encode_response(MetadataResponse(
            brokers=[MetadataResponse.Broker(node_id=1, host="b" * (corr % 50), port=9092)]), 12, corr)))
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


def write_exact(path: Path, packets: list[tuple[int, bytes]], kind: str = "pcap-us", tsresol: int = 9) -> Path:
    """Packets with integer timestamps in units of the format: ``pcap-us`` (µs), ``pcap-ns`` (ns) or
    ``pcapng`` (units of ``tsresol``: 10^-n s, or 2^-n s when its high bit is set); little-endian."""
    import struct

    out = bytearray()
    if kind.startswith("pcap-"):
        magic = 0xA1B2C3D4 if kind == "pcap-us" else 0xA1B23C4D
        out += struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, dpkt.pcap.DLT_EN10MB)
        per_s = 10**6 if kind == "pcap-us" else 10**9
        for units, pkt in packets:
            out += struct.pack("<IIII", units // per_s, units % per_s, len(pkt), len(pkt)) + pkt
    else:
        out += struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28)
        opt = struct.pack("<HHB3x", 9, 1, tsresol) + struct.pack("<HH", 0, 0)
        idb = struct.pack("<HHI", dpkt.pcap.DLT_EN10MB, 0, 65535) + opt
        out += struct.pack("<II", 1, 12 + len(idb)) + idb + struct.pack("<I", 12 + len(idb))
        for units, pkt in packets:
            body = struct.pack("<IIIII", 0, units >> 32, units & 0xFFFFFFFF, len(pkt), len(pkt))
            body += pkt + b"\0" * (-len(pkt) % 4)
            out += struct.pack("<II", 6, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))
    path.write_bytes(bytes(out))
    return path
