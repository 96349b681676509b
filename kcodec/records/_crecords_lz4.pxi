# Included by _crecords.pyx: an lz4 batch's records inflated by liblz4's frame decoder (LZ4F_decompress) straight
# into the bytes object kept, as _compression's _unlz4 inflates them. python-lz4's decompress_chunk inflates into a
# malloc'd buffer of the frame's bound and copies that into a new bytes object (1.09 G of instructions, memcpy, in a
# 9.2 G partition of `kcodec analyze`'s pass 2). Here the frames are walked in C (the same bounds as _lz4_frames),
# one bytes of the walked bound is filled frame after frame by a kept decompression context (the GIL released from
# 16 KiB, as python-lz4 released it), and shrunk to what was made (_PyBytes_Resize: realloc in place, no copy). A
# frame gets the room it may fill (its declared size, else its blocks' bound, counting a compressed block as its
# frame's whole block size, as Kafka's writers leave the size out): LZ4F then always has a block's room and decodes
# into the bytes, not into its own buffer (a sized frame's last block goes through that buffer). Checksums (header,
# block, content) are checked by LZ4F as python-lz4's decoder checks them; magic 0's header checksum (KAFKA-3160) is
# recomputed first.
#
# liblz4 is the one python-lz4 brings: its extension module lz4.frame._frame exports the LZ4F_* functions,
# found at first use through ctypes and kept as C function pointers. Where they are not exported (a build
# that hides them) or lz4 is missing, lz4_route() says "reference" and every batch goes through _unlz4
# (tests/records/test_records_lz4.py asserts the native route on Linux). Anything off (a cap passed, a
# malformed walk, LZ4F refusing) returns None, and the reference inflates again to raise its error, so the
# error text lives in one place.

from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    int _PyBytes_Resize(PyObject** bytes, Py_ssize_t newsize) except -1

cdef enum:
    LZ4_FRAMES = 16  # walked here up to this many; more go through the reference
    LZ4F_VERSION = 100
    LZ4_NOGIL = 16384  # from this many bytes of room the GIL is released while inflating (its release and
                       # retake cost ~0.1-0.2 us, a small batch's inflating a few; hashlib does the same)

ctypedef size_t (*lz4f_create_t)(void** dctx, unsigned version) noexcept nogil
ctypedef size_t (*lz4f_decompress_t)(void* dctx, void* dst, size_t* dst_size, const void* src, size_t* src_size,
                                     const void* options) noexcept nogil
ctypedef unsigned (*lz4f_is_error_t)(size_t code) noexcept nogil
ctypedef void (*lz4f_reset_t)(void* dctx) noexcept nogil
ctypedef size_t (*lz4f_free_t)(void* dctx) noexcept nogil

cdef lz4f_decompress_t _lz4f_decompress = NULL
cdef lz4f_is_error_t _lz4f_is_error = NULL
cdef lz4f_reset_t _lz4f_reset = NULL
cdef lz4f_create_t _lz4f_create = NULL
cdef lz4f_free_t _lz4f_free = NULL
# A one-context pool: a call takes it out (with the GIL), inflates without the GIL, and puts it back, or frees
# its own when another thread's call put one back first; so no two calls share a context and a thread-heavy
# reader makes at most one context a concurrent call.
cdef void* _lz4_dctx = NULL
cdef int _lz4_state = 0  # 0: not looked up yet, 1: liblz4's functions found, -1: the reference runs


cdef bint lz4_native() noexcept:
    """Whether liblz4's frame decoder is at hand (looked up once)."""
    global _lz4_state, _lz4f_decompress, _lz4f_is_error, _lz4f_reset, _lz4f_create, _lz4f_free, _lz4_dctx
    if _lz4_state == 0:
        _lz4_state = -1
        try:
            import ctypes
            from lz4.frame import _frame
            lib = ctypes.CDLL(_frame.__file__)  # (already loaded: the same handle, nothing loaded twice)
            addr = {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0 for name in
                    ("LZ4F_createDecompressionContext", "LZ4F_decompress", "LZ4F_isError",
                     "LZ4F_resetDecompressionContext", "LZ4F_freeDecompressionContext")}
        except Exception:  # lz4 missing, or a build that does not export its C functions
            return False
        _lz4f_create = <lz4f_create_t><uintptr_t>addr["LZ4F_createDecompressionContext"]
        _lz4f_free = <lz4f_free_t><uintptr_t>addr["LZ4F_freeDecompressionContext"]
        if _lz4f_create(&_lz4_dctx, LZ4F_VERSION) != 0 or _lz4_dctx == NULL:
            return False
        _lz4f_decompress = <lz4f_decompress_t><uintptr_t>addr["LZ4F_decompress"]
        _lz4f_is_error = <lz4f_is_error_t><uintptr_t>addr["LZ4F_isError"]
        _lz4f_reset = <lz4f_reset_t><uintptr_t>addr["LZ4F_resetDecompressionContext"]
        _lz4_state = 1
    return _lz4_state == 1


def lz4_route() -> str:
    """"liblz4" when lz4 batches are inflated here, "reference" when _compression's _unlz4 does it."""
    return "liblz4" if lz4_native() else "reference"


cdef inline uint32_t le32(const unsigned char* p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef size_t inflate_frames(void* ctx, unsigned char* o, size_t total, const unsigned char* d, Py_ssize_t nf,
                           const Py_ssize_t* starts, const Py_ssize_t* ends, const Py_ssize_t* heads,
                           const uint64_t* mosts, const unsigned char* fixed, int magic) noexcept nogil:
    """The walked frames inflated by ctx into o (total bytes of room): how many bytes were made, or -1 (the
    context reset: a context left mid-frame is reset before its next use)."""
    cdef size_t at = 0, dst_size, src_size, ret
    cdef Py_ssize_t i, pos
    for i in range(nf):
        if magic == 0:  # the fixed header, then the frame after it
            src_size, dst_size = heads[i] + 1 - starts[i], 0
            ret = _lz4f_decompress(ctx, o + at, &dst_size, fixed + i * 19, &src_size, NULL)
            if _lz4f_is_error(ret) or dst_size != 0 or src_size != <size_t>(heads[i] + 1 - starts[i]):
                _lz4f_reset(ctx)
                return <size_t>-1
            pos = heads[i] + 1
        else:
            pos = starts[i]
        # the room a frame may fill, within the cap: one that lies about its size stops there
        src_size, dst_size = ends[i] - pos, min(mosts[i], total - at)
        ret = _lz4f_decompress(ctx, o + at, &dst_size, d + pos, &src_size, NULL)
        # 0: the frame ended (content size and checksums checked); else it wants more input or room
        if ret != 0 or src_size != <size_t>(ends[i] - pos):
            _lz4f_reset(ctx)
            return <size_t>-1
        at += dst_size
    return at


cdef object unlz4(object buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t cap, int magic):
    """The inflated records (bytes) of buf[start:end], or None (the reference then runs; end -1: the buffer's
    end)."""
    cdef Py_buffer pb
    cdef const unsigned char* d
    cdef Py_ssize_t n, pos, desc_end, nf = 0, i
    cdef uint64_t declared, frame_bound, total = 0, block_max
    cdef uint32_t size, m
    cdef unsigned char flg
    cdef Py_ssize_t starts[LZ4_FRAMES]
    cdef Py_ssize_t ends[LZ4_FRAMES]
    cdef Py_ssize_t heads[LZ4_FRAMES]  # the header checksum's position (magic 0 feeds a fixed header first)
    cdef uint64_t mosts[LZ4_FRAMES]
    cdef unsigned char fixed[LZ4_FRAMES * 19]  # frame i's header at i * 19
    cdef size_t at = 0
    cdef void* ctx
    cdef unsigned char* o
    cdef PyObject* raw
    global _lz4_dctx
    if cap < 0 or not lz4_native():
        return None
    PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)  # held until the last frame is read
    try:
        if end < 0:
            end = pb.len
        if not 0 <= start <= end <= pb.len:
            return None
        d = <const unsigned char*>pb.buf + start
        n = end - start
        pos = 0
        while pos < n:  # the walk of _lz4_frames, in C
            if n - pos < 4:
                return None
            m = le32(d + pos)
            if 0x184D2A50 <= m <= 0x184D2A5F:  # a skippable frame
                if n - pos < 8:
                    return None
                pos += 8 + <Py_ssize_t>le32(d + pos + 4)
                continue
            if m != 0x184D2204 or nf == LZ4_FRAMES or n - pos < 7:
                return None
            flg = d[pos + 4]
            desc_end = pos + 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
            if desc_end + 1 > n:
                return None
            declared = (<uint64_t>le32(d + pos + 6) | (<uint64_t>le32(d + pos + 10) << 32)) if flg & 0x08 else 0
            block_max = 1 << (8 + 2 * ((d[pos + 5] >> 4) & 0x07))
            starts[nf], heads[nf] = pos, desc_end
            if magic == 0:
                memcpy(fixed + nf * 19, d + pos, desc_end - pos)
                fixed[nf * 19 + desc_end - pos] = (_compression._xxh32(d[pos + 4:desc_end]) >> 8) & 0xFF
            pos = desc_end + 1
            frame_bound = 0
            while True:
                if n - pos < 4:
                    return None
                size = le32(d + pos)
                pos += 4
                if size == 0:
                    break
                if (size & 0x7FFFFFFF) > block_max:
                    return None
                pos += (size & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)
                frame_bound += (size & 0x7FFFFFFF) if size & 0x80000000 else block_max
                if pos > n:
                    return None
            pos += 4 if flg & 0x04 else 0
            if pos > n or (flg & 0x08 and declared > frame_bound):
                return None
            ends[nf], mosts[nf] = pos, (declared if flg & 0x08 else frame_bound)
            total += mosts[nf]
            nf += 1
        if total > <uint64_t>cap:  # (the bound may be loose: the cap is the room, and a frame past it stops)
            total = cap
        if total == 0:
            return None
        out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>total)
        ctx = _lz4_dctx  # taken out of the pool (with the GIL), or a new one if another call holds it
        _lz4_dctx = NULL
        if ctx == NULL and _lz4f_create(&ctx, LZ4F_VERSION) != 0:
            if ctx != NULL:
                _lz4f_free(ctx)
            return None
        o = <unsigned char*>PyBytes_AS_STRING(out)
        if total >= LZ4_NOGIL:
            with nogil:
                at = inflate_frames(ctx, o, total, d, nf, starts, ends, heads, mosts, fixed, magic)
        else:
            at = inflate_frames(ctx, o, total, d, nf, starts, ends, heads, mosts, fixed, magic)
        if _lz4_dctx == NULL:  # back to the pool, unless another call put one back meanwhile
            _lz4_dctx = ctx
        else:
            _lz4f_free(ctx)
        if at == <size_t>-1:
            return None
    except Exception:
        return None
    finally:
        PyBuffer_Release(&pb)
    if at == total:
        return out
    # _PyBytes_Resize wants the only reference (and drops it on failure): `out`'s, moved into raw
    raw = <PyObject*>out
    Py_INCREF(out)
    out = None
    _PyBytes_Resize(&raw, <Py_ssize_t>at)
    shrunk = <object>raw  # (the cast takes a second reference: raw's is dropped)
    Py_DECREF(shrunk)
    return shrunk


def inflate_lz4(data, Py_ssize_t cap, int magic=2):
    """_compression.inflate's lz4 route in this backend: bytes as _unlz4 makes them, or None (it then runs)."""
    return unlz4(data, 0, -1, cap, magic)
