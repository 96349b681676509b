# Part of kcodec/core/_fast.pyx (included there): C helpers, kinds, errors and the plans (the IR prepared for C).

cdef extern from *:
    """
    #include "structmember.h"
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* Asks for huge pages under the 2 MiB-aligned part of a large output about to be written (Linux, where
       transparent huge pages are given on request): a fresh block then takes a fault per 2 MiB, not one per
       4 KiB. */
    static void kc_huge_pages(char* p, Py_ssize_t n) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        uintptr_t a = ((uintptr_t)p + ((uintptr_t)1 << 21) - 1) & ~(((uintptr_t)1 << 21) - 1);
        uintptr_t e = ((uintptr_t)p + (uintptr_t)n) & ~(((uintptr_t)1 << 21) - 1);
        if (e > a) (void)madvise((void*)a, e - a, MADV_HUGEPAGE);
    #else
        (void)p; (void)n;
    #endif
    }
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
    static inline uint32_t kc_be32(const unsigned char* p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
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
    /* An exact int of 0 to 2**128 - 1 as 16 big-endian bytes; -1 (nothing raised) for anything else. */
    static int kc_uint128_into(PyObject* v, unsigned char* out) {
        if (!PyLong_CheckExact(v)) return -1;
    #if PY_VERSION_HEX >= 0x030D0000
        Py_ssize_t r = PyLong_AsNativeBytes(v, out, 16, Py_ASNATIVEBYTES_BIG_ENDIAN
                                            | Py_ASNATIVEBYTES_UNSIGNED_BUFFER | Py_ASNATIVEBYTES_REJECT_NEGATIVE);
        if (r < 0) { PyErr_Clear(); return -1; }
        return r <= 16 ? 0 : -1;
    #else
        if (_PyLong_AsByteArray((PyLongObject*)v, out, 16, 0, 0) < 0) { PyErr_Clear(); return -1; }
        return 0;
    #endif
    }
    /* CPython's cached small ints, filled in at import; an int32 array's ints come from here or are made. */
    static PyObject* kc_small[262];
    /* A tuple of n big-endian int32s read from b (the n*4 bytes are known to be there), filled in one
       loop with no call per small int, and untracked by the cyclic GC: ints cannot form a cycle. */
    static PyObject* kc_int32_tuple_new(const unsigned char* b, Py_ssize_t n) {
        PyObject* t = PyTuple_New(n);
        Py_ssize_t i;
        if (t == NULL || n == 0) return t;
        for (i = 0; i < n; i++, b += 4) {
            int32_t x = (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3]);
            PyObject* v;
            if (x >= -5 && x <= 256) { v = kc_small[x + 5]; Py_INCREF(v); }
            else if ((v = PyLong_FromLong(x)) == NULL) { Py_DECREF(t); return NULL; }  /* NULL items are allowed */
            PyTuple_SET_ITEM(t, i, v);
        }
        PyObject_GC_UnTrack(t);
        return t;
    }
    /* Short int32 tuples are shared: a Metadata response repeats the same few replica and ISR sets (a
       handful of brokers) across thousands of partitions, and a tuple of ints is immutable, so one object
       serves every equal array. A direct-mapped cache keyed by the wire bytes; a miss replaces its entry.
       (A two-way cache made 60 tuples of the 1k payload's 20,000 arrays, not ~900, yet decoded 10k-100k
       topics 20-30% slower: fewer objects outlived a decode, so pymalloc returned more empty arenas to the
       OS and the next decode paid to fault them in again. Measured, issue 12; kept as it is.) */
    #define KC_TUPLE_BITS 10
    #define KC_TUPLES (1 << KC_TUPLE_BITS)
    #define KC_TUPLE_MAX 8
    typedef struct { Py_ssize_t n; unsigned char key[KC_TUPLE_MAX * 4]; PyObject* tuple; } kc_tuple_entry;
    static kc_tuple_entry kc_tuples[KC_TUPLES];
    /* n 4-byte words equal (in line: libc's memcmp call cost more than the compare of a few words), 8 bytes
       a compare, the last 8 ending at the end (overlapping the loop's last): a 3-replica set is 2 compares. */
    static inline int kc_same_words(const unsigned char* a, const unsigned char* b, Py_ssize_t n) {
        Py_ssize_t i, len = 4 * n;
        uint64_t x, y;
        uint32_t x4, y4;
        if (len < 8) {
            memcpy(&x4, a, 4);
            memcpy(&y4, b, 4);
            return x4 == y4;
        }
        for (i = 0; i + 8 < len; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y) return 0;
        }
        memcpy(&x, a + len - 8, 8);
        memcpy(&y, b + len - 8, 8);
        return x == y;
    }
    static inline PyObject* kc_int32_tuple(const unsigned char* b, Py_ssize_t n) {
        /* hashed 8 bytes a multiply (a byte a multiply, FNV's way, was half of read_array's time) */
        uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ULL, w;
        uint32_t w4;
        Py_ssize_t i, len = n * 4;
        kc_tuple_entry* e;
        PyObject* t;
        if (n == 0 || n > KC_TUPLE_MAX) return kc_int32_tuple_new(b, n);
        for (i = 0; i + 8 <= len; i += 8) { memcpy(&w, b + i, 8); h = (h ^ w) * 0xFF51AFD7ED558CCDULL; }
        if (i < len) { memcpy(&w4, b + i, 4); h = (h ^ w4) * 0xFF51AFD7ED558CCDULL; }
        e = &kc_tuples[h >> (64 - KC_TUPLE_BITS)];  /* the top bits: a multiply mixes them best */
        if (e->tuple != NULL && e->n == n && kc_same_words(e->key, b, n)) {
            Py_INCREF(e->tuple);
            return e->tuple;
        }
        t = kc_int32_tuple_new(b, n);
        if (t == NULL) return NULL;
        Py_XDECREF(e->tuple);
        Py_INCREF(t);
        e->tuple = t;
        e->n = n;
        memcpy(e->key, b, (size_t)len);
        return t;
    }
    /* A struct's int32 array whose bytes are those of the struct's last one (a partition's ISR that is
       its replica set, as in a healthy cluster) takes the same tuple, found by a compare of the bytes just
       read: no hash, no cache entry (so it cannot evict another set), no new object. */
    static inline PyObject* kc_same_tuple(PyObject* t) { Py_INCREF(t); return t; }
    static inline void kc_untrack(PyObject* o) { PyObject_GC_UnTrack(o); }
    /* A new reference put in a new object's empty slot (the reference is the slot's now). */
    static inline void kc_put_new(PyObject* o, Py_ssize_t off, PyObject* v) { *(PyObject**)((char*)o + off) = v; }
    /* An ASCII string of n bytes at b put in a new object's empty slot: 1 when stored, 0 when the bytes are
       not all ASCII (nothing kept: the caller takes the UTF-8 path, which checks and names a bad byte),
       -1 on memory error. Topic names are ASCII; this skips the general decoder's set-up. The bytes are
       checked and copied a word at a time in one loop: a names-only struct (a Metadata request's topic)
       spent a third of its decode in the compiler's `rep movs` for a 20-40 byte memcpy. The last bytes of
       a name of 8 or more are one word ending at its end (overlapping the loop's last), not a byte each. */
    static inline int kc_store_ascii(PyObject* o, Py_ssize_t off, const unsigned char* b, Py_ssize_t n) {
        Py_ssize_t i = 0;
        uint64_t w, acc = 0;
        unsigned char* d;
        PyObject* s = PyUnicode_New(n, 127);
        if (s == NULL) return -1;
        d = PyUnicode_1BYTE_DATA(s);
        for (; i + 8 <= n; i += 8) { memcpy(&w, b + i, 8); acc |= w; memcpy(d + i, &w, 8); }
        if (i < n && n >= 8) { memcpy(&w, b + n - 8, 8); acc |= w; memcpy(d + n - 8, &w, 8); }
        else for (; i < n; i++) { acc |= b[i]; d[i] = b[i]; }
        if (acc & 0x8080808080808080ULL) { Py_DECREF(s); return 0; }
        *(PyObject**)((char*)o + off) = s;
        return 1;
    }
    /* Ints past CPython's small ones that struct fields repeat (INT32_MIN, every topic's "authorized
       operations not asked for"; an epoch many partitions share): one object a value, direct-mapped by
       value, replaced on a miss. Ints are immutable, so sharing shows only to `is`. */
    #define KC_INTS 256
    static PyObject* kc_ints[KC_INTS];
    static long kc_int_keys[KC_INTS];
    static inline PyObject* kc_shared_int(long x) {
        size_t i = ((uint32_t)x * 2654435761u) >> 24;
        PyObject* v;
        if (kc_ints[i] != NULL && kc_int_keys[i] == x) { Py_INCREF(kc_ints[i]); return kc_ints[i]; }
        if ((v = PyLong_FromLong(x)) == NULL) return NULL;
        Py_XDECREF(kc_ints[i]);
        Py_INCREF(v);
        kc_ints[i] = v;
        kc_int_keys[i] = x;
        return v;
    }
    /* An int32 or int16 (size 4 or 2) at b, put in a new object's empty slot: no reference to drop. */
    static inline int kc_store_int(PyObject* o, Py_ssize_t off, int size, const unsigned char* b) {
        long x = size == 4 ? (long)(int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3])
                           : (long)(int16_t)(((uint16_t)b[0] << 8) | b[1]);
        PyObject* v;
        if (x >= -5 && x <= 256) { v = kc_small[x + 5]; Py_INCREF(v); }
        else if ((v = kc_shared_int(x)) == NULL) return -1;
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
    /* An exact int that fits a machine word, its value in out (borrowed v: no reference taken). */
    static inline int kc_exact_small(PyObject* v, long long* out) {
        return PyLong_CheckExact(v) && kc_compact_long(v, out);
    }
    #define KC_U32_MAX 0xFFFFFFFFULL
    static inline double kc_double(uint64_t bits) { double d; memcpy(&d, &bits, 8); return d; }
    static inline uint64_t kc_bits(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }
    """
    object kc_alloc(object tp)
    Py_ssize_t kc_slot_offset(object d)
    void kc_set_slot(object o, Py_ssize_t off, object v)
    PyObject* kc_get_slot(object o, Py_ssize_t off)
    uint32_t kc_be32(const unsigned char* p)
    uint64_t kc_be64(const unsigned char* p)
    object kc_uint128(const unsigned char* b)
    int kc_uint128_into(PyObject* v, unsigned char* out)
    PyObject* kc_small[262]
    tuple kc_int32_tuple(const unsigned char* b, Py_ssize_t n)
    PyObject* kc_int32_tuple_new_ref "kc_int32_tuple"(const unsigned char* b, Py_ssize_t n) except NULL
    bint kc_same_words(const unsigned char* a, const unsigned char* b, Py_ssize_t n)
    PyObject* kc_same_tuple(PyObject* t)
    void kc_put_new(object o, Py_ssize_t off, PyObject* v)
    void kc_untrack(object o)
    bint kc_compact_long(object v, long long* out)
    bint kc_exact_small(PyObject* v, long long* out)
    int kc_store_int(object o, Py_ssize_t off, int size, const unsigned char* b) except -1
    int kc_store_ascii(object o, Py_ssize_t off, const unsigned char* b, Py_ssize_t n) except -1
    uint64_t KC_U32_MAX
    void kc_put64(unsigned char* p, uint64_t v)
    double kc_double(uint64_t bits)
    uint64_t kc_bits(double d)
    void kc_huge_pages(char* p, Py_ssize_t n)

DEF HUGE_OUTPUT = 4 << 20  # bytes: an encode's output this large asks for huge pages (kc_huge_pages)

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
    bint PyTuple_CheckExact(object o)
    Py_ssize_t PySequence_Fast_GET_SIZE(object o)
    PyObject* PySequence_Fast_GET_ITEM(object o, Py_ssize_t i)
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
        ir.BYTES, ir.RECORDS, ir.STRUCT) == tuple(range(1, 14)), "kcodec.core._fast is out of step with kcodec.core.ir"

cdef int MAX_STRING = 0x7FFF
cdef dict KIND_TEXT = {K_BOOL: "bool", K_INT8: "int8", K_INT16: "int16", K_UINT16: "uint16", K_INT32: "int32",
                       K_UINT32: "uint32", K_INT64: "int64", K_FLOAT64: "float64"}
cdef object UUID = _uuid.UUID
cdef object SAFE_UNKNOWN = _uuid.SafeUUID.unknown
cdef object ZERO_UUID = _uuid.UUID(int=0)
cdef Py_ssize_t UUID_INT = -1, UUID_SAFE = -1
cdef object _sequence = _pure._sequence
cdef object as_bytes_view = _pure.as_bytes_view
cdef object flat_view = _pure.flat_view


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

cdef struct ReadOp:  # what the reader needs of an _Op, in C: its loop takes no reference per field
    int kind, struct_index, elem_min, fixed
    bint array, nullable, compact
    Py_ssize_t offset
    PyObject* op  # the _Op (borrowed: its plan holds it), for a failure's field path and non-slot stores


cdef class _Op:
    cdef int kind, struct_index, tag, default_make, elem_min, fixed
    cdef bint array, nullable, compact, ignorable
    cdef Py_ssize_t offset
    cdef object attr, default
    cdef ReadOp c  # (filled once the offset is known: read_ops)


cdef class _Plan:
    cdef object cls
    cdef bint slots        # every attribute is an object slot: allocate bare, read and write slots directly
    cdef bint flexible
    cdef tuple fields, tagged, absent, absent_checks
    cdef dict tags, other_tags
    cdef Py_ssize_t utf_offset
    cdef object sp
    # the reader's copy (read_ops): the fields in C; the absent fields whose default is one shared immutable
    # value (numbers, None, the empty tuple) as slot offsets and values, the others (fresh lists, structs)
    cdef ReadOp* reads
    cdef Py_ssize_t nreads, nshared
    cdef Py_ssize_t* shared_offsets
    cdef PyObject** shared_values  # (borrowed from shared)
    cdef tuple shared, made

    def __dealloc__(self):
        PyMem_Free(self.reads)
        PyMem_Free(self.shared_offsets)
        PyMem_Free(self.shared_values)


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


cdef int read_ops(_Plan plan) except -1:
    """The plan's reader copy (see _Plan)."""
    cdef _Op o
    cdef Py_ssize_t i
    for o in plan.fields + plan.tagged + plan.absent:
        o.c.kind, o.c.struct_index, o.c.elem_min, o.c.fixed = o.kind, o.struct_index, o.elem_min, o.fixed
        o.c.array, o.c.nullable, o.c.compact, o.c.offset = o.array, o.nullable, o.compact, o.offset
        o.c.op = <PyObject*>o
    shared = [o for o in plan.absent if o.default_make == 0 or (o.default_make == 1 and o.kind != K_STRUCT)]
    plan.shared = tuple([default_of(o) for o in shared]) if plan.slots else ()
    plan.made = tuple([o for o in plan.absent if o not in shared]) if plan.slots else plan.absent
    plan.nreads, plan.nshared = len(plan.fields), len(plan.shared)
    plan.reads = <ReadOp*>PyMem_Malloc(max(plan.nreads, 1) * sizeof(ReadOp))
    plan.shared_offsets = <Py_ssize_t*>PyMem_Malloc(max(plan.nshared, 1) * sizeof(Py_ssize_t))
    plan.shared_values = <PyObject**>PyMem_Malloc(max(plan.nshared, 1) * sizeof(PyObject*))
    if plan.reads == NULL or plan.shared_offsets == NULL or plan.shared_values == NULL:
        raise MemoryError()
    for i in range(plan.nreads):
        plan.reads[i] = (<_Op>plan.fields[i]).c
    for i in range(plan.nshared):
        plan.shared_offsets[i] = (<_Op>shared[i]).offset
        plan.shared_values[i] = <PyObject*>plan.shared[i]
    return 0


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
        plan.other_tags = sp.other_tags
        plan.utf_offset = slot_offset(sp.cls, "unknown_tagged_fields")
        plan.slots = plan.utf_offset >= 0 and (<type>sp.cls).__new__ is object.__new__
        for group in (plan.fields, plan.tagged, plan.absent):
            for o in group:
                o.offset = slot_offset(sp.cls, o.attr)
                if o.offset < 0:
                    plan.slots = False
        if plan.slots:
            kc_adopt(sp.cls)
        read_ops(plan)
        fp.plans.append(plan)
    fp.deep = trail_depth(list(prog.structs), 0, ()) > MAX_TRAIL
    prog.backend_cache["cython"] = fp
    return fp
