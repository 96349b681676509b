"""What the campaign checks of one input: every reader kcodec has, on both backends, against each other.

An input is (kind, meta, data):
  body      meta "Class:version"  kcodec.decode (copying and zero-copy) on both backends; for Metadata,
                                  DescribeTopicPartitions and ListTopics responses also the columnar and
                                  names-only readers (both engines) against the object decode
  request   a whole frame         kcodec.decode_request on both backends, FrameSplitter (and the broker:
                                  campaign_broker.py)
  response  meta "key:version"    kcodec.decode_response on both backends, FrameSplitter
  records   a records field       kcodec.records: batches, records (list and lazy), columns, with and without
                                  CRC checks, on both record backends
A check returns None, or a one-line reason for a finding; anything but a KcodecError escaping a reader is one.
"""

from __future__ import annotations

import struct
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import kcodec
from kcodec import columnar, framing
from kcodec.core import api as _api
from kcodec.core.backend import available
from kcodec.messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse
from kcodec.records import _columns, _reader, record_columns
from kcodec.records._pure import record_tuple
from kcodec.records._select import available as record_backends

BACKENDS = available()
RECORD_BACKENDS = record_backends()
ENGINES = ["python"] + (["cython"] if columnar._columnar is not None else [])
COLUMNAR = (MetadataResponse, DescribeTopicPartitionsResponse, ListTopicsResponse)
MAX_UNCOMPRESSED = 256 * 1024  # what one batch may inflate to here: bombs are refused, not decoded
MAX_FRAME = 1 << 20  # the FrameSplitter's limit here


class Finding(Exception):
    """Two readers disagree, or one said something it must not."""


def plain(x: Any) -> Any:
    """x as nested tuples that are equal exactly when the values are identical (types, float bits)."""
    if isinstance(x, float):
        return ("float", struct.pack(">d", x))
    if isinstance(x, (bytes, bytearray, memoryview)):
        return (type(x).__name__, bytes(x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(plain(i) for i in x))
    if isinstance(x, dict):
        return ("dict", tuple((plain(k), plain(v)) for k, v in x.items()))
    attrs = getattr(type(x), "_ATTRS", None)
    if attrs is not None:
        return (type(x).__name__, tuple(plain(getattr(x, a)) for a in attrs), plain(x.unknown_tagged_fields))
    return (type(x).__name__, x)


def outcome(fn: Callable[[], Any], shape: Callable[[Any], Any] = plain) -> tuple:
    """("ok", the result in plain form) or ("error", what the KcodecError says); other exceptions escape."""
    try:
        return ("ok", shape(fn()))
    except kcodec.KcodecError as e:
        return ("error", type(e).__name__, str(e), getattr(e, "offset", None), getattr(e, "path", None),
                getattr(e, "message", None), getattr(e, "version", None))


def short(o: tuple) -> str:
    return "ok" if o[0] == "ok" else f"{o[1]}: {o[2]} (offset {o[3]}, path {o[4]!r})"


def agree(what: str, outcomes: dict[str, tuple]) -> None:
    """Every named outcome equals the first."""
    (first, a), *rest = outcomes.items()
    for name, b in rest:
        if a != b:
            detail = f"{short(a)} / {short(b)}" if "error" in (a[0], b[0]) else "results differ"
            raise Finding(f"{what}: {first} and {name} differ: {detail}")


@contextmanager
def using(module: Any, *owners: Any) -> Iterator[None]:
    """Each owner module's ``backend`` global set to module: kcodec.decode and the framing functions (owners
    _api, framing) or the record readers (_reader, _columns) on one backend, as they look it up per call."""
    saved = [owner.backend for owner in owners]
    for owner in owners:
        owner.backend = module
    try:
        yield
    finally:
        for owner, before in zip(owners, saved):
            owner.backend = before


def on_backends(what: str, fn: Callable[[], Any]) -> tuple:
    """fn on every message backend; they must agree; the reference's outcome."""
    got = {}
    for name, module in sorted(BACKENDS.items(), key=lambda kv: kv[0] != "python"):
        with using(module, _api, framing):
            got[name] = outcome(fn)
    agree(what, got)
    return got["python"]


# ---------------------------------------------------------------------------------------------- bodies

def check_body(meta: str, data: bytes) -> None:
    name, version = meta.rsplit(":", 1)
    cls, v = getattr(kcodec.messages, name), int(version)
    on_backends(f"decode {meta} zero_copy", lambda: kcodec.decode(cls, data, v, zero_copy=True))
    ref = on_backends(f"decode {meta}", lambda: kcodec.decode(cls, data, v))
    if cls in COLUMNAR:
        check_columnar(cls, v, data, ref)


def check_columnar(cls: type, version: int, data: bytes, ref: tuple) -> None:
    """The columnar and names-only readers of both engines: the object decode's error, or its content."""
    what = f"columnar {cls.__name__} v{version}"
    if ref[0] == "error":
        for engine in ENGINES:
            for scan in (columnar.tables, columnar.topic_names):
                got = outcome(lambda: scan(cls, data, version, engine=engine), shape=lambda t: None)
                agree(f"{what} {scan.__name__}", {"decode": ref[:1] + ref[2:], engine: got[:1] + got[2:]})
        return
    msg = kcodec.decode(cls, data, version)
    want_topics, want_parts = topic_rows(msg), partition_rows(msg)
    internal = "internal" if cls is ListTopicsResponse else "is_internal"
    for engine in ENGINES:
        t = run(f"{what} tables {engine}", lambda: columnar.tables(cls, data, version, engine=engine))
        if list(zip(t.topics["name"], t.topics[internal].tolist())) != want_topics:
            raise Finding(f"{what} tables {engine}: topics differ from the object decode")
        if want_parts is not None and table_partitions(t) != want_parts:
            raise Finding(f"{what} tables {engine}: partitions differ from the object decode")
        n = run(f"{what} topic_names {engine}", lambda: columnar.topic_names(cls, data, version, engine=engine))
        if list(zip(n.names, n.internal.tolist())) != [(name, bool(i)) for name, i in want_topics]:
            raise Finding(f"{what} topic_names {engine}: names differ from the object decode")


def run(what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except kcodec.KcodecError as e:
        raise Finding(f"{what}: {type(e).__name__} {e} where the object decode succeeded") from None


def topic_rows(msg: Any) -> list:
    internal = "internal" if isinstance(msg, ListTopicsResponse) else "is_internal"
    return [(t.name, getattr(t, internal)) for t in msg.topics]


PARTITION_FIELDS = ("partition_index", "leader_id", "error_code")
PARTITION_LISTS = ("replica_nodes", "isr_nodes")


def partition_rows(msg: Any) -> Optional[list]:
    if isinstance(msg, ListTopicsResponse):
        return None
    return [(i, str(t.topic_id), *(getattr(p, f) for f in PARTITION_FIELDS),
             *(None if getattr(p, f) is None else list(getattr(p, f)) for f in PARTITION_LISTS))
            for i, t in enumerate(msg.topics) for p in t.partitions]


def table_partitions(t: Any) -> list:
    p = t.partitions
    ids = [str(uuid.UUID(bytes=b.tobytes())) for b in t.topics["topic_id"]]
    cols = [p[f].tolist() for f in ("topic_index", *PARTITION_FIELDS, *PARTITION_LISTS)]
    return [(row[0], ids[row[0]], *row[1:]) for row in zip(*cols)]


# ---------------------------------------------------------------------------------------------- frames

def check_request(data: bytes) -> None:
    on_backends("decode_request zero_copy", lambda: kcodec.decode_request(data, zero_copy=True))
    on_backends("decode_request", lambda: kcodec.decode_request(data))
    check_splitter(data)


def check_response(meta: str, data: bytes) -> None:
    key, version = (int(x) for x in meta.split(":"))
    on_backends(f"decode_response {meta}", lambda: kcodec.decode_response(data, key, version))
    check_splitter(data)


def split_reference(data: bytes, limit: int) -> tuple:
    """Frames cut from the whole stream at once, and the offset of a bad size prefix (or None)."""
    frames, pos = [], 0
    while len(data) - pos >= 4:
        size = struct.unpack_from(">i", data, pos)[0]
        if size < 0 or size > limit:
            return frames, pos
        if len(data) - pos < 4 + size:
            break
        frames.append(data[pos:pos + 4 + size])
        pos += 4 + size
    return frames, None


def check_splitter(data: bytes, steps: tuple[int, ...] = (1, 3, 7)) -> None:
    """The stream (the frame twice) in pieces of each size gives the frames, and the bad size prefix, that
    cutting the whole stream at once gives."""
    stream = data + data
    want = split_reference(stream, MAX_FRAME)
    for step in steps:
        step = max(step, len(stream) // 256)  # a big frame in a few hundred pieces, not byte by byte
        s = kcodec.FrameSplitter(MAX_FRAME)
        frames, bad = [], None
        for piece in [stream[at:at + step] for at in range(0, len(stream), step)] + [b""]:
            try:
                frames += s.feed(piece)
            except kcodec.DecodeError as e:
                bad = e.offset
                break
        if (frames, bad) != want:
            raise Finding(f"FrameSplitter fed {step} bytes at a time: {len(frames)} frames, bad prefix at {bad}; "
                          f"the whole stream: {len(want[0])} frames, bad prefix at {want[1]}")


# ---------------------------------------------------------------------------------------------- records

BATCH_FIELDS = ("magic", "base_offset", "last_offset_delta", "partition_leader_epoch", "crc", "attributes",
                "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count",
                "size", "offset", "index")
COLUMNS = ("offset", "timestamp", "key_length", "value_length", "header_count")


def records_views(data: bytes, verify: bool) -> dict[str, tuple]:
    """Everything the record readers say about data, each as an outcome."""
    def batches() -> Any:
        got = kcodec.records.read_batches(data, verify_crc=verify, max_uncompressed=MAX_UNCOMPRESSED)
        return [tuple(getattr(b, f) for f in BATCH_FIELDS) for b in got.batches], got.partial_bytes, got.partial_offset

    def each(lazily: bool) -> Any:
        out = []
        for b in kcodec.records.iter_batches(data, verify_crc=verify, max_uncompressed=MAX_UNCOMPRESSED):
            out.append([record_tuple(r) for r in (b if lazily else b.records())])
        return out

    def cols() -> Any:
        c = record_columns(data, verify_crc=verify, max_uncompressed=MAX_UNCOMPRESSED)
        return [getattr(c, name).tolist() for name in COLUMNS]

    return {"batches": outcome(batches, shape=lambda x: x), "records": outcome(lambda: each(False), lambda x: x),
            "lazy": outcome(lambda: each(True), lambda x: x), "columns": outcome(cols, lambda x: x)}


def check_records(data: bytes) -> None:
    for verify in (True, False):
        views = {}
        for name, module in sorted(RECORD_BACKENDS.items(), key=lambda kv: kv[0] != "python"):
            with using(module, _reader, _columns):
                views[name] = records_views(data, verify)
        for view in ("batches", "records", "lazy", "columns"):
            agree(f"records {view} verify_crc={verify}", {n: v[view] for n, v in views.items()})
        ref = views["python"]
        # one backend's readers against each other: lazy iteration fails or not as the lists do, and the
        # columns hold what the records hold
        if ref["lazy"][0] != ref["records"][0] or ref["lazy"][0] == "ok" and ref["lazy"] != ref["records"]:
            raise Finding(f"records verify_crc={verify}: lazy {short(ref['lazy'])}, list {short(ref['records'])}")
        if ref["records"][0] == "ok" and ref["columns"][0] == "ok":
            rows = [r for batch in ref["records"][1] for r in batch]
            want = [[r[0] for r in rows], [r[1] for r in rows], [-1 if r[2] is None else len(r[2]) for r in rows],
                    [-1 if r[3] is None else len(r[3]) for r in rows], [len(r[4]) for r in rows]]
            if ref["columns"][1] != want:
                raise Finding(f"records verify_crc={verify}: the columns differ from the records")
        elif ref["records"][0] != ref["columns"][0]:
            raise Finding(f"records verify_crc={verify}: columns {short(ref['columns'])}, "
                          f"records {short(ref['records'])}")


def inflatable(data: bytes) -> int:
    """The most bytes the compressed batches of a records field may inflate to here (each at most
    MAX_UNCOMPRESSED): what the memory bound allows beyond the input's own size."""
    pos = total = 0
    while pos + 22 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length <= 0:
            break
        if data[pos + (21 if data[pos + 16] == 2 else 17)] & 0x07:
            total += MAX_UNCOMPRESSED
        pos += 12 + length
    return total


CHECKS: dict[str, Callable[[str, bytes], None]] = {
    "body": check_body,
    "request": lambda meta, data: check_request(data),
    "response": check_response,
    "records": lambda meta, data: check_records(data),
}
