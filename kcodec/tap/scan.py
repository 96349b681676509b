"""Pass 1's reader of a local pcap file (``kcodec analyze``): its packets' TCP segments located in C.

``pcapsplit.packets(head=N)`` reads each record's header and first bytes with one ``pread`` and yields a
``Packet``; ``segments.locate`` then finds the TCP segment in them. For a gigabyte capture that was most of
pass 1 (~0.6 CPU s of Python for 68 k packets). ``located`` runs the same two steps as one C loop
(kcodec/tap/_cscan.pyx) and yields what it located in chunks (``Located``), and a ``Packet`` for each
record it leaves to Python (a layout only dpkt reads, headers past the bytes read, a record the file cuts
short: ``packets`` reads those and says why it stopped). Where the extension is not built, or with
``KCODEC_PURE=1``, or for any other file, ``located`` yields ``packets``' Packets alone.
"""

from __future__ import annotations

import os
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

from kcodec.core.extension import load, pure

from . import pcapsplit, segments

_cscan = None if pure() else load("kcodec.tap._cscan")
ENGINE = "python" if _cscan is None else "cython"
CHUNK = 4096  # rows a chunk holds at most


class Located(NamedTuple):
    """Records walked in C: how many carried TCP, no TCP, undecodable headers; and a row for each TCP
    segment with bytes or a SYN: (offset, ts_ns, src, sport, dst, dport, seq, flags, None, at, length), its
    payload ``length`` bytes at ``at`` in the file (what ``locate`` gives, as offsets in the file; the None
    where a packet read whole holds its payload)."""
    tcp: int
    not_tcp: int
    undecodable: int
    rows: list[tuple[int, int, str, int, str, int, int, int, Optional[bytes], int, int]]


def located(f: BinaryIO, fmt: pcapsplit.Format, start: int, end: int, result: pcapsplit.RangeResult,
            head: int) -> Iterator[Union[Located, pcapsplit.Packet]]:
    """``pcapsplit.packets(f, fmt, start, end, result, head)``, its packets located in C where it can."""
    fd, src, pos = pcapsplit.first_record(f, fmt, start, end, result, head)
    if _cscan is None or fd is None:
        yield from pcapsplit.read_on(fd, src, fmt, pos, end, result, head)
        return
    size = os.fstat(fd).st_size
    big = fmt.order == ">"
    while True:
        pos, walked, tcp, not_tcp, undecodable, rows, left = _cscan.walk(
            fd, pos, end, size, big, fmt.unit_ns, fmt.linktype, head, CHUNK, segments._ADDRS, segments._addr)
        result.packets += walked
        if walked:
            yield Located(tcp, not_tcp, undecodable, rows)
        if not left:
            if pos >= end:  # as _pcap_heads ends
                result.stop = min(pos, size)
                return
            continue
        one = _pcap_one(fd, fmt, pos, end, result, head)
        if one is None:  # the range's end, or a record cut short: _pcap_heads has said where it stopped
            return
        yield one
        pos = one.offset + 16 + one.size


def _pcap_one(fd: int, fmt: pcapsplit.Format, pos: int, end: int, result: pcapsplit.RangeResult,
              head: int) -> Optional[pcapsplit.Packet]:
    """The record at ``pos`` as ``_pcap_heads`` reads it, or None where it stops there (its result set)."""
    return next(pcapsplit._pcap_heads(fd, fmt, pos, end, result, head), None)

