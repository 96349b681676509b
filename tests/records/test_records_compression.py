"""The codecs as Kafka's writers use them, each bounded; the checksums."""

from __future__ import annotations

import functools
import gzip
import platform
import struct
import zlib

import cramjam
import pytest

from kcodec.records import (CRC32C_HARDWARE, BatchBuilder, Compression, RecordsError, crc32, crc32c, iter_batches,
                            read_records)
from kcodec.records._compression import CodecError, XERIAL_MAGIC, _xxh32, compress, decompress
from needs import need_module

DATA = b"".join(b"record %06d " % i + bytes(range(i % 50)) for i in range(3000))  # ~120 KB


def with_payload(codec: Compression, payload: bytes, magic: int = 2) -> bytes:
    """A batch whose records section is ``payload``, compressed by hand (as another writer would)."""
    b = BatchBuilder(magic=magic)
    b.append(b"k", DATA, timestamp=1)
    plain = b.build()
    if magic == 2:
        records = plain[61:]
        return rebuild_v2(plain[:61], payload(records), codec)
    inner = plain
    body = bytes([magic, int(codec)]) + (struct.pack(">q", 1) if magic else b"") + struct.pack(">i", -1)
    value = payload(inner)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, 4 + len(body), crc32(body)) + body


def rebuild_v2(header: bytes, records: bytes, codec: Compression) -> bytes:
    h = bytearray(header)
    struct.pack_into(">i", h, 8, 49 + len(records))
    struct.pack_into(">h", h, 21, int(codec))
    struct.pack_into(">I", h, 17, crc32c(bytes(h[21:]) + records))
    return bytes(h) + records


def values(data: bytes) -> list:
    return [r.value for r in read_records(data)]


def test_crc_vectors_and_hardware():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32(b"123456789") == 0xCBF43926
    if platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64"):
        assert CRC32C_HARDWARE, "the crc32c package runs its software fallback here"


def test_snappy_raw_as_well_as_xerial():
    assert values(with_payload(Compression.SNAPPY, lambda r: bytes(cramjam.snappy.compress_raw(r)))) == [DATA]
    framed = compress(Compression.SNAPPY, DATA)
    assert framed.startswith(XERIAL_MAGIC) and framed.count(XERIAL_MAGIC) == 1
    assert decompress(Compression.SNAPPY, framed, len(DATA)) == DATA  # several 32 KB blocks
    assert decompress(Compression.SNAPPY, framed + compress(Compression.SNAPPY, b"more"), 10**6) == DATA + b"more"


def test_gzip_members_and_zstd_frames_concatenated():
    assert decompress(Compression.GZIP, gzip.compress(DATA[:10]) + gzip.compress(DATA[10:]), 10**6) == DATA
    two = bytes(cramjam.zstd.compress(DATA[:999])) + bytes(cramjam.zstd.compress(DATA[999:]))
    assert decompress(Compression.ZSTD, two, 10**6) == DATA
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    assert decompress(Compression.ZSTD, skippable + two, 10**6) == DATA


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_of_legacy_messages(magic):
    frame = bytearray(cramjam.lz4.compress(read_inner(magic)))
    if magic == 0:  # Kafka's magic 0 writer hashed the wrong bytes for the header checksum (KAFKA-3160)
        hc = 4 + 2 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
        frame[hc] ^= 0xFF
    data = with_payload(Compression.LZ4, lambda _: bytes(frame), magic)
    assert values(data) == [DATA]


def read_inner(magic: int) -> bytes:
    b = BatchBuilder(magic=magic)
    b.append(b"k", DATA, timestamp=1)
    return b.build()


def test_a_wrong_lz4_header_checksum_is_an_error_from_magic_1():
    frame = bytearray(cramjam.lz4.compress(read_inner(1)))
    hc = 6 + (8 if frame[4] & 0x08 else 0) + (4 if frame[4] & 0x01 else 0)
    frame[hc] ^= 0xFF
    with pytest.raises(Exception) as e:
        values(with_payload(Compression.LZ4, lambda _: bytes(frame), 1))
    assert "lz4" in str(e.value) and e.typename == "RecordsError"


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_caps_hold_exactly(codec):
    packed = compress(codec, DATA)
    assert decompress(codec, packed, len(DATA)) == DATA
    with pytest.raises(CodecError, match="over the limit"):
        decompress(codec, packed, len(DATA) - 1)


def test_declared_sizes_are_refused_before_inflating():
    # a snappy block that declares 1 GB: refused from its preamble alone
    lying = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00" * 10
    with pytest.raises(CodecError, match="1073741824"):
        decompress(Compression.SNAPPY, lying, 1 << 20)


@pytest.mark.parametrize("codec", list(Compression)[1:])
@pytest.mark.parametrize("level", [None, 1])
def test_levels(codec, level):
    b = BatchBuilder(compression=codec, level=level)
    b.append(None, DATA, timestamp=1)
    (batch,) = iter_batches(b.build())
    assert batch.compression == codec and [r.value for r in batch] == [DATA]


def _cases(codec: Compression) -> dict[str, bytes]:
    if codec == Compression.ZSTD:
        import zstandard  # (core dependencies of kcodec, as lz4)
        return {"sized": compress(codec, DATA),
                "unsized": zstandard.ZstdCompressor(write_content_size=False).compress(DATA),
                "checksummed": zstandard.ZstdCompressor(write_checksum=True).compress(DATA),
                "two frames": bytes(cramjam.zstd.compress(DATA[:999])) + bytes(cramjam.zstd.compress(DATA[999:])),
                "empty": bytes(cramjam.zstd.compress(b""))}
    import lz4.frame as lz4_frame
    return {"sized": lz4_frame.compress(DATA, store_size=True),
            "unsized": compress(codec, DATA),
            "checksummed": lz4_frame.compress(DATA, block_checksum=True, content_checksum=True),
            "two frames": compress(codec, DATA[:999]) + lz4_frame.compress(DATA[999:]),
            "empty": lz4_frame.compress(b"")}


@pytest.mark.parametrize("codec", [Compression.LZ4, Compression.ZSTD])
def test_lz4_and_zstd_through_their_packages_and_cramjam_alike(codec, monkeypatch):
    """zstd inflates through zstandard's per-thread context and lz4 through the lz4 package when they are
    there, else through cramjam: frames with and without a declared size, checksums, several frames, an
    empty one."""
    from kcodec.records import _compression

    cases = _cases(codec)
    got = {name: decompress(codec, data, 10**6) for name, data in cases.items()}
    monkeypatch.setattr(_compression, "zstandard" if codec == Compression.ZSTD else "lz4_frame", None)
    assert got == {name: decompress(codec, data, 10**6) for name, data in cases.items()}
    assert got["sized"] == got["unsized"] == got["checksummed"] == got["two frames"] == DATA and got["empty"] == b""


def test_an_lz4_frame_that_fails_leaves_the_threads_context_fit_for_the_next():
    """lz4 frames inflate through a context kept per thread: a frame cut short, or one that does not
    decompress, is refused and the next batch still reads."""
    packed = compress(Compression.LZ4, DATA)
    corrupt = bytearray(packed)
    corrupt[len(corrupt) // 2] ^= 0xFF
    for bad in (packed[:len(packed) // 2] + bytes(4), bytes(corrupt)):
        with pytest.raises(CodecError, match="lz4"):
            decompress(Compression.LZ4, bad, 10**6)
        assert decompress(Compression.LZ4, packed, 10**6) == DATA


def refused_small(codec: Compression, data: bytes, match: str) -> None:
    """A frame declaring 2 GB, under a 4 GB cap, is refused before anything near that is allocated; a
    frame followed by other bytes is refused too."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(CodecError, match=match):
            decompress(codec, data, 1 << 32)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    name = Compression(codec).name.lower()
    with pytest.raises(CodecError, match=f"not {name} data"):
        decompress(codec, compress(codec, DATA) + b"junk", 10**6)


def test_lz4_frames_that_lie_or_trail():
    import lz4.frame as lz4_frame
    frame = bytearray(lz4_frame.compress(DATA, store_size=True))
    assert frame[4] & 0x08  # a declared content size, 8 bytes at 6
    frame[6:14] = (2**31).to_bytes(8, "little")
    frame[14] = (_xxh32(bytes(frame[4:14])) >> 8) & 0xFF  # a header checksum that agrees
    refused_small(Compression.LZ4, bytes(frame), "declares 2147483648 bytes")


def test_zstd_frames_that_lie_or_trail():
    frame = bytearray(compress(Compression.ZSTD, b"x" * 100))
    assert frame[4] >> 6 == 0 and frame[4] & 0x20  # a single segment: a one-byte declared size
    frame[5] = 200  # declares 200 bytes, where its block makes 100: the decoder says so
    with pytest.raises(CodecError):
        decompress(Compression.ZSTD, bytes(frame), 10**6)
    huge = bytearray(compress(Compression.ZSTD, DATA))
    assert huge[4] >> 6 == 2  # a 4-byte declared size
    huge[5:9] = (2**31).to_bytes(4, "little")
    refused_small(Compression.ZSTD, bytes(huge), "declares 2147483648 bytes")


def test_zstd_contexts_are_per_thread():
    from concurrent.futures import ThreadPoolExecutor

    cases = list(_cases(Compression.ZSTD).values())
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: decompress(Compression.ZSTD, cases[i % len(cases)], 10**6), range(200)))
    assert results == [decompress(Compression.ZSTD, cases[i % len(cases)], 10**6) for i in range(200)]


@pytest.mark.parametrize("level", [None, 1, 3, 19, -5])
def test_zstd_writes_the_bytes_cramjam_writes(level, monkeypatch):
    """zstd is written through this thread's kept zstandard context (a fresh one from 16 KiB), byte for
    byte what cramjam writes at the same level (cramjam without zstandard), on both sides of the size that
    chooses, and again after the other way ran."""
    from kcodec.records import _compression

    assert _compression._zstd_compressor(3 if level is None else level) is not None  # (the zstandard way runs)
    sizes = (0, 100, _compression._ZSTD_KEPT_BELOW - 1, _compression._ZSTD_KEPT_BELOW, len(DATA), 100)
    assert len(DATA) > _compression._ZSTD_KEPT_BELOW
    ours = [compress(Compression.ZSTD, DATA[:n], level) for n in sizes]
    monkeypatch.setattr(_compression, "zstandard", None)
    assert ours == [compress(Compression.ZSTD, DATA[:n], level) for n in sizes]
    assert [decompress(Compression.ZSTD, c, 10**6) for c in ours] == [DATA[:n] for n in sizes]


def test_an_lz4_frame_declaring_too_little_stops_there():
    """A frame that declares fewer bytes than its blocks make is refused after at most one byte more
    than it declared, not inflated whole (a decoder that trusts the size would grow its buffer)."""
    import tracemalloc

    import lz4.frame as lz4_frame
    big = bytes(range(256)) * 40_000  # 10 MB, in blocks that can hold it
    frame = bytearray(lz4_frame.compress(big, store_size=True))
    frame[6:14] = (1000).to_bytes(8, "little")
    frame[14] = (_xxh32(bytes(frame[4:14])) >> 8) & 0xFF
    tracemalloc.start()
    try:
        with pytest.raises(CodecError, match="more than the 1000 bytes it may"):
            decompress(Compression.LZ4, bytes(frame), 1 << 30)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


CAP = 4 << 20
SLACK = 1 << 20  # what a bound may add to the limit: about two gzip chunks, bookkeeping


def _gzip_members(data: bytes, parts: int) -> bytes:
    step = len(data) // parts
    return b"".join(gzip.compress(data[i * step:(i + 1) * step if i < parts - 1 else len(data)], 1)
                    for i in range(parts))


def _xerial(data: bytes) -> bytes:
    return compress(Compression.SNAPPY, data)


BOMB_NAMES = ["gzip", "gzip lying isize", "gzip members", "snappy raw", "snappy xerial", "lz4", "lz4 sized", "zstd"]


@functools.lru_cache(maxsize=None)
def _bombs() -> dict:
    """Each codec and framing Kafka's writers use, inflating to 4 times the cap; gzip also with an ISIZE
    that says "exactly the cap" and as many members (made once, when a test first asks)."""
    big = bytes(4 * CAP)
    import lz4.frame as lz4_frame
    lying = bytearray(gzip.compress(big, 1))
    lying[-4:] = CAP.to_bytes(4, "little")
    return {
        "gzip": (Compression.GZIP, gzip.compress(big, 1)),
        "gzip lying isize": (Compression.GZIP, bytes(lying)),
        "gzip members": (Compression.GZIP, _gzip_members(big, 16)),
        "snappy raw": (Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(big))),
        "snappy xerial": (Compression.SNAPPY, _xerial(big)),
        "lz4": (Compression.LZ4, compress(Compression.LZ4, big)),
        "lz4 sized": (Compression.LZ4, lz4_frame.compress(big, store_size=True, compression_level=0)),
        "zstd": (Compression.ZSTD, compress(Compression.ZSTD, big)),
    }


def _peak(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _inflaters(names: list) -> list:
    """Each name, and each gzip one once through zlib-ng's inflate and once through zlib's."""
    return [pytest.param(name, way, id=f"{name}-{way}" if way else name) for name in names
            for way in (("zlib-ng", "zlib") if name.startswith("gzip") else ("",))]


@pytest.fixture
def gzip_through(monkeypatch):
    """Inflate gzip through zlib-ng (the [compression] extra's) or the standard library's zlib."""
    from kcodec.records import _compression

    def use(way: str) -> None:
        if way == "zlib-ng":
            assert _compression.inflater is need_module("zlib_ng").zlib_ng
        elif way == "zlib":
            monkeypatch.setattr(_compression, "inflater", zlib)
    return use


@pytest.mark.parametrize("way", ["zlib-ng", "zlib"])
def test_gzip_through_zlib_ng_and_zlib_alike(way, gzip_through):
    """gzip reads through zlib-ng when it is installed, else through zlib: the same bytes from one member,
    several, a zlib stream (as magic 0/1 writers made), caps that hold exactly; the same refusals."""
    gzip_through(way)
    packed = compress(Compression.GZIP, DATA)
    members = gzip.compress(DATA[:10]) + gzip.compress(DATA[10:]) + gzip.compress(b"")
    assert decompress(Compression.GZIP, packed, len(DATA)) == DATA
    assert decompress(Compression.GZIP, members, len(DATA)) == DATA
    assert decompress(Compression.GZIP, zlib.compress(DATA), len(DATA)) == DATA
    big = _gzip_members(bytes(range(256)) * 2000, 3)  # over _FIRST: inflated a chunk at a time
    assert decompress(Compression.GZIP, big, 512_000) == bytes(range(256)) * 2000
    with pytest.raises(CodecError, match="over the limit"):
        decompress(Compression.GZIP, packed, len(DATA) - 1)
    for bad in (packed[:-9], packed[:200], packed + b"junk", b"\x1f\x8b" + bytes(30)):
        with pytest.raises(CodecError, match="gzip"):
            decompress(Compression.GZIP, bad, 10**6)


@pytest.mark.parametrize(("name", "way"), _inflaters(BOMB_NAMES))
def test_a_bomb_costs_at_most_the_limit(name, way, gzip_through):
    """max_uncompressed is a hard bound: a batch that inflates past it is a RecordsError, and the memory
    taken on the way (tracemalloc's peak) is at most the limit plus a small constant, for every codec and
    framing (gzip through zlib-ng and zlib); through the reader as through decompress."""
    gzip_through(way)
    codec, packed = _bombs()[name]
    data = rebuild_v2(with_payload(Compression.NONE, lambda r: r)[:61], packed, codec)

    def read():
        with pytest.raises(RecordsError, match="over the limit"):
            list(iter_batches(data, max_uncompressed=CAP))[0].records()

    assert _peak(read) <= CAP + SLACK


@pytest.mark.parametrize(("name", "way"), _inflaters([name for name in BOMB_NAMES if "lying" not in name]))
def test_a_batch_just_within_the_limit_costs_about_itself(name, way, gzip_through):  # (zlib checks ISIZE)
    """The same codecs and framings, inflating to a little under the limit: read whole, and the memory
    taken is the records plus the same constant (no second copy of them)."""
    gzip_through(way)
    codec, _ = _bombs()[name]
    records = bytes(range(256)) * ((CAP - 4096) // 256)
    packed = {"gzip members": lambda: _gzip_members(records, 4), "snappy raw":
              lambda: bytes(cramjam.snappy.compress_raw(records))}.get(name, lambda: compress(codec, records))()
    if name == "lz4 sized":
        import lz4.frame as lz4_frame
        packed = lz4_frame.compress(records, store_size=True)
    payload = []
    assert _peak(lambda: payload.append(decompress_buffer(codec, packed))) <= len(records) + SLACK
    assert bytes(payload[0]) == records


def decompress_buffer(codec, packed):
    from kcodec.records._compression import inflate
    return inflate(codec, packed, CAP)


_WITHOUT_CODECS = r"""
import sys
for name in ("cramjam", "lz4", "lz4.frame", "zstandard", "zlib_ng", "zlib_ng.zlib_ng"):
    sys.modules[name] = None  # as if kcodec were installed without its codec extras
from kcodec.records import BatchBuilder, Compression, MissingCodecError, RecordsError, read_records
for codec in (Compression.NONE, Compression.GZIP):  # the standard library's
    b = BatchBuilder(compression=codec)
    b.append(b"k", b"v" * 1000)
    assert [r.value for r in read_records(b.build())] == [b"v" * 1000]
for codec, extra in ((Compression.SNAPPY, "snappy"), (Compression.LZ4, "lz4"), (Compression.ZSTD, "zstd")):
    b = BatchBuilder(compression=codec)
    b.append(b"k", b"v")
    try:
        b.build()
    except MissingCodecError as e:
        assert f"kcodec[{extra}]" in str(e), e
    else:
        raise AssertionError(f"{codec.name} built without its library")
    try:
        read_records(bytes.fromhex(sys.argv[int(codec)]))
    except RecordsError as e:
        assert f"kcodec[{extra}]" in str(e) and "byte 61" in str(e), e
    else:
        raise AssertionError(f"{codec.name} read without its library")
print("ok")
"""


def test_without_the_codec_extras_gzip_works_and_the_others_name_their_extra():
    """`pip install kcodec` brings no compression library: snappy, lz4 and zstd batches then fail with an
    error naming the extra to install (at the records' offset), in building and in reading."""
    import subprocess
    import sys

    batches = {}
    for codec in (Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        b = BatchBuilder(compression=codec)
        b.append(b"k", b"v")
        batches[int(codec)] = b.build().hex()
    args = [batches.get(i, "") for i in range(1, 5)]
    out = subprocess.run([sys.executable, "-c", _WITHOUT_CODECS, *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_distribution_requires_no_compression_library():
    from importlib.metadata import requires

    plain = [r for r in requires("kcodec") or [] if "extra ==" not in r]
    assert [r.split(">")[0].split("=")[0].strip() for r in plain] == ["crc32c"], plain


def _xerial_of(chunks: list) -> bytes:
    """A xerial stream with one raw snappy block per chunk (compress() cuts 32 KB blocks)."""
    blocks = [bytes(cramjam.snappy.compress_raw(c)) for c in chunks]
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"".join(struct.pack(">i", len(b)) + b for b in blocks)


def _reads(data: bytes, cap: int) -> tuple:
    """A batch read through iteration (the Cython twin inflates snappy there, walking in C) and through
    records() (the reference's inflate): values or the error, each from a fresh scan."""
    def outcome(fn):
        try:
            return [r.value for b in iter_batches(data, max_uncompressed=cap) for r in fn(b)]
        except RecordsError as e:
            return ("error", type(e).__name__, str(e))
    return outcome(iter), outcome(lambda b: b.records())


def _snappy_payloads(records: bytes) -> dict:
    """Each shape of snappy records section, valid or not, that the walk in C must read or refuse as the
    reference does."""
    raw = bytes(cramjam.snappy.compress_raw(records))
    thirds = [records[i:i + len(records) // 3 + 1] for i in range(0, len(records), len(records) // 3 + 1)]
    xerial = _xerial_of(thirds)
    many = _xerial_of([records[i:i + 100] for i in range(0, len(records), 100)])  # past 64 blocks
    lying = bytearray(_xerial_of(thirds[:1]))
    lying[20] += 1  # the preamble's first byte: one more byte declared than the block holds
    return {
        "raw": raw, "xerial": xerial, "xerial of one block": _xerial_of([records]), "many blocks": many,
        "concatenated": _xerial_of(thirds[:2]) + _xerial_of(thirds[2:]),
        "cut in a block": xerial[:-3], "cut in a block length": xerial[:22] + b"\x00\x00",
        "header only": xerial[:16], "magic only": xerial[:10], "declares too much": bytes(lying),
        "preamble too long": XERIAL_MAGIC + struct.pack(">iii", 1, 1, 7) + b"\xff" * 7,
        "corrupt block": xerial[:30] + bytes(b ^ 0x5A for b in xerial[30:60]) + xerial[60:],
        "raw cut": raw[:len(raw) // 2], "raw preamble only": raw[:2], "empty": b"",
        "raw of nothing": bytes(cramjam.snappy.compress_raw(b"")), "xerial of nothing": _xerial_of([b""]),
    }


@pytest.mark.parametrize("cap", [1 << 20, 5_000])
def test_snappy_iteration_and_records_read_alike(cap):
    records = b"".join(bytes([1]) * 300 + b"%05d" % i for i in range(40))  # ~12 KB, compressible
    b = BatchBuilder()
    for i in range(40):
        b.append(b"k%d" % i, records[i * 305:(i + 1) * 305], timestamp=i)
    plain = b.build()
    for name, payload in _snappy_payloads(plain[61:]).items():
        data = rebuild_v2(plain[:61], payload, Compression.SNAPPY)
        through_iteration, through_records = _reads(data, cap)
        assert through_iteration == through_records, name
        if name in ("raw", "xerial", "xerial of one block", "many blocks", "concatenated") and cap > 20_000:
            assert through_iteration == [records[i * 305:(i + 1) * 305] for i in range(40)], name


def test_snappy_zero_copy_views_outlive_their_batch():
    """zero_copy keys and values of a snappy batch are read-only views of its inflated records (a new bytes
    object the Cython twin fills in place), still right once the batch and its iterator are gone."""
    b = BatchBuilder(compression=Compression.SNAPPY)
    for i in range(300):
        b.append(b"k%d" % i, b"%d" % i * 40, (), i)
    data = b.build() * 3
    views = [(r.key, r.value) for batch in iter_batches(data, zero_copy=True) for r in batch]
    assert all(isinstance(v, memoryview) and v.readonly for kv in views for v in kv)
    assert [(bytes(k), bytes(v)) for k, v in views] == [(b"k%d" % i, b"%d" % i * 40) for i in range(300)] * 3


def test_a_limit_past_any_size_is_no_limit():
    """max_uncompressed over the largest size (2**70) reads every batch, on either backend (the compiled one
    took it for a C size and raised OverflowError)."""
    b = BatchBuilder(compression=Compression.GZIP)
    for i in range(5):
        b.append(b"k", b"v" * 100, (), i)
    data = bytes(b.build())
    for limit in (2**63, 2**70):
        assert [r.value for r in read_records(data, max_uncompressed=limit)] == [b"v" * 100] * 5
