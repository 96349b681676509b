"""pcap and pcapng files read by byte ranges: each range by its own reader, in bounded memory.

A range ``[start, end)`` of a file holds the packets whose record (pcap) or block (pcapng) starts in it;
the last one may run past ``end`` and is read on. Range 0 starts at the file's first record. Any other
range first finds a record boundary (``resync``): the first offset from ``start`` where a chain of
``CHAIN`` well-formed records begins (or well-formed records run to the end of the file). pcap records
are judged by their lengths (the captured length within the snap length and not over the original
length), their sub-second field (under 10^6 or 10^9) and their times (no more than a day apart);
pcapng blocks by their type, their length (a multiple of 4, repeated at the block's end) and their
alignment (blocks start at multiples of 4). A reader reports where its first record started and where
it stopped (the first boundary at or past ``end``): range ``r + 1`` must have started where range ``r``
stopped, which whoever splits the file checks (``kcodec.spark.ranges``), so that a false boundary is
found and that file read whole instead, never misread.

A pcapng file's interfaces (link type, time resolution and offset) come from the blocks before its
first packet; a reader that meets a section or interface block later reports it (``late_header``), and
such a file is read whole too; so is one where a range starts with a Simple Packet Block (it has no time
of its own: its predecessor's, in the range before).
"""

from __future__ import annotations

import os
import re
import stat
import struct
from typing import BinaryIO, Iterator, NamedTuple, Optional

from .pcapfile import (EPB, IDB, PB, PCAP_MAGICS, PCAPNG_MAGIC, SHB, SPB, FormatError, _BOM, interface,
                       packet_block)

CHAIN = 8
MAX_RECORD = 1 << 24   # bytes a pcap record or pcapng block may take (libpcap's snap length is at most 256 KiB)
DAY_S = 86_400
READ_AHEAD = 1 << 20   # read past a range's end in steps of this (the last record's rest)
_BLOCK_TYPES = frozenset({SHB, IDB, PB, SPB, 4, 5, EPB, 7, 8, 9, 10, 0xBAD, 0x40000BAD})


class Format(NamedTuple):
    """What a reader needs from a file's start: ``kind`` "pcap" or "pcapng", byte order, and for pcap the
    link type, ns per timestamp unit and snap length; for pcapng the interfaces and where packets begin."""
    kind: str
    order: str
    linktype: int = 0
    unit_ns: int = 0
    snaplen: int = 0
    interfaces: tuple[tuple[int, int, int], ...] = ()  # pcapng: (link type, tsresol, tsoffset) per interface
    first: int = 24  # the offset of the first record (pcap) or of the first block after the header blocks


class Packet(NamedTuple):
    offset: int  # where its record or block starts in the file
    linktype: int
    ts_ns: int
    data: bytes  # the packet as captured; only its first bytes when ``packets`` was given ``head``
    data_at: int = -1  # where ``data`` lies in the file
    size: int = -1  # its captured length, when ``data`` holds only its first bytes


class Source:
    """A file's bytes from ``base`` on, read as they are needed (a range's last record reads on)."""

    def __init__(self, f: BinaryIO, base: int, size: int) -> None:
        f.seek(base)
        self.f, self.base = f, base
        self.data = bytearray(size)  # read into, not read and copied: a range is tens of MB
        got = _read_into(f, self.data)
        del self.data[got:]
        self.eof = got < size

    def bytes(self, start: int, end: int) -> bytes:
        """A copy of ``data[start:end]`` (one copy, where slicing the bytearray and then ``bytes`` made two)."""
        with memoryview(self.data) as view:
            return bytes(view[start:end])

    def have(self, end: int) -> bool:
        """Whether the file's bytes up to offset ``end`` are here (read on as needed)."""
        missing = end - self.base - len(self.data)
        while missing > 0 and not self.eof:
            more = self.f.read(max(missing, READ_AHEAD))
            self.eof = len(more) < max(missing, READ_AHEAD)
            self.data += more
            missing -= len(more)
        return missing <= 0

    @property
    def end(self) -> int:
        return self.base + len(self.data)


def _read_into(f: BinaryIO, buffer: bytearray) -> int:
    """Fill ``buffer`` from ``f`` (short only at the file's end); how many bytes came."""
    readinto = getattr(f, "readinto", None)
    if readinto is None:  # a stream without readinto (pyarrow's on some file systems)
        data = f.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
    got = 0
    with memoryview(buffer) as view:
        while got < len(buffer):
            n = readinto(view[got:])
            if not n:
                break
            got += n
    return got


def read_format(f: BinaryIO) -> Format:
    """The file's format from its first bytes (and, for pcapng, its header blocks)."""
    f.seek(0)
    head = f.read(24)
    if head[:4] in PCAP_MAGICS:
        if len(head) < 24:
            raise FormatError(f"damaged pcap header: {len(head)} bytes, magic {bytes(head[:4])!r}")
        order, unit_ns = PCAP_MAGICS[head[:4]]
        snaplen, linktype = struct.unpack_from(order + "II", head, 16)
        return Format("pcap", order, linktype & 0xFFFF, unit_ns, snaplen)
    if head[:4] != PCAPNG_MAGIC:
        raise FormatError(f"not a pcap or pcapng file: starts with {bytes(head[:8])!r}")
    if len(head) < 12 or head[8:12] not in (struct.pack(">I", _BOM), struct.pack("<I", _BOM)):
        raise FormatError(f"damaged pcapng header: byte-order magic {bytes(head[8:12])!r}")
    order = ">" if head[8:12] == struct.pack(">I", _BOM) else "<"
    interfaces: list[tuple[int, int, int]] = []
    pos = 0
    while True:
        f.seek(pos)
        top = f.read(8)
        if len(top) < 8:
            break
        btype, blen = struct.unpack(order + "II", top)
        if btype not in (SHB, IDB) or (btype == SHB and pos) or blen < 12 or blen % 4 or blen > MAX_RECORD:
            break
        if btype == IDB:
            body = f.read(blen - 12)
            if len(body) < 8:
                break
            interfaces.append(interface(body, 0, len(body), order))
        pos += blen
    return Format("pcapng", order, interfaces=tuple(interfaces), first=pos)


def _pcap_record(src: Source, pos: int, fmt: Format, rec: struct.Struct) -> Optional[tuple[int, int]]:
    """(ts seconds, the next record's offset) if a well-formed record starts at ``pos``; None if not, or if
    the file ends within it."""
    if not src.have(pos + 16):
        return None
    sec, frac, caplen, origlen = rec.unpack_from(src.data, pos - src.base)
    if (caplen > max(fmt.snaplen, 1 << 18) or caplen > origlen or origlen > MAX_RECORD
            or frac >= 1_000_000_000 // fmt.unit_ns or not src.have(pos + 16 + caplen)):
        return None
    return sec, pos + 16 + caplen


def _pcapng_block(src: Source, pos: int, order: str) -> Optional[int]:
    """The next block's offset if a well-formed block starts at ``pos``."""
    if pos % 4 or not src.have(pos + 12):
        return None
    btype, blen = struct.unpack_from(order + "II", src.data, pos - src.base)
    if btype not in _BLOCK_TYPES or blen < 12 or blen % 4 or blen > MAX_RECORD or not src.have(pos + blen):
        return None
    if struct.unpack_from(order + "I", src.data, pos + blen - 4 - src.base)[0] != blen:
        return None
    return pos + blen


def _chain(src: Source, pos: int, fmt: Format) -> bool:
    """Whether CHAIN well-formed records start at ``pos`` (fewer when the file ends right after them)."""
    rec = struct.Struct(fmt.order + "IIII")
    prev_sec = None
    for _ in range(CHAIN):
        if not src.have(pos + 1):
            return src.eof and pos == src.end
        if fmt.kind == "pcap":
            got = _pcap_record(src, pos, fmt, rec)
            if got is None:
                return False
            sec, pos = got
            if prev_sec is not None and abs(sec - prev_sec) > DAY_S:
                return False
            prev_sec = sec
        else:
            nxt = _pcapng_block(src, pos, fmt.order)
            if nxt is None:
                return False
            pos = nxt
    return True


# Where a pcap record can start: its captured and original lengths are at most MAX_RECORD (1 << 24), so
# their most significant bytes are 0 or 1 (bytes 11 and 15 of the record little-endian, 8 and 12 big-endian).
# A regular expression finds such offsets in C; only those are judged by ``_chain``, not every byte of a
# packet's payload (tens of KB to cross after a range's start, a Python call a byte).
_PCAP_CANDIDATE = {"<": re.compile(rb"(?=.{11}[\x00\x01].{3}[\x00\x01])", re.DOTALL),
                   ">": re.compile(rb"(?=.{8}[\x00\x01].{3}[\x00\x01])", re.DOTALL)}
assert MAX_RECORD == 1 << 24


def resync(src: Source, start: int, fmt: Format) -> int:
    """The first record boundary at or after ``start``: the file's end if none."""
    pos = start + (-start % 4 if fmt.kind == "pcapng" else 0)
    step = 4 if fmt.kind == "pcapng" else 1
    candidate = _PCAP_CANDIDATE[fmt.order] if fmt.kind == "pcap" else None
    while src.have(pos + 1):
        if candidate is not None:
            m = candidate.search(src.data, pos - src.base)
            if m is None:  # no record starts before the last 15 bytes held: read on, or none is left
                held = src.end
                if not src.have(held + 1):
                    return src.end
                pos = max(pos, held - 15)
                continue
            pos = src.base + m.start()
        if _chain(src, pos, fmt):
            return pos
        pos += step
    return src.end


class RangeResult:
    """What a range reader met: where it started and stopped, what it could not read."""

    def __init__(self) -> None:
        self.first = -1         # the offset of its first record (-1 before it is found)
        self.stop = -1          # the offset of the first record at or past the range's end (or the file's end)
        self.packets = 0
        self.stopped_early = ""  # a record cut short or malformed: where and why
        self.late_header = False  # a pcapng section or interface block after the header blocks

    def as_dict(self) -> dict[str, object]:
        return dict(vars(self))


def packets(f: BinaryIO, fmt: Format, start: int, end: int, result: RangeResult,
            head: Optional[int] = None) -> Iterator[Packet]:
    """The packets whose records start in ``[start, end)`` of ``f``, in file order. ``head``: of a pcap
    file on local disk, read each record's header and only the first ``head`` bytes of its packet (the
    packet's ``size`` says how long it is), not the range's every byte: for a reader that leaves the
    payloads where they are."""
    fd, src, pos = first_record(f, fmt, start, end, result, head)
    yield from read_on(fd, src, fmt, pos, end, result, head)


def first_record(f: BinaryIO, fmt: Format, start: int, end: int, result: RangeResult,
                 head: Optional[int] = None) -> tuple[Optional[int], Source, int]:
    """Where ``packets`` starts reading the range (``result.first``): (the file's descriptor when it reads
    packet heads with ``pread``, else None; the range's bytes held so far; the offset of its first record)."""
    begin = fmt.first if start <= fmt.first else start
    fd = _fileno(f) if head is not None and fmt.kind == "pcap" else None
    src = Source(f, begin, max(end - begin, 0) + READ_AHEAD if fd is None else min(max(end - begin, 0), READ_AHEAD))
    pos = begin if start <= fmt.first else resync(src, begin, fmt)
    result.first = pos
    return fd, src, pos


def read_on(fd: Optional[int], src: Source, fmt: Format, pos: int, end: int, result: RangeResult,
            head: Optional[int] = None) -> Iterator[Packet]:
    """``packets`` from the record at ``pos`` (``first_record``'s descriptor and bytes held)."""
    if fd is not None and head is not None:
        yield from _pcap_heads(fd, fmt, pos, end, result, head)
        return
    reader = _pcap_range if fmt.kind == "pcap" else _pcapng_range
    yield from reader(src, fmt, pos, end, result)


def _fileno(f: BinaryIO) -> Optional[int]:
    """``f``'s descriptor when it is a regular file (one ``pread`` can read anywhere in)."""
    try:
        fd = f.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError):
        return None


def _pcap_heads(fd: int, fmt: Format, pos: int, end: int, result: RangeResult, head: int) -> Iterator[Packet]:
    """``_pcap_range``'s packets with only their first ``head`` bytes, one ``pread`` a record."""
    rec = struct.Struct(fmt.order + "IIII")
    size = os.fstat(fd).st_size
    while pos < end:
        if pos + 1 > size:
            break
        buf = os.pread(fd, 16 + head, pos)
        if len(buf) < 16:
            result.stopped_early = f"after packet {result.packets}: record header cut short at byte {pos}"
            break
        sec, frac, caplen, _ = rec.unpack_from(buf, 0)
        if pos + 16 + caplen > size:
            result.stopped_early = (f"after packet {result.packets}: packet at byte {pos} needs {caplen} bytes, "
                                    f"{size - pos - 16} left")
            break
        result.packets += 1
        yield Packet(pos, fmt.linktype, sec * 1_000_000_000 + frac * fmt.unit_ns, buf[16:16 + caplen], pos + 16,
                     caplen)
        pos += 16 + caplen
    result.stop = min(pos, size) if not result.stopped_early else size


def _pcap_range(src: Source, fmt: Format, pos: int, end: int, result: RangeResult) -> Iterator[Packet]:
    rec = struct.Struct(fmt.order + "IIII")
    while pos < end:
        if not src.have(pos + 1):
            break
        if not src.have(pos + 16):
            result.stopped_early = f"after packet {result.packets}: record header cut short at byte {pos}"
            break
        sec, frac, caplen, _ = rec.unpack_from(src.data, pos - src.base)
        if not src.have(pos + 16 + caplen):
            result.stopped_early = (f"after packet {result.packets}: packet at byte {pos} needs {caplen} bytes, "
                                    f"{src.end - pos - 16} left")
            break
        at = pos - src.base + 16
        result.packets += 1
        yield Packet(pos, fmt.linktype, sec * 1_000_000_000 + frac * fmt.unit_ns, src.bytes(at, at + caplen),
                     pos + 16)
        pos += 16 + caplen
    result.stop = min(pos, src.end) if not result.stopped_early else src.end


def _pcapng_range(src: Source, fmt: Format, pos: int, end: int, result: RangeResult) -> Iterator[Packet]:
    order = fmt.order
    interfaces = list(fmt.interfaces)
    last_ts = 0
    while pos < end:
        if not src.have(pos + 1):
            break
        if not src.have(pos + 12):
            result.stopped_early = f"after packet {result.packets}: block header cut short at byte {pos}"
            break
        btype, blen = struct.unpack_from(order + "II", src.data, pos - src.base)
        if blen < 12 or blen % 4 or not src.have(pos + blen):
            result.stopped_early = (f"after packet {result.packets}: block at byte {pos} of {blen} bytes, "
                                    f"{src.end - pos} left")
            break
        data, body = src.data, pos - src.base + 8
        body_end = pos - src.base + blen - 4
        if btype in (SHB, IDB):
            result.late_header = True  # a new section or interface: the file must be read from its start
            if btype == IDB and body_end - body >= 8:
                interfaces.append(interface(bytes(data[body:body_end]), 0, body_end - body, order))
        elif btype in (EPB, PB) and body_end - body >= 20:
            got = packet_block(data, body, body_end, btype, order, interfaces)
            if got is None:
                result.stopped_early = (f"after packet {result.packets}: packet block at byte {pos} names an "
                                        "unknown interface or overruns its block")
                break
            last_ts = got.ts_ns
            result.packets += 1
            yield Packet(pos, got.linktype, got.ts_ns, got.data, pos + 28)  # block head, then 20 bytes of the body
        elif btype == SPB and body_end - body >= 4 and interfaces:
            if not result.packets and pos > fmt.first:
                result.late_header = True  # its time is its predecessor's, in the range before: read whole
            orig = struct.unpack_from(order + "I", data, body)[0]
            result.packets += 1  # no timestamp of its own: its predecessor's
            yield Packet(pos, interfaces[0][0], last_ts, bytes(data[body + 4:body + 4 + min(orig, body_end - body - 4)]),
                         pos + 12)
        pos += blen
    result.stop = min(pos, src.end) if not result.stopped_early else src.end
