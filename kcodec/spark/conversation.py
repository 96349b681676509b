"""Pass 2 of `kcodec analyze` on the workers: each connection's rows, in capture order, -> its tables.

Spark hands a task the rows of whole connections, sorted by connection and capture order (pass 1,
``kcodec.spark.segments``). A connection is reassembled (``kcodec.tap.pcap``), cut into frames, its
requests and responses paired as they come (``pairing.Pairer``) and each exchange decoded once, its
record batches with it (``record_batches``): a Produce request's when it is read, a Fetch response's
when its request is known. Nothing but the requests still waiting for an answer (their decoded
columns, not their bytes) and the connection's reassembly buffers is held, so memory does not grow
with the capture. Rows go out per table (``Tables``): frames, exchanges, batches, and the topic ids
that Metadata responses name.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Iterator, Optional

import kcodec
from kcodec.tap import pcap
from kcodec.tap.segments import ACK, SYN

from . import decode, pairing, record_batches, storage
from .segments import OFFSET_BITS, SEGMENT, SUMMARY

FRAME_COLUMNS = decode.FRAMES.names
API_VERSIONS = 18  # its responses: decode_response may read one again as v0
STATS = ("frames", "retransmitted_bytes", "gap_bytes", "skipped_bytes", "resyncs")  # what reassembly adds per file


class Tables:
    """Where a task's rows go: ``emit(table, row)``; ``frames``, ``exchanges``, ``batches``, ``topic_ids``."""

    def __init__(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        self.emit = emit


class Conversation:
    """One connection: frames in, in wire order; exchange and batch rows out, as pairs complete."""

    def __init__(self, conn: str, tables: Tables) -> None:
        self.conn = conn
        self.tables = tables
        self.pairer = pairing.Pairer()
        self.requests: dict[int, tuple[dict[str, Any], Optional[tuple[int, int]]]] = {}  # position -> (row, key/version)
        self.responses: dict[int, tuple[dict[str, Any], bytes]] = {}  # held responses: position -> (row, bytes)

    def frame(self, f: dict[str, Any], data: Optional[bytes] = None, body: Optional[int] = None) -> None:
        """One frames row; its bytes are ``data`` when given (the frames table's row may be without them);
        ``body``: where a request's body starts, when its header was peeked already (``decode.header_and_body``)."""
        direction, position = f["direction"], f["position"]
        if data is None:
            data = f["frame"]
        if direction == 0:
            row, key_version = request_row(f, self.tables, data, body)
            self.requests[position] = (row, key_version)
            pairs = self.pairer.request(position, f["correlation_id"], f["acks"])
        elif direction == 1:
            self.responses[position] = (f, data)
            pairs = self.pairer.response(position, f["correlation_id"])
        else:
            return
        if pairs:  # (a request mostly completes none)
            self._pairs(pairs, f)

    def finish(self) -> None:
        self._pairs(self.pairer.finish(), None)

    def _pairs(self, pairs: list[pairing.Pair], latest: Optional[dict[str, Any]]) -> None:
        for req, resp, status in pairs:
            response = self.responses.pop(resp) if resp is not None else None
            if req is None:
                assert response is not None
                row = orphan_row(*response)
            else:
                row, key_version = self.requests.pop(req)
                row["pairing"] = status
                if response is not None:
                    response_columns(row, response[0], key_version, self.tables, response[1])
            self.tables.emit("exchanges", row)


def _decode(fn: Callable[..., tuple[Any, Any]], *args: Any) -> tuple[Any, Any, int]:
    """(header, message, trailing bytes): decoded strictly, and again tolerating trailing bytes when
    those were all that stood in the way."""
    try:
        return (*fn(*args, zero_copy=True), 0)
    except kcodec.DecodeError as e:
        if "trailing bytes after the body" not in e.reason:
            raise
        trailing = int(e.reason.split(" ", 1)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kcodec.TrailingBytesWarning)
        return (*fn(*args, strict=False, zero_copy=True), trailing)


def _decode_request(frame: bytes, key: int, version: int, body: Optional[int] = None) -> tuple[Any, int]:
    """(request, trailing bytes): ``decode_request``'s body and errors, its header peeked at (no
    RequestHeader object made; not again when ``body``, where the body starts, is known: ``key`` and
    ``version`` are then the header's) and trailing bytes counted, not decoded a second time."""
    if body is None:
        key, version, _, _, pos, end = kcodec.peek_request_header(frame)
    else:
        pos, end = body, len(frame)
    cls: Any = kcodec.message_class(key, "request")
    req, body_end = kcodec.decode_from(cls, frame, version, pos, end, zero_copy=True)
    return req, end - body_end


def _decode_response(frame: bytes, key: int, version: int) -> tuple[Any, int]:
    """(response, trailing bytes): ``decode_response``'s, likewise (ApiVersions, which it may read again
    as v0, through it)."""
    if key == API_VERSIONS:
        _, resp, trailing = _decode(kcodec.decode_response, frame, key, version)
        return resp, trailing
    cls: Any = kcodec.message_class(key, "response")  # its error first, as decode_response's
    _, pos, end = kcodec.peek_response_header(frame, key, version)
    resp, body_end = kcodec.decode_from(cls, frame, version, pos, end, zero_copy=True)
    return resp, end - body_end


def _base(f: dict[str, Any]) -> dict[str, Any]:
    return {"source": f["source"], "capture": f["capture"], "conn": f["conn"], "exchange": f["position"],
            "correlation_id": f["correlation_id"]}


def _message_columns(row: dict[str, Any], msg: Any, version: int, trailing: int, side: str) -> None:
    """Trailing bytes, topics and partitions of a decoded message (a response's counts win)."""
    if trailing:
        row[f"{side}_trailing_bytes"] = trailing
    counts = decode.topic_counts(msg, version)
    if counts is not None:
        row["topics"], row["partitions"] = counts


def _failure(e: Exception) -> str:
    """Why a message did not decode; an error of ours (not a KcodecError) says "internal"."""
    return f"{type(e).__name__}: {e}" if isinstance(e, kcodec.KcodecError) else f"internal {type(e).__name__}: {e}"


def _batch_base(row: dict[str, Any], direction: str, ts_ns: int) -> dict[str, Any]:
    """The columns a batches row takes from its exchange's."""
    return {"source": row["source"], "capture": row["capture"], "conn": row["conn"], "exchange": row["exchange"],
            "client_id": row.get("client_id"), "api_name": row["api_name"], "api_version": row["api_version"],
            "direction": direction, "ts_ns": ts_ns}


def request_row(f: dict[str, Any], tables: Tables, frame: bytes,
                body: Optional[int] = None) -> tuple[dict[str, Any], Optional[tuple[int, int]]]:
    """The exchange columns a request frame gives, and its api key and version when it decoded (its
    answer is read with them). A Produce request's record batches go out now, from the same decode.
    ``frame``: its bytes (the row may be without them); ``body``: as ``Conversation.frame``'s."""
    key, version = f["api_key"], f["api_version"]
    row = {"source": f["source"], "capture": f["capture"], "conn": f["conn"], "exchange": f["position"],
           "correlation_id": f["correlation_id"], "client_id": f["client_id"], "api_key": key,
           "api_name": decode.api_name(key), "api_version": version, "request_ts_ns": f["ts_ns"],
           "request_bytes": len(frame)}  # ``_base``'s columns and the request's, in one dict
    if key is None or version is None:
        row["decode_error"] = f"request: {f['error']}" if f.get("error") else "request: no header"
        return row, None
    produce = key == record_batches.PRODUCE and _batch_base(row, "produced", f["ts_ns"])
    try:
        req, trailing = _decode_request(frame, key, version, body)
    except Exception as e:  # a bug of ours (not a KcodecError) must not kill a job either: reported on the row
        what = _failure(e)
        row["decode_error"] = f"request: {what}"
        if produce:  # the batches table says so too
            tables.emit("batches", dict(produce, error=f"produced: {what}"))
        return row, None
    _message_columns(row, req, version, trailing, "request")
    if key == decode.METADATA:
        row["metadata_all_topics"] = req.topics is None or (version == 0 and not req.topics)
    if produce:
        for r in record_batches.message_rows(key, req):  # a fresh row a batch, sharing no key with produce
            r.update(produce)
            tables.emit("batches", r)
    return row, (key, version)


def response_columns(row: dict[str, Any], f: dict[str, Any], key_version: Optional[tuple[int, int]],
                     tables: Tables, frame: bytes) -> None:
    """Fill an exchange row with its response: bytes, time, and what the response says (when the
    request decoded); a Fetch response's record batches go out, a Metadata response's topic ids."""
    row.update(response_ts_ns=f["ts_ns"], response_bytes=len(frame))
    if row.get("request_ts_ns") is not None:
        row["latency_ns"] = f["ts_ns"] - row["request_ts_ns"]
    if key_version is None or f["correlation_id"] is None:
        return
    key, version = key_version
    fetch = key == record_batches.FETCH and _batch_base(row, "fetched", f["ts_ns"])
    try:
        resp, trailing = _decode_response(frame, key, version)
        codes = decode.error_codes(resp)
        row["error_codes"], row["error_count"] = codes, len(codes)
        _message_columns(row, resp, version, trailing, "response")
        if key == decode.METADATA:
            row.update(decode.metadata_what_if(resp, version, frame))
            for tid, name in record_batches.topic_ids(resp):
                tables.emit("topic_ids", {"topic_id": tid, "topic_name": name})
        if fetch:
            for r in record_batches.message_rows(key, resp):
                r.update(fetch)
                tables.emit("batches", r)
    except Exception as e:
        what = _failure(e)
        row["decode_error"] = f"response: {what}"
        if fetch:
            tables.emit("batches", dict(fetch, error=f"fetched: {what}"))


def orphan_row(f: dict[str, Any], frame: bytes) -> dict[str, Any]:
    """A response without its request: without it, its api key and version are unknown."""
    row = _base(f)
    row.update(pairing=pairing.ORPHAN, response_ts_ns=f["ts_ns"], response_bytes=len(frame))
    return row


class Connections:
    """A task's rows of whole connections, sorted by connection key and capture order (pass 1's
    ``SEGMENTS``): reassembled and cut into frames, each connection's frames through its
    ``Conversation`` (unless ``decode`` is off: frames only; ``frame_bytes`` off: the frames table's rows
    without their bytes). ``files`` names the file of a row by
    (capture, rank) for packet captures and (capture, sequence) for tap files."""

    def __init__(self, captures: list[str], files: dict[tuple[int, int], str], ports: Optional[list[int]],
                 tables: Tables, decode: bool = True, frame_bytes: bool = True) -> None:
        self.captures, self.files, self.ports = captures, files, ports
        self.tables, self.decode, self.frame_bytes = tables, decode, frame_bytes
        self.stats: dict[str, pcap.Stats] = {}
        self.key: Optional[tuple[int, int]] = None
        self.reassembler: Optional[pcap.Reassembler] = None
        self.conversations: dict[str, Conversation] = {}
        self.sasl: dict[str, Any] = {}
        self.last: dict[str, int] = {}
        self.path = ""
        self.reader = storage.Reader()  # payloads that pass 1 left in their files

    def rows(self, batch: Any) -> Iterator[bytes]:
        """Feed one Arrow batch of SEGMENTS rows; yields the summaries (JSON) of the ranges it meets."""
        return self.feed(zip(*[batch.column(i).to_pylist() for i in range(batch.num_columns)]))

    def feed(self, rows: Iterable[tuple[Any, ...]]) -> Iterator[bytes]:
        """Feed SEGMENTS rows as tuples, sorted by connection key and capture order."""
        for key, cid, order, kind, ts, src, sport, dst, dport, seq, flags, data, at, length in rows:
            if kind == SUMMARY:
                yield data
                continue
            if (key, cid) != self.key:
                self.close()
                self.key = (key, cid)
            name = self.captures[cid]
            if kind == SEGMENT:
                self.path = self.files[(cid, order >> OFFSET_BITS)]
                if data is None:
                    data = self.reader.read(self.path, at, length)
                r = self.reassembler
                if r is None:
                    r = self.reassembler = pcap.Reassembler(self.ports)
                stats = self.stats.get(self.path)  # (setdefault would build a Stats a segment)
                r.stats = stats if stats is not None else self.stats.setdefault(self.path, pcap.Stats())
                r.out = []
                r.segment(src, sport, dst, dport, seq, data, syn=bool(flags & SYN), ack=bool(flags & ACK), ts_ns=ts)
                for f in r.out:
                    self.frame(name, f"{name}/{f.conn}", f.direction, f.ts_ns, f.data, order)
            else:
                self.path = self.files[(cid, order >> 32)]
                if data is None:
                    data = self.reader.read(self.path, at, length)
                self.frame(name, f"{name}/{seq}", kind, ts, data, order)

    def frame(self, capture: str, conn: str, direction: int, ts: int, data: bytes, order: int) -> None:
        position = max(order, self.last.get(conn, -1) + 1)  # frames completed by one packet: order + k
        self.last[conn] = position
        # a response is a token only in a SASL v0 state (then kept in ``sasl``): most frames need not ask
        token = (direction == 0 or conn in self.sasl) and decode.sasl_v0_token(conn, direction, data, self.sasl)
        corr, key, version, client, acks, error, body = (
            (None,) * 7 if token else decode.header_and_body(direction, data))
        row = {"source": self.path, "capture": capture, "conn": conn, "position": position,
               "direction": direction + decode.SASL_TOKEN if token else direction, "ts_ns": ts,
               "correlation_id": corr, "api_key": key, "api_version": version, "client_id": client,
               "size": len(data), "acks": acks, "error": error}
        if self.frame_bytes:  # without them, the frames table's buffered row holds no reference to the bytes
            row["frame"] = data
        self.tables.emit("frames", row)
        if self.decode and not token:
            c = self.conversations.get(conn)
            if c is None:
                c = self.conversations[conn] = Conversation(conn, self.tables)
            c.frame(row, data, body)

    def close(self) -> None:
        """The end of a connection key's rows: what reassembly still holds, then every conversation."""
        r, self.reassembler = self.reassembler, None
        if r is not None:
            r.out = []
            r.stats = self.stats.setdefault(self.path, pcap.Stats())
            r.finish()
            name = self.captures[self.key[1]] if self.key else ""
            for f in r.out:
                self.frame(name, f"{name}/{f.conn}", f.direction, f.ts_ns, f.data, 0)
        for c in self.conversations.values():
            c.finish()
        self.conversations, self.sasl, self.last = {}, {}, {}

    def end(self) -> None:
        """The end of the task's rows: ``close``, and the input files let go."""
        self.close()
        self.reader.close()

    def file_stats(self) -> dict[str, dict[str, int]]:
        return {path: {k: getattr(s, k) for k in STATS} for path, s in self.stats.items()}
