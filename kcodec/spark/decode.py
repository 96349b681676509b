"""What Spark's workers run: Arrow record batches in, Arrow record batches out (no Spark import here).

``frames_from_files`` turns capture files (rows of ``path``, ``content``) into one row per Kafka frame
with its header facts; ``decode_exchanges`` turns joined request/response rows into one row per
exchange with what the bodies say. Neither ever raises for bad input: a capture that does not read
and a frame that does not decode land in an ``error`` column, so one bad frame never fails a job.
"""

from __future__ import annotations

import collections
import json
import struct
import warnings
from typing import Any, Iterable, Iterator, Optional

import pyarrow as pa

import kcodec
from kcodec import definitions
from kcodec.messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse
from kcodec.tap.acks import produce_acks
from kcodec.tap.frames import CaptureReader
from kcodec.tap.sasl_v0 import handshake_v0

PRODUCE, METADATA = 0, 3
SASL_TOKEN = 2  # + direction: after SaslHandshake v0, bare SASL tokens (no Kafka header; kcodec.tap.sasl_v0)
DTP_PARTITION_LIMIT = 2000  # DescribeTopicPartitions' default ResponsePartitionLimit
BATCH_ROWS = 4096
_CORR = struct.Struct(">i")

FRAMES = pa.schema([
    ("source", pa.string()),       # the capture file
    ("capture", pa.string()),      # the capture it belongs to (a tap session, a pcap file set)
    ("conn", pa.string()),         # connection, "<capture>/<connection>": unique across captures
    ("position", pa.int64()),      # order within the capture (kcodec.tap.frames): pairing follows it
    ("direction", pa.int8()),      # 0 request, 1 response, -1 a row that accounts for a whole file,
                                   # 2/3 a raw SASL token client->broker / broker->client (SASL_TOKEN)
    ("ts_ns", pa.int64()),
    ("correlation_id", pa.int32()),
    ("api_key", pa.int16()),       # requests only
    ("api_version", pa.int16()),
    ("client_id", pa.string()),
    ("size", pa.int64()),          # frame bytes, size prefix included
    ("frame", pa.binary()),
    ("acks", pa.int16()),          # Produce requests: 0 expects no response
    ("error", pa.string()),        # a header that does not decode; for file rows, the summary (JSON)
])

EXCHANGES = pa.schema([
    ("source", pa.string()),
    ("capture", pa.string()),
    ("conn", pa.string()),
    ("exchange", pa.int64()),      # the request's position (an orphan's: its response's); with conn, the key
    ("pairing", pa.string()),      # kcodec.spark.pairing: answered, unanswered, no_response, ...
    ("correlation_id", pa.int32()),
    ("client_id", pa.string()),
    ("api_key", pa.int16()),
    ("api_name", pa.string()),
    ("api_version", pa.int16()),
    ("request_ts_ns", pa.int64()),
    ("response_ts_ns", pa.int64()),
    ("latency_ns", pa.int64()),
    ("request_bytes", pa.int64()),
    ("response_bytes", pa.int64()),
    ("error_codes", pa.list_(pa.int16())),  # every non-zero error code in the response, in order
    ("error_count", pa.int32()),
    ("topics", pa.int32()),
    ("partitions", pa.int32()),
    ("decode_error", pa.string()),
    ("metadata_all_topics", pa.bool_()),
    ("list_topics_v0_bytes", pa.int64()),
    ("list_topics_v1_bytes", pa.int64()),
    ("dtp_pages", pa.int32()),
    ("dtp_bytes", pa.int64()),
])


def _batches(rows: list[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for i in range(0, len(rows), BATCH_ROWS):
        yield pa.RecordBatch.from_pylist(rows[i:i + BATCH_ROWS], schema=schema)


def _header(direction: int, frame: bytes) -> tuple[Optional[int], Optional[int], Optional[int], Optional[str],
                                                  Optional[int], Optional[str]]:
    """(correlation id, api key, api version, client id, Produce acks, error) of one frame."""
    try:
        if direction == 0:
            h, pos, end = kcodec.decode_request_header(frame, strict=False)
            key, version = h.request_api_key, h.request_api_version
            acks = produce_acks(frame, pos, end, version) if key == PRODUCE else None
            return h.correlation_id, key, version, h.client_id, acks, None
        if len(frame) >= 8:
            return _CORR.unpack_from(frame, 4)[0], None, None, None, None, None
        return None, None, None, None, None, f"response frame of {len(frame)} bytes has no correlation id"
    except kcodec.KcodecError as e:
        return None, None, None, None, None, f"{type(e).__name__}: {e}"


def sasl_v0_tokens(frames: list[Any], state: Optional[dict[str, Any]] = None) -> list[bool]:
    """Which frames are raw SASL tokens. After a successful SaslHandshake v0 the client sends its tokens
    as bare size-prefixed blobs and the broker answers each likewise (KIP-43), neither with a Kafka
    header: one round for PLAIN and OAUTHBEARER, two for SCRAM (kcodec.tap.sasl_v0). Read as frames they
    would be garbage requests and orphan responses. ``state`` carries over to the next file of the same
    capture."""
    out = [False] * len(frames)
    # conn -> (correlation id of a pending handshake, rounds), or ("request" | "response", rounds left)
    state = {} if state is None else state
    for i, f in enumerate(frames):
        st, data = state.get(f.conn), f.data
        if st is not None and st[0] == "request" and f.direction == 0:
            out[i], state[f.conn] = True, ("response", st[1])
        elif st is not None and st[0] == "response" and f.direction == 1:
            out[i], state[f.conn] = True, (("request", st[1] - 1) if st[1] > 1 else None)
        elif f.direction == 0 and (handshake := handshake_v0(data)) is not None:
            state[f.conn] = handshake
        elif (f.direction == 1 and st is not None and isinstance(st[0], int) and len(data) >= 10
              and _CORR.unpack_from(data, 4)[0] == st[0]):
            ok = struct.unpack_from(">h", data, 8)[0] == 0  # a refused handshake is not followed by a token
            state[f.conn] = ("request", st[1]) if ok else None
    return out


def frame_batch(source: str, capture: str, frames: list[Any], tokens: Optional[list[bool]] = None) -> pa.RecordBatch:
    """FRAMES columns for frames of one file (``kcodec.tap.frames.Frame``), built column by column;
    ``tokens`` marks raw SASL tokens (``sasl_v0_tokens``)."""
    tokens = tokens or [False] * len(frames)
    heads = [(None,) * 6 if t else _header(f.direction, f.data) for f, t in zip(frames, tokens)]
    cols: list[Any] = list(zip(*heads)) if heads else [()] * 6
    return pa.RecordBatch.from_arrays([
        pa.array([source] * len(frames), pa.string()),
        pa.array([capture] * len(frames), pa.string()),
        pa.array([f.conn for f in frames], pa.string()),
        pa.array([f.position for f in frames], pa.int64()),
        pa.array([f.direction + SASL_TOKEN if t else f.direction for f, t in zip(frames, tokens)], pa.int8()),
        pa.array([f.ts_ns for f in frames], pa.int64()),
        pa.array(cols[0], pa.int32()), pa.array(cols[1], pa.int16()), pa.array(cols[2], pa.int16()),
        pa.array(cols[3], pa.string()),
        pa.array([len(f.data) for f in frames], pa.int64()),
        pa.array([f.data for f in frames], pa.binary()),
        pa.array(cols[4], pa.int16()),
        pa.array(cols[5], pa.string()),
    ], schema=FRAMES)


def _file_row(source: str, size: Optional[int], summary: dict[str, Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([{"source": source, "capture": summary.get("capture"), "direction": -1,
                                        "size": size, "error": json.dumps(summary, sort_keys=True)}], schema=FRAMES)


def frames_from_files(batches: Iterable[pa.RecordBatch], ports: Optional[list[int]] = None) -> Iterator[pa.RecordBatch]:
    """mapInArrow over Spark's binaryFile rows: every frame of every capture, plus one row per file.

    With ``capture`` and ``last`` columns (``kcodec.spark.pipeline``), the rows of one capture arrive
    consecutively in file order and are read through one ``CaptureReader``, so connections continue
    across rotated files; without them every file is a capture of its own."""
    reader: Optional[CaptureReader] = None
    sasl: dict[str, Any] = {}  # SASL handshakes under way in the capture (sasl_v0_tokens)
    for batch in batches:
        names = batch.schema.names
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        lengths = batch.column("length").to_pylist() if "length" in names else [None] * len(paths)
        captures = batch.column("capture").to_pylist() if "capture" in names else [None] * len(paths)
        lasts = batch.column("last").to_pylist() if "last" in names else [True] * len(paths)
        for i, path in enumerate(paths):
            name = str(captures[i] if captures[i] is not None else path)
            if reader is None or reader.name != name:
                reader, sasl = CaptureReader(name, ports), {}
            data = contents[i].as_py()
            try:
                frames, summary = reader.read(data, last=bool(lasts[i]))
            except Exception as e:  # CaptureError, truncated files: reported, never fatal
                frames, summary = [], {"error": f"{type(e).__name__}: {e}"}
                if lasts[i]:
                    frames, _ = reader.finish()
            del data
            summary["bytes"] = lengths[i]
            summary.setdefault("capture", name)
            yield _file_row(path, lengths[i], summary)
            capture_name = summary["capture"]
            tokens = sasl_v0_tokens(frames, sasl)
            for j in range(0, len(frames), BATCH_ROWS):
                yield frame_batch(path, capture_name, frames[j:j + BATCH_ROWS], tokens[j:j + BATCH_ROWS])


def _is_struct(v: Any) -> bool:
    return hasattr(v, "unknown_tagged_fields") and hasattr(type(v), "__slots__")


def _fields(v: Any) -> Iterator[tuple[str, Any]]:
    for name in type(v).__slots__:
        if name != "unknown_tagged_fields":
            yield name, getattr(v, name)


_SHAPES: dict[type, tuple[bool, tuple[str, ...]]] = {}


def _shape(cls: type) -> tuple[bool, tuple[str, ...]]:
    """(has an error_code, the fields that hold structs or lists of them), from the generated annotations:
    a nested struct is annotated by its message's name (``list[MetadataResponse.Topic]``)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        owner = cls.__qualname__.split(".")[0] + "."
        notes: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            notes.update({k: str(v) for k, v in getattr(klass, "__annotations__", {}).items()})
        nested = tuple(n for n in cls.__slots__ if owner in notes.get(n, ""))  # type: ignore[attr-defined]
        shape = _SHAPES[cls] = ("error_code" in cls.__slots__, nested)  # type: ignore[attr-defined]
    return shape


def error_codes(msg: Any) -> list[int]:
    """Every non-zero ``error_code`` in a message, depth first in field order."""
    out: list[int] = []
    stack = [msg]
    while stack:
        v = stack.pop()
        has_code, nested_names = _shape(type(v))
        if has_code and v.error_code:
            out.append(v.error_code)
        nested: list[Any] = []
        for name in nested_names:
            value = getattr(v, name)
            if isinstance(value, list):
                nested.extend(value)
            elif value is not None:
                nested.append(value)
        stack.extend(reversed(nested))
    return out


def topic_counts(msg: Any) -> Optional[tuple[int, int]]:
    """(topics, partitions) for a message that lists topics (``topics``, ``topic_data``, ``responses``...),
    partitions being the entries of each topic's partition list; None when it lists none."""
    for name, value in _fields(msg):
        if ("topic" in name or name == "responses") and isinstance(value, list):
            parts = 0
            for t in value:
                if not _is_struct(t):
                    break  # a list of names or ids: topics without partitions
                for fname, fvalue in _fields(t):
                    if "partition" in fname and isinstance(fvalue, list):
                        parts += len(fvalue)
                        break
            return len(value), parts
    return None


_OVERHEAD: dict[tuple[type, int], int] = {}


def frame_bytes(msg: Any, version: int) -> int:
    """The bytes ``msg`` takes as a response frame (size prefix and header included), without encoding it."""
    cls = type(msg)
    overhead = _OVERHEAD.get((cls, version))
    if overhead is None:
        empty = cls()
        overhead = _OVERHEAD[(cls, version)] = (len(kcodec.encode_response(empty, version, 0))
                                                - kcodec.encoded_size(empty, version))
    return overhead + kcodec.encoded_size(msg, version)


def list_topics_bytes(resp: Any, version: int) -> int:
    """Frame bytes of the ListTopics response that would name the same topics as a Metadata response."""
    lt = ListTopicsResponse(error_code=resp.error_code, throttle_time_ms=resp.throttle_time_ms if version else 0,
                            topics=[ListTopicsResponse.Topic(name=t.name or "", internal=t.is_internal)
                                    for t in resp.topics])
    return frame_bytes(lt, version)


def dtp_pages(resp: Any, limit: int = DTP_PARTITION_LIMIT) -> tuple[int, int]:
    """(pages, frame bytes) of the DescribeTopicPartitions responses that would carry the same topics and
    partitions, ``limit`` partitions a page as Kafka's broker cuts them, a cursor on every page but the last."""
    D = DescribeTopicPartitionsResponse
    pages: list[Any] = []
    page, count = D(throttle_time_ms=resp.throttle_time_ms), 0

    def close(next_topic: Optional[str], next_partition: int) -> Any:
        nonlocal page, count
        if next_topic is not None:
            page.next_cursor = D.Cursor(topic_name=next_topic, partition_index=next_partition)
        pages.append(page)
        page, count = D(throttle_time_ms=resp.throttle_time_ms), 0

    for t in resp.topics:
        topic = D.Topic(error_code=t.error_code, name=t.name, topic_id=t.topic_id, is_internal=t.is_internal,
                        topic_authorized_operations=t.topic_authorized_operations)
        page.topics.append(topic)
        for p in t.partitions:
            if count == limit:
                close(t.name, p.partition_index)
                topic = D.Topic(error_code=t.error_code, name=t.name, topic_id=t.topic_id,
                                is_internal=t.is_internal, topic_authorized_operations=t.topic_authorized_operations)
                page.topics.append(topic)
            topic.partitions.append(D.Partition(
                error_code=p.error_code, partition_index=p.partition_index, leader_id=p.leader_id,
                leader_epoch=p.leader_epoch, replica_nodes=p.replica_nodes, isr_nodes=p.isr_nodes,
                offline_replicas=p.offline_replicas))
            count += 1
    close(None, 0)
    return len(pages), sum(frame_bytes(pg, 0) for pg in pages)


_WHAT_IF: "collections.OrderedDict[tuple[int, bytes], dict[str, int]]" = collections.OrderedDict()
WHAT_IF_CACHE = 64


def metadata_what_if(resp: Any, version: int, frame: bytes) -> dict[str, int]:
    """ListTopics and DescribeTopicPartitions sizes for a Metadata response.

    Clients refresh Metadata periodically and mostly get the same answer, so results are kept for the
    last WHAT_IF_CACHE distinct response bodies (keyed by the bytes after the correlation id).
    """
    key = (version, bytes(frame[8:]))
    hit = _WHAT_IF.get(key)
    if hit is not None:
        _WHAT_IF.move_to_end(key)
        return hit
    pages, size = dtp_pages(resp)
    result = {"list_topics_v0_bytes": list_topics_bytes(resp, 0), "list_topics_v1_bytes": list_topics_bytes(resp, 1),
              "dtp_pages": pages, "dtp_bytes": size}
    _WHAT_IF[key] = result
    if len(_WHAT_IF) > WHAT_IF_CACHE:
        _WHAT_IF.popitem(last=False)
    return result


_API_NAMES: dict[int, str] = {}


def api_name(key: Optional[int]) -> Optional[str]:
    if key is None:
        return None
    if not _API_NAMES:
        _API_NAMES.update(definitions.api_keys())
    return _API_NAMES.get(key, f"Unknown({key})")


def exchange_row(r: dict[str, Any]) -> dict[str, Any]:
    """One request (and its response, when there is one) decoded into the EXCHANGES columns."""
    req_frame, resp_frame = r.get("request"), r.get("response")
    key, version, corr = r.get("api_key"), r.get("api_version"), r.get("correlation_id")
    out: dict[str, Any] = {
        "source": r.get("source"), "capture": r.get("capture"), "conn": r.get("conn"), "exchange": r.get("exchange"),
        "pairing": r.get("pairing"), "correlation_id": corr, "client_id": r.get("client_id"),
        "api_key": key, "api_name": api_name(key), "api_version": version,
        "request_ts_ns": r.get("request_ts_ns"), "response_ts_ns": r.get("response_ts_ns"),
        "request_bytes": len(req_frame) if req_frame is not None else None,
        "response_bytes": len(resp_frame) if resp_frame is not None else None,
    }
    if out["request_ts_ns"] is not None and out["response_ts_ns"] is not None:
        out["latency_ns"] = out["response_ts_ns"] - out["request_ts_ns"]
    if req_frame is None:
        return out  # an orphan response: without its request, its api key and version are unknown
    stage = "request"
    try:
        _, req = kcodec.decode_request(req_frame, strict=False)
        counts = topic_counts(req)
        if key == METADATA:
            out["metadata_all_topics"] = req.topics is None or (version == 0 and not req.topics)
        if resp_frame is not None and key is not None and version is not None and corr is not None:
            stage = "response"
            _, resp = kcodec.decode_response(resp_frame, key, version, strict=False)
            codes = error_codes(resp)
            out["error_codes"], out["error_count"] = codes, len(codes)
            counts = topic_counts(resp) or counts
            if key == METADATA:
                stage = "what-if"
                out.update(metadata_what_if(resp, version, resp_frame))
        if counts is not None:
            out["topics"], out["partitions"] = counts
    except kcodec.KcodecError as e:
        out["decode_error"] = f"{stage}: {type(e).__name__}: {e}"
    except Exception as e:  # a bug of ours must not kill a job over terabytes; it is reported per row
        out["decode_error"] = f"{stage}: internal {type(e).__name__}: {e}"
    return out


def decode_exchanges(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow over joined request/response rows: one EXCHANGES row each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kcodec.TrailingBytesWarning)
        for batch in batches:
            rows = [exchange_row(r) for r in batch.to_pylist()]
            yield from _batches(rows, EXCHANGES)
