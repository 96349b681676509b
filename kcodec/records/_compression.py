"""The codecs of Kafka's record batches, each decompression bounded.

gzip: the standard library's zlib, streamed with an output cap; reading, zlib-ng's inflate where the
[compression] extra brings it (the same API and stream semantics: concatenated members, the cap through
``max_length``; a 97 KB batch in 42 µs where zlib takes 92). snappy, lz4, zstd: cramjam (one wheel, no
system libraries, aiokafka's choice too), an optional dependency: the extras kcodec[snappy], [lz4], [zstd]
or [compression] install it, and a batch of a codec whose library is missing raises MissingCodecError
naming the extra. Reading, zstd goes through the zstandard package and lz4 through the lz4 package, each
with one decompression context per thread (in the [zstd] and [lz4] extras; cramjam when they are missing): cramjam's per-call set-up costs more than inflating a typical 10 KB batch (a 1 MB Fetch of
109 batches: zstd 2.1 ms against 0.58 ms, lz4 0.69 ms against 0.32 ms). zstd writes of a small batch
go through a kept zstandard context too (the same bytes as cramjam's; a 9.6 KB batch in 12 µs instead of
30); a batch of 16 KiB or more gets a fresh context, as the Java client's and librdkafka's each get one
(see _ZSTD_KEPT_BELOW). The compiled backend reads lz4 through liblz4 itself, into the bytes it keeps
(``native_lz4``, kcodec/records/_crecords_lz4.pxi), and hands what it refuses to ``_unlz4``.
Before snappy, lz4 or zstd inflate anything, the frame structure is walked to bound the output from its
declared sizes (snappy's length preamble, lz4 and zstd block headers and maximum block sizes), so a bomb is
refused before any large allocation.
"""

from __future__ import annotations

import struct
import threading
import zlib
from types import ModuleType
from typing import Any, Callable, Optional

try:
    import cramjam
except ImportError:  # the codecs' extras are not installed: gzip and uncompressed batches still work
    cramjam = None  # type: ignore[assignment]
try:
    import zstandard
except ImportError:  # pragma: no cover - a platform without its wheel: cramjam inflates zstd too
    zstandard = None  # type: ignore[assignment]
inflater: ModuleType  # gzip's inflate: zlib-ng's, about twice as fast as zlib's (the [compression] extra)
try:
    from zlib_ng import zlib_ng as inflater  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - without it the standard library's zlib inflates gzip
    inflater = zlib
try:
    import lz4.frame as lz4_frame  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - likewise for lz4
    lz4_frame = None

from ._types import Compression


# The compiled backend's lz4 route (_crecords.inflate_lz4: liblz4 into the bytes kept, None when it passes a
# batch to _unlz4), installed by _select when that backend runs; None under KCODEC_PURE=1.
native_lz4: Optional[Callable[[Any, int, int], Optional[bytes]]] = None
_contexts = threading.local()  # zstandard's contexts are not to be shared between threads


class CodecError(ValueError):
    """Compressed bytes that do not inflate, or would inflate past the cap (wrapped into RecordsError)."""


class MissingCodecError(CodecError):
    """A codec whose library is not installed: the message names the extra that installs it."""


# the codecs as plain ints where every batch passes (an IntEnum member costs ~100 ns to look up on 3.11)
_GZIP, _SNAPPY, _LZ4, _ZSTD = (int(c) for c in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                                Compression.ZSTD))
_EXTRA = {Compression.SNAPPY: "snappy", Compression.LZ4: "lz4", Compression.ZSTD: "zstd"}


def _cramjam(codec: int):
    """cramjam, or MissingCodecError naming the extra that brings it."""
    if cramjam is None:
        name = Compression(codec).name.lower()
        raise MissingCodecError(f"{name} needs the cramjam package, which is not installed: "
                                f"pip install 'kcodec[{_EXTRA[Compression(codec)]}]' (or 'kcodec[compression]' "
                                "for every codec)")
    return cramjam


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # the block size of the Java client's SnappyOutputStream
# The gzip header's OS byte as Java's GZIPOutputStream (Kafka's producer) and Python's gzip module write it
# (255, unknown): a gzip batch at the default level is then byte for byte the Java client's (tests/oracle).
_GZIP_OS_UNKNOWN = 255
_LZ4_MAGIC = 0x184D2204
_ZSTD_MAGIC = 0xFD2FB528
# A kept zstd context reuses its match tables without clearing them, so after a few ms of other work its
# compression reads them back, at random, from beyond the caches: a 97 KB batch took 297 µs that way against
# 176 with a fresh context, whose tables are cleared (written in order) first. Right after another
# compression the kept one is quicker (103 against 119 µs). From about 19 KB up the fresh one wins when cold,
# which is how a producer builds (other work between batches); below, the kept one wins either way
# (benchmarks/NOTES.md, the zstd build). The bytes are the same.
_ZSTD_KEPT_BELOW = 16 * 1024
_ZSTD_MAX_BLOCK = 128 * 1024
_u32le = struct.Struct("<I")
_i32be = struct.Struct(">i")


def compress(codec: int, data: bytes | memoryview, level: Optional[int] = None, magic: int = 2) -> bytes:
    """Compress a records payload (magic 2) or an inner message set (magic 0/1) with a codec (``data``: bytes or
    a memoryview of them, read before this returns)."""
    if codec == Compression.GZIP:
        c = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, 31)
        out = bytearray(c.compress(data) + c.flush())
        out[9] = _GZIP_OS_UNKNOWN  # zlib writes the OS it runs on; no checksum covers the byte
        return bytes(out)
    if codec == Compression.SNAPPY:  # xerial framing, as the Java client writes it
        view = memoryview(data)
        parts = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(_cramjam(codec).snappy.compress_raw(view[i:i + _XERIAL_BLOCK]))
            parts.append(_i32be.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == Compression.LZ4:
        # Independent blocks, as every client writes them: Kafka's Java reader refuses linked ones
        # ("Dependent block stream is unsupported"), which are cramjam's default.
        frame = _cramjam(codec).lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        frame.compress(data if type(data) is bytes else bytes(data))  # (cramjam's frame takes no memoryview)
        return bytes(frame.finish())
    if codec == Compression.ZSTD:
        cctx = _zstd_compressor(3 if level is None else level, len(data) >= _ZSTD_KEPT_BELOW)
        if cctx is not None:  # (3: zstd's default, cramjam's too)
            return cctx.compress(data)  # the same bytes as cramjam's, without its per-call set-up
        zstd = _cramjam(codec).zstd
        return bytes(zstd.compress(data, level=level) if level is not None else zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _zstd_compressor(level: int, fresh: bool = False):
    """This thread's zstandard compression context for a level (a new one if ``fresh``); None without
    zstandard or for a level it refuses (cramjam then compresses, as before)."""
    if zstandard is None:
        return None
    kept = getattr(_contexts, "zstd_levels", None)
    if kept is None:
        kept = _contexts.zstd_levels = {}
    cctx = kept.get(level)
    if cctx is not None and fresh:
        return zstandard.ZstdCompressor(level=level)  # (a level refused before is never kept)
    if cctx is None:
        try:
            cctx = zstandard.ZstdCompressor(level=level)
        except (zstandard.ZstdError, ValueError, OverflowError, TypeError):
            return None
        if len(kept) < 8:  # a few levels per thread at most
            kept[level] = cctx
    return cctx


def decompress(codec: int, data, cap: int, magic: int = 2) -> bytes:
    """Inflate ``data`` (any buffer); a result that would pass ``cap`` bytes is a CodecError."""
    out = inflate(codec, data, cap, magic)
    return out if type(out) is bytes else bytes(out)


def inflate(codec: int, data, cap: int, magic: int = 2):
    """As :func:`decompress`, without a last copy: bytes, or a read-only memoryview of the buffer the codec
    wrote into (what the readers keep as a batch's records). At most ``cap`` bytes plus a constant
    (``_CHUNK``) are allocated on the way, whatever ``data`` declares or holds."""
    try:
        if codec == _GZIP:
            return _gunzip(data, cap)
        if codec == _SNAPPY:
            return _unsnappy(memoryview(data), cap)
        if codec == _LZ4:
            out = native_lz4(data, cap, magic) if native_lz4 is not None else None
            return out if out is not None else _unlz4(memoryview(data), cap, magic)
        if codec == _ZSTD:
            return _unzstd(memoryview(data), cap)
    except CodecError:
        raise
    except Exception as e:  # zlib.error, zlib_ng.error, cramjam.DecompressionError, struct.error ...
        raise CodecError(f"{Compression(codec).name.lower()} data does not decompress ({e})") from None
    raise CodecError(f"unknown compression codec {codec}")


def _too_big(size: int, cap: int) -> CodecError:
    return CodecError(f"records would inflate to {size} bytes or more, over the limit of {cap} "
                      "(max_uncompressed)")


_FIRST = 256 * 1024  # a gzip batch up to this size is inflated by one call
_CHUNK = 64 * 1024  # larger ones this much at a time


def _gunzip(data, cap: int):
    """Members one after another (Java's GZIPInputStream reads concatenated ones), gzip or zlib headers.

    A batch of up to ``_FIRST`` bytes is one call (zlib's bytes, no copy). A larger one is inflated chunk by
    chunk into one buffer of the size its last member's ISIZE gives, when that size is within the cap;
    when the data makes more than that (several members, or an ISIZE that lies), a first pass counts the
    bytes (stopping past the cap) and a second writes them into a buffer of that size. So the most ever
    allocated is the output, or the cap, plus a few chunks."""
    d = inflater.decompressobj(47)
    first = d.decompress(data, min(cap, _FIRST) + 1)
    if len(first) > cap:
        raise _too_big(len(first), cap)
    if d.eof and not d.unused_data:
        return first
    del first, d
    view = memoryview(data)
    hint = _u32le.unpack_from(view, len(view) - 4)[0] if len(view) >= 18 else 0
    if _FIRST < hint <= cap:
        out = bytearray(hint)
        n = _gunzip_into(view, out, cap)
        if n >= 0:
            del out[n:]
            return memoryview(out).toreadonly()
        del out
    out = bytearray(_gunzip_into(view, None, cap))
    _gunzip_into(view, out, cap)
    return memoryview(out).toreadonly()


def _gunzip_into(view: memoryview, out: Optional[bytearray], cap: int) -> int:
    """Inflate every member of ``view`` in chunks into ``out`` (None: only count): the bytes made, or -1
    when they do not fit ``out``; a CodecError past the cap. The input is fed a chunk at a time too, as zlib
    copies what a call leaves of it."""
    total = pos = 0
    d = inflater.decompressobj(47)
    while True:
        piece = view[pos:pos + _CHUNK]
        chunk = d.decompress(piece, _CHUNK)
        used = len(piece) - len(d.unused_data if d.eof else d.unconsumed_tail)
        pos += used
        n = len(chunk)
        if out is not None:
            if total + n > len(out):
                return -1
            out[total:total + n] = chunk
        del chunk  # (before the next one is made)
        total += n
        if total > cap:
            raise _too_big(total, cap)
        if d.eof:
            if pos >= len(view):
                return total
            d = inflater.decompressobj(47)
        elif not n and not used:
            raise CodecError("gzip data ends before its end marker")


def _varint_len(buf: memoryview, pos: int, end: int = -1) -> int:
    """snappy's preamble: the uncompressed length as an unsigned little-endian base-128 varint (of the
    bytes before ``end``, the buffer's end when -1)."""
    end = min(len(buf) if end < 0 else end, pos + 5)
    result = shift = 0
    while pos < end:  # (indexes, not a slice's iterator: the walk runs once a block)
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result
        shift += 7
        pos += 1
    if shift < 35:
        raise CodecError("snappy length preamble past the end")
    raise CodecError("snappy length preamble longer than 5 bytes")


def _short_block(at: int) -> CodecError:
    return CodecError(f"snappy block at byte {at} of the output makes fewer bytes than it declares")


def _unsnappy(buf: memoryview, cap: int):
    """Raw snappy (one block, its length preamble first) or the xerial framing (blocks of raw snappy, each
    with its preamble): the output's size is known exactly before anything is inflated, and every block is
    inflated straight into its place in one buffer of that size."""
    xerial = buf[:8] == XERIAL_MAGIC
    if xerial and len(buf) >= 20 and _i32be.unpack_from(buf, 16)[0] == len(buf) - 20:
        buf, xerial = buf[20:], False  # one xerial block (the Java client's batch under 32 KB): no walk
    if not xerial:  # one raw block
        size = _varint_len(buf, 0)
        if size > cap:
            raise _too_big(size, cap)
        out = bytearray(size)
        if _cramjam(_SNAPPY).snappy.decompress_raw_into(buf, out) != size:
            raise _short_block(0)
        return memoryview(out).toreadonly()
    blocks, total = _xerial_blocks(buf, cap)
    snappy = _cramjam(_SNAPPY).snappy
    out = bytearray(total)
    view = memoryview(out)
    at = 0
    for block, n in blocks:
        if snappy.decompress_raw_into(block, view[at:at + n]) != n:
            raise _short_block(at)
        at += n
    view.release()
    return memoryview(out).toreadonly()


def _xerial_blocks(buf: memoryview, cap: int) -> tuple[list, int]:
    """The blocks of xerial snappy (concatenated streams too, as xerial's reader allows), the size each
    declares, and their sum, checked against the cap."""
    pos, blocks, total, end = 16, [], 0, len(buf)
    if end < 16:
        raise CodecError("xerial snappy header past the end")
    unpack = _i32be.unpack_from
    while pos < end:
        if buf[pos] == 0x82 and buf[pos:pos + 8] == XERIAL_MAGIC:  # (a block length never starts 0x82)
            pos += 16
            continue
        if pos + 4 > end:
            raise CodecError(f"xerial snappy block length past the end at byte {pos}")
        (n,) = unpack(buf, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CodecError(f"xerial snappy block of {n} bytes at byte {pos - 4} runs past the end")
        size = _varint_len(buf, pos, pos + n)
        total += size
        if total > cap:
            raise _too_big(total, cap)
        blocks.append((buf[pos:pos + n], size))
        pos += n
    return blocks, total


_SKIPPABLE_LOW, _SKIPPABLE_HIGH = 0x184D2A50, 0x184D2A5F  # lz4 and zstd share these skippable frames


def _frame_start(buf: memoryview, pos: int, codec: str, magic: int) -> int:
    """The position of the next frame of ``codec`` at or after ``pos`` (skippable frames skipped), or the end."""
    while pos < len(buf):
        if pos + 4 > len(buf):
            raise CodecError(f"{codec} frame magic past the end at byte {pos}")
        (m,) = _u32le.unpack_from(buf, pos)
        if not _SKIPPABLE_LOW <= m <= _SKIPPABLE_HIGH:
            if m != magic:
                raise CodecError(f"not {codec} data at byte {pos} (magic {m:#x})")
            return pos
        if pos + 8 > len(buf):
            raise CodecError(f"{codec} skippable frame past the end at byte {pos}")
        pos += 8 + _u32le.unpack_from(buf, pos + 4)[0]
    return len(buf)


def _lz4_frames(buf: memoryview, magic: int) -> tuple[list[tuple[int, int, int]], int, Optional[bytes]]:
    """Walk lz4 frames: where each starts and ends and how much it may make (its declared size, else the
    bound of its blocks), the sum of those, and the bytes with magic 0's header checksum fixed.

    Kafka's magic 0 writer hashed the wrong bytes for the frame descriptor checksum (KAFKA-3160); its
    readers ignore it for magic 0. Here it is recomputed so that the decoder accepts the frame."""
    pos, bound, n = 0, 0, len(buf)
    frames = []
    fixed: Optional[bytearray] = None
    while True:
        pos = _frame_start(buf, pos, "lz4", _LZ4_MAGIC)
        if pos >= n:
            break
        start = pos
        if pos + 7 > n:
            raise CodecError(f"lz4 frame descriptor past the end at byte {pos}")
        flg, bd = buf[pos + 4], buf[pos + 5]
        desc_end = pos + 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        if desc_end + 1 > n:
            raise CodecError(f"lz4 frame descriptor past the end at byte {pos}")
        declared = struct.unpack_from("<Q", buf, pos + 6)[0] if flg & 0x08 else -1
        block_max = 1 << (8 + 2 * ((bd >> 4) & 0x07))
        if magic == 0:
            if fixed is None:
                fixed = bytearray(buf)
            fixed[desc_end] = (_xxh32(bytes(buf[pos + 4:desc_end])) >> 8) & 0xFF
        pos = desc_end + 1
        frame_bound = 0
        while True:
            if pos + 4 > n:
                raise CodecError(f"lz4 block header past the end at byte {pos}")
            (size,) = _u32le.unpack_from(buf, pos)
            pos += 4
            if size == 0:
                break
            raw = size & 0x80000000
            size &= 0x7FFFFFFF
            if size > block_max:
                raise CodecError(f"lz4 block of {size} bytes over its frame's block size {block_max}")
            pos += size + (4 if flg & 0x10 else 0)
            frame_bound += size if raw else block_max
            if pos > n:
                raise CodecError("lz4 block runs past the end")
        pos += 4 if flg & 0x04 else 0
        if pos > n:
            raise CodecError("lz4 frame checksum past the end")
        if declared > frame_bound:  # (a decoder may allocate what a frame declares)
            raise CodecError(f"lz4 frame at byte {start} declares {declared} bytes, more than its blocks hold")
        frames.append((start, pos, frame_bound if declared < 0 else declared))
        bound += frames[-1][2]
    return frames, bound, (bytes(fixed) if fixed is not None else None)


def _capped(module, data, bound: int, cap: int, frames: Optional[list[tuple[int, int, int]]] = None):
    """Inflate into one buffer of the walked bound's size, or of cap + 1 bytes when the bound passes the cap,
    which the codec refuses to overrun (the bound counts every compressed block as full, so it may be loose).
    ``frames`` (start, end, _): one call a frame, each after the last's output (cramjam before 2.14, the
    newest there is for Python 3.10, inflates only the first of several lz4 frames)."""
    out = bytearray(min(bound, cap + 1))  # (within the cap: the bound; the output is trimmed to its size)
    try:
        if frames is None:
            n = module.decompress_into(data, out)
        else:
            view, n = memoryview(out), 0
            for start, end, _ in frames:
                n += module.decompress_into(data[start:end], view[n:])
            view.release()
    except cramjam.DecompressionError as e:  # (module is one of cramjam's, so cramjam is here)
        if "whole buffer" in str(e):
            raise _too_big(cap + 1, cap) from None
        raise
    if n > cap:
        raise _too_big(n, cap)
    del out[n:]
    return memoryview(out).toreadonly()


def _unlz4(buf: memoryview, cap: int, magic: int):
    frames, bound, fixed = _lz4_frames(buf, magic)
    data = memoryview(fixed) if fixed is not None else buf
    if lz4_frame is None or bound > min(cap, _FIRST):  # large: cramjam inflates into one buffer, no copy
        return _capped(_cramjam(_LZ4).lz4, data, bound, cap, frames if len(frames) > 1 else None)
    dctx = getattr(_contexts, "lz4", None)  # this thread's context, kept (python-lz4's decompressor class
    if dctx is None:                         # makes one per frame, which cost as much as the inflating)
        dctx = _contexts.lz4 = lz4_frame.create_decompression_context()
    parts = []
    for start, end, most in frames:  # frame by frame: the context stops after one frame
        try:  # at most one byte past what the frame may make: a frame that lies about its size stops there
            part, _, eof = lz4_frame.decompress_chunk(dctx, data[start:end], most + 1)
        except RuntimeError as e:  # python-lz4's error for data that does not decompress
            _contexts.lz4 = None  # (a context left mid-frame is not used again)
            raise CodecError(f"lz4 data does not decompress ({e})") from None
        if not eof or len(part) > most:
            _contexts.lz4 = None
            raise CodecError(f"lz4 frame at byte {start} makes more than the {most} bytes it may")
        parts.append(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _zstd_frames(buf: memoryview) -> list[tuple[int, int, int]]:
    """Walk zstd frames and their block headers: each frame's start, end and an upper bound of its output."""
    pos, n = 0, len(buf)
    frames = []
    while True:
        pos = _frame_start(buf, pos, "zstd", _ZSTD_MAGIC)
        if pos >= n:
            break
        start, bound = pos, 0
        if pos + 5 > n:
            raise CodecError(f"zstd frame header past the end at byte {pos}")
        fhd = buf[pos + 4]
        single = fhd & 0x20
        fcs_size = (0, 2, 4, 8)[fhd >> 6] or (1 if single else 0)
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 0x03] + fcs_size
        if pos > n:
            raise CodecError(f"zstd frame header past the end at byte {start}")
        declared = int.from_bytes(buf[pos - fcs_size:pos], "little") + (256 if fcs_size == 2 else 0)
        while True:
            if pos + 3 > n:
                raise CodecError(f"zstd block header past the end at byte {pos}")
            h = buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)
            pos += 3
            last, kind, size = h & 1, (h >> 1) & 3, h >> 3
            if kind == 0:
                pos += size
                bound += size
            elif kind == 1:
                pos += 1
                bound += size
            elif kind == 2:
                if size > _ZSTD_MAX_BLOCK:
                    raise CodecError(f"zstd block of {size} bytes over the maximum block size")
                pos += size
                bound += _ZSTD_MAX_BLOCK
            else:
                raise CodecError("zstd block of the reserved type")
            if pos > n:
                raise CodecError("zstd block runs past the end")
            if last:
                break
        pos += 4 if fhd & 0x04 else 0
        if pos > n:
            raise CodecError("zstd frame checksum past the end")
        if fcs_size and declared > bound:  # (what a frame declares is what zstandard allocates)
            raise CodecError(f"zstd frame at byte {start} declares {declared} bytes, more than its blocks hold")
        frames.append((start, pos, bound))
    return frames


def _unzstd(buf: memoryview, cap: int):
    frames = _zstd_frames(buf)
    bound = sum(b for _, _, b in frames)
    if zstandard is None or bound > cap:  # over the cap: cramjam inflates into a buffer of cap + 1 bytes
        return _capped(_cramjam(_ZSTD).zstd, buf, bound, cap)
    dctx = getattr(_contexts, "zstd", None)
    if dctx is None:
        dctx = _contexts.zstd = zstandard.ZstdDecompressor()
    try:
        # Frame by frame (its decompress stops after one frame and ignores what follows); a frame's
        # declared content size is what it allocates, else the bound of its blocks; either is within
        # the cap, and one that the blocks cannot fill is an error, not an allocation.
        parts = [dctx.decompress(buf[start:end], max_output_size=b) for start, end, b in frames]
    except zstandard.ZstdError as e:
        raise CodecError(f"zstd data does not decompress ({e})") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (an lz4 frame descriptor: 2 to 14 bytes, under one 16-byte stripe)."""
    assert len(data) < 16
    h = (seed + _P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (_rotl((h + _u32le.unpack_from(data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    for b in data[i:]:
        h = (_rotl((h + b * _P5) & _M32, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
