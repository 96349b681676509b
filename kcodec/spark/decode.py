"""What Spark's workers read from frames (no Spark import here): the FRAMES and EXCHANGES columns,
request headers, SASL v0 tokens, error codes and topic counts of a decoded message, and the what-if
sizes of a Metadata response as ListTopics and DescribeTopicPartitions. ``kcodec.spark.conversation``
puts them together per connection. Nothing here raises for bad input: a frame that does not decode
fills an ``error`` column, so one bad frame never fails a job.
"""

from __future__ import annotations

import collections
import re
import struct
import sys
from typing import Any, Optional

import pyarrow as pa

import kcodec
from kcodec import definitions
from kcodec.messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse
from kcodec.tap.acks import produce_acks
from kcodec.tap.sasl_v0 import handshake_v0

PRODUCE, METADATA = 0, 3
SASL_TOKEN = 2  # + direction: after SaslHandshake v0, bare SASL tokens (no Kafka header; kcodec.tap.sasl_v0)
DTP_PARTITION_LIMIT = 2000  # DescribeTopicPartitions' default ResponsePartitionLimit
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
# `kcodec analyze`'s frames table by default: every column but the frames' bytes, a copy of the capture that
# no other table and no part of the report reads (``--keep-frame-bytes`` keeps them)
FRAMES_WITHOUT_BYTES = FRAMES.remove(FRAMES.get_field_index("frame"))

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
    ("request_trailing_bytes", pa.int32()),   # bytes after the request's body that its schema does not read
    ("response_trailing_bytes", pa.int32()),  # likewise after the response's (decoded all the same)
])


def header_and_body(direction: int, frame: bytes) -> tuple[Optional[int], Optional[int], Optional[int],
                                                           Optional[str], Optional[int], Optional[str], Optional[int]]:
    """(correlation id, api key, api version, client id, Produce acks, error) of one frame and, last, where a
    request's body starts when the frame ends where its size prefix says (else None): then a strict peek of the
    header would read the same, and pass 2's decode of the request need not peek again."""
    try:
        if direction == 0:
            key, version, corr, client, pos, end = kcodec.peek_request_header(frame, strict=False)
            acks = produce_acks(frame, pos, end, version) if key == PRODUCE else None
            return corr, key, version, client, acks, None, pos if end == len(frame) else None
        if len(frame) >= 8:
            return _CORR.unpack_from(frame, 4)[0], None, None, None, None, None, None
        return None, None, None, None, None, f"response frame of {len(frame)} bytes has no correlation id", None
    except kcodec.KcodecError as e:
        return None, None, None, None, None, f"{type(e).__name__}: {e}", None


def sasl_v0_tokens(frames: list[Any], state: Optional[dict[str, Any]] = None) -> list[bool]:
    """Which frames are raw SASL tokens. After a successful SaslHandshake v0 the client sends its tokens
    as bare size-prefixed blobs and the broker answers each likewise (KIP-43), neither with a Kafka
    header: one round for PLAIN and OAUTHBEARER, two for SCRAM (kcodec.tap.sasl_v0). Read as frames they
    would be garbage requests and orphan responses. ``state`` carries over to the next file of the same
    capture."""
    state = {} if state is None else state
    return [sasl_v0_token(f.conn, f.direction, f.data, state) for f in frames]


def sasl_v0_token(conn: str, direction: int, data: bytes, state: dict[str, Any]) -> bool:
    """``sasl_v0_tokens`` for one frame (pass 2 asks frame by frame, without a Frame and a list each)."""
    # state: conn -> (correlation id of a pending handshake, rounds), or ("request" | "response", rounds left)
    st = state.get(conn)
    if st is not None and st[0] == "request" and direction == 0:
        state[conn] = ("response", st[1])
        return True
    if st is not None and st[0] == "response" and direction == 1:
        state[conn] = ("request", st[1] - 1) if st[1] > 1 else None
        return True
    if direction == 0 and (handshake := handshake_v0(data)) is not None:
        state[conn] = handshake
    elif (direction == 1 and st is not None and isinstance(st[0], int) and len(data) >= 10
          and _CORR.unpack_from(data, 4)[0] == st[0]):
        ok = struct.unpack_from(">h", data, 8)[0] == 0  # a refused handshake is not followed by a token
        state[conn] = ("request", st[1]) if ok else None
    return False


_HOLDS_CODES: dict[type, bool] = {}


def _nested(cls: type) -> list[tuple[str, Optional[type]]]:
    """The fields of ``cls`` that hold structs or lists of them, last first, each with its struct's class
    (None where the annotation does not name one that resolves), from the generated annotations: a nested
    struct is annotated by its message's name (``list[MetadataResponse.Topic]``)."""
    owner = cls.__qualname__.split(".")[0]
    top = getattr(sys.modules.get(cls.__module__), owner, None)
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        notes.update({k: str(v) for k, v in getattr(klass, "__annotations__", {}).items()})
    out: list[tuple[str, Optional[type]]] = []
    for name in reversed(cls.__slots__):  # type: ignore[attr-defined]
        m = re.search(rf"{owner}\.([\w.]+)", notes.get(name, ""))
        if m is None:
            continue
        target: Any = top
        for part in m.group(1).split("."):
            target = getattr(target, part, None)
        out.append((name, target if isinstance(target, type) else None))
    return out


def _holds_codes(cls: Optional[type]) -> bool:
    """Whether a struct of ``cls`` can hold an ``error_code``, itself or in a struct under it (unknown: yes)."""
    if cls is None:
        return True
    held = _HOLDS_CODES.get(cls)
    if held is None:
        _HOLDS_CODES[cls] = True  # a struct that nests itself: yes while it is being worked out
        held = _HOLDS_CODES[cls] = ("error_code" in cls.__slots__  # type: ignore[attr-defined]
                                    or any(_holds_codes(c) for _, c in _nested(cls)))
    return held


def _shape(cls: type) -> tuple[bool, tuple[str, ...]]:
    """(has an error_code, the fields to walk for codes, last first): the fields that hold structs or lists
    of them, but not those whose structs can hold no error code (a Fetch response's partitions' aborted
    transactions, diverging epoch, current leader and snapshot id: four walks a partition for nothing)."""
    has_code, nested = _plan(cls)
    return has_code, tuple(name for name, _ in nested)


_PLANS: dict[type, tuple[bool, tuple[tuple[str, Optional[type]], ...]]] = {}


def _leaf(cls: Optional[type]) -> Optional[type]:
    """``cls`` when its structs hold an ``error_code`` and nothing under them can (a Fetch response's
    partitions, most responses' innermost structs): a list of them is read in one loop."""
    if cls is None or "error_code" not in cls.__slots__:  # type: ignore[attr-defined]
        return None
    return None if any(_holds_codes(c) for _, c in _nested(cls)) else cls


def _plan(cls: type) -> tuple[bool, tuple[tuple[str, Optional[type]], ...]]:
    """(has an error_code, the fields to walk for codes, last first, each with the class of its structs when
    they are leaves (``_leaf``), else None): ``_shape``'s fields, one cache for both."""
    plan = _PLANS.get(cls)
    if plan is None:
        has_code = "error_code" in cls.__slots__  # type: ignore[attr-defined]
        plan = _PLANS[cls] = (has_code, tuple((name, _leaf(c)) for name, c in _nested(cls) if _holds_codes(c)))
    return plan


def error_codes(msg: Any) -> list[int]:
    """Every non-zero ``error_code`` in a message, depth first in field order. (Run for every response:
    children go on the stack straight from each class's ``_plan``, last first, with no list per struct; a
    list of leaf structs goes on it whole, as a (class, list) tuple, and is read in one loop when its turn
    comes, so the order stays depth first.)"""
    out: list[int] = []
    stack = [msg]
    pop, push, extend, plans, append = stack.pop, stack.append, stack.extend, _PLANS, out.append
    while stack:
        v = pop()
        cls = type(v)
        if cls is tuple:  # a run of leaves, in order
            leaf, items = v
            for x in items:
                if type(x) is leaf:
                    code = x.error_code
                    if code:
                        append(code)
                else:  # not the annotated class: walked whole, in its place
                    out.extend(error_codes(x))
            continue
        has_code, nested = plans.get(cls) or _plan(cls)
        if has_code:
            code = v.error_code
            if code:
                append(code)
        for name, leaf in nested:
            value = getattr(v, name)
            if isinstance(value, list):
                if leaf is not None:
                    push((leaf, value))
                else:
                    extend(value[::-1])
            elif value is not None:
                push(value)
    return out


# (message class, version) -> its array fields that list topics at that version, each with its topics'
# partition array fields at that version; the arrays whose topics list partitions first
_TOPIC_PLANS: dict[tuple[type, int], tuple[tuple[str, tuple[str, ...]], ...]] = {}


def _topic_plan(cls: type, version: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
    try:
        fields = definitions.get(getattr(cls, "_KAFKA_NAME", "")).root.fields
    except KeyError:  # not a message of the definitions
        return ()
    plan = [(f.attr, tuple(p.attr for p in f.struct.fields
                           if p.is_array and "partition" in p.attr and version in p.versions) if f.struct else ())
            for f in fields if f.is_array and version in f.versions and ("topic" in f.attr or f.attr == "responses")]
    plan.sort(key=lambda entry: not entry[1])  # stable: the definition's order within each kind
    return tuple(plan)


def topic_counts(msg: Any, version: int) -> Optional[tuple[int, int]]:
    """(topics, partitions) for a message that lists topics (``topics``, ``topic_data``, ``responses``...) at
    ``version``, partitions being the entries of each topic's partition array (of structs or of indexes);
    None when it lists none. Only the fields the version has count: a decoded message holds the others'
    defaults (DeleteTopics v0-5 name their topics in ``topic_names``, not ``topics``). (Which fields to look
    at is worked out once per class and version.)"""
    key = (type(msg), version)
    plan = _TOPIC_PLANS.get(key)
    if plan is None:
        plan = _TOPIC_PLANS[key] = _topic_plan(key[0], version)
    for name, partition_fields in plan:
        value = getattr(msg, name)
        if value is None:  # a null array lists nothing: the next field may
            continue
        parts = 0
        if partition_fields:
            for t in value:
                for fname in partition_fields:
                    fvalue = getattr(t, fname)
                    if fvalue is not None:
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
    name = _API_NAMES.get(key)  # (not .get's default: that would format the unknown name a call)
    return name if name is not None else f"Unknown({key})"
