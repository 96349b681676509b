"""Pass 1 of `kcodec analyze` on the workers: byte ranges of capture files -> TCP segments (no Spark import).

Each task reads one range (``kcodec.tap.pcapsplit``) in bounded memory and emits a row per TCP segment
that carries bytes or a SYN (``SEGMENTS``), keyed by its connection: a 64-bit digest of the capture and
the connection's two ends, the same from either side. A tap file (``.kcap``) is one range, read record by
record; its frames are whole and go out as they are. Spark then brings each connection's rows together,
in capture order (``order``), for pass 2 (``kcodec.spark.conversation``). Every range also emits one
summary row (``kind`` SUMMARY): where it started and stopped, its packets, what it could not read.

A row of a local file (a path or ``file:`` URI) carries no payload: only where it lies in the file
(``at``, ``length``), and pass 2 reads it from there (``storage.Reader``). So the capture's bytes are not
copied into rows, moved and read back, only read again where they are (from the page cache, mostly). A
row of a file on other storage (S3, HDFS) carries its payload (``data``), so that pass 2 makes no small
reads there; so does a packet of a layout only dpkt reads.
"""

from __future__ import annotations

import gc
import hashlib
import heapq
import json
import operator
import posixpath
import struct
import uuid
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional

import pyarrow as pa

from kcodec.tap import capture, pcapsplit, scan
from kcodec.tap.segments import SYN, ACK, NotTcp, locate, segment

from . import storage

SEGMENT, SUMMARY = -1, -2  # kinds; 0 and 1: a tap file's frame, client -> broker and back
OFFSET_BITS = 44  # order = file rank << OFFSET_BITS | the record's offset (files up to 16 TiB)
ROWS, ROW_BYTES = 8192, 8 << 20  # an output batch: at most this many rows or payload bytes
HEAD = 256  # of a local file, the bytes of each packet pass 1 reads: its link, IP and TCP headers

SEGMENTS = pa.schema([
    ("key", pa.int64()),       # the connection: a digest of capture and both ends (``conn_key``)
    ("capture", pa.int32()),   # index into the job's captures
    ("order", pa.int64()),     # capture order: rank << OFFSET_BITS | offset (pcap), sequence << 32 | record (kcap)
    ("kind", pa.int8()),       # SEGMENT, SUMMARY, or a tap frame's direction
    ("ts_ns", pa.int64()),
    ("src", pa.string()), ("sport", pa.int32()), ("dst", pa.string()), ("dport", pa.int32()),
    ("seq", pa.int64()),       # the TCP sequence number; a tap frame's connection id
    ("flags", pa.int16()),     # TCP flags (SYN, ACK)
    ("data", pa.binary()),     # the segment's payload, a tap frame, or a summary (JSON); null when in the file:
    ("at", pa.int64()),        # where the payload lies in its file (``data`` null)
    ("length", pa.int64()),    # and its bytes
])

RANGES = pa.schema([
    ("capture", pa.int32()), ("path", pa.string()), ("rank", pa.int32()), ("kind", pa.string()),
    ("index", pa.int32()), ("start", pa.int64()), ("end", pa.int64()), ("size", pa.int64()),
])


def conn_key(capture_id: int, a: tuple[str, int], b: tuple[str, int]) -> int:
    """The same 64-bit key for both directions of a connection (a digest: rows of two connections that
    happen to share one are still told apart by their addresses in pass 2)."""
    lo, hi = (a, b) if a <= b else (b, a)
    text = f"{capture_id}|{lo[0]}|{lo[1]}|{hi[0]}|{hi[1]}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)


def tap_key(capture_id: int, conn: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{capture_id}|tap|{conn}".encode(), digest_size=8).digest(),
                          "big", signed=True)


class _Out:
    """SEGMENTS rows, cut into batches as they fill: a tuple a row, made columns once a batch (``zip``), not
    fourteen appends a row."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.bytes = 0

    def add(self, *row: Any) -> Optional[pa.RecordBatch]:
        self.rows.append(row)
        data = row[11]
        if data is not None:
            self.bytes += len(data)
        if len(self.rows) >= ROWS or self.bytes >= ROW_BYTES:
            return self.flush()
        return None

    def flush(self) -> Optional[pa.RecordBatch]:
        if not self.rows:
            return None
        batch = pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(zip(*self.rows), SEGMENTS)],
                                           schema=SEGMENTS)
        self.rows, self.bytes = [], 0
        return batch


def _pcap_range(f: BinaryIO, r: dict[str, Any], summary: dict[str, Any], out: _Out) -> Iterator[pa.RecordBatch]:
    fmt = pcapsplit.read_format(f)
    got = pcapsplit.RangeResult()
    cid, base = r["capture"], r["rank"] << OFFSET_BITS
    inline = storage.local_path(r["path"]) is None
    keys: dict[tuple[Any, ...], int] = {}
    segments = not_tcp = undecodable = 0
    # a local file's packets are located in C (kcodec.tap.scan) but those it leaves to the Packets below
    read = pcapsplit.packets(f, fmt, r["start"], r["end"], got) if inline else \
        scan.located(f, fmt, r["start"], r["end"], got, HEAD)
    for p in read:
        if isinstance(p, scan.Located):
            segments, not_tcp, undecodable = segments + p.tcp, not_tcp + p.not_tcp, undecodable + p.undecodable
            found = p.rows
        else:
            try:
                found = [_segment(f, p, inline)]
            except NotTcp:
                not_tcp += 1
                continue
            except ValueError:
                undecodable += 1
                continue
            segments += 1
        for offset, ts_ns, src, sport, dst, dport, seq, flags, data, at, length in found:
            if not (length or data) and not flags & SYN:
                continue  # a bare ACK, FIN or RST: nothing for reassembly
            ends = (src, sport, dst, dport)
            key = keys.get(ends)
            if key is None:
                key = keys[ends] = conn_key(cid, (src, sport), (dst, dport))
            batch = out.add(key, cid, base | offset, SEGMENT, ts_ns, src, sport, dst, dport, seq, flags & (SYN | ACK),
                            data if data is not None or length else b"", at if length else None, length or None)
            if batch is not None:
                yield batch
    summary.update(kind="pcap", packets=got.packets, tcp_segments=segments, not_tcp=not_tcp,
                   undecodable_packets=undecodable, first=got.first, stop=got.stop,
                   stopped_early=got.stopped_early, late_header=got.late_header)


def _segment(f: BinaryIO, p: pcapsplit.Packet, inline: bool) -> tuple[Any, ...]:
    """A packet's TCP segment as ``scan.Located``'s rows give it, its payload in ``data`` (dpkt's layouts, a
    file read inline) or at ``at``; NotTcp or ValueError as ``locate`` raises them."""
    at = None if inline else locate(p.linktype, p.data, p.size if p.size >= 0 else None)
    if at is None and 0 <= len(p.data) < p.size:  # headers past the first bytes, or dpkt's layout
        f.seek(p.data_at)
        p = p._replace(data=f.read(p.size), size=-1)
        at = locate(p.linktype, p.data)
    if at is None:
        s = segment(p.linktype, p.data)
        return p.offset, p.ts_ns, s.src, s.sport, s.dst, s.dport, s.seq, s.flags, s.payload, None, 0
    src, sport, dst, dport, seq, flags, start, end = at
    return p.offset, p.ts_ns, src, sport, dst, dport, seq, flags, None, p.data_at + start, max(0, end - start)


def _kcap_file(f: BinaryIO, r: dict[str, Any], summary: dict[str, Any], out: _Out) -> Iterator[pa.RecordBatch]:
    head = f.read(capture.HEADER.size)
    header = capture.parse_header(head)
    cid, base = r["capture"], header.sequence << 32
    inline = storage.local_path(r["path"]) is None
    frames, opened, closed = 0, 0, 0
    summary.update(kind="kcap", session=header.session, sequence=header.sequence)
    records = ((rec, None, None) for rec in capture.read_records(f)) if inline else capture.record_heads(f)
    for i, (rec, at, length) in enumerate(records):
        if rec.kind <= capture.RESPONSE:
            frames += 1
            batch = out.add(tap_key(cid, rec.conn), cid, base | i, rec.kind, rec.ts_ns, None, None, None, None,
                            rec.conn, 0, rec.payload if inline or not length else None, at if length else None,
                            length or None)
            if batch is not None:
                yield batch
        elif rec.kind == capture.OPENED:
            opened += 1
        else:
            closed += 1
    summary.update(frames=frames, connections_opened=opened, connections_closed=closed)


def read_ranges(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over RANGES rows: the SEGMENTS rows of each range, then its SUMMARY row."""
    out = _Out()
    for batch in batches:
        for r in batch.to_pylist():
            summary: dict[str, Any] = {k: r[k] for k in ("path", "capture", "rank", "index", "start", "end")}
            try:
                with storage.open_input(r["path"]) as f:
                    reader = _kcap_file if r["kind"] == "kcap" else _pcap_range
                    yield from reader(f, r, summary, out)
            except (capture.CaptureError, pcapsplit.FormatError, OSError, struct.error) as e:
                summary["error"] = f"{type(e).__name__}: {e}"
            except Exception as e:  # a bug of ours must not fail a job: reported on the file's row
                summary["error"] = f"internal {type(e).__name__}: {e}"
            batch_ = out.add(0, r["capture"], 0, SUMMARY, None, None, None, None, None, None, None,
                             json.dumps(summary, sort_keys=True).encode(), None, None)
            if batch_ is not None:
                yield batch_
    last = out.flush()
    if last is not None:
        yield last


def _sorted(batches: list[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(batches, SEGMENTS).sort_by(
        [("key", "ascending"), ("capture", "ascending"), ("order", "ascending")])


GC_THRESHOLD = 20_000  # a worker's youngest generation: collected after this many allocations, not 700


def worker_gc() -> None:
    """A worker's garbage collector set for the passes: what the worker has imported and built so far is
    frozen (never traversed again) and the young generation collected less often. The passes make and drop
    a row dict or tuple per segment, frame and batch, freed by their counts, not by the collector, which
    spent about 7 % of pass 2 traversing them; cycles are still collected."""
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def spill_ranges(ranges: Iterable[dict[str, Any]], scratch: str, partitions: int) -> Iterator[tuple[int, Any]]:
    """Pass 1 without Spark's shuffle (`kcodec analyze`): the SEGMENTS rows of each range, sorted, written
    to one Arrow file per connection partition (``scratch/p<partition>/r<range>.arrow``; a range's rows,
    at most about its size, are held until it ends). Yields (partition, file) for each file written and
    (0, summary) for each range, which Spark hands on by partition to pass 2 (``merged_rows``)."""
    worker_gc()
    for r in ranges:
        parts: dict[int, list[pa.RecordBatch]] = {}
        summary: Optional[bytes] = None
        for batch in read_ranges([pa.RecordBatch.from_pylist([r], schema=RANGES)]):
            kinds = batch.column("kind").to_pylist()
            if SUMMARY in kinds:  # the range's last row
                summary = batch.column("data")[kinds.index(SUMMARY)].as_py()
                batch = batch.filter(pa.array([k != SUMMARY for k in kinds]))
            if not batch.num_rows:
                continue
            keys = batch.column("key").to_pylist()
            for p in set(k % partitions for k in keys):
                parts.setdefault(p, []).append(batch.filter(pa.array([k % partitions == p for k in keys])))
        for p, batches in sorted(parts.items()):
            path = f"{scratch}/p{p:05d}/r{r['capture']:05d}-{r['rank']:06d}-{r['index']:06d}.arrow"
            storage.write_arrow(path, _sorted(batches))
            yield p, path
        yield 0, summary


def by_partition(spilled: Iterable[tuple[int, Any]], partitions: int) -> list[list[tuple[int, Any]]]:
    """``spill_ranges``' (partition, file or summary) items grouped by partition: each pass-2 partition's
    input, whoever runs it (a Spark task or ``kcodec.spark.early``'s child)."""
    out: list[list[tuple[int, Any]]] = [[] for _ in range(partitions)]
    for part, item in spilled:
        out[part].append((part, item))
    return out


FAN_IN = 32  # spill files one merge reads at once (a 2 GiB capture's ranges at the default split)
SLICE = 256  # rows of a spill file's batch made Python tuples at a time
GROUP_BYTES = 16 << 20  # a group of files at most this large is merged whole by Arrow's stable sort (held twice then)


def _file_rows(path: str) -> Iterator[tuple[Any, ...]]:
    """A spill file's rows as tuples, ``SLICE`` at a time: a merge holds one slice's tuples per file, not a
    whole batch's (8,192 rows of 14 Python objects each)."""
    for batch in storage.read_arrow(path):
        for start in range(0, batch.num_rows, SLICE):
            part = batch.slice(start, SLICE)
            yield from zip(*[part.column(i).to_pylist() for i in range(part.num_columns)])


def merged_rows(paths: list[str]) -> Iterator[tuple[Any, ...]]:
    """The SEGMENTS rows of a partition's files (each sorted) as one sorted stream of tuples. Every file
    of the merge holds a batch and a slice of it, and a partition has a file per range of the capture:
    so beyond ``FAN_IN`` files, groups of ``FAN_IN`` are first merged into files of their own (beside
    them, removed once read; a group of at most ``GROUP_BYTES`` whole, by Arrow's stable sort), as often
    as needed, and a task's memory stays the same whatever the capture's size (issue 32). Groups are
    consecutive and both merges keep ties in their inputs' order, so the stream is the one merge of all
    the files would give."""
    key = operator.itemgetter(0, 1, 2)
    made: list[str] = []
    try:
        while len(paths) > FAN_IN:
            schema = storage.arrow_schema(paths[0])
            level: list[str] = []
            for i in range(0, len(paths), FAN_IN):
                group = paths[i:i + FAN_IN]
                if len(group) == 1:
                    level.append(group[0])
                    continue
                out = f"{posixpath.dirname(group[0])}/m-{uuid.uuid4().hex}.arrow"
                made.append(out)
                if sum(storage.file_size(p) for p in group) <= GROUP_BYTES:  # ~3.5x fewer instructions than by rows
                    tables = [pa.Table.from_batches(list(storage.read_arrow(p)), schema) for p in group]
                    by = [(n, "ascending") for n in schema.names[:3]]
                    storage.write_arrow(out, pa.concat_tables(tables).sort_by(by))
                else:
                    storage.write_arrow_rows(out, schema, merge_runs([_file_rows(p) for p in group], key))
                level.append(out)
                for p in group:
                    if p in made:  # an earlier level's, read now
                        storage.remove_file(p)
            paths = level
        yield from merge_runs([_file_rows(p) for p in paths], key)
    finally:
        for p in made:
            storage.remove_file(p)


def merge_runs(iterators: list[Iterator[Any]], key: Callable[[Any], Any]) -> Iterator[Any]:
    """``heapq.merge(*iterators, key=key)``'s stream (ties in the iterators' order), taking rows from the
    first iterator for as long as they come before every other's next one: a connection's rows lie in
    one file per range, one after the other, so the heap moves once a run, not once a row."""
    heap: list[tuple[Any, int, Any, Iterator[Any]]] = []
    for i, it in enumerate(iterators):
        for row in it:
            heap.append((key(row), i, row, it))
            break
    heapq.heapify(heap)
    while len(heap) > 1:
        _, i, row, it = heap[0]
        bound = heap[1] if len(heap) == 2 or heap[1] < heap[2] else heap[2]  # the runner-up: a child of the top
        bound_key, bound_i = bound[0], bound[1]
        yield row
        for row in it:
            k = key(row)
            if k < bound_key or (k == bound_key and i < bound_i):
                yield row
            else:
                heapq.heapreplace(heap, (k, i, row, it))
                break
        else:
            heapq.heappop(heap)
    if heap:
        yield heap[0][2]
        yield from heap[0][3]
