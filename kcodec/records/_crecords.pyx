# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: binding=False, embedsignature=True, embedsignature.format=clinic
"""The Cython twin of kcodec/records/_pure.py: the v2 record loops in C over ``const unsigned char*``.

Same names and meanings as the reference: ``Record``, ``BatchHeader``, ``scan_v2``, ``decode_records``,
``iter_records``, ``iter_batch``, ``fill_columns``, and from ``_cwriter.pyx`` ``RecordsWriter`` and
``encode_records``. The fast loop only decides whether the bytes are well formed; when they
are not, the reference decodes them again to raise its exact error (offset, batch, record, field), so both
backends fail alike and the error text lives in one place.
"""

cimport cython
from cpython.buffer cimport PyBUF_READ, PyBUF_SIMPLE, PyBUF_WRITE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.memoryview cimport PyMemoryView_FromMemory  # bare views of memory held for one call
from cpython.object cimport PyTypeObject
from cpython.type cimport PyType_Modified
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport INT64_MAX, INT64_MIN, int16_t, int32_t, int64_t, uint32_t, uint64_t

from . import _pure
from ._compression import CodecError, inflate
from ._cwriter import BuilderBase, RecordsWriter, builder_classes, encode_records  # noqa: F401  (the writer half)

record_tuple = _pure.record_tuple


@cython.final
@cython.no_gc
@cython.freelist(256)
cdef class Record:
    """One record: absolute offset and timestamp (ms), key, value, headers, attributes."""
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    cdef object _headers
    cdef readonly int attributes

    def __init__(self, int64_t offset, int64_t timestamp, key, value, headers, int attributes=0):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self._headers = headers
        self.attributes = attributes

    @property
    def headers(self):
        """(str, bytes or None) pairs; made on first access for a record that has none."""
        if self._headers is None:
            self._headers = []
        return self._headers

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other):
        if not hasattr(other, "headers"):
            return NotImplemented
        return record_tuple(self) == record_tuple(other)

    __hash__ = None


cdef extern from *:
    """
    #if PY_VERSION_HEX >= 0x030C0000
    #define KC_T_OBJECT_EX Py_T_OBJECT_EX
    #define KC_T_LONGLONG Py_T_LONGLONG
    #define KC_T_INT Py_T_INT
    #define KC_READONLY Py_READONLY
    #else
    #include <structmember.h>
    #define KC_T_OBJECT_EX T_OBJECT_EX
    #define KC_T_LONGLONG T_LONGLONG
    #define KC_T_INT T_INT
    #define KC_READONLY READONLY
    #endif
    /* where Record's fields sit in its object: the struct Cython generates for the class (a renamed struct
       fails the build, it cannot go wrong silently) */
    #define KC_RECORD_AT(f) ((Py_ssize_t)offsetof(struct __pyx_obj_6kcodec_7records_9_crecords_Record, f))
    #define KC_RECORD_OFFSET_AT KC_RECORD_AT(offset)
    #define KC_RECORD_TIMESTAMP_AT KC_RECORD_AT(timestamp)
    #define KC_RECORD_KEY_AT KC_RECORD_AT(key)
    #define KC_RECORD_VALUE_AT KC_RECORD_AT(value)
    #define KC_RECORD_ATTRIBUTES_AT KC_RECORD_AT(attributes)
    """
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
        const char* doc
    object PyDescr_NewMember(PyTypeObject* cls, PyMemberDef* member)
    int KC_T_OBJECT_EX, KC_T_LONGLONG, KC_T_INT, KC_READONLY
    Py_ssize_t KC_RECORD_OFFSET_AT, KC_RECORD_TIMESTAMP_AT, KC_RECORD_KEY_AT, KC_RECORD_VALUE_AT
    Py_ssize_t KC_RECORD_ATTRIBUTES_AT


cdef PyMemberDef record_members[5]


cdef expose_record_members():
    """Record's fields as member descriptors in place of Cython's properties: the interpreter reads a
    member of object type straight from its slot (3.11's specialised LOAD_ATTR_SLOT), where a property is a
    call; ``record.key`` and ``record.value`` cost a third of what they did (callgrind, 1,000 records)."""
    cdef PyTypeObject* t = <PyTypeObject*>Record
    fields = ((b"offset", KC_T_LONGLONG, KC_RECORD_OFFSET_AT), (b"timestamp", KC_T_LONGLONG, KC_RECORD_TIMESTAMP_AT),
              (b"key", KC_T_OBJECT_EX, KC_RECORD_KEY_AT), (b"value", KC_T_OBJECT_EX, KC_RECORD_VALUE_AT),
              (b"attributes", KC_T_INT, KC_RECORD_ATTRIBUTES_AT))
    cdef dict d = <dict>t.tp_dict
    for i, (name, kind, at) in enumerate(fields):
        record_members[i].name = <const char*>(<bytes>name)  # (literals: they live as long as the module)
        record_members[i].type = kind
        record_members[i].offset = at
        record_members[i].flags = KC_READONLY
        record_members[i].doc = NULL
        d[name.decode()] = PyDescr_NewMember(t, &record_members[i])
    PyType_Modified(Record)


expose_record_members()


cdef class BatchHeader:
    """The fields of a batch, in C (the base of kcodec.records.RecordBatch; the reference's twin)."""
    cdef public int64_t base_offset, base_timestamp, max_timestamp, producer_id
    cdef public int64_t partition_leader_epoch, last_offset_delta, base_sequence, record_count  # int64: magic
    cdef public int magic, attributes, producer_epoch                                          # 0/1 offsets
    cdef public uint32_t crc
    cdef public Py_ssize_t size, offset, index, _start, _end, _max
    cdef public bint _zero_copy
    cdef public object _buf, _payload, _legacy


cdef inline uint32_t be32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline uint64_t be64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>be32(p) << 32) | be32(p + 4)


include "_crecords_snappy.pxi"
include "_crecords_lz4.pxi"


def scan_v2(buf, view, Py_ssize_t pos, Py_ssize_t index, bint verify_crc, bint zero_copy,
            Py_ssize_t max_uncompressed, type cls, crc_fn):
    """The well-formed v2 batches from ``pos`` on, as ``cls`` objects: (list, next position, next index). It
    stops at anything else (a cut-off tail, magic 0/1, any fault) for the reference's reader to take on."""
    cdef Py_buffer pb
    cdef const unsigned char* p
    cdef Py_ssize_t n, end
    cdef int32_t length, count
    cdef int attributes
    cdef uint32_t crc
    cdef BatchHeader h
    cdef list out = []
    if not issubclass(cls, BatchHeader):  # its objects are filled as BatchHeaders below (unchecked casts)
        raise TypeError(f"scan_v2 makes BatchHeader objects; {cls.__name__} is not a BatchHeader")
    PyObject_GetBuffer(view, &pb, PyBUF_SIMPLE)
    try:
        p = <const unsigned char*>pb.buf
        n = pb.len
        while n - pos >= 61:
            length = <int32_t>be32(p + pos + 8)
            if length < 49 or n - pos - 12 < length or p[pos + 16] != 2:
                break
            end = pos + 12 + length
            attributes = <int16_t>((p[pos + 21] << 8) | p[pos + 22])
            count = <int32_t>be32(p + pos + 57)
            if (attributes & 7) > 4 or count < 0 or (not (attributes & 7) and <int64_t>count * 7 > length - 49):
                break
            crc = be32(p + pos + 17)
            if verify_crc and <uint32_t>crc_fn(PyMemoryView_FromMemory(<char*>p + pos + 21, end - pos - 21,
                                                                        PyBUF_READ)) != crc:  # (pb holds p)
                break
            h = <BatchHeader>cls.__new__(cls)
            h.base_offset = <int64_t>be64(p + pos)
            h.partition_leader_epoch = <int32_t>be32(p + pos + 12)
            h.magic = 2
            h.crc = crc
            h.attributes = attributes
            h.last_offset_delta = <int32_t>be32(p + pos + 23)
            h.base_timestamp = <int64_t>be64(p + pos + 27)
            h.max_timestamp = <int64_t>be64(p + pos + 35)
            h.producer_id = <int64_t>be64(p + pos + 43)
            h.producer_epoch = <int16_t>((p[pos + 51] << 8) | p[pos + 52])
            h.base_sequence = <int32_t>be32(p + pos + 53)
            h.record_count = count
            h.size = end - pos
            h.offset = pos
            h.index = index
            h._buf = buf
            h._start = pos + 61
            h._end = end
            h._zero_copy = zero_copy
            h._max = max_uncompressed
            h._payload = None
            h._legacy = None
            out.append(h)
            pos = end
            index += 1
    finally:
        PyBuffer_Release(&pb)
    return out, pos, index


cdef inline Py_ssize_t read_varint(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, int64_t* out,
                                   int max_bytes) noexcept nogil:
    """A zigzag varint (5 bytes, 32 bits) or varlong (10, 64) at pos: the next position, or -1."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef Py_ssize_t start = pos
    cdef unsigned char b
    while True:
        if pos >= end:
            return -1
        b = p[pos]
        pos += 1
        if shift < 64:
            result |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
        if pos - start >= max_bytes:
            return -1
    if max_bytes == 5:
        result &= <uint64_t>4294967295U
        out[0] = <int64_t>(<int32_t>((<uint32_t>result >> 1) ^ (-(<int32_t>(result & 1)))))
    else:
        out[0] = <int64_t>((result >> 1) ^ (-(<int64_t>(result & 1))))
    return pos


cdef inline Py_ssize_t read_short(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, int64_t* out,
                                  int max_bytes) noexcept nogil:
    """read_varint, with the one- and two-byte varints (most of a record's) taken without its loop (the object
    reader's and skip_record's: the columns' walk 207 -> 175 instructions a record)."""
    cdef uint32_t v
    if pos + 1 < end:
        v = p[pos]
        if not (v & 0x80):
            out[0] = <int64_t>(<int32_t>((v >> 1) ^ (-(<int32_t>(v & 1)))))
            return pos + 1
        if not (p[pos + 1] & 0x80):
            v = (v & 0x7F) | (<uint32_t>p[pos + 1] << 7)
            out[0] = <int64_t>(<int32_t>((v >> 1) ^ (-(<int32_t>(v & 1)))))
            return pos + 2
    return read_varint(p, pos, end, out, max_bytes)


cdef inline object take(const unsigned char* p, Py_ssize_t pos, Py_ssize_t n, object view, bint zero_copy):
    if zero_copy:
        return view[pos:pos + n]
    return PyBytes_FromStringAndSize(<const char*>p + pos, n)


cdef object BAD = object()  # what nullable() returns for malformed bytes


cdef inline object nullable(const unsigned char* p, Py_ssize_t* at, Py_ssize_t end, object view, bint zero_copy):
    """A varint length (-1: null) and that many bytes at ``at[0]`` (which moves past them); BAD if malformed."""
    cdef int64_t n
    cdef Py_ssize_t pos = read_short(p, at[0], end, &n, 5)
    if pos < 0 or n < -1 or n > end - pos:
        return BAD
    at[0] = pos + (n if n > 0 else 0)
    if n < 0:
        return None
    return take(p, pos, n, view, zero_copy)


cdef Record next_record(const unsigned char* p, Py_ssize_t* at, Py_ssize_t end, int64_t base_offset,
                        int64_t base_timestamp, bint has_append, int64_t append_time, bint zero_copy, object view):
    """The record at ``at[0]`` (which moves past it), or None when its bytes are malformed in any way."""
    cdef Py_ssize_t pos = at[0]
    cdef Py_ssize_t h, rend
    cdef int64_t length, ts_delta, off_delta, nh, hk
    cdef Record r
    cdef object headers, hkey, hval
    pos = read_short(p, pos, end, &length, 5)
    if pos < 0 or length < 6 or length > end - pos:
        return None
    rend = pos + length
    r = Record.__new__(Record)
    r.attributes = p[pos]
    pos += 1
    pos = read_short(p, pos, rend, &ts_delta, 10)
    if pos < 0:
        return None
    pos = read_short(p, pos, rend, &off_delta, 5)
    if pos < 0:
        return None
    r.key = nullable(p, &pos, rend, view, zero_copy)
    if r.key is BAD:
        return None
    r.value = nullable(p, &pos, rend, view, zero_copy)
    if r.value is BAD:
        return None
    pos = read_short(p, pos, rend, &nh, 5)
    if pos < 0 or nh < 0 or nh * 2 > rend - pos:
        return None
    if nh:
        headers = PyList_New(nh)
        for h in range(nh):
            pos = read_short(p, pos, rend, &hk, 5)
            if pos < 0 or hk < 0 or hk > rend - pos:
                return None
            hkey = PyUnicode_DecodeUTF8(<const char*>p + pos, hk, "replace")  # as the reference
            pos += hk
            hval = nullable(p, &pos, rend, view, zero_copy)
            if hval is BAD:
                return None
            item = (hkey, hval)
            Py_INCREF(item)
            PyList_SET_ITEM(headers, h, item)
        r._headers = headers
    if pos != rend:
        return None
    r.offset = base_offset + off_delta
    r.timestamp = append_time if has_append else base_timestamp + ts_delta
    at[0] = pos
    return r


@cython.final
cdef class RecordIterator:
    """The records of one batch, decoded one at a time as they are asked for (what ``iter(batch)`` returns:
    a record is made while its bytes are in cache, and freed ones are reused)."""
    cdef Py_buffer pb
    cdef bint held
    cdef Py_ssize_t pos, end, count, i
    cdef int64_t base_offset, base_timestamp, append_time
    cdef bint has_append, zero_copy
    cdef object view, args, batch

    cdef int setup(self, buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                   int64_t base_timestamp, bint has_append, int64_t append_time, bint zero_copy) except -1:
        PyObject_GetBuffer(buf, &self.pb, PyBUF_SIMPLE)
        self.held = True
        self.pos, self.end, self.count, self.i = pos, end, count, 0
        self.base_offset, self.base_timestamp = base_offset, base_timestamp
        self.has_append, self.append_time = has_append, append_time
        self.zero_copy = zero_copy
        self.view = memoryview(buf) if zero_copy else None
        if count < 0 or count * 7 > end - pos or not 0 <= pos <= end <= self.pb.len:
            self.fail()
        return 0

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.pb)

    def __iter__(self):
        return self

    def __next__(self):
        cdef Record r
        if self.i >= self.count:
            if self.pos != self.end:
                self.fail()
            raise StopIteration
        r = next_record(<const unsigned char*>self.pb.buf, &self.pos, self.end, self.base_offset,
                        self.base_timestamp, self.has_append, self.append_time, self.zero_copy, self.view)
        if r is None:
            self.fail()
        self.i += 1
        return r

    cdef fail(self):
        self.i = self.count
        self.pos = self.end
        args = self.args if self.args is not None else self.batch._decode_args()
        _pure.decode_records(*args)  # raises the reference's precise error
        raise RuntimeError("kcodec.records: the Cython reader refused bytes the reference accepts")


def iter_records(buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                 int64_t base_timestamp, append_time, bint zero_copy, Py_ssize_t origin, bint compressed,
                 Py_ssize_t batch_index):
    """As _pure.iter_records: an iterator over a batch's records, decoded as it goes."""
    cdef RecordIterator it = RecordIterator.__new__(RecordIterator)
    it.args = (buf, pos, end, count, base_offset, base_timestamp, append_time, zero_copy, origin, compressed,
               batch_index)
    it.setup(buf, pos, end, count, base_offset, base_timestamp, append_time is not None,
             append_time if append_time is not None else 0, zero_copy)
    return it


def iter_batch(BatchHeader h not None):
    """As _pure.iter_batch: ``iter(batch)``; a v2 batch is read from its C fields (a compressed one from its
    inflated records; a count they cannot hold fails in setup, where the batch's _decode_args raises)."""
    cdef RecordIterator it
    if h._legacy is not None:
        return iter(h._legacy)
    it = RecordIterator.__new__(RecordIterator)
    it.batch = h
    if h.attributes & 0x07:
        payload = h._payload
        if payload is None and h.attributes & 0x07 == 2:  # snappy, lz4: walked in C (None when anything is off)
            payload = unsnappy(h._buf, h._start, h._end, h._max)
        elif payload is None and h.attributes & 0x07 == 3:
            payload = unlz4(h._buf, h._start, h._end, h._max, 2)
        if payload is None:  # inflated here from the C fields; on any fault the batch's payload() raises
            try:
                payload = inflate(h.attributes & 0x07, memoryview(h._buf)[h._start:h._end], h._max)
            except CodecError:
                payload = h.payload()
            h._payload = payload
        it.setup(payload, 0, len(payload), h.record_count, h.base_offset, h.base_timestamp,
                 (h.attributes & 0x08) != 0, h.max_timestamp, h._zero_copy)
    else:
        it.setup(h._buf, h._start, h._end, h.record_count, h.base_offset, h.base_timestamp,
                 (h.attributes & 0x08) != 0, h.max_timestamp, h._zero_copy)
    return it


def decode_fast(buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                int64_t base_timestamp, append_time, bint zero_copy):
    """The fast loop alone: the records, or None for malformed bytes (the differential tests call it)."""
    cdef Py_buffer pb
    cdef list out
    cdef Py_ssize_t i
    cdef Record r
    cdef bint has_append = append_time is not None
    cdef int64_t at = append_time if has_append else 0
    if count < 0 or count * 7 > end - pos:
        return None
    PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)
    try:
        if not 0 <= pos <= end <= pb.len:
            return None
        view = memoryview(buf) if zero_copy else None
        out = PyList_New(count)
        for i in range(count):
            r = next_record(<const unsigned char*>pb.buf, &pos, end, base_offset, base_timestamp, has_append, at,
                            zero_copy, view)
            if r is None:
                for j in range(i, count):  # the list must be whole before it is dropped
                    Py_INCREF(None)
                    PyList_SET_ITEM(out, j, None)
                return None
            Py_INCREF(r)
            PyList_SET_ITEM(out, i, r)
        return out if pos == end else None
    finally:
        PyBuffer_Release(&pb)


def decode_records(buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_offset,
                   int64_t base_timestamp, append_time, bint zero_copy, Py_ssize_t origin, bint compressed,
                   Py_ssize_t batch_index):
    """As _pure.decode_records: the ``count`` v2 records in ``buf[pos:end]``."""
    out = decode_fast(buf, pos, end, count, base_offset, base_timestamp, append_time, zero_copy)
    if out is None:  # malformed: the reference raises the precise error
        return _pure.decode_records(buf, pos, end, count, base_offset, base_timestamp, append_time, zero_copy,
                                    origin, compressed, batch_index)
    return out


include "_crecords_columns.pxi"
