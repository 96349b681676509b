"""Kafka frames out of pcap / pcapng captures (tcpdump, tshark): TCP reassembly per connection.

The file formats are read by ``pcapfile``, the link, IP and TCP layers by ``segments`` (dpkt for rare layouts). Per direction of each TCP
connection, segments are put back in sequence order: out-of-order segments wait (up to
``max_buffered`` bytes per direction), retransmitted and overlapping bytes are dropped, and a hole that
never fills (a lost packet, the end of the capture) is skipped and counted.

A stream whose start the capture missed (no SYN), or that lost bytes in a hole, is out of step with
the frames. It is resynchronised: bytes are skipped (and counted) up to the first offset where a
plausible frame starts and is followed by another plausible frame or ends exactly where the bytes
end. A request is plausible when its api key is one Kafka defines, its version and correlation id
are sane, its client id fits and it decodes; a response when its correlation id is that of a request
seen on the same connection and not yet answered, and it decodes as that request's answer, or when
responses follow it as a client counts up (``_orphan_chain``): answers to requests sent before the capture began
are kept that way, as orphans, rather than skipped.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Iterator, NamedTuple, Optional

import kcodec
from kcodec import definitions

from . import pcapfile, segments
from .capture import CaptureError

MAX_FRAME = 100 * 1024 * 1024
_SIZE = struct.Struct(">i")
_REQ = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length
_RESP = struct.Struct(">ii")    # size, correlation id
_MOD = 1 << 32
_KEYS = frozenset(definitions.api_keys())
ORPHAN_CHAIN, ORPHAN_CHAIN_STEP = 3, 1024


class Frame(NamedTuple):
    conn: str
    direction: int  # 0: client -> broker (request), 1: broker -> client (response)
    ts_ns: int
    data: bytes
    position: int = 0  # order within the capture (``kcodec.tap.frames``): frames of a connection sort by it


class Stats:
    """What the reassembly met, per capture."""

    def __init__(self) -> None:
        self.packets = 0
        self.tcp_segments = 0
        self.frames = 0
        self.retransmitted_bytes = 0  # bytes seen twice (retransmissions, overlaps), dropped
        self.gap_bytes = 0            # bytes never seen (lost, or before the capture began)
        self.skipped_bytes = 0        # bytes seen but in no frame (cut by a gap, before a resync)
        self.resyncs = 0
        self.not_tcp = 0
        self.undecodable_packets = 0
        self.stopped_early = ""  # why the rest of a damaged or cut-short file was not read

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


is_pcap = pcapfile.is_pcap


def _plausible_request(buf: bytearray, i: int, max_frame: int) -> int:
    """The frame length at i if a plausible request starts there, 0 if not, -1 if more bytes are needed."""
    if len(buf) - i < _REQ.size:
        return -1
    size, key, version, corr, clen = _REQ.unpack_from(buf, i)
    if not (10 <= size <= max_frame and key in _KEYS and 0 <= version <= 30 and corr >= 0
            and -1 <= clen <= size - 10):
        return 0
    return 4 + size


def _plausible_response(buf: bytearray, i: int, max_frame: int, corrs: dict[int, Any]) -> int:
    if len(buf) - i < _RESP.size:
        return -1
    size, _corr = _RESP.unpack_from(buf, i)
    if not 6 <= size <= max_frame:
        return 0
    return 4 + size


def _orphan_chain(buf: bytearray, i: int, max_frame: int) -> int:
    """1 if ORPHAN_CHAIN responses start at i, one after the other, their correlation ids rising by at
    most ORPHAN_CHAIN_STEP each (clients count up): answers to requests the capture lacks, believed
    without decoding; 0 if not; -1 if more bytes are needed."""
    prev = -1
    for _ in range(ORPHAN_CHAIN):
        if len(buf) - i < _RESP.size:
            return -1
        size, corr = _RESP.unpack_from(buf, i)
        if not (8 <= size <= max_frame and corr >= 0 and (prev < 0 or 0 < corr - prev <= ORPHAN_CHAIN_STEP)):
            return 0
        prev, i = corr, i + 4 + size
    return 1


class _Half:
    """One direction of a TCP connection: reassembly and frame cutting."""

    def __init__(self, conn: "_Conn", direction: int) -> None:
        self.conn = conn
        self.direction = direction
        self.next_seq: Optional[int] = None
        self.pending: dict[int, bytes] = {}
        self.pending_bytes = 0
        self.buf = bytearray()
        # a frame gathered from whole segments (synced, buf empty): its pieces, joined once when complete
        self.pieces: list[Any] = []
        self.have = self.need = 0
        self.synced = False
        self.waiting: list[int] = []  # resync candidates that need more bytes to be judged
        self.scan_pos = 0  # resync: offsets before this were judged already

    def segment(self, seq: int, payload: bytes, syn: bool, ts_ns: int, r: "Reassembler") -> None:
        if syn:
            if self.next_seq is None:  # a repeated SYN changes nothing
                self.next_seq = (seq + 1) % _MOD
                self.synced = True
            return
        if not payload:
            return
        if self.next_seq is None:  # the capture started mid-stream
            self.next_seq = seq
        behind = (self.next_seq - seq) % _MOD
        if 0 < behind < _MOD // 2:  # starts before what we have: a retransmission or an overlap
            if behind >= len(payload):
                r.stats.retransmitted_bytes += len(payload)
                return
            r.stats.retransmitted_bytes += behind
            payload, seq = payload[behind:], self.next_seq
        if seq == self.next_seq:
            self._append(payload, ts_ns, r)
            self._drain(ts_ns, r)
        else:
            old = self.pending.get(seq)
            if old is None or len(old) < len(payload):
                self.pending_bytes += len(payload) - (len(old) if old else 0)
                self.pending[seq] = payload
            else:
                r.stats.retransmitted_bytes += len(payload)
            if self.pending_bytes > r.max_buffered:
                self.skip_hole(ts_ns, r)

    def _append(self, payload: bytes, ts_ns: int, r: "Reassembler") -> None:
        assert self.next_seq is not None
        self.next_seq = (self.next_seq + len(payload)) % _MOD
        start = 0
        if self.pieces:
            got = self._gather(payload, ts_ns, r)
            if got is None:
                return
            start = got
        if self.synced and not self.buf and type(payload) is bytes:  # whole frames from the payload, not through buf
            start = self._whole_frames(payload, ts_ns, r, start)
            if start == len(payload) or self._start_gathering(payload, start, r):
                return
        self.buf += memoryview(payload)[start:] if start else payload
        self._cut(ts_ns, r)

    def _start_gathering(self, payload: bytes, start: int, r: "Reassembler") -> bool:
        """A frame whose size is known and that the payload's end cuts: its bytes are kept as pieces of
        the segments, joined into the frame once it is complete (``_gather``), so that they are copied
        once, not into buf and out again (``_cut``). False: left to buf (a size not yet whole, or none
        believable, which ``_cut`` judges)."""
        if len(payload) - start < 4:
            return False
        size = _SIZE.unpack_from(payload, start)[0]
        if size < 0 or size > r.max_frame:
            return False
        self.pieces = [memoryview(payload)[start:] if start else payload]
        self.have, self.need = len(payload) - start, 4 + size
        return True

    def _gather(self, payload: Any, ts_ns: int, r: "Reassembler") -> Optional[int]:
        """The next in-order payload to the frame being gathered: None when it all went in and the
        frame is still short, else the offset where the payload goes on after the completed frame."""
        missing = self.need - self.have
        if type(payload) is not bytes:  # a buffer its owner may reuse: the piece is kept as a copy
            payload = bytes(payload)
        if len(payload) < missing:
            self.pieces.append(payload)
            self.have += len(payload)
            return None
        self.pieces.append(memoryview(payload)[:missing] if len(payload) > missing else payload)
        frame = b"".join(self.pieces)
        self._drop_pieces()
        self.conn.emit(self.direction, frame, ts_ns, r)
        return missing

    def _drop_pieces(self) -> int:
        """Forget the frame being gathered; returns its bytes so far."""
        n, self.pieces, self.have, self.need = self.have, [], 0, 0
        return n

    def _whole_frames(self, payload: bytes, ts_ns: int, r: "Reassembler", start: int = 0) -> int:
        """``_cut``'s frames of a synced stream with nothing buffered, read from ``payload`` as it is from
        ``start`` (a frame that is the whole payload is that object, no copy); where the frames stop being whole."""
        end = len(payload)
        while end - start >= 4:
            size = _SIZE.unpack_from(payload, start)[0]
            if size < 0 or size > r.max_frame or end - start < 4 + size:
                break  # _cut judges it, from buf
            frame = payload if size + 4 == end else payload[start:start + 4 + size]
            start += 4 + size
            self.conn.emit(self.direction, frame, ts_ns, r)
        return start

    def _drain(self, ts_ns: int, r: "Reassembler") -> None:
        progress = True
        while progress and self.pending:
            progress = False
            for seq in list(self.pending):
                assert self.next_seq is not None
                behind = (self.next_seq - seq) % _MOD
                if behind == 0 or behind < _MOD // 2:
                    data = self.pending.pop(seq)
                    self.pending_bytes -= len(data)
                    if behind < len(data):
                        r.stats.retransmitted_bytes += behind
                        self._append(data[behind:], ts_ns, r)
                    else:
                        r.stats.retransmitted_bytes += len(data)
                    progress = True

    def skip_hole(self, ts_ns: int, r: "Reassembler") -> None:
        """Give up on the missing bytes before the earliest waiting segment; the stream must resync."""
        if not self.pending or self.next_seq is None:
            return
        nxt = self.next_seq
        first = min(self.pending, key=lambda s: (s - nxt) % _MOD)
        r.stats.gap_bytes += (first - nxt) % _MOD
        r.stats.skipped_bytes += len(self.buf) + self._drop_pieces()  # the frame the hole cut through
        self.buf.clear()
        self.synced, self.waiting, self.scan_pos = False, [], 0
        self.next_seq = first
        self._drain(ts_ns, r)

    def _frame_at(self, i: int, r: "Reassembler") -> int:
        if self.direction == 0:
            return _plausible_request(self.buf, i, r.max_frame)
        return _plausible_response(self.buf, i, r.max_frame, self.conn.corrs)

    def _verdict(self, i: int, r: "Reassembler") -> int:
        """1: a believable frame starts at i (it decodes, and its successor looks like a frame or it ends
        the bytes); 0: not at i; -1: cannot tell until more bytes arrive.

        A response whose request the capture lacks cannot be decoded (its api key is unknown): it is
        believed when responses follow it as a client's count up (``_orphan_chain``): an orphan, kept."""
        n = self._frame_at(i, r)
        if n <= 0:
            return n
        if self.direction == 1 and _RESP.unpack_from(self.buf, i)[1] not in self.conn.corrs:
            return _orphan_chain(self.buf, i, r.max_frame)
        if i + n > len(self.buf):
            return -1
        if not self._decodes(bytes(self.buf[i:i + n])):
            return 0
        if i + n == len(self.buf):
            return 1
        follow = self._frame_at(i + n, r)
        return -1 if follow < 0 else int(follow > 0)

    def _decodes(self, frame: bytes) -> bool:
        # Strict: a stretch of bytes that is no frame rarely decodes and ends exactly at its size.
        try:
            if self.direction == 0:
                kcodec.decode_request(frame)
            else:
                corr = _RESP.unpack_from(frame, 0)[1]
                kcodec.decode_response(frame, *self.conn.corrs[corr])
        except kcodec.KcodecError:
            return False
        return True

    def _resync(self, r: "Reassembler") -> bool:
        """Skip to the first offset that starts a believable frame; False while more bytes are needed.

        Offsets already rejected are not scanned again; those that could not be told yet (a candidate
        frame longer than the bytes so far) are checked again as bytes arrive, and the earliest one
        that proves itself wins, so one false candidate with a huge size cannot stall the stream.
        """
        for i in list(self.waiting):
            v = self._verdict(i, r)
            if v == 1:
                return self._synced_at(i, r)
            if v == 0:
                self.waiting.remove(i)
        for i in range(self.scan_pos, len(self.buf)):
            v = self._verdict(i, r)
            if v == 1:
                return self._synced_at(i, r)
            if v < 0:
                if self._frame_at(i, r) < 0:  # not even a header yet: resume here next time
                    self.scan_pos = i
                    break
                self.waiting.append(i)
        else:
            self.scan_pos = len(self.buf)
        keep = min(self.waiting + [self.scan_pos])
        if len(self.buf) - keep > r.max_buffered:
            keep = len(self.buf) - r.max_buffered
        self._skip(keep, r)
        return False

    def _synced_at(self, i: int, r: "Reassembler") -> bool:
        self._skip(i, r)
        self.synced = True
        self.waiting, self.scan_pos = [], 0
        r.stats.resyncs += 1
        return True

    def _skip(self, n: int, r: "Reassembler") -> None:
        """Drop the first n bytes (counted) and shift the resync bookkeeping with them."""
        if n:
            r.stats.skipped_bytes += n
            del self.buf[:n]
        self.waiting = [w - n for w in self.waiting if w >= n]
        self.scan_pos = max(0, self.scan_pos - n)

    def _cut(self, ts_ns: int, r: "Reassembler") -> None:
        buf = self.buf
        start = 0
        while True:
            if not self.synced:
                if start:
                    del buf[:start]
                    start = 0
                if not self._resync(r):
                    return
            if len(buf) - start < 4:
                break
            size = _SIZE.unpack_from(buf, start)[0]
            if size < 0 or size > r.max_frame:
                self.synced = False
                continue
            if len(buf) - start < 4 + size:
                break
            with memoryview(buf) as view:  # one copy: a bytearray's slice would be a second
                frame = bytes(view[start:start + 4 + size])
            start += 4 + size
            self.conn.emit(self.direction, frame, ts_ns, r)
        if start:
            del buf[:start]

    def finish(self, ts_ns: int, r: "Reassembler") -> None:
        while self.pending:
            self.skip_hole(ts_ns, r)
        r.stats.skipped_bytes += len(self.buf) + self._drop_pieces()
        self.buf.clear()


class _Conn:
    def __init__(self, name: str) -> None:
        self.name = name
        self.halves = (_Half(self, 0), _Half(self, 1))
        self.corrs: dict[int, tuple[int, int]] = {}  # requests not yet answered: corr -> (key, version)
        self.last_ts = 0

    def emit(self, direction: int, frame: bytes, ts_ns: int, r: "Reassembler") -> None:
        if direction == 0 and len(frame) >= 12:
            _, key, version, corr, _ = _REQ.unpack_from(frame, 0)
            if len(self.corrs) > 100_000:  # requests that never got an answer (acks=0 produce)
                self.corrs.clear()
            self.corrs[corr] = (key, version)
        elif direction == 1 and len(frame) >= 8:
            self.corrs.pop(_RESP.unpack_from(frame, 0)[1], None)
        r.stats.frames += 1
        r.out.append(Frame(self.name, direction, ts_ns, frame))


class Reassembler:
    """Feed TCP segments in capture order; take frames from ``out``; call ``finish`` at the end."""

    def __init__(self, ports: Optional[Iterable[int]] = None, max_buffered: int = 16 * 1024 * 1024,
                 max_frame: int = MAX_FRAME) -> None:
        self.ports = frozenset(ports) if ports else None
        self.max_buffered = max_buffered
        self.max_frame = max_frame
        self.stats = Stats()
        self.out: list[Frame] = []
        self._conns: dict[tuple[Any, ...], _Conn] = {}
        self._servers: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # 4-tuple -> (server ip, server port)
        self._uses: dict[tuple[Any, ...], int] = {}

    def _server_side(self, src: Any, sport: int, dst: Any, dport: int, syn: bool, ack: bool) -> tuple[Any, int]:
        key = (src, sport, dst, dport) if (src, sport) < (dst, dport) else (dst, dport, src, sport)
        known = self._servers.get(key)
        if known is None:
            if self.ports is not None and (dport in self.ports) != (sport in self.ports):
                known = (dst, dport) if dport in self.ports else (src, sport)
            elif syn:
                known = (dst, dport) if not ack else (src, sport)
            else:
                known = (dst, dport) if dport < sport else (src, sport)
            self._servers[key] = known
        return known  # type: ignore[return-value]

    def segment(self, src: str, sport: int, dst: str, dport: int, seq: int, payload: bytes, *,
                syn: bool = False, ack: bool = True, ts_ns: int = 0) -> None:
        self.stats.tcp_segments += 1
        server = self._server_side(src, sport, dst, dport, syn, ack)
        direction = 0 if (dst, dport) == server else 1
        client = (src, sport) if direction == 0 else (dst, dport)
        key = (*client, *server)
        conn = self._conns.get(key)
        if conn is None or (syn and not ack and conn.halves[0].next_seq is not None
                            and conn.halves[0].next_seq != (seq + 1) % _MOD):
            if conn is not None:  # the same 4-tuple opens a new connection
                self._close(key, ts_ns)
            n = self._uses[key] = self._uses.get(key, 0) + 1
            conn = self._conns[key] = _Conn(f"{client[0]}:{client[1]}-{server[0]}:{server[1]}"
                                            + (f"#{n}" if n > 1 else ""))
        conn.last_ts = ts_ns
        conn.halves[direction].segment(seq, payload, syn, ts_ns, self)

    def _close(self, key: tuple[Any, ...], ts_ns: int) -> None:
        conn = self._conns.pop(key)
        for half in conn.halves:
            half.finish(ts_ns, self)

    def finish(self) -> None:
        for key in list(self._conns):
            self._close(key, self._conns[key].last_ts)


def read_pcap(data: bytes, ports: Optional[Iterable[int]] = None, max_buffered: int = 16 * 1024 * 1024,
              reassembler: Optional[Reassembler] = None, last: bool = True) -> tuple[list[Frame], Stats]:
    """Every Kafka frame in a pcap or pcapng capture held in memory, with what reassembly met.

    Files of one rotated capture (``tcpdump -C`` / ``-G``) are read in order through one
    ``reassembler``, ``last`` only for the final one: a connection, a frame cut by the rotation and the
    requests awaiting their answers then carry over from file to file, and nothing at a boundary is lost.
    """
    try:
        pkts = pcapfile.packets(data)
    except pcapfile.FormatError as e:
        raise CaptureError(str(e)) from None
    r = reassembler or Reassembler(ports, max_buffered)
    r.stats, r.out = Stats(), []
    try:
        for linktype, ts_ns, buf in pkts:
            r.stats.packets += 1
            try:
                s = segments.segment(linktype, buf)
            except segments.NotTcp:
                r.stats.not_tcp += 1
                continue
            except ValueError:
                r.stats.undecodable_packets += 1
                continue
            r.segment(s.src, s.sport, s.dst, s.dport, s.seq, s.payload, syn=bool(s.flags & segments.SYN),
                      ack=bool(s.flags & segments.ACK), ts_ns=ts_ns)
    except pcapfile.Truncated as e:
        r.stats.stopped_early = str(e)
    if last:
        r.finish()
    return r.out, r.stats
