"""encode_buffers: a message as buffers whose records (and large bytes) values are the caller's own objects.

- Every message type and version with a bytes or records field: both backends' buffers join to exactly
  ``encode``'s bytes, their total is ``encoded_size``, they are cut at the same places, and every buffer that
  is not a slice of the encoder's own output is, by identity, a value of the message.
- ``kcodec.Buffers`` values (a records value in several parts) encode as their parts joined, and each part
  goes out as itself.
- The frame functions put the size prefix and header first; Fetch responses keep their batches uncopied.
"""

from __future__ import annotations

import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import Buffers, EncodeError, definitions, messages
from kcodec.core.backend import available
from kcodec.core.ir import BYTES, RECORDS, program_for
from kcodec.messages import FetchRequest, FetchResponse, ProduceRequest
from kcodec.testing import instances

BACKENDS = available()
SPLICING = [(name, v) for name in definitions.names() for v in definitions.get(name).versions
            if any(op.kind in (BYTES, RECORDS) for sp in program_for(getattr(messages, name), v).structs
                   for op in sp.fields)]


def byte_values(obj: Any, prog: Any, index: int = 0) -> list[Any]:
    """Every bytes or records value reachable in obj (tagged fields aside: those are always copied)."""
    out: list[Any] = []
    for op in prog.structs[index].fields:
        v = getattr(obj, op.attr)
        items = (v or []) if op.array else [v]
        if op.kind in (BYTES, RECORDS):
            out += [x for x in items if x is not None]
        elif op.struct >= 0:
            for item in items:
                if item is not None:
                    out += byte_values(item, prog, op.struct)
    return out


def shape(buffers: list[Any], values: list[Any]) -> list[tuple[int, bool]]:
    """(length, spliced) of each buffer; a spliced one must be a value of the message itself."""
    ids = {id(v) for v in values}
    out = []
    for b in buffers:
        spliced = id(b) in ids
        if not spliced:  # else it is the encoder's output, or a slice of it
            assert type(b) is bytes or type(b) is memoryview and type(b.obj) is bytes and id(b.obj) not in ids, b
        out.append((memoryview(b).nbytes, spliced))
    return out


def test_every_case_is_covered():
    assert len(SPLICING) > 100
    assert {"ProduceRequest", "FetchResponse", "ShareFetchResponse", "SaslAuthenticateRequest"} <= {n for n, _ in SPLICING}


@pytest.mark.parametrize("name,version", SPLICING, ids=[f"{n}-v{v}" for n, v in SPLICING])
def test_buffers_join_to_encode(name: str, version: int) -> None:
    cls = getattr(messages, name)
    prog = program_for(cls, version)

    @settings(max_examples=max(1, settings.default.max_examples // 2))
    @given(instances(cls, version), st.sampled_from([0, 1, 8, 16384]))
    def check(msg: Any, threshold: int) -> None:
        expected = kcodec.encode(msg, version)
        values = byte_values(msg, prog)
        shapes = []
        for backend in BACKENDS.values():
            buffers, size = backend.encode_buffers(prog, msg, threshold)
            assert b"".join(buffers) == expected and size == len(expected) == kcodec.encoded_size(msg, version)
            shapes.append(shape(buffers, values))
            spliced = [n for n, s in shapes[-1] if s]
            takes = [len(v) for v, kind in _with_kinds(msg, prog) if len(v) and (kind == RECORDS or len(v) >= threshold)]
            assert sorted(spliced) == sorted(takes)
        assert all(s == shapes[0] for s in shapes)

    check()


def _with_kinds(obj: Any, prog: Any, index: int = 0) -> list[tuple[Any, int]]:
    out: list[tuple[Any, int]] = []
    for op in prog.structs[index].fields:
        v = getattr(obj, op.attr)
        items = (v or []) if op.array else [v]
        if op.kind in (BYTES, RECORDS):
            out += [(x, op.kind) for x in items if x is not None]
        elif op.struct >= 0:
            for item in items:
                if item is not None:
                    out += _with_kinds(item, prog, op.struct)
    return out


def fetch_response(records: Any, version: int = 12) -> Any:
    part = FetchResponse.PartitionData(partition_index=0, high_watermark=10, records=records)
    return FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_fetch_batches_go_out_as_the_callers_buffers(backend: str, version: int) -> None:
    batches = [b"a" * 70, bytearray(b"b" * 30), memoryview(b"c" * 50)]
    resp = fetch_response(Buffers(batches), version)
    prog = program_for(FetchResponse, version)
    buffers, size = BACKENDS[backend].encode_buffers(prog, resp, 1 << 30)
    assert [b for b in buffers if any(b is x for x in batches)] == batches  # every batch, itself, in order
    assert b"".join(buffers) == kcodec.encode(fetch_response(b"".join(batches), version), version)
    assert size == len(b"".join(buffers))


def test_a_non_bytes_view_goes_as_a_flat_view_of_it():
    ints = array.array("i", [1, 2, 3])
    for backend in BACKENDS.values():
        buffers, _ = backend.encode_buffers(program_for(FetchResponse, 12), fetch_response(ints), 0)
        flat = [b for b in buffers if type(b) is memoryview and b.obj is ints]
        assert len(flat) == 1 and flat[0].format == "B" and flat[0].nbytes == 12


def test_frames_put_size_and_header_first():
    batch = b"r" * 100
    req = ProduceRequest(acks=-1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    for version in (3, 9, 11):
        out = kcodec.encode_request_buffers(req, version, 42, "me")
        assert out.join() == kcodec.encode_request(req, version, 42, "me") and out.nbytes == len(out.join())
        assert any(b is batch for b in out)
    resp = fetch_response(Buffers([batch, batch]))
    out = kcodec.encode_response_buffers(resp, 12, 7)
    assert out.join() == kcodec.encode_response(fetch_response(batch * 2), 12, 7)
    assert [b for b in out if b is batch] == [batch, batch]
    # a request with no bytes field is one buffer after its size and header
    assert len(kcodec.encode_request_buffers(FetchRequest(), 12, 1)) == 2
    # an empty body adds no empty buffer (Python 3.12.1's transport kept one queued, and close() hung on it)
    from kcodec.messages import ApiVersionsRequest
    for backend in BACKENDS.values():
        assert backend.encode_buffers(program_for(ApiVersionsRequest, 0), ApiVersionsRequest(), 0) == ([], 0)
    out = kcodec.encode_request_buffers(ApiVersionsRequest(), 0, 1)
    assert len(out) == 1 and out.join() == kcodec.encode_request(ApiVersionsRequest(), 0, 1)


def test_the_api_key_may_differ_from_the_class():
    from kcodec.messages import ListTopicsRequest
    out = kcodec.encode_request_buffers(ListTopicsRequest(), 0, 3, "c", api_key=2001).join()
    normal = kcodec.encode_request(ListTopicsRequest(), 0, 3, "c")
    assert out[4:6] == (2001).to_bytes(2, "big") and out[:4] + out[6:] == normal[:4] + normal[6:]


def test_bad_parts_are_named():
    bad = fetch_response(Buffers([b"ok", 5], nbytes=2))
    for backend in BACKENDS.values():
        with pytest.raises(EncodeError, match=r"expected a bytes-like value, got int .*records\[1\]"):
            backend.encode_buffers(program_for(FetchResponse, 12), bad, 0)
    with pytest.raises(EncodeError, match=r"records\[1\]"):
        kcodec.encode(bad, 12)


def test_buffers_counts_its_bytes():
    assert Buffers([b"ab", bytearray(3), memoryview(b"xyz")]).nbytes == 8
    assert repr(Buffers([b"ab"])) == "Buffers(1 parts, 2 bytes)"


def test_a_threshold_past_any_size_is_the_largest():
    """A threshold over the largest size (2**70) is taken as the largest, on either backend (the compiled one
    took it for a C size and raised OverflowError); records still go as the caller's buffers."""
    resp = fetch_response(b"r" * 70)
    for threshold in (2**63, 2**70):
        body = kcodec.encode_buffers(resp, 12, threshold=threshold)
        assert b"".join(body) == kcodec.encode(resp, 12)
        frame = kcodec.encode_response_buffers(resp, 12, 7, threshold=threshold)
        assert b"".join(frame)[-body.nbytes:] == kcodec.encode(resp, 12)
