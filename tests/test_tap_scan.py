"""Pass 1's C walk of a local pcap (kcodec/tap/_cscan.pyx, through kcodec.tap.scan) gives the rows and range
summaries of its Python reference (pcapsplit's packet heads and segments.locate) on every layout, error and
split: the packets it leaves to Python included."""

from __future__ import annotations

import json
import os
import random
import socket
import struct

import pyarrow as pa
import pytest

from needs import need_extension, need_module

need_module("pyspark", since=(3, 11))  # kcodec.spark's modules import it
need_module("dpkt")
import dpkt  # noqa: E402

from kcodec.core.extension import load  # noqa: E402
from kcodec.spark import segments  # noqa: E402
from kcodec.tap import scan  # noqa: E402

import pcap_writer as pcaps  # noqa: E402


def _tcp(sport=40000, dport=9092, seq=7, flags=0x18, data=b"k" * 40):
    return dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq, flags=flags, data=data)


def _ip4(tcp, src="10.0.0.1", dst="10.0.0.2", p=dpkt.ip.IP_PROTO_TCP):
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=p, data=tcp)
    ip.len = len(bytes(ip))
    return bytes(ip)


def _ip6(tcp, nxt=dpkt.ip.IP_PROTO_TCP):
    ip = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, "fd00::1"),
                      dst=socket.inet_pton(socket.AF_INET6, "fd00::2"), nxt=nxt, hlim=64, data=tcp)
    ip.plen = len(bytes(tcp))
    return bytes(ip)


def _link(linktype, ip):
    """``ip`` behind link type ``linktype``'s header."""
    etype = 0x86DD if ip[0] >> 4 == 6 else 0x0800
    if linktype == 1:
        return b"\0" * 12 + struct.pack(">H", etype) + ip
    if linktype == 0:
        return struct.pack("<I", 30 if etype == 0x86DD else 2) + ip
    if linktype == 113:
        return b"\0" * 14 + struct.pack(">H", etype) + ip
    if linktype == 276:
        return struct.pack(">H", etype) + b"\0" * 18 + ip
    return ip  # raw IP (101), and link types nobody reads here (147)


def _packets(linktype, rng, n=300):
    """Kafka-like segments and what a capture also holds: SYNs, bare ACKs, UDP, fragments, IPv6 with and
    without extension headers, VLAN tags, headers cut short or bent at random."""
    out = []
    for i in range(n):
        kind = rng.randrange(12)
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 40, 300, 1500])))
        tcp = _tcp(sport=40000 + rng.randrange(3), seq=rng.randrange(1 << 32),
                   flags=rng.choice([0x02, 0x10, 0x12, 0x18, 0x11, 0x04]), data=data)
        if kind == 0:
            ip = _ip4(dpkt.udp.UDP(sport=53, dport=53, data=b"dns"), p=dpkt.ip.IP_PROTO_UDP)
        elif kind == 1:
            ip = _ip6(tcp)
        elif kind == 2:
            ip = _ip6(tcp, nxt=0)  # a hop-by-hop header first: dpkt's layout
        else:
            ip = _ip4(tcp, src=f"10.0.0.{1 + rng.randrange(3)}")
        buf = bytearray(_link(linktype, ip))
        if linktype == 1 and kind == 3:  # a VLAN tag
            buf[12:12] = b"\x81\x00\x00\x07"
        for _ in range(rng.choice([0, 0, 0, 1, 2])):  # version and length, total, fragment, protocol, TCP offset
            at = rng.randrange(min(len(buf), 80))
            buf[at] = rng.choice([0, 1, 6, 0x08, 0x20, 0x45, 0x46, 0x50, 0x60, 0xFF, rng.randrange(256)])
        caplen = len(buf) if rng.random() < 0.8 else rng.randrange(len(buf) + 1)  # a snap length cuts some
        out.append((1_700_000_000_000_000 + i * 1_000 + rng.randrange(1_000), bytes(buf), caplen))
    return out


def _pcap(path, linktype, packets, big=False, ns=False, cut=0):
    order = ">" if big else "<"
    out = bytearray(struct.pack(order + "IHHiIII", 0xA1B23C4D if ns else 0xA1B2C3D4, 2, 4, 0, 0, 65535, linktype))
    for ts_us, pkt, caplen in packets:
        units = ts_us * 1000 if ns else ts_us
        per_s = 10**9 if ns else 10**6
        out += struct.pack(order + "IIII", units // per_s, units % per_s, caplen, len(pkt)) + pkt[:caplen]
    path.write_bytes(bytes(out[:len(out) - cut]))
    return path


class _Counted:
    """The extension, counting the records its walk read (so that a test sees it did the work)."""

    def __init__(self):
        self.walked = 0

    def walk(self, *args):
        out = C.walk(*args)
        self.walked += out[1]
        return out


def _pass_one(path, step, head, monkeypatch, engine):
    monkeypatch.setattr(segments, "HEAD", head)
    monkeypatch.setattr(scan, "_cscan", engine)
    size = path.stat().st_size
    rows, summaries = [], []
    for i, start in enumerate(range(0, size, step)):
        r = {"capture": 0, "path": str(path), "rank": 0, "kind": "pcap", "index": i, "start": start,
             "end": min(size, start + step), "size": size}
        for b in segments.read_ranges([pa.RecordBatch.from_pylist([r], segments.RANGES)]):
            got = b.to_pylist()
            rows += [x for x in got if x["kind"] != segments.SUMMARY]
            summaries += [x for x in got if x["kind"] == segments.SUMMARY]
    return rows, summaries


# the extension as built, whatever KCODEC_PURE says (the reference it is compared with runs either way)
C = load("kcodec.tap._cscan")


@pytest.fixture
def needs_c():
    need_extension(C, "the Cython extension kcodec.tap._cscan")


@pytest.mark.usefixtures("needs_c")
@pytest.mark.parametrize("linktype", [1, 0, 113, 276, 101, 147])
def test_the_c_walk_gives_the_references_rows_and_summaries(tmp_path, monkeypatch, linktype):
    rng = random.Random(linktype)
    packets = _packets(linktype, rng)
    seen = set()
    for big, ns, cut in ((False, False, 0), (True, True, 0), (False, True, 7)):  # byte orders, units; a cut record
        path = _pcap(tmp_path / f"{linktype}-{big}-{ns}.pcap", linktype, packets, big, ns, cut)
        for step, head in ((1 << 30, segments.HEAD), (1 << 30, 30), (1 << 30, 0), (4099, segments.HEAD),
                           (997, 60)):
            ref = _pass_one(path, step, head, monkeypatch, None)
            counted = _Counted()
            got = _pass_one(path, step, head, monkeypatch, counted)
            assert got == ref, (big, ns, cut, step, head)
            if head >= 60 and linktype != 147:
                assert counted.walked > len(packets) // 2
            seen.update(k for s in ref[1] for k, v in json.loads(s["data"]).items()
                        if k in ("not_tcp", "undecodable_packets", "stopped_early") and v)
            seen.add("rows" if ref[0] else "none")
    # (a link type nobody reads here: every packet left to Python, dpkt's "not supported" undecodable)
    assert {"rows", "not_tcp", "undecodable_packets"} <= seen if linktype != 147 else "rows" not in seen
    assert {"stopped_early", "undecodable_packets"} <= seen


@pytest.mark.usefixtures("needs_c")
def test_the_c_walk_on_a_capture_of_conversations(tmp_path, monkeypatch):
    """Many connections, retransmissions and reordering (pcap_writer's), in chunks of the walk's size."""
    packets = []
    for c in range(6):
        packets += pcaps.disorder(pcaps.conversation(pcaps.metadata_conversation(f"c{c}", 40), sport=41000 + c,
                                                     segment=300, t0=1_700_000_000.0 + c), seed=c)
    path = pcaps.write(tmp_path / "many.pcap", sorted(packets, key=lambda p: p[0]))
    monkeypatch.setattr(scan, "CHUNK", 7)  # chunks end anywhere
    for step in (1 << 30, 65536):
        ref = _pass_one(path, step, segments.HEAD, monkeypatch, None)
        assert len(ref[0]) > 500
        counted = _Counted()
        assert _pass_one(path, step, segments.HEAD, monkeypatch, counted) == ref
        assert counted.walked == len(packets)


@pytest.mark.usefixtures("needs_c")
def test_the_walk_stops_where_python_must_read(tmp_path):
    """A layout only dpkt reads is left to Python at once; the walk says where and what it walked before."""
    tcp = _tcp()
    path = _pcap(tmp_path / "a.pcap", 1, [(0, _link(1, _ip4(tcp)), len(_link(1, _ip4(tcp)))),
                                          (1, _link(1, _ip6(tcp, nxt=0)), len(_link(1, _ip6(tcp, nxt=0))))])
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos, walked, tcp_n, not_tcp, undecodable, rows, left = C.walk(fd, 24, size, size, False, 1000, 1, 256,
                                                                      100, {}, lambda raw: socket.inet_ntop(
                                                                          socket.AF_INET6 if len(raw) == 16
                                                                          else socket.AF_INET, raw))
    finally:
        os.close(fd)
    assert (walked, tcp_n, not_tcp, undecodable, left) == (1, 1, 0, 0, True)
    assert pos == 24 + 16 + len(_link(1, _ip4(tcp)))
    assert rows == [(24, 0, "10.0.0.1", 40000, "10.0.0.2", 9092, 7, 0x18, None, 24 + 16 + 54, 40)]


def test_the_engine_is_the_extension_where_it_is_built():
    expect = os.environ.get("KCODEC_EXPECT_BACKEND")
    if os.environ.get("KCODEC_PURE", "") not in ("", "0"):
        assert scan.ENGINE == "python" and scan._cscan is None
    elif expect:
        assert scan.ENGINE == expect
