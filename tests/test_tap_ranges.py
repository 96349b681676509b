"""pcap and pcapng read by byte ranges (kcodec.tap.pcapsplit): every split gives the whole file's packets,
each exactly once, and the ranges join up; what cannot be split safely is reported, never misread."""

from __future__ import annotations

import io
import struct

import pyarrow as pa
import pytest

from needs import need_module

need_module("pyspark", since=(3, 11))  # the pipeline imports it
from kcodec.spark import ranges  # noqa: E402
from kcodec.tap import pcapfile, pcapsplit  # noqa: E402
from kcodec.tap.segments import NotTcp, locate, segment  # noqa: E402

import pcap_writer as pcaps


def _files(tmp_path):
    packets = pcaps.disorder(pcaps.conversation(pcaps.metadata_conversation("c", 30), segment=97), seed=3)
    exact = [(1_700_000_000_000_000 + i * 1_000 + i % 7, p) for i, (_, p) in enumerate(packets)]
    return {
        "pcap": pcaps.write(tmp_path / "a.pcap", packets),
        "pcapng": pcaps.write(tmp_path / "a.pcapng", packets, ng=True),
        "pcap-ns": pcaps.write_exact(tmp_path / "ns.pcap", [(u * 1000, p) for u, p in exact], kind="pcap-ns"),
        "pcapng-ns": pcaps.write_exact(tmp_path / "ns.pcapng", [(u * 1000, p) for u, p in exact], kind="pcapng"),
    }


def _ranges(path, step, head=None):
    size = path.stat().st_size
    out, summaries = [], []
    with open(path, "rb") as f:
        fmt = pcapsplit.read_format(f)
        for i, start in enumerate(range(0, size, step)):
            got = pcapsplit.RangeResult()
            out += list(pcapsplit.packets(f, fmt, start, min(size, start + step), got, head=head))
            summaries.append({"path": str(path), "index": i, **got.as_dict()})
    return out, summaries


def _split(path, step):
    packets, summaries = _ranges(path, step)
    return [(p.ts_ns, p.data) for p in packets], summaries


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "pcap-ns", "pcapng-ns"])
@pytest.mark.parametrize("step", [1, 5, 97, 1000, 1 << 30])
def test_every_split_reads_the_whole_file_once(tmp_path, kind, step):
    path = _files(tmp_path)[kind]
    whole = [(p.ts_ns, bytes(p.data)) for p in pcapfile.packets(path.read_bytes())]
    got, summaries = _split(path, step)
    assert got == whole
    assert ranges.check(summaries) == set()
    assert summaries[-1]["stop"] == path.stat().st_size


@pytest.mark.parametrize("kind", ["pcap", "pcapng", "pcap-ns", "pcapng-ns"])
def test_a_segment_is_found_where_its_packet_says_it_lies_in_the_file(tmp_path, kind):
    """kcodec analyze's pass 1 keeps a payload's place in the file (``data_at`` and ``locate``), not its bytes."""
    path = _files(tmp_path)[kind]
    data = path.read_bytes()
    with open(path, "rb") as f:
        fmt = pcapsplit.read_format(f)
        packets = list(pcapsplit.packets(f, fmt, 0, len(data), pcapsplit.RangeResult()))
    payloads = 0
    for p in packets:
        assert data[p.data_at:p.data_at + len(p.data)] == p.data
        src, sport, dst, dport, seq, flags, start, end = locate(p.linktype, p.data)
        assert data[p.data_at + start:p.data_at + end] == segment(p.linktype, p.data).payload
        payloads += end > start
    assert payloads > 30


def test_a_record_header_inside_a_packet_is_no_boundary(tmp_path):
    """A payload that holds one well-formed pcap record header: the chain rule passes it over."""
    fake = struct.pack("<IIII", 1_700_000_000, 5, 40, 40)
    packets = pcaps.conversation([(0, fake * 3 + b"x" * 200), (1, b"\0\0\0\x04abcd")], segment=1000)
    path = pcaps.write(tmp_path / "f.pcap", packets)
    whole = [(p.ts_ns, bytes(p.data)) for p in pcapfile.packets(path.read_bytes())]
    for step in range(1, 300, 7):
        got, summaries = _split(path, step)
        assert got == whole, step
        assert ranges.check(summaries) == set()


def _big_endian(data: bytes) -> bytes:
    """A little-endian microsecond pcap file written big-endian (as a big-endian machine's tcpdump does)."""
    out = bytearray(struct.pack(">IHHiIII", *struct.unpack_from("<IHHiIII", data, 0)))
    pos = 24
    while pos < len(data):
        sec, frac, caplen, origlen = struct.unpack_from("<IIII", data, pos)
        out += struct.pack(">IIII", sec, frac, caplen, origlen) + data[pos + 16:pos + 16 + caplen]
        pos += 16 + caplen
    return bytes(out)


@pytest.mark.parametrize("order", ["<", ">"])
def test_resync_finds_the_boundary_that_trying_every_byte_finds(tmp_path, order):
    """resync judges only the offsets where a record's lengths can start (their high bytes 0 or 1), found by a
    regular expression; at every start it finds what calling the chain rule at every byte finds."""
    fake = struct.pack("<IIII", 1_700_000_000, 5, 40, 40)
    packets = pcaps.conversation([(0, fake * 3 + bytes(range(256)) * 3), (1, b"\0\0\0\x04abcd" * 50)], segment=700)
    data = pcaps.write(tmp_path / "f.pcap", packets).read_bytes()
    data = data if order == "<" else _big_endian(data)
    fmt = pcapsplit.read_format(io.BytesIO(data))
    assert fmt.order == order

    def every_byte(start):
        src = pcapsplit.Source(io.BytesIO(data), start, 64)
        pos = start
        while src.have(pos + 1):
            if pcapsplit._chain(src, pos, fmt):
                return pos
            pos += 1
        return src.end

    for start in range(24, len(data) + 1):
        assert pcapsplit.resync(pcapsplit.Source(io.BytesIO(data), start, 64), start, fmt) == every_byte(start), start


def test_ranges_that_do_not_join_up_are_found():
    parts = [{"path": "x", "index": 0, "first": 24, "stop": 100}, {"path": "x", "index": 1, "first": 104, "stop": 200},
             {"path": "y", "index": 0, "first": 24, "stop": 90}, {"path": "y", "index": 1, "first": 90, "stop": 120},
             {"path": "z", "index": 0, "first": 24, "stop": 90, "late_header": True},
             {"path": "z", "index": 1, "first": 90, "stop": 120}]
    assert ranges.check(parts) == {"x", "z"}


def test_a_late_interface_block_is_reported(tmp_path):
    path = _files(tmp_path)["pcapng"]
    data = path.read_bytes()
    first = pcapsplit.read_format(io.BytesIO(data)).first
    idb = data[28:first]  # the interface block, written again after the packets
    late = tmp_path / "late.pcapng"
    late.write_bytes(data + idb)
    _, summaries = _split(late, len(data) // 2)
    assert summaries[-1]["late_header"] and ranges.check(summaries) == {str(late)}


def test_segments_as_dpkt_reads_them(tmp_path):
    import dpkt

    for p in pcapfile.packets(_files(tmp_path)["pcap"].read_bytes()):
        tcp = dpkt.ethernet.Ethernet(p.data).data.data
        s = segment(p.linktype, p.data)
        assert (s.sport, s.dport, s.seq, s.flags, s.payload) == (tcp.sport, tcp.dport, tcp.seq, tcp.flags, bytes(tcp.data))
    arp = b"\xff" * 12 + b"\x08\x06" + b"\0" * 28
    with pytest.raises(NotTcp):
        segment(1, arp)
    with pytest.raises(ValueError):
        segment(1, b"\0" * 12 + b"\x08\x00" + b"\x45" + b"\0" * 5)


def test_addresses_read_through_the_cache_are_the_addresses(monkeypatch):
    """``_addr``'s cache (pass 1 reads two addresses a packet, of few hosts) gives inet_ntop's text, for bytes
    and a bytearray's slices, and stays bounded: filled, it starts again."""
    import socket

    from kcodec.tap import segments as tap_segments

    monkeypatch.setattr(tap_segments, "_ADDRS", {})
    monkeypatch.setattr(tap_segments, "_ADDRS_MAX", 3)
    hosts = [f"10.0.0.{i}" for i in range(1, 6)] + ["::1", "fe80::2"]
    for _ in range(2):
        for i, host in enumerate(hosts):
            packet = pcaps._packet(host, 1000 + i, "10.9.9.9", 9092, 1, 0, 0x18, b"x") if ":" not in host else None
            if packet is not None:
                for buf in (packet, bytearray(packet)):
                    assert segment(1, buf)[:4] == (host, 1000 + i, "10.9.9.9", 9092)
            raw = socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
            assert tap_segments._addr(raw) == tap_segments._addr(bytearray(raw)) == host
            assert len(tap_segments._ADDRS) <= 3


def _located(linktype, buf, size, shift):
    try:
        at = locate(linktype, buf, size)
    except (NotTcp, ValueError) as e:
        return type(e)
    return at if at is None else (*at[:6], at[6] + shift, at[7] + shift)


def test_the_ethernet_ipv4_fast_path_reads_as_the_general_path():
    """``locate``'s one-unpack path (Ethernet, IPv4 of 20 bytes) gives what the general path gives for the
    same IP packet (raw IP, link type 101), its errors too, for any protocol, fragment, lengths, flags."""
    import random

    rng = random.Random(5)
    base = pcaps._packet("10.0.0.1", 40000, "10.0.0.2", 9092, 7, 0, 0x18, b"k" * 40)
    tried = set()
    for _ in range(3000):
        buf = bytearray(base)
        for _ in range(rng.randrange(4)):
            # version and length, total, fragment, protocol, TCP offset, the Ethernet type
            at = rng.choice([14, 16, 17, 20, 21, 23, 46, 47, 12, 13])
            buf[at] = rng.choice([0, 1, 6, 0x08, 0x20, 0x45, 0x46, 0x50, 0xFF, rng.randrange(256)])
        cut = rng.choice([len(buf), 54, 60, rng.randrange(54, len(buf) + 1)])
        buf = bytes(buf[:cut])
        size = rng.choice([None, cut, cut + rng.randrange(100)])
        got = _located(1, buf, size, 0)
        if buf[12:14] == b"\x08\x00":
            assert got == _located(101, buf[14:], None if size is None else size - 14, 14)
            tried.add(got if isinstance(got, type) or got is None else "found")
    assert {NotTcp, ValueError, "found"} <= tried


def test_a_range_that_starts_with_a_simple_packet_block_is_reported(tmp_path):
    """A Simple Packet Block has no time: its predecessor's, which a range starting at it does not know."""
    data = _files(tmp_path)["pcapng"].read_bytes()
    pkt = b"\0" * 60
    spb = struct.pack("<III", 3, 16 + len(pkt), len(pkt)) + pkt + struct.pack("<I", 16 + len(pkt))
    path = tmp_path / "spb.pcapng"
    path.write_bytes(data + spb)
    with open(path, "rb") as f:
        fmt = pcapsplit.read_format(f)
        got = pcapsplit.RangeResult()
        assert [p.ts_ns for p in pcapsplit.packets(f, fmt, len(data), len(data) + len(spb), got)] == [0]
    assert got.late_header
    _, summaries = _split(path, len(data))  # the second range starts at the Simple Packet Block
    assert ranges.check(summaries) == {str(path)}
    _, summaries = _split(path, len(data) + len(spb))
    assert ranges.check(summaries) == set()


def test_pass_two_tasks_follow_the_input_and_by_default_the_cores():
    plan = ranges.Plan(lengths={"a": 1 << 30, "b": 100_000})
    plan.ranges = [{"path": "a", "index": 0}, {"path": "a", "index": 1}, {"path": "b", "index": 0}]
    assert plan.partitions(32 << 20) == 33  # the input counted once per file, not per range
    assert plan.partitions(ranges.PARTITION_BYTES, cores=2) == 2 * ranges.TASKS_PER_CORE
    assert plan.partitions(ranges.PARTITION_BYTES, cores=64) == 33
    # beside the early child: a partition each for it and a task a core, at most
    big = ranges.Plan(lengths={"a": 4 << 30}, ranges=[{"path": "a", "index": 0}])
    assert big.input_bytes >= ranges.EARLY_AHEAD_BYTES
    assert big.partitions(ranges.PARTITION_BYTES, cores=2, early=True) == 3
    assert big.partitions(ranges.PARTITION_BYTES, cores=64, early=True) == 65
    # and one more where the child is through pass 1 before the tasks come
    assert plan.input_bytes < ranges.EARLY_AHEAD_BYTES
    assert plan.partitions(ranges.PARTITION_BYTES, cores=2, early=True) == 4
    assert plan.partitions(ranges.PARTITION_BYTES, cores=64, early=True) == 33
    small = ranges.Plan(lengths={"b": 100_000}, ranges=[{"path": "b", "index": 0}])
    assert small.partitions(ranges.PARTITION_BYTES, cores=2) == small.partitions() == 1


@pytest.mark.parametrize("kind", ["pcap", "pcap-ns"])
@pytest.mark.parametrize("step,head", [(1, 256), (97, 0), (97, 30), (97, 256), (1000, 30), (1 << 30, 0), (1 << 30, 30),
                                       (1 << 30, 256)])  # a split at every byte with one head: that is the slow one
def test_packet_heads_are_the_packets_first_bytes_at_every_split(tmp_path, kind, step, head):
    """pcapsplit.packets(head=N), pass 1's reader of a local pcap: each packet's first N bytes (one pread a
    record), its length beside them, the ranges' starts and stops as when every byte is read."""
    path = _files(tmp_path)[kind]
    whole, full = _split(path, step)
    data = path.read_bytes()
    packets, summaries = _ranges(path, step, head)
    for p in packets:
        assert p.data == data[p.data_at:p.data_at + min(head, p.size)]
    got = [(p.ts_ns, data[p.data_at:p.data_at + p.size]) for p in packets]
    assert got == whole and summaries == full


def test_pass_one_rows_do_not_depend_on_how_much_of_each_packet_it_reads(tmp_path, monkeypatch):
    """kcodec.spark.segments reads a local pcap's packet heads (HEAD bytes): a head too short for the headers
    is read whole instead, so the segment rows are those of reading every byte."""
    from kcodec.spark import segments

    paths = _files(tmp_path)
    default = segments.HEAD
    for kind in ("pcap", "pcap-ns"):
        size = paths[kind].stat().st_size
        r = {"capture": 0, "path": str(paths[kind]), "rank": 0, "kind": "pcap", "index": 0, "start": 0,
             "end": size, "size": size}
        rows = {}
        for head in (1 << 20, default, 30, 0):
            monkeypatch.setattr(segments, "HEAD", head)
            rows[head] = [b.to_pylist() for b in segments.read_ranges([pa.RecordBatch.from_pylist([r], segments.RANGES)])]
        assert rows[default] == rows[1 << 20] == rows[30] == rows[0]
        assert sum(row["length"] or 0 for batch in rows[0] for row in batch) > 1000
