"""Run as a child by tests/test_extension_args.py, once per backend: every argument of kcodec's public functions
(kcodec, kcodec.records, kcodec.columnar, kcodec.framing, kcodec.protocol), in turn, replaced by each of a few
hostile values (crash2's kinds: None, str, bools, huge and negative ints, floats, 2-D, strided, 'i'/'d'-format,
released memoryviews, closed mmaps, a bytearray resized while a batch holds it). Prints ``RESULT`` and a JSON
dict of call -> "ok" or the exception's type name, which must be the same on both backends."""

from __future__ import annotations

import faulthandler
import json
import mmap
from typing import Any, Callable

import numpy as np

import kcodec
from kcodec import columnar
from kcodec import records as R
from kcodec.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataResponse
from kcodec.protocol import ClientConnection, FrameReader, ServerConnection

faulthandler.enable()
REQ = ApiVersionsRequest(client_software_name="x", client_software_version="1")
BODY = kcodec.encode(REQ, 3)
FRAME = kcodec.encode_request(REQ, 3, 1, "c")
RESP = kcodec.encode_response(ApiVersionsResponse(), 3, 1)
META = kcodec.encode(MetadataResponse(), 12)
_b = R.BatchBuilder()
_b.append(b"k", b"v", (), 1)
BATCH = bytes(_b.build())
GZIP = R.compress(R.Compression.GZIP, b"abc")


def _released() -> memoryview:
    m = memoryview(b"abcd")
    m.release()
    return m


def _closed_mmap() -> mmap.mmap:
    m = mmap.mmap(-1, 16)
    m.close()
    return m


def _built(b: R.BatchBuilder) -> bytes:
    b.append(b"k", b"v")
    return bytes(b.build())


HOSTILE: dict[str, Callable[[], Any]] = {
    "None": lambda: None, "str": lambda: "1", "True": lambda: True, "2**70": lambda: 2**70,
    "-2**70": lambda: -2**70, "2**63": lambda: 2**63, "-1": lambda: -1, "1.5": lambda: 1.5, "b''": lambda: b"",
    "2-D": lambda: memoryview(np.zeros((4, 4), np.uint8)), "strided": lambda: memoryview(bytes(64))[::2],
    "strided-i4": lambda: np.zeros(16, np.int32)[::2], "i-format": lambda: memoryview(np.zeros(4, np.int32)),
    "d-format": lambda: memoryview(np.zeros(4, np.float64)), "released": _released, "closed-mmap": _closed_mmap,
    "[]": lambda: [], "{}": lambda: {},
}

# name -> (function, its valid arguments); each call replaces one argument
CALLS: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "encode": (kcodec.encode, (REQ, 3)),
    "encoded_size": (kcodec.encoded_size, (REQ, 3)),
    "encode_buffers": (lambda m, v, t: kcodec.encode_buffers(m, v, threshold=t), (REQ, 3, 0)),
    "encode_into": (kcodec.encode_into, (REQ, 3, bytearray(64), 0)),
    "decode": (kcodec.decode, (ApiVersionsRequest, BODY, 3)),
    "decode_zero_copy": (lambda c, d, v: kcodec.decode(c, d, v, zero_copy=True), (ApiVersionsRequest, BODY, 3)),
    "decode_from": (kcodec.decode_from, (ApiVersionsRequest, BODY, 3, 0, len(BODY))),
    "decode_request": (kcodec.decode_request, (FRAME,)),
    "decode_request_header": (kcodec.decode_request_header, (FRAME,)),
    "decode_response": (kcodec.decode_response, (RESP, 18, 3)),
    "encode_request": (kcodec.encode_request, (REQ, 3, 1, "c")),
    "encode_request_buffers": (lambda m, v, c, k, t: kcodec.encode_request_buffers(m, v, c, api_key=k, threshold=t),
                               (REQ, 3, 1, 18, 0)),
    "encode_response": (kcodec.encode_response, (ApiVersionsResponse(), 3, 1)),
    "encode_response_buffers": (kcodec.encode_response_buffers, (ApiVersionsResponse(), 3, 1)),
    "request_header_version": (kcodec.request_header_version, (18, 3)),
    "response_header_version": (kcodec.response_header_version, (3, 12)),
    "message_class": (kcodec.message_class, (18, "request")),
    "FrameSplitter": (lambda n, d: kcodec.FrameSplitter(n).feed(d), (1 << 20, FRAME)),
    "to_dict": (kcodec.to_dict, (REQ,)),
    "from_dict": (kcodec.from_dict, (ApiVersionsRequest, {"client_software_name": "x"})),
    "iter_batches": (lambda b, m: list(R.iter_batches(b, max_uncompressed=m)), (BATCH, 1 << 20)),
    "iter_batches_zero_copy": (lambda b: [list(x) for x in R.iter_batches(b, zero_copy=True)], (BATCH,)),
    "read_batches": (R.read_batches, (BATCH,)),
    "read_records": (lambda b, m: R.read_records(b, max_uncompressed=m), (BATCH, 1 << 20)),
    "record_columns": (lambda b, m: R.record_columns(b, max_uncompressed=m), (BATCH, 1 << 20)),
    "record_summary": (lambda b: [R.record_summary(x) for x in R.iter_batches(b)], (BATCH,)),
    "crc32c": (R.crc32c, (b"abc", 0)),
    "crc32": (R.crc32, (b"abc", 0)),
    "compress": (R.compress, (R.Compression.GZIP, b"abc", None)),
    "decompress": (R.decompress, (R.Compression.GZIP, GZIP, 1 << 20)),
    "append": (lambda k, v, h, t: R.BatchBuilder().append(k, v, h, t), (b"k", b"v", (), 1)),
    "extend": (lambda rs: R.BatchBuilder().extend(rs), ([(b"k", b"v")],)),
    "BatchBuilder": (lambda o, p, e: _built(R.BatchBuilder(base_offset=o, producer_id=p, producer_epoch=e)),
                     (0, -1, -1)),
    "metadata_tables": (columnar.metadata_tables, (META, 12)),
    "metadata_topic_names": (columnar.metadata_topic_names, (META, 12)),
    "columnar.tables": (columnar.tables, (MetadataResponse, META, 12)),
    "FrameReader.feed": (lambda n, d: FrameReader(n).feed(d), (1 << 20, FRAME)),
    "FrameReader.buffer_updated": (lambda n: FrameReader().buffer_updated(n), (0,)),
    "FrameReader.get_buffer": (lambda n: FrameReader().get_buffer(n), (16,)),
    "ClientConnection.receive_data": (lambda d: ClientConnection().receive_data(d), (b"",)),
    "ServerConnection.receive_data": (lambda d: ServerConnection().receive_data(d), (FRAME,)),
}


def outcome(where: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    print(where, flush=True)  # (the last line names the call when the child crashes)
    try:
        fn(*args)
    except Exception as e:
        return type(e).__name__
    return "ok"


def main() -> None:
    out: dict[str, str] = {}
    for name, (fn, args) in CALLS.items():
        out[name] = outcome(name, fn, args)
        for i in range(len(args)):
            for label, make in HOSTILE.items():
                where = f"{name}[{i}]={label}"
                out[where] = outcome(where, fn, args[:i] + (make(),) + args[i + 1:])
    grown = bytearray(BATCH)  # a batch read in place holds its buffer: a resize is refused, not a dangling read
    held = next(R.iter_batches(grown, zero_copy=True))
    out["resize under a batch"] = outcome("resize", lambda: grown.extend(b"x" * 4096), ())
    out["the batch after"] = outcome("after", lambda: list(held), ())
    print("RESULT " + json.dumps(out))


main()
