"""Zero-copy decoding from any buffer, and encoding into a caller's buffer, on both backends."""

from __future__ import annotations

import mmap

import numpy as np
import pytest
from needs import need_extension

import kcodec
from kcodec import EncodeError
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.messages import MetadataResponse, ProduceRequest, SaslAuthenticateRequest

BACKENDS = sorted(available().items())
IDS = [n for n, _ in BACKENDS]


def _produce() -> ProduceRequest:
    data = ProduceRequest.PartitionProduceData
    return ProduceRequest(acks=-1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[data(index=0, records=b"records-0"), data(index=1, records=None),
                                  data(index=2, records=b"")])])


def _buffers(data: bytes) -> dict[str, object]:
    m = mmap.mmap(-1, len(data))
    m[:] = data
    return {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data), "mmap": m,
            "numpy": np.frombuffer(data, dtype=np.uint8).copy()}


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
@pytest.mark.parametrize("version", [0, 2])
def test_bytes_fields_are_views_of_the_input(name, backend, version):
    prog = program_for(SaslAuthenticateRequest, version)
    buf = bytearray(backend.encode(prog, SaslAuthenticateRequest(auth_bytes=b"secret")))
    msg, end = backend.decode(prog, buf, 0, None, True)
    assert end == len(buf) and isinstance(msg.auth_bytes, memoryview) and msg.auth_bytes == b"secret"
    copied, _ = backend.decode(prog, buf, 0, None, False)
    assert type(copied.auth_bytes) is bytes
    buf[-7 if version == 2 else -6] = ord("S")  # the view sees the buffer change: it is no copy
    assert bytes(msg.auth_bytes) == b"Secret" and copied.auth_bytes == b"secret"
    assert backend.encode(prog, msg) == bytes(buf)  # views re-encode


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
@pytest.mark.parametrize("version", [3, 9])
def test_records_views_and_nulls(name, backend, version):
    prog = program_for(ProduceRequest, version)
    data = backend.encode(prog, _produce())
    msg, _ = backend.decode(prog, data, 0, None, True)
    parts = msg.topic_data[0].partition_data
    assert isinstance(parts[0].records, memoryview) and parts[0].records.obj is data
    assert parts[1].records is None and bytes(parts[2].records) == b""
    assert msg == _produce()


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "mmap", "numpy"])
def test_public_decode_from_every_buffer(kind):
    want = _produce()
    buf = _buffers(kcodec.encode(want, 9))[kind]
    assert kcodec.decode(ProduceRequest, buf, 9) == want
    msg = kcodec.decode(ProduceRequest, buf, 9, zero_copy=True)
    assert msg == want
    view = msg.topic_data[0].partition_data[0].records
    assert isinstance(view, memoryview)
    if kind == "numpy":
        assert np.shares_memory(np.frombuffer(view, dtype=np.uint8), buf)
    again, end = kcodec.decode_from(ProduceRequest, buf, 9, 0, zero_copy=True)
    assert again == want and end == len(memoryview(buf))


def test_decode_from_a_wider_numpy_dtype():
    data = kcodec.encode(_produce(), 9)
    pad = (-len(data)) % 4
    arr = np.frombuffer(data + b"\0" * pad, dtype=">i4")  # not bytes: read through a byte view of it
    msg, end = kcodec.decode_from(ProduceRequest, arr, 9, 0, len(data), zero_copy=True)
    assert msg == _produce() and end == len(data)


def test_frames_zero_copy():
    frame = kcodec.encode_request(SaslAuthenticateRequest(auth_bytes=b"tok"), 2, correlation_id=3, client_id="c")
    _, req = kcodec.decode_request(frame, zero_copy=True)
    assert isinstance(req.auth_bytes, memoryview) and req.auth_bytes == b"tok"
    _, req = kcodec.decode_request(frame)
    assert type(req.auth_bytes) is bytes
    from kcodec.messages import SaslAuthenticateResponse
    frame = kcodec.encode_response(SaslAuthenticateResponse(auth_bytes=b"ok"), 2, correlation_id=3)
    _, resp = kcodec.decode_response(frame, 36, 2, zero_copy=True)
    assert isinstance(resp.auth_bytes, memoryview) and resp.auth_bytes == b"ok"


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_encode_into_every_writable_buffer(name, backend):
    msg = _produce()
    prog = program_for(ProduceRequest, 9)
    want = backend.encode(prog, msg)
    n = len(want)
    m = mmap.mmap(-1, n + 10)
    for buf in (bytearray(n + 10), np.zeros(n + 10, dtype=np.uint8), m, memoryview(bytearray(n + 10))):
        assert backend.encode_into(prog, msg, buf, 3) == n
        raw = bytes(memoryview(buf).cast("B"))
        assert raw[3:3 + n] == want and raw[:3] == b"\0" * 3 and raw[3 + n:] == b"\0" * 7
    exact = bytearray(n)
    assert backend.encode_into(prog, msg, exact, 0) == n and exact == want


@pytest.mark.parametrize("name,backend", BACKENDS, ids=IDS)
def test_encode_into_refuses(name, backend):
    msg = _produce()
    prog = program_for(ProduceRequest, 9)
    n = backend.encoded_size(prog, msg)
    small = bytearray(b"x" * (n + 1))
    with pytest.raises(EncodeError, match=f"the buffer has {n - 1} bytes from offset 2, the message needs {n}"):
        backend.encode_into(prog, msg, small, 2)
    assert small == b"x" * (n + 1)  # nothing written
    with pytest.raises(TypeError, match="writable"):
        backend.encode_into(prog, msg, bytes(n), 0)
    with pytest.raises(ValueError, match="offset"):
        backend.encode_into(prog, msg, bytearray(n), n + 1)
    with pytest.raises(ValueError, match="offset"):
        backend.encode_into(prog, msg, bytearray(n), -1)
    bad = _produce()
    bad.topic_data[0].partition_data[1].index = 1 << 40
    with pytest.raises(EncodeError) as e:
        backend.encode_into(prog, bad, bytearray(1000), 0)
    assert e.value.path == "topic_data[0].partition_data[1].index"


def test_public_encode_into_metadata(shared):
    data = (shared / "vectors" / "metadata" / "metadata_v12_1k_body.bin").read_bytes()
    msg = kcodec.decode(MetadataResponse, data, 12)
    buf = bytearray(len(data) + 4)
    assert kcodec.encode_into(msg, 12, buf, 4) == len(data)
    assert buf[4:] == data and kcodec.encode(msg, 12) == data
    assert kcodec.decode(MetadataResponse, memoryview(buf)[4:], 12) == msg


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    return []


def _thp_on_request() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" not in f.read()
    except OSError:
        return False


def test_a_large_output_asks_for_huge_pages():
    """The compiled encoder asks for huge pages under a large output before writing it (a 4 KiB page fault
    each otherwise: 1,126 for a 10,000-topic Metadata body); where Linux gives none (not Linux, or
    transparent huge pages "never") the output is the same."""
    import ctypes

    fast = dict(available()).get("cython")
    need_extension(fast, "the compiled backend (kcodec.core._fast)")
    topics = [MetadataResponse.Topic(name=f"t{i:06d}", partitions=[
        MetadataResponse.Partition(partition_index=p, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3])
        for p in range(10)]) for i in range(12_000)]
    prog = program_for(MetadataResponse, 12)
    big = fast.encode(prog, MetadataResponse(topics=topics))
    assert len(big) >= 4 << 20
    assert kcodec.decode(MetadataResponse, big, 12).topics[-1].name == "t011999"
    if _thp_on_request():
        start = ctypes.cast(ctypes.c_char_p(big), ctypes.c_void_p).value
        aligned = (start + (1 << 21) - 1) & ~((1 << 21) - 1)
        assert aligned + (1 << 21) <= start + len(big)
        assert "hg" in _vm_flags(aligned)
