"""Where a recorded capture's record batches lie, so that each copy of it can hold batches of its own.

``analyze_capture.replicate`` copies one recording many times. Copied byte for byte, every copy's batches
would repeat the first copy's, which no real capture does (and which a cache of summed batches would turn
into a benchmark figure no user sees). ``Batches(packets, port)`` reassembles each TCP direction of the
recording by sequence number, splits it into Kafka frames, decodes its Produce requests and Fetch responses
(kcodec, ``zero_copy``) and keeps where each batch's timestamps and checksum lie in the packets.
``Batches.shift(k)`` gives what copy ``k`` writes over the packets (``patched``): a v2 batch's base and max
timestamps (a v1 message's timestamp) plus ``k`` ms and its CRC32C (CRC32) recomputed. The shift is a function of the batch's
own bytes, so within a copy a Fetch still returns exactly what its Produce sent, as a broker does; sizes,
sequence numbers and the IP header are untouched, and so are the TCP checksums (tcpdump on loopback
records them uncomputed). Magic 0 messages (no timestamp) are left as they are.
"""

from __future__ import annotations

import bisect
import struct
from collections import defaultdict
from typing import Any, Iterator

import pyarrow as pa

from kcodec import framing
from kcodec.records import crc32, crc32c

PRODUCE, FETCH = 0, 1
_IP4 = 14  # Ethernet (tcpdump -i lo)
_TS = struct.Struct(">q")
_CRC = struct.Struct(">I")


def _tcp(pkt: bytes) -> tuple[tuple[bytes, int, bytes, int], int, int, int] | None:
    """(src, sport, dst, dport), sequence number, flags and payload offset of an IPv4 TCP packet."""
    if len(pkt) < _IP4 + 20 or pkt[12:14] != b"\x08\x00" or pkt[_IP4 + 9] != 6:
        return None
    ip = _IP4 + (pkt[_IP4] & 0x0F) * 4
    sport, dport, seq = struct.unpack_from(">HHI", pkt, ip)
    return (pkt[_IP4 + 12:_IP4 + 16], sport, pkt[_IP4 + 16:_IP4 + 20], dport), seq, pkt[ip + 13], ip + (pkt[ip + 12] >> 4) * 4


class _Stream:
    """One direction of one connection: its bytes by stream offset, and which packet holds which."""

    def __init__(self) -> None:
        self.isn: int | None = None
        self.segments: list[tuple[int, int, int, int]] = []  # (start, end, packet index, payload offset)

    def add(self, index: int, seq: int, syn: bool, at: int, length: int) -> None:
        if syn:
            self.isn = (seq + 1) & 0xFFFFFFFF
            return
        if length:
            if self.isn is None:
                self.isn = seq
            start = (seq - self.isn) & 0xFFFFFFFF
            self.segments.append((start, start + length, index, at))

    def data(self, packets: list[bytes]) -> bytes:
        self.segments.sort()
        out = bytearray(max((e for _, e, _, _ in self.segments), default=0))
        for s, e, i, at in self.segments:
            out[s:e] = packets[i][at:at + e - s]
        return bytes(out)

    def pieces(self, start: int, length: int) -> list[tuple[int, int, int, int]]:
        """(packet index, offset in the packet, from, to within the field) for every copy of the field's bytes."""
        starts = [s for s, _, _, _ in self.segments]
        widest = max(e - s for s, e, _, _ in self.segments)
        end, got = start + length, []
        for s, e, i, at in self.segments[bisect.bisect_left(starts, start - widest):bisect.bisect_left(starts, end)]:
            lo, hi = max(s, start), min(e, end)
            if lo < hi:
                got.append((i, at + lo - s, lo - start, hi - start))
        return got


def _frames(data: bytes) -> Iterator[memoryview]:
    view, pos = memoryview(data), 0
    while pos + 4 <= len(data):
        size = struct.unpack_from(">i", data, pos)[0]
        if size < 0 or pos + 4 + size > len(data):  # not a frame, or cut off at the capture's end
            return
        end = pos + 4 + size
        yield view[pos:end]
        pos = end


def _records(msg: Any, key: int) -> Iterator[memoryview]:
    if key == PRODUCE:
        fields = (p.records for t in msg.topic_data for p in t.partition_data)
    else:
        fields = (p.records for t in msg.responses for p in t.partitions)
    return (f for f in fields if f is not None and len(f))


def _batches(field: memoryview) -> Iterator[tuple[int, int, int]]:
    """(offset, size, magic) of each whole batch or message of a records field (a cut-off last one left out)."""
    pos = 0
    while pos + 17 <= len(field):
        size = 12 + struct.unpack_from(">i", field, pos + 8)[0]
        if size < 17 or pos + size > len(field):
            return
        yield pos, size, field[pos + 16]
        pos += size


class Batches:
    """The v2 batches and v1 messages of a recording (Ethernet, IPv4, TCP) whose broker listens on ``port``."""

    def __init__(self, packets: list[bytes], port: int) -> None:
        self.packets = packets
        streams: dict[tuple[Any, bool], _Stream] = defaultdict(_Stream)
        for index, pkt in enumerate(packets):
            tcp = _tcp(pkt)
            if tcp is not None:
                conn, seq, flags, at = tcp
                to_broker = conn[3] == port
                key = (conn if to_broker else (conn[2], conn[3], conn[0], conn[1]), to_broker)
                streams[key].add(index, seq, bool(flags & 0x02), at, len(pkt) - at)
        # (stream, stream offset, size, magic) of every batch; a batch's bytes, patched, give its CRC
        self.found: list[tuple[_Stream, bytes, int, int, int]] = []
        self.legacy0 = 0
        for (conn, to_broker), stream in list(streams.items()):
            if to_broker:
                self._conversation(packets, stream, streams.get((conn, False)))
        self.fields = [(data, start, size, magic, [stream.pieces(start + at, n) for at, n in _fields(magic)])
                       for stream, data, start, size, magic in self.found]

    def _conversation(self, packets: list[bytes], requests: _Stream, responses: _Stream | None) -> None:
        """The batches of a connection's Produce requests and of the Fetch responses that answer it."""
        asked: dict[int, tuple[int, int]] = {}
        data = requests.data(packets)
        for frame in _frames(data):
            h = framing.peek_request_header(frame, strict=False)
            asked[h.correlation_id] = (h.api_key, h.api_version)
            if h.api_key == PRODUCE:
                self._take(requests, data, framing.decode_request(frame, zero_copy=True)[1], PRODUCE)
        if responses is None:
            return
        data = responses.data(packets)
        for frame in _frames(data):
            api, version = asked.get(struct.unpack_from(">i", frame, 4)[0], (-1, 0))
            if api == FETCH:
                self._take(responses, data, framing.decode_response(frame, FETCH, version, zero_copy=True)[1], FETCH)

    def _take(self, stream: _Stream, data: bytes, msg: Any, key: int) -> None:
        base = pa.py_buffer(data).address
        for field in _records(msg, key):
            at = pa.py_buffer(field).address - base
            for pos, size, magic in _batches(field):
                if magic in (1, 2):
                    self.found.append((stream, data, at + pos, size, magic))
                else:
                    self.legacy0 += 1

    def shift(self, k: int) -> dict[int, list[tuple[int, bytes]]]:
        """What copy ``k`` writes over the recording's packets (by packet index: offset and bytes) so that
        every batch's timestamps move by ``k`` ms, with its checksum redone."""
        patches: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        for data, start, size, magic, where in self.fields:
            batch = bytearray(data[start:start + size])
            if magic == 2:
                for at in (27, 35):
                    ts = _TS.unpack_from(batch, at)[0]
                    _TS.pack_into(batch, at, ts + k if ts >= 0 else ts)
                _CRC.pack_into(batch, 17, crc32c(bytes(batch[21:])))
            else:
                ts = _TS.unpack_from(batch, 18)[0]
                _TS.pack_into(batch, 18, ts + k if ts >= 0 else ts)
                _CRC.pack_into(batch, 12, crc32(bytes(batch[16:])))
            for (at, _), pieces in zip(_fields(magic), where):
                for i, off, lo, hi in pieces:
                    patches[i].append((off, bytes(batch[at + lo:at + hi])))
        return patches


def patched(packet: bytes, patches: list[tuple[int, bytes]]) -> bytes:
    b = bytearray(packet)
    for off, data in patches:
        b[off:off + len(data)] = data
    return bytes(b)


def _fields(magic: int) -> tuple[tuple[int, int], ...]:
    """(offset, length) of what a shift rewrites: v2 CRC and both timestamps; v1 CRC and timestamp."""
    return ((17, 4), (27, 16)) if magic == 2 else ((12, 4), (18, 8))
