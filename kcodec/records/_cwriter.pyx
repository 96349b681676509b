# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: binding=False, embedsignature=True, embedsignature.format=clinic
"""The writer half of the Cython twin (kcodec/records/_crecords.pyx re-exports it): v2 records written into a
C buffer as they are appended, the twin of ``RecordsWriter`` in kcodec/records/_pure.py."""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE, _PyBytes_Resize
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

from ..core.coerce import flat_view
from ..exceptions import EncodeError
from . import _pure
from ._checksum import _crc32c
from ._types import (COMPRESSIONS, CONTROL_BIT, TIMESTAMP_TYPE_BIT, TIMESTAMP_TYPES, TRANSACTIONAL_BIT, Compression,
                     TimestampType, now_ms)


cdef inline int varint_size(int64_t v) noexcept nogil:
    cdef uint64_t z = <uint64_t>((v << 1) ^ (v >> 63))
    cdef int n = 1
    while z > 0x7F:
        z >>= 7
        n += 1
    return n


cdef inline Py_ssize_t put_varint(unsigned char* p, Py_ssize_t pos, int64_t v) noexcept nogil:
    cdef uint64_t z = <uint64_t>((v << 1) ^ (v >> 63))
    while z > 0x7F:
        p[pos] = <unsigned char>((z & 0x7F) | 0x80)
        z >>= 7
        pos += 1
    p[pos] = <unsigned char>z
    return pos + 1


# The offset deltas append returns, made once: an int past CPython's small ints is an allocation (and its free
# in the caller), ~60 of the ~470 instructions of an append; capped so a huge batch keeps no huge cache.
cdef list _deltas = list(range(1024))
cdef Py_ssize_t DELTAS_MAX = 1 << 16


cdef inline object delta(int64_t n):
    cdef object d
    if n < PyList_GET_SIZE(_deltas):
        d = <object>PyList_GET_ITEM(_deltas, n)
        return d
    return more_deltas(n)


cdef object more_deltas(int64_t n):
    """delta past the ints made so far (apart, so that delta's common case is inlined into its callers)."""
    cdef Py_ssize_t have = PyList_GET_SIZE(_deltas)
    if n >= DELTAS_MAX:
        return n
    _deltas.extend(range(have, min(DELTAS_MAX, 2 * n)))
    return n


cdef inline void put_be(unsigned char* p, Py_ssize_t pos, uint64_t v, int n) noexcept nogil:
    """``n`` bytes of ``v``, big-endian, at ``pos``."""
    cdef int i
    for i in range(n - 1, -1, -1):
        p[pos + i] = <unsigned char>(v & 0xFF)
        v >>= 8


cdef uint64_t header_field(object v, int bits) except? 0xFFFFFFFFFFFFFFFF:
    """A signed header field of ``bits`` bits as struct.pack takes it: an int (no float truncated), in range."""
    cdef int64_t n
    if not isinstance(v, int):
        raise TypeError(f"a batch header field must be an int, not {type(v).__name__}")
    n = v  # (an OverflowError past int64)
    if bits < 64 and not (-(<int64_t>1 << (bits - 1)) <= n < (<int64_t>1 << (bits - 1))):
        raise OverflowError(f"{n} does not fit in {bits} bits")
    return <uint64_t>n


cdef inline Py_ssize_t put_fields(unsigned char* p, Py_ssize_t pos, int64_t ts_delta, int64_t offset_delta,
                                  const char* kd, Py_ssize_t kn, const char* vd, Py_ssize_t vn) noexcept nogil:
    """A record's attributes (0), timestamp and offset deltas, key and value (kn, vn: -1 for null)."""
    p[pos] = 0
    pos = put_varint(p, pos + 1, ts_delta)
    pos = put_varint(p, pos, offset_delta)
    pos = put_varint(p, pos, kn)
    if kn > 0:
        memcpy(p + pos, kd, kn)
        pos += kn
    pos = put_varint(p, pos, vn)
    if vn > 0:
        memcpy(p + pos, vd, vn)
        pos += vn
    return pos


cdef inline int get_data(object v, Py_buffer* pb, const char** data, Py_ssize_t* n, str what) except -1:
    """0: bytes (no buffer taken); 1: a buffer to release; 2: None."""
    if v is None:
        n[0] = -1
        return 2
    if type(v) is bytes:
        data[0] = PyBytes_AS_STRING(v)
        n[0] = PyBytes_GET_SIZE(v)
        return 0
    if isinstance(v, (bytearray, memoryview)):
        PyObject_GetBuffer(v, pb, PyBUF_SIMPLE)
        data[0] = <const char*>pb.buf
        n[0] = pb.len
        return 1
    raise TypeError(f"{what} must be bytes, bytearray, memoryview or None, not {type(v).__name__}")


# A batch that outgrows its first 4 KB grows at once to about the size the last one finished at, instead of
# doubling up to it (five reallocs to 97 KB, each a copy where the heap cannot grow in place: the 1,000-record
# build's instruction count moved by a 64 KB copy from one process to the next); small batches keep 4 KB.
cdef Py_ssize_t _size_hint = 0
cdef Py_ssize_t HINT_MAX = 1 << 20


cdef inline void remember_size(Py_ssize_t n) noexcept nogil:
    global _size_hint
    _size_hint = min(n + n // 16 + 256, HINT_MAX)  # (room for the last record's ten-byte varints)


cdef extern from *:
    Py_ssize_t refcount "Py_REFCNT" (PyObject*) nogil  # (on the pointer: <object> would take a reference)


cdef enum:
    HEAD = 61  # a v2 batch's header (V2_HEADER_SIZE): room left before the records for finish to write


cdef class RecordsWriter:
    """The v2 records of a batch being built, written as each is appended (the base of BatchBuilder; the
    reference's twin) into a bytes object after HEAD bytes of room, so that finish writes the header there and
    hands that object out without copying the records. Once handed out it is shared (``_cap`` 0): the next
    write copies the records into a new one first, since a bytes object someone holds never changes."""
    cdef PyObject* _buf  # owned: HEAD + _cap bytes
    cdef unsigned char* _out  # its records: PyBytes_AS_STRING(_buf) + HEAD
    cdef Py_ssize_t _len, _cap
    cdef int64_t _count, _base_ts, _max_ts

    def __cinit__(self, *args, **kwargs):
        self._buf = NULL
        self._len = self._count = 0
        self._base_ts = self._max_ts = -1
        self._own(4096)

    def __init__(self, *args, **kwargs):
        pass

    def __dealloc__(self):
        Py_XDECREF(self._buf)

    cdef int _own(self, Py_ssize_t cap) except -1:
        """A new buffer of ``cap`` bytes of records holding the current ones (the old one dropped)."""
        cdef object grown = PyBytes_FromStringAndSize(NULL, HEAD + cap)
        cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(grown)
        if self._len:
            memcpy(p + HEAD, self._out, self._len)
        Py_XDECREF(self._buf)
        Py_INCREF(grown)
        self._buf = <PyObject*>grown
        self._out, self._cap = p + HEAD, cap
        return 0

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t cap = self._cap if self._cap else 4096
        if self._len + extra <= self._cap:
            return 0
        while cap < self._len + extra:
            cap *= 2
        if cap < _size_hint:
            cap = _size_hint
        if not self._cap or refcount(self._buf) != 1:  # shared: the records go into a new one
            return self._own(cap)
        # ours alone: grown through realloc, in place where the allocator can (a copy each time costs more)
        if _PyBytes_Resize(&self._buf, HEAD + cap) < 0:
            self._lost()
        self._out, self._cap = <unsigned char*>PyBytes_AS_STRING(<object>self._buf) + HEAD, cap
        return 0

    cdef int _lost(self) except -1:
        """After a failed _PyBytes_Resize (the buffer freed, with what was appended): start empty rather than
        point at freed memory, and say so."""
        self._buf = NULL
        self._len = self._count = 0
        self._base_ts = self._max_ts = -1
        self._own(4096)
        raise MemoryError()

    def append(self, key, value, headers=(), timestamp=None):
        """Add a record (key and value: bytes-like or None; headers: (str, bytes-like or None) pairs;
        timestamp: ms since the epoch, now when None); returns its offset delta."""
        if (type(key) is bytes and type(value) is bytes and type(timestamp) is int and type(headers) is tuple
                and not PyTuple_GET_SIZE(headers)):
            # the common case: no buffers to take, no headers to encode
            write_plain(self, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), PyBytes_AS_STRING(value),
                        PyBytes_GET_SIZE(value), timestamp)
            return delta(self._count - 1)
        self._add(key, value, headers, timestamp)
        return delta(self._count - 1)

    cdef int _add(self, key, value, headers, timestamp) except -1:
        """append's general case: buffers taken and released, headers checked and encoded."""
        cdef int64_t ts
        cdef Py_buffer kb, vb
        cdef const char* kd = NULL
        cdef const char* vd = NULL
        cdef Py_ssize_t kn, vn
        cdef int kk = 2, vk = 2
        cdef list hs = None
        if timestamp is None:
            ts = now_ms()
        elif isinstance(timestamp, int):
            ts = timestamp
        else:
            raise TypeError(f"timestamp must be an int (ms), not {type(timestamp).__name__}")
        if type(key) is memoryview and not key.c_contiguous:  # (copied, as the reference does: crash4)
            key = flat_view(key)
        if type(value) is memoryview and not value.c_contiguous:
            value = flat_view(value)
        try:
            kk = get_data(key, &kb, &kd, &kn, "key")
            vk = get_data(value, &vb, &vd, &vn, "value")
            if type(headers) is not tuple or PyTuple_GET_SIZE(headers):  # (iterated as the reference: None refused)
                hs = []
                for h in headers:
                    hk, hv = h
                    if not isinstance(hk, str):
                        raise TypeError(f"header key must be str, not {type(hk).__name__}")
                    if hv is not None and type(hv) is not bytes:
                        if not isinstance(hv, (bytearray, memoryview)):
                            raise TypeError("header value must be bytes, bytearray, memoryview or None, not "
                                            f"{type(hv).__name__}")
                        hv = bytes(hv)
                    hs.append(((<str>hk).encode("utf-8"), hv))
                if not hs:
                    hs = None
            self._write(kd, kn, vd, vn, ts, hs)
            return 0
        finally:
            if kk == 1:
                PyBuffer_Release(&kb)
            if vk == 1:
                PyBuffer_Release(&vb)

    def extend(self, records):
        """Append each ``(key, value[, headers[, timestamp]])`` of ``records`` as ``append`` would (a missing
        or None timestamp: now, taken once for the call); returns how many. A list or tuple is walked in C,
        and items of bytes, bytes, no headers and an int or no timestamp are written without a Python call.
        A bad item raises what append would, naming its index (``records[i]``), and leaves the writer as it
        was before the call."""
        cdef Py_ssize_t mark_len = self._len, i = 0
        cdef int64_t mark_count = self._count, mark_base = self._base_ts, mark_max = self._max_ts
        cdef int64_t now = 0
        cdef bint have_now = False, in_item = False
        cdef object item
        try:
            for item in records:  # (Cython walks an exact list or tuple by index, anything else by next())
                in_item = True
                self._item(item, &now, &have_now)
                in_item = False
                i += 1
        except BaseException as e:
            if self._count >= mark_count:  # (else _lost emptied the writer: nothing left to roll back to)
                self._len, self._count, self._base_ts, self._max_ts = mark_len, mark_count, mark_base, mark_max
            err = _pure.item_error(e, i) if in_item else None
            if err is None:
                raise
            raise err from None
        return i

    cdef int _item(self, object item, int64_t* now, bint* have_now) except -1:
        """One item of extend: the common shape written here, anything else through _add."""
        cdef Py_ssize_t n
        cdef int64_t ts
        cdef object key, value, headers = (), timestamp = None
        if type(item) is not tuple and not isinstance(item, tuple):
            raise _pure.bad_item(item)
        n = PyTuple_GET_SIZE(item)
        if n < 2 or n > 4:
            raise _pure.bad_item(item)
        key = <object>PyTuple_GET_ITEM(item, 0)
        value = <object>PyTuple_GET_ITEM(item, 1)
        if n > 2:
            headers = <object>PyTuple_GET_ITEM(item, 2)
        if n > 3:
            timestamp = <object>PyTuple_GET_ITEM(item, 3)
        if timestamp is None:
            if not have_now[0]:
                now[0] = now_ms()
                have_now[0] = True
            ts = now[0]
        elif type(timestamp) is int:
            ts = timestamp  # (an OverflowError past int64, as append's)
        else:
            return self._add(key, value, headers, timestamp)
        if type(key) is bytes and type(value) is bytes and type(headers) is tuple and not PyTuple_GET_SIZE(headers):
            return write_plain(self, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), PyBytes_AS_STRING(value),
                               PyBytes_GET_SIZE(value), ts)
        return self._add(key, value, headers, ts)

    cdef int _write(self, const char* kd, Py_ssize_t kn, const char* vd, Py_ssize_t vn, int64_t ts,
                    list hs) except -1:
        """One record (kn, vn: -1 for null; hs: encoded header pairs or None) at the end of the buffer."""
        cdef Py_ssize_t body, pos
        cdef bytes hk
        if hs is None:
            return write_plain(self, kd, kn, vd, vn, ts)
        if self._count == 0:
            self._base_ts = self._max_ts = ts
        elif ts > self._max_ts:
            self._max_ts = ts
        body = 1 + varint_size(ts - self._base_ts) + varint_size(self._count)
        body += varint_size(kn) + (kn if kn > 0 else 0) + varint_size(vn) + (vn if vn > 0 else 0)
        body += varint_size(len(hs))
        for hk, hv in hs:
            body += varint_size(len(hk)) + len(hk)
            body += varint_size(-1 if hv is None else len(hv)) + (0 if hv is None else len(hv))
        if self._len + body + 5 > self._cap:
            self._reserve(body + 5)
        pos = put_varint(self._out, self._len, body)
        pos = put_fields(self._out, pos, ts - self._base_ts, self._count, kd, kn, vd, vn)
        pos = put_varint(self._out, pos, len(hs))
        for hk, hv in hs:
            pos = put_varint(self._out, pos, len(hk))
            memcpy(self._out + pos, PyBytes_AS_STRING(hk), len(hk))
            pos += len(hk)
            if hv is None:
                pos = put_varint(self._out, pos, -1)
            else:
                pos = put_varint(self._out, pos, len(hv))
                memcpy(self._out + pos, PyBytes_AS_STRING(hv), len(hv))
                pos += len(hv)
        self._len = pos
        self._count += 1
        return 0

    def records_bytes(self):
        return PyBytes_FromStringAndSize(<const char*>self._out, self._len)

    def records_view(self):
        """The records without a copy: release it (``with``) before the next append. The buffer counts as
        shared from here on, as after finish: the next append copies the records, and nothing the view can
        reach is written again (clear_records included)."""
        self._cap = 0
        remember_size(self._len)
        return memoryview(<object>self._buf)[HEAD:HEAD + self._len]

    def finish(self, base_offset, partition_leader_epoch, attributes, producer_id, producer_epoch, base_sequence,
               crc_fn):
        """The uncompressed v2 batch: its header written in front of the records from these fields and the
        writer's count and timestamps, with the CRC32C of bytes 21.. at 17; one allocation, no header object.
        A field that is not an int is a TypeError, one out of its width an OverflowError, and nothing is
        handed out then."""
        return self._finish(base_offset, partition_leader_epoch, attributes, producer_id, producer_epoch,
                            base_sequence, crc_fn)

    cdef bytes _finish(self, base_offset, partition_leader_epoch, attributes, producer_id, producer_epoch,
                       base_sequence, crc_fn):
        cdef uint64_t bo = header_field(base_offset, 64), ple = header_field(partition_leader_epoch, 32)
        cdef uint64_t attrs = header_field(attributes, 16), pid = header_field(producer_id, 64)
        cdef uint64_t pe = header_field(producer_epoch, 16), seq = header_field(base_sequence, 32)
        cdef bytes out
        cdef unsigned char* p
        if not self._cap or refcount(self._buf) != 1:  # a bytes object someone holds never changes
            self._own(self._len + 1)
        # ours alone: cut to size (a shrink, in place) and hand it out, shared from now on
        if _PyBytes_Resize(&self._buf, HEAD + self._len) < 0:
            self._lost()
        self._out, self._cap = <unsigned char*>PyBytes_AS_STRING(<object>self._buf) + HEAD, 0
        remember_size(self._len)
        out = <bytes>self._buf
        p = <unsigned char*>PyBytes_AS_STRING(out)
        put_be(p, 0, bo, 8)
        put_be(p, 8, <uint64_t>(HEAD - 12 + self._len), 4)  # batch length: from the leader epoch on
        put_be(p, 12, ple, 4)
        p[16] = 2
        put_be(p, 21, attrs, 2)
        put_be(p, 23, <uint64_t>(self._count - 1), 4)
        put_be(p, 27, <uint64_t>self._base_ts, 8)
        put_be(p, 35, <uint64_t>self._max_ts, 8)
        put_be(p, 43, pid, 8)
        put_be(p, 51, pe, 2)
        put_be(p, 53, seq, 4)
        put_be(p, 57, <uint64_t>self._count, 4)
        with memoryview(out) as view:
            put_be(p, 17, <uint32_t>crc_fn(view[21:]), 4)
        return out

    def records_size(self):
        return self._len

    def writer_state(self):
        """(record count, base timestamp, max timestamp)."""
        return self._count, self._base_ts, self._max_ts

    def clear_records(self):
        self._len = self._count = 0
        self._base_ts = self._max_ts = -1


cdef inline int write_plain(RecordsWriter w, const char* kd, Py_ssize_t kn, const char* vd, Py_ssize_t vn,
                            int64_t ts) except -1:
    """_write's record without headers, inlined where append and extend call it (_write's vtable call and frame
    were ~35 instructions an append): one pass after 2 bytes of room for the length (bodies of 64 to 8,191
    bytes), moved when it needs another size, instead of sizing every field first."""
    cdef Py_ssize_t body, pos, lsz
    cdef Py_ssize_t start = w._len
    if w._count == 0:
        w._base_ts = w._max_ts = ts
    elif ts > w._max_ts:
        w._max_ts = ts
    if start + (kn if kn > 0 else 0) + (vn if vn > 0 else 0) + 64 > w._cap:
        w._reserve((kn if kn > 0 else 0) + (vn if vn > 0 else 0) + 64)  # (ten-byte varints at most)
    pos = put_fields(w._out, start + 2, ts - w._base_ts, w._count, kd, kn, vd, vn)
    w._out[pos] = 0
    body = pos + 1 - (start + 2)
    lsz = varint_size(body)
    if lsz != 2:
        memmove(w._out + start + lsz, w._out + start + 2, body)
    w._len = put_varint(w._out, start, body) + body
    w._count += 1
    return 0


include "_cwriter_append.pxi"


# BatchBuilder's settings, __init__ and build in C (the twin of _PyBuilderBase in kcodec/records/_builder.py):
# a producer makes a builder per batch, often after other work has left the caches cold, where each Python
# frame, attribute and global lookup of a Python-level __init__ and build cost a microsecond or more.
cdef dict _COMPRESSIONS = COMPRESSIONS
cdef dict _TIMESTAMP_TYPES = TIMESTAMP_TYPES
cdef object ZSTD = Compression.ZSTD


cdef class BuilderBase(RecordsWriter):
    """A v2 batch's settings and its build (the base of BatchBuilder; see kcodec/records/_builder.py)."""
    cdef public object magic, compression, level, base_offset, producer_id, producer_epoch, base_sequence
    cdef public object transactional, control, partition_leader_epoch, timestamp_type, _built, _built_key
    cdef public object _messages  # (the message-set builder's: its class is switched to in __init__)

    def __init__(self, magic=2, compression=Compression.NONE, level=None, base_offset=0, producer_id=-1,
                 producer_epoch=-1, base_sequence=-1, transactional=False, control=False,
                 partition_leader_epoch=-1, timestamp_type=TimestampType.CREATE_TIME):
        if magic not in (0, 1, 2):
            raise EncodeError(f"magic {magic} is not 0, 1 or 2", "magic")
        self.magic = magic
        codec = _COMPRESSIONS.get(compression)
        self.compression = Compression(compression) if codec is None else codec
        if magic < 2 and self.compression == ZSTD:
            raise EncodeError("zstd needs magic 2", "compression")
        if magic < 2 and (transactional or control or producer_id != -1):
            raise EncodeError(f"magic {magic} has no producer fields, transactions or control records", "magic")
        self.level = level
        self.base_offset = base_offset
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.transactional, self.control = transactional, control
        self.partition_leader_epoch = partition_leader_epoch
        ts_type = _TIMESTAMP_TYPES.get(timestamp_type)
        self.timestamp_type = TimestampType(timestamp_type) if ts_type is None else ts_type
        self._built = None
        self._built_key = None
        if type(self) is _v2_class and magic in (0, 1):  # BatchBuilder(magic=0 or 1): the message-set builder
            (<object>self).__class__ = _legacy_class
            self._messages = []

    def _key(self, count):
        return self._key_of(count)

    cdef tuple _key_of(self, count):
        return (count, self.magic, self.compression, self.level, self.base_offset, self.producer_id,
                self.producer_epoch, self.base_sequence, self.transactional, self.control,
                self.partition_leader_epoch, self.timestamp_type)

    def _attributes(self):
        return self._attributes_of()

    cdef object _attributes_of(self):
        return (int(self.compression) | (TIMESTAMP_TYPE_BIT if self.timestamp_type else 0)
                | (TRANSACTIONAL_BIT if self.transactional else 0) | (CONTROL_BIT if self.control else 0))

    def build(self):
        """The batch: header, records (compressed when asked), batch length and CRC32C."""
        cdef tuple key = self._key_of(self._count)
        if self._built is not None and self._built_key == key:
            return self._built
        if self._count == 0:
            raise EncodeError("a batch needs at least one record", "records")
        if not self.compression:
            try:
                self._built = self._finish(self.base_offset, self.partition_leader_epoch, self._attributes_of(),
                                           self.producer_id, self.producer_epoch, self.base_sequence, _crc32c)
            except (OverflowError, TypeError) as e:
                raise EncodeError(f"a batch header field does not fit: {e}", "header") from None
        else:
            self._built = self._compressed(self._count, self._base_ts, self._max_ts)
        self._built_key = key
        return self._built


cdef object _v2_class = None, _legacy_class = None


def builder_classes(type v2 not None, type legacy not None):
    """Name BatchBuilder and its magic 0/1 subclass for BuilderBase.__init__ (kcodec/records/_builder.py, once)."""
    global _v2_class, _legacy_class
    # (append_fast takes its self as a RecordsWriter unchecked: installed on any other type, it would crash)
    if not issubclass(v2, BuilderBase) or not issubclass(legacy, v2):
        raise TypeError(f"builder_classes takes a BuilderBase subclass and a subclass of it, not {v2!r}, {legacy!r}")
    _v2_class, _legacy_class = v2, legacy
    kc_install_append(v2, <void*>append_fast, _append_doc)


def encode_records(records, int64_t base_timestamp):
    """As _pure.encode_records (kept for the differential tests; builders use RecordsWriter)."""
    return _pure.encode_records(records, base_timestamp)
