"""lz4 batches through the compiled backend's route (liblz4's frame decoder into the bytes kept,
kcodec/records/_crecords_lz4.pxi) and through the reference (_compression._unlz4): the same bytes, the same
errors, the same bounds, for every framing lz4 writers use."""

from __future__ import annotations

import random
import sys

import pytest

from kcodec.records import BatchBuilder, Compression, RecordsError, iter_batches, read_records
from kcodec.records import _compression, _select
from kcodec.records._compression import CodecError, _xxh32, decompress
from needs import need_module

lz4_frame = need_module("lz4.frame")

_rng = random.Random(13)
DATA = b"".join(b"record %06d " % i + bytes(range(i % 50)) for i in range(5000))  # ~200 KB, 4 blocks of 64 KB
NOISE = _rng.randbytes(70_000)  # incompressible: stored as raw blocks
NATIVE = _select.BACKEND == "cython"


def frame(data: bytes = DATA, **kw) -> bytes:
    return lz4_frame.compress(data, block_size=lz4_frame.BLOCKSIZE_MAX64KB, **kw)


def with_header_checksum_of(packed: bytes, fix) -> bytes:
    """The frame with its descriptor changed by ``fix`` and the header checksum made to agree."""
    f = bytearray(packed)
    fix(f)
    hc = 6 + (8 if f[4] & 0x08 else 0) + (4 if f[4] & 0x01 else 0)
    f[hc] = (_xxh32(bytes(f[4:hc])) >> 8) & 0xFF
    return bytes(f)


GOOD = {
    "independent blocks": (frame(block_linked=False), DATA),
    "linked blocks": (frame(block_linked=True), DATA),
    "block checksums": (frame(block_checksum=True), DATA),
    "content checksum": (frame(content_checksum=True), DATA),
    "declared size": (frame(store_size=True), DATA),
    "raw blocks": (frame(NOISE + DATA[:1000], content_checksum=True), NOISE + DATA[:1000]),
    "4 MB blocks": (lz4_frame.compress(DATA, block_size=lz4_frame.BLOCKSIZE_MAX4MB), DATA),
    "several frames": (frame(DATA[:999]) + frame(DATA[999:], store_size=True, block_linked=True), DATA),
    "skippable frame": (frame(DATA[:5]) + b"\x50\x2a\x4d\x18" + (3).to_bytes(4, "little") + b"abc" + frame(DATA[5:]),
                        DATA),
    "one byte": (frame(b"x"), b"x"),
}


def native(data: bytes, cap: int, magic: int = 2):
    return _select.backend.inflate_lz4(data, cap, magic)


def reference(data: bytes, cap: int, magic: int = 2) -> bytes:
    return bytes(_compression._unlz4(memoryview(data), cap, magic))


def test_the_compiled_backend_takes_the_liblz4_route():
    """CI must not fall back unseen: on Linux python-lz4's extension exports liblz4's LZ4F_* functions."""
    if not NATIVE:
        assert _compression.native_lz4 is None  # KCODEC_PURE=1: python-lz4 and cramjam only
        return
    assert _compression.native_lz4 is _select.backend.inflate_lz4
    if sys.platform.startswith("linux"):
        assert _select.backend.lz4_route() == "liblz4"


@pytest.mark.parametrize("name", list(GOOD))
def test_every_framing_inflates_alike(name):
    packed, data = GOOD[name]
    assert decompress(Compression.LZ4, packed, len(data)) == data
    assert reference(packed, len(data)) == data
    if NATIVE:
        out = native(packed, len(data))
        assert type(out) is bytes and out == data  # the route itself, not the reference behind it


@pytest.mark.parametrize("name", ["independent blocks", "linked blocks", "declared size", "several frames"])
def test_magic_0s_header_checksum_is_recomputed(name):
    """Kafka's magic 0 writer hashed the wrong bytes for the header checksum (KAFKA-3160): fixed for magic 0,
    an error from magic 1 and 2, on both routes."""
    packed, data = GOOD[name]
    bad = bytearray(packed)
    bad[6 + (8 if bad[4] & 0x08 else 0)] ^= 0xFF
    assert decompress(Compression.LZ4, bytes(bad), len(data), magic=0) == data
    if NATIVE:
        assert native(bytes(bad), len(data), 0) == data
        assert native(bytes(bad), len(data), 1) is None
    with pytest.raises(CodecError, match="lz4"):
        decompress(Compression.LZ4, bytes(bad), len(data), magic=1)


def _flipped(packed: bytes, at: int, n: int = 1) -> bytes:
    b = bytearray(packed)
    b[at:at + n] = bytes(x ^ 0xFF for x in b[at:at + n])
    return bytes(b)


BAD = {
    "corrupt block": _flipped(frame(), 20, 40),
    "block checksum": _flipped(frame(block_checksum=True), len(frame(block_checksum=True)) - 6),
    "content checksum": _flipped(frame(content_checksum=True), len(frame(content_checksum=True)) - 2),
    "truncated": frame()[:len(frame()) // 2],
    "no end mark": frame()[:-4],
    "trailing junk": frame() + b"junk",
    "size declared short": with_header_checksum_of(frame(store_size=True),
                                                   lambda f: f.__setitem__(slice(6, 14), (1000).to_bytes(8, "little"))),
    "size declared long": with_header_checksum_of(frame(store_size=True),
                                                  lambda f: f.__setitem__(slice(6, 14), (len(DATA) + 1).to_bytes(8, "little"))),
    "not lz4": b"\x00" * 40,
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_frames_are_the_references_errors(name):
    """The route gives up (None) and the reference raises its CodecError: one text for both backends."""
    with pytest.raises(CodecError) as ref:
        reference(BAD[name], 10**6)
    with pytest.raises(CodecError) as got:
        decompress(Compression.LZ4, BAD[name], 10**6)
    assert str(got.value) == str(ref.value) and "lz4" in str(got.value)
    if NATIVE:
        assert native(BAD[name], 10**6) is None
        assert native(GOOD["linked blocks"][0], 10**6) == DATA  # the kept context is fit for the next batch


@pytest.mark.parametrize("name", ["independent blocks", "declared size", "several frames", "raw blocks"])
def test_over_the_cap(name):
    packed, data = GOOD[name]
    with pytest.raises(CodecError, match="over the limit"):
        decompress(Compression.LZ4, packed, len(data) - 1)
    if NATIVE:  # (an unsized frame's bound counts every block whole: within it the route inflates)
        assert native(packed, len(data) - 1) is None


def test_a_batchs_records_come_from_the_route(monkeypatch):
    """Iterating a batch and its payload() both inflate through liblz4 in the compiled backend (the
    reference is not reached), and the records equal the reference's."""
    b = BatchBuilder(compression=Compression.LZ4)
    for i in range(1000):
        b.append(b"k%d" % i, DATA[i * 50:i * 50 + 100], timestamp=i)
    batch = b.build()
    want = [(r.key, r.value) for r in read_records(batch)]
    if NATIVE:
        def refused(*a):
            raise AssertionError("the reference ran")
        monkeypatch.setattr(_compression, "_unlz4", refused)
    assert [(r.key, r.value) for r in read_records(batch)] == want
    assert [(r.key, r.value) for b in iter_batches(batch) for r in b] == want
    assert want[7] == (b"k7", DATA[350:450])


def test_a_bad_batch_is_a_records_error():
    b = BatchBuilder(compression=Compression.LZ4)
    b.append(b"k", DATA, timestamp=1)
    good = b.build()
    cut = bytearray(good)
    cut[-10] ^= 0xFF  # inside the lz4 frame, CRC not checked here
    with pytest.raises(RecordsError, match="lz4"):
        read_records(bytes(cut), verify_crc=False)


def test_threads_share_the_route():
    """The kept context is taken out by one call at a time (large frames inflate without the GIL; a call that
    finds it taken makes its own): concurrent reads of different framings, small and large, some failing, each
    get their own bytes."""
    from concurrent.futures import ThreadPoolExecutor

    jobs = [GOOD[name] for name in ("linked blocks", "content checksum", "several frames", "one byte")] * 20
    jobs += [(BAD["corrupt block"], None)] * 10

    def one(job):
        packed, data = job
        try:
            return decompress(Compression.LZ4, packed, 10**6) == data
        except CodecError:
            return data is None

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, jobs))
