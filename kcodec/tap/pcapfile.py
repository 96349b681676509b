"""The packets of a pcap or pcapng file with exact integer timestamps (ns since the epoch).

dpkt's readers hand timestamps over as floats, which cannot hold a nanosecond epoch time (a
microsecond capture's 1.000000 s came out as 999,936 ns after a float round trip), so the container
formats are read here; dpkt still parses the link, IP and TCP layers of each packet.

pcap: a 24-byte file header (its magic gives byte order and µs or ns resolution) and records of
ts_sec, ts_frac, captured length, original length. pcapng: blocks (type, length, body, length); a
Section Header Block sets the byte order and resets the interfaces, an Interface Description Block
gives each interface's link type, ``if_tsresol`` (10^-n or 2^-n s, µs by default) and ``if_tsoffset``
(seconds); Enhanced, Simple and obsolete Packet Blocks carry the packets.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator, NamedTuple, Optional

PCAP_MAGICS = {b"\xa1\xb2\xc3\xd4": (">", 1000), b"\xd4\xc3\xb2\xa1": ("<", 1000),
               b"\xa1\xb2\x3c\x4d": (">", 1), b"\x4d\x3c\xb2\xa1": ("<", 1)}  # -> (byte order, ns per unit)
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_BOM = 0x1A2B3C4D
SHB, IDB, PB, SPB, EPB = 0x0A0D0D0A, 1, 2, 3, 6
OPT_TSRESOL, OPT_TSOFFSET = 9, 14


class FormatError(ValueError):
    """A file header that is not pcap/pcapng (packets cut short end the iteration instead)."""


class Packet(NamedTuple):
    linktype: int
    ts_ns: int
    data: bytes


class Truncated(Exception):
    """The file ends inside a packet or block: a capture whose writer died. ``after`` packets were read."""

    def __init__(self, after: int, what: str) -> None:
        super().__init__(f"after packet {after}: {what}")


def is_pcap(head: bytes) -> bool:
    return head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC


def packets(data: bytes) -> Iterator[Packet]:
    """Every packet, in file order; raises FormatError for a bad file header, Truncated at a cut."""
    if data[:4] == PCAPNG_MAGIC:
        return _pcapng(data)
    return _pcap(data)


def _pcap(data: bytes) -> Iterator[Packet]:
    if len(data) < 24 or data[:4] not in PCAP_MAGICS:
        raise FormatError(f"damaged pcap header: {len(data)} bytes, magic {bytes(data[:4])!r}")
    order, unit_ns = PCAP_MAGICS[data[:4]]
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0xFFFF  # the high bits carry FCS flags
    rec = struct.Struct(order + "IIII")
    return _pcap_records(data, rec, linktype, unit_ns)


def _pcap_records(data: bytes, rec: struct.Struct, linktype: int, unit_ns: int) -> Iterator[Packet]:
    pos, n, end = 24, 0, len(data)
    while pos < end:
        if end - pos < rec.size:
            raise Truncated(n, f"record header cut short at byte {pos}")
        sec, frac, caplen, _ = rec.unpack_from(data, pos)
        pos += rec.size
        if caplen > end - pos:
            raise Truncated(n, f"packet at byte {pos - rec.size} needs {caplen} bytes, {end - pos} left")
        yield Packet(linktype, sec * 1_000_000_000 + frac * unit_ns, data[pos:pos + caplen])
        pos += caplen
        n += 1


def _ts_ns(units: int, resol: int, offset_s: int) -> int:
    """Timestamp units of an interface -> ns, exactly (floor below 1 ns)."""
    if resol & 0x80:
        ns = (units * 1_000_000_000) >> (resol & 0x7F)
    else:
        ns = units * 10 ** (9 - resol) if resol <= 9 else units // 10 ** (resol - 9)
    return ns + offset_s * 1_000_000_000


def _options(data: bytes, pos: int, end: int, order: str) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    while pos + 4 <= end:
        code, length = struct.unpack_from(order + "HH", data, pos)
        if code == 0:
            break
        out.setdefault(code, data[pos + 4:pos + 4 + length])
        pos += 4 + (length + 3) // 4 * 4
    return out


def interface(data: bytes, body: int, body_end: int, order: str) -> tuple[int, int, int]:
    """(link type, tsresol, tsoffset) of an Interface Description Block's body."""
    linktype = struct.unpack_from(order + "H", data, body)[0]
    opts = _options(data, body + 8, body_end, order)
    resol = opts[OPT_TSRESOL][0] if len(opts.get(OPT_TSRESOL, b"")) >= 1 else 6
    offset = struct.unpack(order + "q", opts[OPT_TSOFFSET])[0] if len(opts.get(OPT_TSOFFSET, b"")) == 8 else 0
    return linktype, resol, offset


def packet_block(data: Any, body: int, body_end: int, btype: int, order: str,
                 interfaces: list[tuple[int, int, int]]) -> Optional[Packet]:
    """The packet of an Enhanced (or obsolete) Packet Block's body; None when it names an interface not
    described or overruns its block."""
    if btype == EPB:
        iface, hi, lo, caplen = struct.unpack_from(order + "IIII", data, body)
    else:
        iface, _drops, hi, lo, caplen = struct.unpack_from(order + "HHIII", data, body)
    if iface >= len(interfaces) or caplen > body_end - body - 20:
        return None
    linktype, resol, offset = interfaces[iface]
    return Packet(linktype, _ts_ns((hi << 32) | lo, resol, offset), bytes(data[body + 20:body + 20 + caplen]))


def _pcapng(data: bytes) -> Iterator[Packet]:
    if len(data) < 12:
        raise FormatError(f"damaged pcapng header: {len(data)} bytes")
    bom = data[8:12]
    if bom not in (struct.pack(">I", _BOM), struct.pack("<I", _BOM)):
        raise FormatError(f"damaged pcapng header: byte-order magic {bytes(bom)!r}")
    return _pcapng_blocks(data)


def _pcapng_blocks(data: bytes) -> Iterator[Packet]:
    pos, n, end = 0, 0, len(data)
    order = ">"
    interfaces: list[tuple[int, int, int]] = []  # (link type, tsresol, tsoffset) per interface id
    last_ts = 0
    while pos < end:
        if end - pos < 12:
            raise Truncated(n, f"block header cut short at byte {pos}")
        if data[pos:pos + 4] == PCAPNG_MAGIC:  # a new section may switch byte order
            order = ">" if data[pos + 8:pos + 12] == struct.pack(">I", _BOM) else "<"
            interfaces = []
        btype, blen = struct.unpack_from(order + "II", data, pos)
        if blen < 12 or blen % 4 or blen > end - pos:
            raise Truncated(n, f"block at byte {pos} of {blen} bytes, {end - pos} left")
        body, body_end = pos + 8, pos + blen - 4
        if btype == IDB and body_end - body >= 8:
            interfaces.append(interface(data, body, body_end, order))
        elif btype in (EPB, PB) and body_end - body >= 20:
            got = packet_block(data, body, body_end, btype, order, interfaces)
            if got is None:
                raise Truncated(n, f"packet block at byte {pos} names an unknown interface or overruns its block")
            last_ts = got.ts_ns
            yield got
            n += 1
        elif btype == SPB and body_end - body >= 4 and interfaces:
            orig = struct.unpack_from(order + "I", data, body)[0]
            yield Packet(interfaces[0][0], last_ts, data[body + 4:body + 4 + min(orig, body_end - body - 4)])
            n += 1  # a Simple Packet Block has no timestamp: it shares its predecessor's
        pos += blen
