# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Cython backend: runs the same IR as ``kcodec._pure``, with the same results and errors.

Decoding reads straight from the caller's buffer (buffer protocol, no copy), makes objects without
calling ``__init__`` (``tp_alloc`` and direct slot writes) and loops over fields and records in C.
Encoding sizes the message first, then writes once into an exact-size buffer (UTF-8 is computed once:
CPython keeps a string's UTF-8 form with the string, so the write pass reuses what the size pass made).

Decode errors are made here, with the reference's reason, offset and field path. An encode error is
detected here, then reported by running the reference on the same message: encoding is the cold path
once something is wrong, and the reference is the definition of its message.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AsDouble, PyFloat_FromDouble
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLong, PyLong_FromLong, PyLong_FromLongLong, PyLong_FromUnsignedLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import uuid as _uuid

from . import _pure
from .exceptions import DecodeError
from . import ir

cdef extern from *:
    """
    #include "structmember.h"
    /* A new instance with every slot empty (NULL), __init__ not called. */
    static PyObject* kc_alloc(PyObject* tp) {
        return ((PyTypeObject*)tp)->tp_alloc((PyTypeObject*)tp, 0);
    }
    /* The offset of a writable object slot given its descriptor, or -1. */
    static Py_ssize_t kc_slot_offset(PyObject* d) {
        if (!PyObject_TypeCheck(d, &PyMemberDescr_Type)) return -1;
        PyMemberDef* m = ((PyMemberDescrObject*)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return -1;
        return m->offset;
    }
    static inline void kc_set_slot(PyObject* o, Py_ssize_t off, PyObject* v) {
        PyObject** p = (PyObject**)((char*)o + off);
        PyObject* old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
    }
    /* Borrowed; NULL when the slot is empty. */
    static inline PyObject* kc_get_slot(PyObject* o, Py_ssize_t off) {
        return *(PyObject**)((char*)o + off);
    }
    static inline uint64_t kc_be64(const unsigned char* p) {
        return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32)
             | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) | ((uint64_t)p[6] << 8) | (uint64_t)p[7];
    }
    static inline void kc_put64(unsigned char* p, uint64_t v) {
        for (int i = 7; i >= 0; i--) { p[i] = (unsigned char)(v & 0xff); v >>= 8; }
    }
    /* A uuid's 128 bits as one int, made in one step. */
    static PyObject* kc_uint128(const unsigned char* b) {
    #if PY_VERSION_HEX >= 0x030D0000
        return PyLong_FromUnsignedNativeBytes(b, 16, Py_ASNATIVEBYTES_BIG_ENDIAN);
    #else
        return _PyLong_FromByteArray(b, 16, 0, 0);
    #endif
    }
    /* CPython's cached small ints, filled in at import; an int32 array's ints come from here or are made. */
    static PyObject* kc_small[262];
    /* A list of n big-endian int32s read from b (the n*4 bytes are known to be there): its items array
       made uninitialised (PyList_New would zero it first) and filled in one loop, with no call per small int. */
    static PyObject* kc_int32_list(const unsigned char* b, Py_ssize_t n) {
        PyListObject* l = (PyListObject*)PyList_New(0);
        PyObject** items;
        Py_ssize_t i;
        if (l == NULL || n == 0) return (PyObject*)l;
        items = PyMem_New(PyObject*, n);
        if (items == NULL) { Py_DECREF(l); return PyErr_NoMemory(); }
        for (i = 0; i < n; i++, b += 4) {
            int32_t x = (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3]);
            PyObject* v;
            if (x >= -5 && x <= 256) { v = kc_small[x + 5]; Py_INCREF(v); }
            else if ((v = PyLong_FromLong(x)) == NULL) break;
            items[i] = v;
        }
        l->ob_item = items;  /* the items made so far: a failed list frees them with itself */
        l->allocated = n;
        Py_SET_SIZE(l, i);
        if (i < n) { Py_DECREF(l); return NULL; }
        return (PyObject*)l;
    }
    /* An int32 or int16 (size 4 or 2) at b, put in a new object's empty slot: no reference to drop. */
    static inline int kc_store_int(PyObject* o, Py_ssize_t off, int size, const unsigned char* b) {
        long x = size == 4 ? (long)(int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3])
                           : (long)(int16_t)(((uint16_t)b[0] << 8) | b[1]);
        PyObject* v;
        if (x >= -5 && x <= 256) { v = kc_small[x + 5]; Py_INCREF(v); }
        else if ((v = PyLong_FromLong(x)) == NULL) return -1;
        *(PyObject**)((char*)o + off) = v;
        return 0;
    }
    /* An exact int's value without a call when it fits one digit (node ids, indexes, counts); 0 otherwise. */
    static inline int kc_compact_long(PyObject* v, long long* out) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject*)v)) return 0;
        *out = PyUnstable_Long_CompactValue((PyLongObject*)v);
        return 1;
    #else
        Py_ssize_t size = Py_SIZE(v);
        if (size < -1 || size > 1) return 0;
        *out = size * (long long)((PyLongObject*)v)->ob_digit[0];
        return 1;
    #endif
    }
    #define KC_U32_MAX 0xFFFFFFFFULL
    static inline double kc_double(uint64_t bits) { double d; memcpy(&d, &bits, 8); return d; }
    static inline uint64_t kc_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
    """
    object kc_alloc(object tp)
    Py_ssize_t kc_slot_offset(object d)
    void kc_set_slot(object o, Py_ssize_t off, object v)
    PyObject* kc_get_slot(object o, Py_ssize_t off)
    uint64_t kc_be64(const unsigned char* p)
    object kc_uint128(const unsigned char* b)
    PyObject* kc_small[262]
    list kc_int32_list(const unsigned char* b, Py_ssize_t n)
    bint kc_compact_long(object v, long long* out)
    int kc_store_int(object o, Py_ssize_t off, int size, const unsigned char* b) except -1
    uint64_t KC_U32_MAX
    void kc_put64(unsigned char* p, uint64_t v)
    double kc_double(uint64_t bits)
    uint64_t kc_bits(double d)

cdef extern from "Python.h":
    int PyGC_Disable()
    int PyGC_Enable()
    object PyNumber_Index(object o)
    bint PyLong_Check(object o)
    bint PyLong_CheckExact(object o)
    bint PyFloat_Check(object o)
    bint PyUnicode_Check(object o)
    bint PyBytes_CheckExact(object o)
    bint PyList_CheckExact(object o)
    const char* PyUnicode_AsUTF8AndSize(object o, Py_ssize_t* size) except NULL
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1
    unsigned long long PyLong_AsUnsignedLongLongMask(object o) except? <unsigned long long>-1

cdef enum:
    K_BOOL = 1
    K_INT8 = 2
    K_INT16 = 3
    K_UINT16 = 4
    K_INT32 = 5
    K_UINT32 = 6
    K_INT64 = 7
    K_FLOAT64 = 8
    K_UUID = 9
    K_STRING = 10
    K_BYTES = 11
    K_RECORDS = 12
    K_STRUCT = 13

assert (ir.BOOL, ir.INT8, ir.INT16, ir.UINT16, ir.INT32, ir.UINT32, ir.INT64, ir.FLOAT64, ir.UUID, ir.STRING,
        ir.BYTES, ir.RECORDS, ir.STRUCT) == tuple(range(1, 14)), "kcodec._fast is out of step with kcodec.ir"

cdef int MAX_STRING = 0x7FFF
cdef dict KIND_TEXT = {K_BOOL: "bool", K_INT8: "int8", K_INT16: "int16", K_UINT16: "uint16", K_INT32: "int32",
                       K_UINT32: "uint32", K_INT64: "int64", K_FLOAT64: "float64"}
cdef object UUID = _uuid.UUID
cdef object SAFE_UNKNOWN = _uuid.SafeUUID.unknown
cdef Py_ssize_t UUID_INT = -1, UUID_SAFE = -1
cdef object _sequence = _pure._sequence
cdef object as_bytes_view = _pure.as_bytes_view


class _Fail(Exception):
    """A decode failure deep inside a message; its field path is the reader's trail where it was raised."""

    def __init__(self, reason, offset=-1):
        self.reason = reason
        self.offset = offset


class _Invalid(Exception):
    """An encode failure; the reference then reports it with its own words."""


cdef str path_text(list path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


cdef int trail_depth(list structs, Py_ssize_t index, tuple seen) except -1:
    """How many trail entries reading struct index can need: a field's name, an array's element index."""
    cdef int best = 0, n
    if index in seen:  # (no Kafka struct contains itself; such a program is read by the reference)
        return MAX_TRAIL + 1
    sp = structs[index]
    for op in tuple(sp.fields) + tuple(sp.tagged):
        n = 2 if op.array else 1
        if op.kind == K_STRUCT:
            n += trail_depth(structs, op.struct, seen + (index,))
        best = max(best, n)
    return best


cdef Py_ssize_t slot_offset(type cls, str attr):
    for klass in cls.__mro__:
        d = klass.__dict__.get(attr)
        if d is not None:
            return kc_slot_offset(d)
    return -1


# ------------------------------------------------------------------ plans: the IR, prepared for C

cdef class _Op:
    cdef int kind, struct_index, tag, default_make, elem_min, fixed
    cdef bint array, nullable, compact, ignorable
    cdef Py_ssize_t offset
    cdef object attr, default


cdef class _Plan:
    cdef object cls
    cdef bint slots        # every attribute is an object slot: allocate bare, read and write slots directly
    cdef bint flexible
    cdef tuple fields, tagged, absent, absent_checks
    cdef dict tags
    cdef Py_ssize_t utf_offset
    cdef object sp


cdef class _Prog:
    cdef list plans
    cdef object message, version
    cdef bint deep  # nests deeper than a reader's trail: the reference reads it


cdef _Op make_op(op, prog):
    cdef _Op o = _Op()
    o.kind = op.kind
    o.array = op.array
    o.nullable = op.nullable
    o.compact = op.compact
    o.struct_index = op.struct
    o.tag = op.tag
    o.default = op.default
    o.default_make = op.default_make
    o.ignorable = op.ignorable
    o.attr = op.attr
    o.fixed = ir.FIXED_SIZE.get(op.kind, 0) if op.kind != K_UUID else 0  # numbers only
    o.elem_min = max(1, ir.min_field_size(_pure._element(op), prog.structs)) if op.array else 0
    o.offset = -1
    return o


cdef _Prog prepared(prog):
    cdef _Prog fp = prog.backend_cache.get("cython")
    cdef _Plan plan
    cdef _Op o
    if fp is not None:
        return fp
    fp = _Prog()
    fp.message = prog.message
    fp.version = prog.version
    fp.plans = []
    for sp in prog.structs:
        plan = _Plan()
        plan.sp = sp
        plan.cls = sp.cls
        plan.flexible = sp.flexible
        plan.fields = tuple(make_op(op, prog) for op in sp.fields)
        plan.tagged = tuple(make_op(op, prog) for op in sp.tagged)
        plan.absent = tuple(make_op(op, prog) for op in sp.absent)
        plan.absent_checks = tuple([o for o in plan.absent if not (<_Op>o).ignorable])
        plan.tags = {(<_Op>o).tag: o for o in plan.tagged}
        plan.utf_offset = slot_offset(sp.cls, "unknown_tagged_fields")
        plan.slots = plan.utf_offset >= 0 and (<type>sp.cls).__new__ is object.__new__
        for group in (plan.fields, plan.tagged, plan.absent):
            for o in group:
                o.offset = slot_offset(sp.cls, o.attr)
                if o.offset < 0:
                    plan.slots = False
        fp.plans.append(plan)
    fp.deep = trail_depth(list(prog.structs), 0, ()) > MAX_TRAIL
    prog.backend_cache["cython"] = fp
    return fp


# ---------------------------------------------------------------------------------------- reading

cdef enum:
    MAX_TRAIL = 64


cdef class _Reader:
    cdef const unsigned char* buf
    cdef list plans
    cdef bint zero_copy
    cdef object base  # the flat memoryview that zero-copy slices come from
    # Where reading is, for a failure's field path, kept as it goes (cheaper than catching on the way out):
    # entry k is the field being read at that level (trail_op) or, when NULL, an array's element (trail_i).
    cdef int depth
    cdef PyObject* trail_op[MAX_TRAIL]
    cdef Py_ssize_t trail_i[MAX_TRAIL]


cdef list trail_path(_Reader r):
    cdef int k
    out = []
    for k in range(r.depth):
        out.append((<_Op>r.trail_op[k]).attr if r.trail_op[k] != NULL else r.trail_i[k])
    return out


cdef inline int need(Py_ssize_t pos, Py_ssize_t n, Py_ssize_t end, str what) except -1:
    if n > end - pos:
        raise _Fail(f"expected {what} of {n} bytes, {max(end - pos, 0)} left", pos)
    return 0


cdef uint64_t uvarint(_Reader r, Py_ssize_t* pos, Py_ssize_t end) except? 0xFFFFFFFFFFFFFFFF:
    cdef Py_ssize_t p = pos[0], start = pos[0]
    cdef uint64_t result = 0, b
    cdef int shift = 0
    while True:
        if p >= end:
            raise _Fail("truncated unsigned varint", start)
        b = r.buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > KC_U32_MAX:
                raise _Fail("unsigned varint exceeds 32 bits", start)
            pos[0] = p
            return result
        shift += 7
        if shift >= 35:
            raise _Fail("unsigned varint longer than 5 bytes", start)


cdef int64_t read_length(_Reader r, bint compact, bint nullable, Py_ssize_t* pos, Py_ssize_t end, bint wide,
                         str what) except? -3:
    """A length prefix: -1 means null. Classic: int16 (strings) or int32; compact: uvarint of n+1."""
    cdef Py_ssize_t start = pos[0], p = pos[0]
    cdef int64_t n
    cdef const unsigned char* b
    if compact:
        if p < end and r.buf[p] < 0x80 and r.buf[p] != 0:
            pos[0] = p + 1
            return <int64_t>r.buf[p] - 1
        n = <int64_t>uvarint(r, pos, end) - 1
    elif wide:
        need(p, 4, end, f"the length of {what}")
        b = r.buf + p
        n = <int32_t>((<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | b[3])
        pos[0] = p + 4
    else:
        need(p, 2, end, f"the length of {what}")
        b = r.buf + p
        n = <int16_t>((<uint16_t>b[0] << 8) | b[1])
        pos[0] = p + 2
    if n < -1:
        raise _Fail(f"negative length {n} of {what}", start)
    if n == -1 and not nullable:
        raise _Fail(f"null {what} in a non-nullable field", start)
    return n


cdef object read_string(_Reader r, bint compact, bint nullable, Py_ssize_t* pos, Py_ssize_t end):
    cdef int64_t n = read_length(r, compact, nullable, pos, end, False, "string")
    cdef Py_ssize_t p = pos[0]
    if n < 0:
        return None
    if n > MAX_STRING:
        raise _Fail(f"string length {n} exceeds {MAX_STRING}", p)
    need(p, n, end, "a string")
    try:
        s = PyUnicode_DecodeUTF8(<const char*>r.buf + p, n, NULL)
    except UnicodeDecodeError as e:
        raise _Fail(f"invalid UTF-8 in string ({e.reason})", p + e.start) from None
    pos[0] = p + n
    return s


cdef object read_bytes(_Reader r, bint compact, bint nullable, Py_ssize_t* pos, Py_ssize_t end):
    cdef int64_t n = read_length(r, compact, nullable, pos, end, True, "bytes")
    cdef Py_ssize_t p = pos[0]
    if n < 0:
        return None
    need(p, n, end, "bytes")
    pos[0] = p + n
    if r.zero_copy:
        return r.base[p:p + n]
    return PyBytes_FromStringAndSize(<const char*>r.buf + p, n)


cdef object make_uuid(const unsigned char* b):
    value = kc_uint128(b)
    if UUID_INT < 0:
        return UUID(int=value)
    u = kc_alloc(UUID)
    kc_set_slot(u, UUID_INT, value)
    kc_set_slot(u, UUID_SAFE, SAFE_UNKNOWN)
    return u


cdef object read_uuid(_Reader r, Py_ssize_t* pos, Py_ssize_t end):
    need(pos[0], 16, end, "a uuid")
    u = make_uuid(r.buf + pos[0])
    pos[0] += 16
    return u


cdef list _SMALL_KEEP = list(range(-5, 257))
for _i in range(262):  # CPython's cached small ints, without a call each
    kc_small[_i] = <PyObject*>_SMALL_KEEP[_i]


cdef inline object small_or_long(long x):
    if -5 <= x <= 256:
        return <object>kc_small[x + 5]
    return PyLong_FromLong(x)


cdef inline object fixed_value(int kind, const unsigned char* b):
    """The value of a fixed-size number at b (the bytes are known to be there)."""
    if kind == K_INT32:
        return small_or_long(<int32_t>((<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | b[3]))
    if kind == K_INT16:
        return small_or_long(<int16_t>((<uint16_t>b[0] << 8) | b[1]))
    if kind == K_INT8:
        return PyLong_FromLong(<int8_t>b[0])
    if kind == K_BOOL:
        return b[0] != 0
    if kind == K_INT64:
        return PyLong_FromLongLong(<int64_t>kc_be64(b))
    if kind == K_UINT16:
        return PyLong_FromLong((<uint16_t>b[0] << 8) | b[1])
    if kind == K_UINT32:
        return PyLong_FromUnsignedLong((<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | b[3])
    return PyFloat_FromDouble(kc_double(kc_be64(b)))


cdef object read_struct(_Reader r, _Op op, Py_ssize_t* pos, Py_ssize_t end):
    if op.nullable:
        need(pos[0], 1, end, "a struct's null marker")
        if r.buf[pos[0]] >= 0x80:
            pos[0] += 1
            return None
        pos[0] += 1
    return decode_struct(r, op.struct_index, pos, end)


cdef object read_array(_Reader r, _Op op, Py_ssize_t* pos, Py_ssize_t end):
    cdef int64_t n
    cdef Py_ssize_t i = 0, p = pos[0], size
    cdef int kind = op.kind, d
    cdef const unsigned char* b
    cdef list out
    if op.compact and p < end and 0 < r.buf[p] < 0x80:  # a one-byte length: most arrays
        n = r.buf[p] - 1
        p += 1
        pos[0] = p
    elif not op.compact and end - p >= 4 and r.buf[p] < 0x80:  # a classic length, not null
        b = r.buf + p
        n = (<int64_t>b[0] << 24) | (<int64_t>b[1] << 16) | (<int64_t>b[2] << 8) | b[3]
        p += 4
        pos[0] = p
    else:
        n = read_length(r, op.compact, op.nullable, pos, end, True, "array")
        p = pos[0]
    if n < 0:
        return None
    if n * op.elem_min > end - p:
        raise _Fail(f"array of {n} elements needs at least {n * op.elem_min} bytes, {max(end - p, 0)} left", p)
    if kind == K_INT32:  # broker ids, most arrays of numbers
        pos[0] = p + n * 4
        return kc_int32_list(r.buf + p, n)
    out = PyList_New(n)
    if op.fixed:  # fixed-size numbers: their bytes are all there
        size = op.fixed
        b = r.buf + p
        for i in range(n):
            v = fixed_value(kind, b)
            Py_INCREF(v)
            PyList_SET_ITEM(out, i, v)
            b += size
        pos[0] = p + n * size
        return out
    d = r.depth  # (a failure leaves the list's unfilled items NULL, which freeing it allows)
    r.trail_op[d] = NULL
    r.depth = d + 1
    for i in range(n):
        r.trail_i[d] = i
        if kind == K_STRUCT:
            v = decode_struct(r, op.struct_index, pos, end)
        elif kind == K_STRING:
            v = read_string(r, op.compact, False, pos, end)
        elif kind == K_UUID:
            v = read_uuid(r, pos, end)
        else:
            v = read_bytes(r, op.compact, False, pos, end)
        Py_INCREF(v)
        PyList_SET_ITEM(out, i, v)
    r.depth = d
    return out


cdef object read_field(_Reader r, _Op op, Py_ssize_t* pos, Py_ssize_t end):
    """One field, as a tagged field's body reads it (the reference's single-field readers)."""
    cdef int kind = op.kind
    if op.array:
        return read_array(r, op, pos, end)
    if op.fixed:
        need(pos[0], op.fixed, end, "an " + ("int" if kind != K_BOOL else "bool"))
        v = fixed_value(kind, r.buf + pos[0])
        pos[0] += op.fixed
        return v
    if kind == K_STRING:
        return read_string(r, op.compact, op.nullable, pos, end)
    if kind == K_STRUCT:
        return read_struct(r, op, pos, end)
    if kind == K_UUID:
        return read_uuid(r, pos, end)
    return read_bytes(r, op.compact, op.nullable, pos, end)


cdef inline object default_of(_Op op):
    if op.default_make == 1:
        return []
    if op.default_make == 2:
        return op.default()
    return op.default


cdef inline int store(object obj, _Plan plan, _Op op, object v) except -1:
    if plan.slots:
        kc_set_slot(obj, op.offset, v)
    else:
        setattr(obj, op.attr, v)
    return 0


cdef object decode_struct(_Reader r, Py_ssize_t index, Py_ssize_t* pos, Py_ssize_t end):
    cdef _Plan plan = <_Plan>PyList_GET_ITEM(r.plans, index)
    cdef tuple fields = plan.fields
    cdef _Op op = None
    cdef Py_ssize_t i, p
    cdef int kind, d = r.depth
    cdef bint slots = plan.slots
    if slots:
        obj = kc_alloc(plan.cls)
    else:
        obj = plan.cls.__new__(plan.cls)
    r.depth = d + 1
    for i in range(PyTuple_GET_SIZE(fields)):
        op = <_Op>PyTuple_GET_ITEM(fields, i)
        r.trail_op[d] = <PyObject*>op
        kind = op.kind
        if op.array:
            v = read_array(r, op, pos, end)
        elif op.fixed:
            p = pos[0]
            if op.fixed > end - p:
                raise _Fail(f"expected {KIND_TEXT[kind]} of {op.fixed} bytes, {max(end - p, 0)} left", p)
            if slots and (kind == K_INT32 or kind == K_INT16):  # (each field's slot is empty until here)
                kc_store_int(obj, op.offset, op.fixed, r.buf + p)
                pos[0] = p + op.fixed
                continue
            v = fixed_value(kind, r.buf + p)
            pos[0] = p + op.fixed
        elif kind == K_STRING:
            v = read_string(r, op.compact, op.nullable, pos, end)
        elif kind == K_STRUCT:
            v = read_struct(r, op, pos, end)
        elif kind == K_UUID:
            v = read_uuid(r, pos, end)
        else:
            v = read_bytes(r, op.compact, op.nullable, pos, end)
        store(obj, plan, op, v)
    r.depth = d
    for op in plan.absent:
        store(obj, plan, op, default_of(op))
    if plan.flexible:
        p = pos[0]
        if p < end and r.buf[p] == 0 and not plan.tagged:
            pos[0] = p + 1
            v = None
        else:
            v = read_tagged(r, plan, obj, pos, end)
    else:
        v = None
    if plan.slots:
        kc_set_slot(obj, plan.utf_offset, v)
    else:
        obj.unknown_tagged_fields = v
    return obj


cdef object read_tagged(_Reader r, _Plan plan, object obj, Py_ssize_t* pos, Py_ssize_t end):
    """Reads the tagged fields into obj; returns the unknown ones ({tag: bytes} or None)."""
    cdef _Op op
    cdef uint64_t count, tag, size, k
    cdef Py_ssize_t p, stop
    cdef int d = r.depth
    for op in plan.tagged:
        store(obj, plan, op, default_of(op))
    count = uvarint(r, pos, end)
    p = pos[0]
    if <int64_t>count * 2 > end - p:
        raise _Fail(f"{count} tagged fields need at least {count * 2} bytes, {max(end - p, 0)} left", p)
    unknown = None
    for k in range(count):
        tag = uvarint(r, pos, end)
        size = uvarint(r, pos, end)
        p = pos[0]
        known = plan.tags.get(tag)
        if known is not None:
            r.trail_op[d] = <PyObject*>known
            r.depth = d + 1
        need(p, size, end, f"tagged field {tag}")
        stop = p + <Py_ssize_t>size
        if known is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = PyBytes_FromStringAndSize(<const char*>r.buf + p, size)
        else:
            op = <_Op>known
            v = read_field(r, op, pos, stop)
            if pos[0] != stop:
                raise _Fail(f"tagged field {tag} read {pos[0] - p} of its {size} bytes", p)
            store(obj, plan, op, v)
            r.depth = d
        pos[0] = stop
    return unknown


def decode(prog, data, Py_ssize_t pos=0, end=None, bint zero_copy=False):
    """Decode one body from data[pos:end]; returns the object and the offset after it."""
    cdef _Prog fp = prepared(prog)
    cdef Py_buffer view
    cdef Py_ssize_t stop, p = pos
    cdef _Reader r = _Reader()
    if fp.deep:
        return _pure.decode(prog, data, pos, end, zero_copy)
    base = as_bytes_view(data)
    PyObject_GetBuffer(base, &view, PyBUF_SIMPLE)
    try:
        stop = view.len if end is None else end
        if not 0 <= pos <= stop <= view.len:
            raise ValueError(f"offset {pos} and end {stop} do not lie within the buffer's {view.len} bytes")
        r.buf = <const unsigned char*>view.buf
        r.plans = fp.plans
        r.zero_copy = zero_copy
        r.base = base
        # A decode makes many containers and no cycles: collections while it runs would only scan
        # young objects that all survive (and promote them, so they are scanned again later).
        enabled = PyGC_Disable()
        try:
            obj = decode_struct(r, 0, &p, stop)
        finally:
            if enabled:
                PyGC_Enable()
        return obj, p
    except _Fail as e:
        raise DecodeError(e.reason, e.offset, path_text(trail_path(r)), fp.message, fp.version) from None
    finally:
        PyBuffer_Release(&view)


# ---------------------------------------------------------------------------------------- writing

cdef unsigned char SCRATCH[16]  # where the size pass "writes" fixed-size values


cdef class _Writer:
    """Counts bytes (out is NULL: the size pass) or writes them into out[0:cap] (the write pass)."""
    cdef unsigned char* out
    cdef Py_ssize_t pos, cap
    cdef list plans


cdef inline unsigned char* room(_Writer w, Py_ssize_t n) except NULL:
    """Where the next n bytes go; NULL is never returned (the size pass gets a scratch pointer)."""
    cdef unsigned char* p
    if w.out == NULL:
        w.pos += n
        return SCRATCH
    if n > w.cap - w.pos:
        raise RuntimeError("the message changed between the size pass and the write pass")
    p = w.out + w.pos
    w.pos += n
    return p

cdef inline int uvarint_size(uint64_t n) noexcept:
    cdef int size = 1
    while n > 0x7F:
        n >>= 7
        size += 1
    return size


cdef int put_uvarint(_Writer w, uint64_t n) except -1:
    cdef int size, i
    cdef unsigned char* p
    if n > KC_U32_MAX:
        raise _Invalid()
    if w.out == NULL:
        w.pos += uvarint_size(n)
        return 0
    size = uvarint_size(n)
    p = room(w, size)
    for i in range(size - 1):
        p[i] = (n & 0x7F) | 0x80
        n >>= 7
    p[size - 1] = <unsigned char>n
    return 0


cdef int put_length(_Writer w, bint compact, int64_t n, bint wide) except -1:
    cdef unsigned char* p
    cdef uint32_t u
    if compact:
        return put_uvarint(w, <uint64_t>(n + 1))
    if wide:
        p = room(w, 4)
        u = <uint32_t><int32_t>n
        p[0] = u >> 24; p[1] = u >> 16; p[2] = u >> 8; p[3] = u
    else:
        p = room(w, 2)
        u = <uint16_t><int16_t>n
        p[0] = u >> 8; p[1] = u
    return 0


cdef inline bint put_small_int(_Writer w, int kind, object v) noexcept:
    """The common case of put_fixed, done in line: an exact one-digit int in an int32 or int16 field.
    False: not that case (nothing written); put_fixed does it, or names what is wrong."""
    cdef long long x
    cdef Py_ssize_t size = 4 if kind == K_INT32 else 2
    cdef unsigned char* p
    if (kind != K_INT32 and kind != K_INT16) or not PyLong_CheckExact(v) or not kc_compact_long(v, &x):
        return False
    if x < -0x8000 or x > 0x7FFF:
        if kind == K_INT16 or x < -0x80000000 or x > 0x7FFFFFFF:
            return False
    if w.out != NULL:
        if size > w.cap - w.pos:
            return False
        p = w.out + w.pos
        if size == 4:
            p[0] = <uint32_t>x >> 24; p[1] = <uint32_t>x >> 16; p[2] = <uint32_t>x >> 8; p[3] = <uint32_t>x
        else:
            p[0] = <uint16_t>x >> 8; p[1] = <uint16_t>x
    w.pos += size
    return True


cdef int put_fixed(_Writer w, int kind, object v, bint strict) except -1:
    """A fixed-size number, accepting what the reference accepts: struct.pack's rules, or the stricter
    isinstance checks of a tagged field (strict)."""
    cdef unsigned char* p
    cdef long long x
    cdef int overflow = 0
    cdef double d
    if kind == K_FLOAT64:
        if strict and not (PyFloat_Check(v) or PyLong_Check(v)):
            raise _Invalid()
        d = PyFloat_AsDouble(v)
        kc_put64(room(w, 8), kc_bits(d))
        return 0
    if kind == K_BOOL:
        if not PyLong_Check(v):
            raise _Invalid()
        room(w, 1)[0] = 1 if v else 0
        return 0
    if not PyLong_CheckExact(v):
        if strict and not PyLong_Check(v):
            raise _Invalid()
        v = PyNumber_Index(v)
    if kind == K_INT64:
        x = PyLong_AsLongLong(v)
        kc_put64(room(w, 8), <uint64_t>x)
        return 0
    if not kc_compact_long(v, &x):
        x = PyLong_AsLongLongAndOverflow(v, &overflow)
        if overflow:
            raise _Invalid()
    if kind == K_INT32:
        if x < -0x80000000 or x > 0x7FFFFFFF:
            raise _Invalid()
        p = room(w, 4)
        p[0] = <uint32_t>x >> 24; p[1] = <uint32_t>x >> 16; p[2] = <uint32_t>x >> 8; p[3] = <uint32_t>x
    elif kind == K_INT16:
        if x < -0x8000 or x > 0x7FFF:
            raise _Invalid()
        p = room(w, 2)
        p[0] = <uint16_t>x >> 8; p[1] = <uint16_t>x
    elif kind == K_INT8:
        if x < -0x80 or x > 0x7F:
            raise _Invalid()
        room(w, 1)[0] = <uint8_t>x
    elif kind == K_UINT16:
        if x < 0 or x > 0xFFFF:
            raise _Invalid()
        p = room(w, 2)
        p[0] = <uint16_t>x >> 8; p[1] = <uint16_t>x
    else:  # K_UINT32
        if x < 0 or x > <long long>KC_U32_MAX:
            raise _Invalid()
        p = room(w, 4)
        p[0] = <uint32_t>x >> 24; p[1] = <uint32_t>x >> 16; p[2] = <uint32_t>x >> 8; p[3] = <uint32_t>x
    return 0


cdef int put_string(_Writer w, bint compact, bint nullable, object v) except -1:
    cdef Py_ssize_t n
    cdef const char* s
    if v is None:
        if not nullable:
            raise _Invalid()
        return put_length(w, compact, -1, False)
    if not PyUnicode_Check(v):
        raise _Invalid()
    s = PyUnicode_AsUTF8AndSize(v, &n)  # kept with the string: the write pass finds it made
    if n > MAX_STRING:
        raise _Invalid()
    put_length(w, compact, n, False)
    if w.out == NULL:
        w.pos += n
    else:
        memcpy(room(w, n), s, n)
    return 0


cdef int put_bytes(_Writer w, bint compact, bint nullable, object v) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t n
    if v is None:
        if not nullable:
            raise _Invalid()
        return put_length(w, compact, -1, True)
    if PyBytes_CheckExact(v):
        n = PyBytes_GET_SIZE(v)
        put_length(w, compact, n, True)
        if w.out == NULL:
            w.pos += n
        else:
            memcpy(room(w, n), PyBytes_AS_STRING(v), n)
        return 0
    mv = as_bytes_view(v)
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    try:
        put_length(w, compact, view.len, True)
        if w.out == NULL:
            w.pos += view.len
        else:
            memcpy(room(w, view.len), view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef int put_uuid(_Writer w, object v) except -1:
    cdef unsigned char* p
    if not isinstance(v, UUID):
        raise _Invalid()
    if w.out == NULL:
        w.pos += 16
        return 0
    value = v.int
    p = room(w, 16)
    kc_put64(p, PyLong_AsUnsignedLongLongMask(value >> 64))
    kc_put64(p + 8, PyLong_AsUnsignedLongLongMask(value))
    return 0


cdef int put_struct(_Writer w, _Op op, object v) except -1:
    if v is None:
        if not op.nullable:
            raise _Invalid()
        room(w, 1)[0] = 0xFF
        return 0
    if op.nullable:
        room(w, 1)[0] = 1
    return encode_struct(w, op.struct_index, v)


cdef int put_array(_Writer w, _Op op, object v) except -1:
    cdef Py_ssize_t i, n
    cdef int kind = op.kind
    cdef list items
    if v is None:
        if not op.nullable:
            raise _Invalid()
        return put_length(w, op.compact, -1, True)
    items = v if PyList_CheckExact(v) else _sequence(v)
    n = PyList_GET_SIZE(items)
    put_length(w, op.compact, n, True)
    for i in range(n):
        if i >= PyList_GET_SIZE(items):  # an element's __index__ or __eq__ may have shrunk it
            raise RuntimeError("a list changed while it was being encoded")
        item = <object>PyList_GET_ITEM(items, i)
        if op.fixed:
            if not put_small_int(w, kind, item):
                put_fixed(w, kind, item, False)
        elif kind == K_STRUCT:
            encode_struct(w, op.struct_index, item)
        elif kind == K_STRING:
            put_string(w, op.compact, False, item)
        elif kind == K_UUID:
            put_uuid(w, item)
        else:
            put_bytes(w, op.compact, False, item)
    return 0


cdef int put_field(_Writer w, _Op op, object v, bint strict) except -1:
    cdef int kind = op.kind
    if op.array:
        return put_array(w, op, v)
    if op.fixed:
        return put_fixed(w, kind, v, strict)
    if kind == K_STRING:
        return put_string(w, op.compact, op.nullable, v)
    if kind == K_STRUCT:
        return put_struct(w, op, v)
    if kind == K_UUID:
        return put_uuid(w, v)
    return put_bytes(w, op.compact, op.nullable, v)


cdef inline object get(object obj, bint slots, _Op op):
    cdef PyObject* p
    if slots:
        p = kc_get_slot(obj, op.offset)
        if p == NULL:
            raise _Invalid()
        return <object>p
    return getattr(obj, op.attr)


cdef bint is_default(_Op op, object v) except -1:
    if op.default_make == 1:
        if v is None:
            return False
        if PyList_CheckExact(v):
            return PyList_GET_SIZE(v) == 0
        return hasattr(v, "__len__") and len(v) == 0
    if op.default_make == 2:
        return v is not None and v == op.default()
    if v is op.default:
        return True
    if op.default is None or v is None:
        return False
    return bool(v == op.default)


cdef Py_ssize_t field_size(list plans, _Op op, object v) except -1:
    cdef _Writer w = _Writer()
    w.plans = plans
    put_field(w, op, v, True)
    return w.pos


cdef int encode_struct(_Writer w, Py_ssize_t index, object obj) except -1:
    cdef _Plan plan = <_Plan>PyList_GET_ITEM(w.plans, index)
    cdef tuple fields = plan.fields
    cdef _Op op
    cdef Py_ssize_t i
    cdef bint slots = plan.slots and type(obj) is plan.cls
    cdef PyObject* utf
    if not slots and (obj is None or not hasattr(obj, "__slots__") and not hasattr(obj, "__dict__")):
        raise _Invalid()
    for op in plan.absent_checks:
        if not is_default(op, get(obj, slots, op)):
            raise _Invalid()
    for i in range(PyTuple_GET_SIZE(fields)):
        op = <_Op>PyTuple_GET_ITEM(fields, i)
        v = get(obj, slots, op)
        if op.array or not put_small_int(w, op.kind, v):
            put_field(w, op, v, False)
    if plan.flexible:
        if not plan.tagged:
            if slots:
                utf = kc_get_slot(obj, plan.utf_offset)
                unknown = <object>utf if utf != NULL else None
            else:
                unknown = getattr(obj, "unknown_tagged_fields", None)
            if not unknown:
                room(w, 1)[0] = 0
                return 0
        write_tagged(w, plan, obj, slots)
    return 0


cdef int write_tagged(_Writer w, _Plan plan, object obj, bint slots) except -1:
    cdef _Op op
    items = []
    for op in plan.tagged:
        v = get(obj, slots, op)
        if not is_default(op, v):
            items.append((op.tag, v, op))
    unknown = getattr(obj, "unknown_tagged_fields", None)
    if unknown:
        for tag, raw in unknown.items():
            if not PyLong_Check(tag) or tag < 0 or tag > 0xFFFFFFFF or tag in plan.tags:
                raise _Invalid()
            items.append((tag, raw, None))
    items.sort(key=_first)
    put_uvarint(w, len(items))
    for tag, v, known in items:
        put_uvarint(w, tag)
        if known is None:
            put_uvarint(w, len(as_bytes_view(v)))
            put_bytes_raw(w, v)
        else:
            put_uvarint(w, field_size(w.plans, <_Op>known, v))
            put_field(w, <_Op>known, v, True)
    return 0


def _first(item):
    return item[0]


cdef int put_bytes_raw(_Writer w, object v) except -1:
    cdef Py_buffer view
    mv = as_bytes_view(v)
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    try:
        if w.out == NULL:
            w.pos += view.len
        else:
            memcpy(room(w, view.len), view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef Py_ssize_t size_of(_Prog fp, prog, obj) except -1:
    cdef _Writer w = _Writer()
    w.plans = fp.plans
    try:
        encode_struct(w, 0, obj)
    except Exception as e:
        _reference_error(prog, obj, e)
    return w.pos


cdef int _reference_error(prog, obj, Exception e) except -1:
    """The reference names what is wrong; it must find something wrong too."""
    _pure.encoded_size(prog, obj)
    raise AssertionError(f"kcodec._fast rejected a {type(obj).__name__} that the reference accepts: {e!r}")


cdef int write(_Prog fp, prog, obj, unsigned char* out, Py_ssize_t size) except -1:
    cdef _Writer w = _Writer()
    w.plans = fp.plans
    w.out = out
    w.cap = size
    try:
        encode_struct(w, 0, obj)
    except RuntimeError:
        raise
    except Exception as e:
        _reference_error(prog, obj, e)
    if w.pos != size:
        raise RuntimeError("the message changed between the size pass and the write pass")
    return 0


def encoded_size(prog, obj):
    return size_of(prepared(prog), prog, obj)


def encode(prog, obj):
    cdef _Prog fp = prepared(prog)
    cdef Py_ssize_t size = size_of(fp, prog, obj)
    out = PyBytes_FromStringAndSize(NULL, size)
    write(fp, prog, obj, <unsigned char*>PyBytes_AS_STRING(out), size)
    return out


def encode_into(prog, obj, buffer, Py_ssize_t offset=0):
    """Write obj into buffer at offset; returns the number of bytes written."""
    cdef _Prog fp = prepared(prog)
    cdef Py_buffer view
    cdef Py_ssize_t size
    mv = _pure.writable_view(buffer, offset)
    size = size_of(fp, prog, obj)
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        if offset < 0 or offset > view.len:  # (checked above; kept next to the pointer arithmetic)
            raise ValueError(f"offset {offset} lies outside the buffer's {view.len} bytes")
        if size > view.len - offset:
            raise _pure.no_room(prog, view.len - offset, offset, size)
        write(fp, prog, obj, <unsigned char*>view.buf + offset, size)
    finally:
        PyBuffer_Release(&view)
    return size


def _init_uuid_slots():
    global UUID_INT, UUID_SAFE
    a = slot_offset(UUID, "int")
    b = slot_offset(UUID, "is_safe")
    if a >= 0 and b >= 0 and UUID.__new__ is object.__new__:
        UUID_INT, UUID_SAFE = a, b


_init_uuid_slots()
