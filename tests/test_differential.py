"""Differential fuzzing: the Cython backend against the reference, both in this process.

- Generated instances of every message at every version encode to the same bytes and sizes, and decode
  (copying and zero-copy) to identical objects: same types, same values, float bits included.
- Every decode also runs through the reference's interpreter alone (``_pure.decode_interpreted``), which
  must agree with the reference's compiled fast path (``_pure.decode``) exactly; encodes likewise
  (``_pure.encode_interpreted``).
- Instances with one field set to a wrong value (wrong type, out of range, None) are accepted by both
  with the same bytes, or refused by both with the same error.
- Mutations of encoded instances, of the real frames in ../shared/vectors/real-frames and of the
  1,000-topic Metadata payloads (bit flips, truncations, splices, inserted and deleted bytes, length
  fields set to edge values), and random byte strings, decode to identical objects on both, or fail on
  both with the same error: class, reason, byte offset, field path.

The ``ci`` hypothesis profile is deterministic and bounded; ``HYPOTHESIS_PROFILE=long`` runs much longer.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from needs import need_extension
from hypothesis import given, settings
from hypothesis import strategies as st

from kcodec import DecodeError, EncodeError, definitions, messages
from kcodec.core import pure as _pure
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.testing import instances

pytestmark = pytest.mark.fuzz

FAST = available().get("cython")
need_extension(FAST, "the Cython backend kcodec.core._fast (built by pip install when a C compiler is there)")

CASES = [(name, v) for name in definitions.names() for v in definitions.get(name).versions]
SCALE = settings.default.max_examples  # 15 in ci, 2000 in long
COUNTS = {"instances": 0, "invalid": 0, "mutations": 0, "random": 0, "disagreements": 0}


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print(f"\ndifferential executions: {COUNTS}")


def count(kind: str) -> None:
    """One more execution; with KCODEC_FUZZ_COUNTS=file the counts so far are written to it every 200
    executions and after every test (long runs are stopped, not finished)."""
    COUNTS[kind] += 1
    if sum(COUNTS.values()) % 200 == 0:
        _write_counts()


def _write_counts() -> None:
    path = os.environ.get("KCODEC_FUZZ_COUNTS")
    if path:
        Path(path).write_text(json.dumps(COUNTS) + "\n")


@pytest.fixture(autouse=True)
def _running_counts():
    yield
    _write_counts()


# ------------------------------------------------------------------------------------ comparing

def identical(a: Any, b: Any, where: str = "") -> None:
    """a and b are the same value of the same types all the way down (floats by their bits)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b) or math.isnan(a) and math.isnan(b), where
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            identical(x, y, f"{where}[{i}]")
    elif isinstance(a, memoryview):
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            identical(a[k], b[k], f"{where}{{{k}}}")
    elif hasattr(type(a), "_ATTRS"):
        for attr in type(a)._ATTRS:
            identical(getattr(a, attr), getattr(b, attr), f"{where}.{attr}")
        identical(a.unknown_tagged_fields, b.unknown_tagged_fields, f"{where}.unknown_tagged_fields")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def outcome(fn: Any, *args: Any) -> tuple:
    try:
        return ("ok", fn(*args))
    except (DecodeError, EncodeError) as e:
        return ("error", type(e), str(e), getattr(e, "offset", None), e.path, e.message, e.version)


def same(a: tuple, b: tuple, what: str) -> None:
    try:
        if a[0] == "ok" and b[0] == "ok":
            identical(a[1], b[1], what)
        else:
            assert a == b, f"{what}: reference {a[1:] if a[0] == 'error' else 'ok'}, cython {b[1:] if b[0] == 'error' else 'ok'}"
    except AssertionError:
        COUNTS["disagreements"] += 1
        raise


def decode_both(prog: Any, data: Any, pos: int = 0, end: Any = None, zero_copy: bool = False) -> None:
    ref = outcome(_pure.decode, prog, data, pos, end, zero_copy)
    same(ref, outcome(FAST.decode, prog, data, pos, end, zero_copy), f"{prog.message} v{prog.version}")
    # and the reference's compiled fast path against its interpreter alone
    same(ref, outcome(_pure.decode_interpreted, prog, data, pos, end, zero_copy),
         f"{prog.message} v{prog.version} compiled/interpreted")


# ------------------------------------------------------------------------------------ mutations

LENGTH_EDGES = [b"\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\xff\xff", b"\x7f\xff", b"\x80\x00",
                b"\xff\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x00",
                b"\x80\x80\x80\x80\x10", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01"]


@st.composite
def mutated(draw: Any, data: bytes) -> bytes:
    """data with 1-3 mutations."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "splice", "insert", "delete", "edge", "byte"]))
        i = draw(st.integers(0, max(len(b) - 1, 0)))
        if op == "flip" and b:
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "byte" and b:
            b[i] = draw(st.integers(0, 255))
        elif op == "truncate":
            del b[i:]
        elif op == "splice":  # a piece of the data copied over another place
            j = draw(st.integers(0, max(len(data) - 1, 0)))
            piece = data[j:j + draw(st.integers(1, 16))]
            b[i:i + len(piece)] = piece
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del b[i:i + draw(st.integers(1, 8))]
        elif op == "edge":  # a length, count or varint set to an edge value
            edge = draw(st.sampled_from(LENGTH_EDGES))
            b[i:i + len(edge)] = edge
    return bytes(b)


# ------------------------------------------------------------------------------------ instances

@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_instances_agree(name: str, version: int) -> None:
    cls = getattr(messages, name)
    prog = program_for(cls, version)

    @given(instances(cls, version), st.data())
    def check(msg: Any, data: Any) -> None:
        count("instances")
        ref = _pure.encode(prog, msg)
        assert FAST.encode(prog, msg) == ref
        assert _pure.encode_interpreted(prog, msg) == ref
        assert FAST.encoded_size(prog, msg) == _pure.encoded_size(prog, msg) == len(ref)
        for zero_copy in (False, True):
            decode_both(prog, ref, 0, None, zero_copy)
        count("mutations")
        decode_both(prog, data.draw(mutated(ref)))

    check()


WRONG = [None, -1, 1 << 31, 1 << 64, -(1 << 63) - 1, 1.5, float("nan"), "x", "\udc80", b"x", bytearray(b"y"),
         True, [], [None], [1 << 40], ["s"], [b"b"], (1, 2), {1: 2}, object()]


def _fields(obj: Any, prog: Any, index: int, depth: int = 0) -> list[tuple[Any, str]]:
    """(owner, attribute) of every field reachable in obj, for putting a wrong value in one."""
    sp = prog.structs[index]
    out = [(obj, op.attr) for op in sp.fields + sp.tagged + sp.absent]
    for op in sp.fields + sp.tagged:
        v = getattr(obj, op.attr)
        if op.struct >= 0 and v is not None and depth < 3:
            for item in (v if op.array else [v])[:2]:
                out += _fields(item, prog, op.struct, depth + 1)
    return out


@pytest.mark.parametrize("name", ["MetadataResponse", "ProduceRequest", "FetchResponse", "CreateTopicsRequest",
                                  "ApiVersionsResponse", "DescribeTopicPartitionsResponse", "RequestHeader",
                                  "ConsumerGroupHeartbeatRequest", "JoinGroupRequest"])
def test_wrong_values_agree(name: str) -> None:
    cls = getattr(messages, name)

    @settings(max_examples=SCALE * 10)
    @given(st.data())
    def check(data: Any) -> None:
        count("invalid")
        version = data.draw(st.sampled_from(definitions.get(name).versions))
        prog = program_for(cls, version)
        msg = data.draw(instances(cls, version))
        owner, attr = data.draw(st.sampled_from(_fields(msg, prog, 0)))
        setattr(owner, attr, data.draw(st.sampled_from(WRONG)))
        if data.draw(st.booleans()):
            msg.unknown_tagged_fields = data.draw(st.sampled_from([{1 << 33: b""}, {-1: b""}, {"1": b""},
                                                                   {99: "text"}, {99: memoryview(b"ok")}]))
        a = outcome(_pure.encode, prog, msg)
        same(a, outcome(FAST.encode, prog, msg), f"encode {name} v{version} .{attr}")
        same(a, outcome(_pure.encode_interpreted, prog, msg), f"encode {name} v{version} .{attr} compiled/interpreted")
        same(outcome(_pure.encoded_size, prog, msg), outcome(FAST.encoded_size, prog, msg), f"size {name}")
        if a[0] == "ok":
            buf = bytearray(len(a[1]) + 1)
            assert FAST.encode_into(prog, msg, buf, 1) == len(a[1]) and buf[1:] == a[1]

    check()


# ------------------------------------------------------------------------------------ real frames

SHARED = Path(os.environ.get("KCODEC_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
REAL = SHARED / "vectors" / "real-frames"


def _frames(shared: Path) -> list[tuple[str, bytes, Any, Any, int]]:
    """(name, frame, header program, body program, body offset) of every real frame."""
    import kcodec

    index = json.loads((shared / "vectors" / "real-frames" / "index.json").read_text())
    out = []
    for path in sorted((shared / "vectors" / "real-frames").glob("*.bin")):
        frame = path.read_bytes()
        entry = index[path.name]
        key, version = entry["api_key"], entry["api_version"]
        if path.name.endswith("_response.bin"):
            cls, hcls = kcodec.message_class(key, "response"), messages.ResponseHeader
            hv = kcodec.response_header_version(key, version)
        else:
            cls, hcls = kcodec.message_class(key, "request"), messages.RequestHeader
            hv = kcodec.request_header_version(key, version)
        _, body_at = kcodec.decode_from(hcls, frame, hv, 4)
        out.append((path.name, frame, program_for(hcls, hv), program_for(cls, version), body_at))
    return out


@pytest.fixture(scope="module")
def frames(shared: Path) -> list[tuple[str, bytes, Any, Any, int]]:
    return _frames(shared)


def test_real_frames_mutated(frames: list) -> None:
    assert len(frames) >= 30

    @settings(max_examples=SCALE * 40)
    @given(st.data())
    def check(data: Any) -> None:
        count("mutations")
        name, frame, hprog, prog, body_at = data.draw(st.sampled_from(frames))
        bad = data.draw(mutated(frame))
        decode_both(hprog, bad, min(4, len(bad)))
        at = min(body_at, len(bad))
        decode_both(prog, bad, at, None, data.draw(st.booleans()))
        decode_both(prog, bad[at:])  # the body alone

    check()


def test_metadata_1k_mutated(shared: Path) -> None:
    payloads = {v: (shared / "vectors" / "metadata" / f"metadata_v{v}_1k_body.bin").read_bytes() for v in (1, 12)}

    @settings(max_examples=max(SCALE, 10))
    @given(st.sampled_from([1, 12]), st.data())
    def check(version: int, data: Any) -> None:
        count("mutations")
        decode_both(program_for(messages.MetadataResponse, version), data.draw(mutated(payloads[version])))

    check()


@pytest.mark.parametrize("size", [8, 64])
def test_random_bytes(size: int) -> None:
    @settings(max_examples=SCALE * 40)
    @given(st.sampled_from(CASES), st.binary(max_size=size))
    def check(case: tuple[str, int], data: bytes) -> None:
        count("random")
        decode_both(program_for(getattr(messages, case[0]), case[1]), data)

    check()


def test_duck_typed_subclassed_and_bare_objects() -> None:
    """Objects that are not exactly the message class take the extension's general path."""
    from types import SimpleNamespace

    prog = program_for(messages.SaslAuthenticateRequest, 2)

    class Sub(messages.SaslAuthenticateRequest):  # gains a __dict__
        pass

    sub = Sub(auth_bytes=b"a")
    sub.extra = 1
    duck = SimpleNamespace(auth_bytes=b"b", unknown_tagged_fields={5: b"x"})
    bare = messages.SaslAuthenticateRequest.__new__(messages.SaslAuthenticateRequest)  # slots unset
    for obj in (sub, duck, bare, None, {"auth_bytes": b""}):
        same(outcome(_pure.encode, prog, obj), outcome(FAST.encode, prog, obj), type(obj).__name__)
    assert FAST.encode(prog, duck) == _pure.encode(prog, duck)
    from kcodec.core.ir import compile_program

    sub_prog = compile_program(definitions.get("SaslAuthenticateRequest"), 2, Sub)  # decode into the subclass
    decoded, _ = FAST.decode(sub_prog, _pure.encode(prog, sub))
    assert type(decoded) is Sub
    identical(decoded, _pure.decode(sub_prog, _pure.encode(prog, sub))[0])
