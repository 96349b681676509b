# Included by _crecords.pyx: a snappy batch's records inflated from the C fields, as _compression's
# _unsnappy inflates them (a raw block, or xerial blocks each in its place in one buffer of their declared
# sizes), with the walk in C and the buffer not zero-filled first (each block writes all of its bytes, or
# nothing is returned): the 1,000-record batch's three blocks cost ~42 K instructions of walk and ~98 K of
# memset in Python. Anything off (a cap passed, a malformed walk, cramjam refusing or missing) returns None,
# and the reference inflates again to raise its error, so the error text lives in one place.

from libc.string cimport memcmp

from . import _compression

cdef enum:
    XERIAL_BLOCKS = 64  # walked here up to this many (a 2 MB batch); more go through the reference

cdef const char* XERIAL = b"\x82SNAPPY\x00"


cdef inline Py_ssize_t snappy_preamble(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    """The uncompressed length a raw snappy block declares in its first bytes (n of them there), or -1."""
    cdef uint64_t result = 0
    cdef Py_ssize_t i
    for i in range(n if n < 5 else 5):
        result |= <uint64_t>(p[i] & 0x7F) << (7 * i)
        if p[i] < 0x80:
            return <Py_ssize_t>result
    return -1


cdef object unsnappy(object buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t cap):
    """The inflated records (bytes), or None (the reference then runs)."""
    cdef Py_buffer pb
    cdef const unsigned char* d
    cdef Py_ssize_t n, pos, size, total = 0, nb = 0, i, at = 0
    cdef int32_t blen
    cdef Py_ssize_t offs[XERIAL_BLOCKS]
    cdef Py_ssize_t lens[XERIAL_BLOCKS]
    cdef Py_ssize_t sizes[XERIAL_BLOCKS]
    cdef char* o
    PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)  # held until the last block is read
    try:
        if not 0 <= start <= end <= pb.len:
            return None
        d = <const unsigned char*>pb.buf + start
        n = end - start
        if n >= 8 and memcmp(d, XERIAL, 8) == 0:
            if n < 16:
                return None
            pos = 16
            while pos < n:
                if n - pos >= 8 and memcmp(d + pos, XERIAL, 8) == 0:  # a concatenated stream's header
                    pos += 16
                    continue
                if n - pos < 4 or nb == XERIAL_BLOCKS:
                    return None
                blen = <int32_t>be32(d + pos)
                pos += 4
                if blen < 0 or blen > n - pos:
                    return None
                size = snappy_preamble(d + pos, blen)
                total += size
                if size < 0 or total > cap:
                    return None
                offs[nb], lens[nb], sizes[nb] = pos, blen, size
                nb += 1
                pos += blen
        else:
            total = snappy_preamble(d, n)
            if total < 0 or total > cap:
                return None
            offs[0], lens[0], sizes[0] = 0, n, total
            nb = 1
        into = snappy_into()
        if into is None:
            return None
        # A bytes object no one else has seen yet, filled in place; cramjam gets bare views of the memory
        # (no memoryview of buf and slices of it per block: ~8 K instructions a batch), which do not outlive
        # the call; pb keeps buf's memory alive and `out` its own.
        out = PyBytes_FromStringAndSize(NULL, total)
        o = PyBytes_AS_STRING(out)
        for i in range(nb):
            if into(PyMemoryView_FromMemory(<char*>d + offs[i], lens[i], PyBUF_READ),
                    PyMemoryView_FromMemory(o + at, sizes[i], PyBUF_WRITE)) != sizes[i]:
                return None
            at += sizes[i]
    except Exception:
        return None
    finally:
        PyBuffer_Release(&pb)
    return out


cdef object _snappy_into = None


cdef object snappy_into():
    """cramjam's snappy.decompress_raw_into, looked up once (None while cramjam is missing)."""
    global _snappy_into
    if _snappy_into is None:
        try:
            _snappy_into = _compression._cramjam(2).snappy.decompress_raw_into
        except Exception:
            return None
    return _snappy_into
