# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: binding=False, embedsignature=True, embedsignature.format=clinic
"""The columnar decoder's hot path: one pass over the caller's buffer, values straight into C arrays.

It runs a ``Layout`` (kcodec.columnar builds it from the IR program of a message and version): per
struct, its fields in wire order, each with the column it feeds or -1 to validate and skip. Every struct
is a table; a struct instance is a row. Nothing here makes a Python object per row except the strings a
layout asks for. Columns grow by extrapolating from the share of the buffer read so far, so they end
close to their final size; they are handed to numpy without a copy (``np.frombuffer`` over ``Column``).
Rows of structs made only of numbers (partitions) have their own loops (_columnar_rows.pxi; skipped ones
_columnar_skip.pxi), as have topics (_columnar_names.pxi, _columnar_topics.pxi), and large blocks of dropped
columns are reused (_columnar_memory.pxi); first allocations are sized from the last run (_columnar_sizing.pxi).

The checks, their order, their messages and offsets are the reference backend's (kcodec/core/pure/__init__.py), so a
bad buffer fails with the same DecodeError as the object decode. On failure ``tables`` returns the reason,
offset and field path (innermost first) instead of raising, and the caller builds the DecodeError.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.list cimport PyList_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memmove, memset


cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, uint32_t maxchar)
    int PyTraceMalloc_Track(unsigned int domain, uintptr_t ptr, size_t size)
    int PyTraceMalloc_Untrack(unsigned int domain, uintptr_t ptr)

cdef extern from *:
    """
    /* The characters of a compact ASCII string (PyUnicode_New(n, 127) makes one): right after its header,
       as PyUnicode_DATA finds them after its tests of the kind and the layout. */
    #define kc_ascii_data(s) ((void *)(((PyASCIIObject *)(s)) + 1))
    """
    void* ascii_data "kc_ascii_data"(object s) noexcept

# tracemalloc sees the columns (as it sees numpy's own arrays): peak-memory measurements stay honest.
DEF TRACE_DOMAIN = 0x6b63

# IR kinds (kcodec/core/ir.py)
DEF BOOL = 1
DEF INT8 = 2
DEF INT16 = 3
DEF UINT16 = 4
DEF INT32 = 5
DEF UINT32 = 6
DEF INT64 = 7
DEF FLOAT64 = 8
DEF UUID = 9
DEF STRING = 10
DEF BYTES = 11
DEF RECORDS = 12
DEF STRUCT = 13

DEF MAX_STRING = 0x7FFF

KIND_TEXT = {BOOL: "bool", INT8: "int8", INT16: "int16", UINT16: "uint16", INT32: "int32", UINT32: "uint32",
             INT64: "int64", FLOAT64: "float64"}


include "_columnar_layout.pxi"
include "_columnar_memory.pxi"


cdef inline uint16_t be16(const unsigned char* p) noexcept nogil:
    return (<uint16_t>p[0] << 8) | p[1]

cdef inline uint32_t be32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]

cdef inline uint64_t be64(const unsigned char* p) noexcept nogil:
    return (<uint64_t>be32(p) << 32) | be32(p + 4)


cdef inline bint ascii(const unsigned char* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t seen = 0, word
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&word, p + i, 8)
        seen |= word
        i += 8
    while i < n:
        seen |= p[i]
        i += 1
    return (seen & 0x8080808080808080ULL) == 0


cdef inline int append_ascii(list objects, const unsigned char* p, Py_ssize_t n) except -1:
    """An ASCII string, copied (no decoder), onto a column of strings."""
    cdef object text = PyUnicode_New(n, 127)
    memcpy(ascii_data(text), p, n)
    objects.append(text)
    return 0


cdef inline void store(int kind, const unsigned char* p, char* out) noexcept nogil:
    """One big-endian value at p, written natively at out."""
    cdef uint64_t u64
    if kind == INT32 or kind == UINT32:
        (<uint32_t*>out)[0] = be32(p)
    elif kind == INT16 or kind == UINT16:
        (<uint16_t*>out)[0] = be16(p)
    elif kind == BOOL:
        (<uint8_t*>out)[0] = p[0] != 0
    elif kind == INT8:
        (<uint8_t*>out)[0] = p[0]
    elif kind == INT64 or kind == FLOAT64:
        u64 = be64(p)
        memcpy(out, &u64, 8)
    elif kind == UUID:
        memcpy(out, p, 16)


@cython.final
cdef class Walker:
    cdef const unsigned char* buf
    cdef Py_ssize_t end
    cdef Py_ssize_t at           # where the current struct began: extrapolates column growth
    cdef Layout L
    cdef Buf* data               # per column: values, or offsets (int32) of lists and child tables
    cdef Buf* values             # per column: list values
    cdef Buf* nulls              # per column: null mask (uint8)
    cdef list objects            # per column: a Python list, or None
    cdef int64_t* rows           # per struct (= table)
    cdef int64_t n               # the last length read
    cdef uint64_t v              # the last varint read
    cdef object reason
    cdef Py_ssize_t offset
    cdef list path
    cdef Plan* plans             # per op, take_rows' scratch
    cdef int64_t* spare          # per struct: rows take_rows' pointers have room for (0: set them up)
    cdef int64_t* pending        # per struct: rows take_rows wrote, not yet in its columns' lengths (flush_rows)
    cdef RowGuess* guesses       # per struct: skip_rows' last full row

    def __cinit__(self, Layout L not None):
        cdef int i
        self.L = L
        self.data = <Buf*>malloc(max(L.ncols, 1) * sizeof(Buf))
        self.values = <Buf*>malloc(max(L.ncols, 1) * sizeof(Buf))
        self.nulls = <Buf*>malloc(max(L.ncols, 1) * sizeof(Buf))
        self.rows = <int64_t*>malloc(max(L.nstructs, 1) * sizeof(int64_t))
        self.plans = <Plan*>malloc(max(L.nops, 1) * sizeof(Plan))
        self.spare = <int64_t*>malloc(max(L.nstructs, 1) * sizeof(int64_t))
        self.pending = <int64_t*>malloc(max(L.nstructs, 1) * sizeof(int64_t))
        self.guesses = <RowGuess*>calloc(max(L.nstructs, 1), sizeof(RowGuess))
        if (self.data == NULL or self.values == NULL or self.nulls == NULL or self.rows == NULL
                or self.plans == NULL or self.spare == NULL or self.pending == NULL
                or self.guesses == NULL):
            raise MemoryError()
        self.objects = []
        for i in range(L.ncols):
            self.data[i] = Buf(NULL, 0, 0, L.itemsize[i], 0)
            self.values[i] = Buf(NULL, 0, 0, L.value_size[i], 0)
            self.nulls[i] = Buf(NULL, 0, 0, 1, 0)
            self.objects.append([] if L.is_object[i] else None)
        for i in range(L.nstructs):
            self.rows[i] = 0
            self.spare[i] = 0
            self.pending[i] = 0
        plan_rows(self)
        self.path = []

    def __dealloc__(self):
        cdef int i
        if self.data != NULL:
            for i in range(self.L.ncols):
                release(&self.data[i])
                release(&self.values[i])
                release(&self.nulls[i])
        free(self.data)
        free(self.values)
        free(self.nulls)
        free(self.rows)
        free(self.plans)
        free(self.spare)
        free(self.pending)
        free(self.guesses)

    # ------------------------------------------------------------------------------------ growing

    cdef inline char* room(self, Buf* b, Py_ssize_t n) except NULL:
        """Space for n more items at the end of b."""
        if b.len + n <= b.cap and b.cap:  # (no memory yet: grow, so that the answer is never NULL)
            return b.data + b.len * b.itemsize
        return self.grow(b, n)

    cdef char* grow(self, Buf* b, Py_ssize_t n) except NULL:
        cdef Py_ssize_t need = b.len + n, cap, guess
        if b.cap == 0 and b.first > need:  # as many as the last run had for as many bytes: one allocation
            resize(b, b.first)
            return b.data + b.len * b.itemsize
        # Extrapolate from the share of the buffer read so far; grow by at least half.
        guess = <Py_ssize_t>((<double>need) * self.end / max(self.at, 1) * 1.05)  # (a walk starts at 0)
        cap = max(need, b.cap + b.cap // 2, 16)
        if guess > cap and guess < need * 64:
            cap = guess
        resize(b, cap)
        return b.data + b.len * b.itemsize

    cdef inline int push32(self, Buf* b, int64_t x) except -1:
        """An offset or a row number: int32 (a Kafka body is under 2 GiB; walk_buffer checks)."""
        cdef char* p = self.room(b, 1)
        (<int32_t*>p)[0] = <int32_t>x
        b.len += 1
        return 0

    cdef inline int push8(self, Buf* b, uint8_t x) except -1:
        cdef char* p = self.room(b, 1)
        (<uint8_t*>p)[0] = x
        b.len += 1
        return 0

    # ------------------------------------------------------------------------------------ failing

    cdef Py_ssize_t fail(self, reason, Py_ssize_t offset) except -2:
        self.reason = reason
        self.offset = offset
        return -1

    cdef inline Py_ssize_t left(self, Py_ssize_t pos):
        return max(self.end - pos, 0)

    # ------------------------------------------------------------------------------------ reading

    cdef inline Py_ssize_t uvarint(self, Py_ssize_t pos) except -2:
        cdef Py_ssize_t start = pos
        cdef uint64_t result = 0, b
        cdef int shift = 0
        while True:
            if pos >= self.end:
                return self.fail("truncated unsigned varint", start)
            b = self.buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result > 0xFFFFFFFF:
                    return self.fail("unsigned varint exceeds 32 bits", start)
                self.v = result
                return pos
            shift += 7
            if shift >= 35:
                return self.fail("unsigned varint longer than 5 bytes", start)

    cdef inline Py_ssize_t length(self, OpC* op, Py_ssize_t pos, int wide, what) except -2:
        """A length prefix into self.n (-1: null), as the reference's _length."""
        cdef Py_ssize_t start = pos
        cdef int64_t n
        if op.compact:
            if pos < self.end and self.buf[pos] < 0x80 and self.buf[pos] > 0:
                self.n = self.buf[pos] - 1
                return pos + 1
            pos = self.uvarint(pos)
            if pos < 0:
                return pos
            n = <int64_t>self.v - 1
        elif wide:
            if 4 > self.end - pos:
                return self.fail(f"expected the length of {what} of 4 bytes, {self.left(pos)} left", pos)
            n = <int32_t>be32(self.buf + pos)
            pos += 4
        else:
            if 2 > self.end - pos:
                return self.fail(f"expected the length of {what} of 2 bytes, {self.left(pos)} left", pos)
            n = <int16_t>be16(self.buf + pos)
            pos += 2
        if n < -1:
            return self.fail(f"negative length {n} of {what}", start)
        if n == -1 and not op.nullable:
            return self.fail(f"null {what} in a non-nullable field", start)
        self.n = n
        return pos

    cdef Py_ssize_t variable(self, OpC* op, Py_ssize_t pos, int col) except -2:
        """A string (int16 or compact length, at most 32767 bytes, UTF-8) or bytes (int32 length)."""
        cdef int64_t n, i
        cdef const unsigned char* p
        cdef bint text = op.kind == STRING
        pos = self.length(op, pos, not text, "string" if text else "bytes")
        if pos < 0:
            return pos
        n = self.n
        if n < 0:
            if col >= 0:
                (<list>self.objects[col]).append(None)
            return pos
        if text and n > MAX_STRING:
            return self.fail(f"string length {n} exceeds {MAX_STRING}", pos)
        if n > self.end - pos:
            return self.fail(f"expected {'a string' if text else 'bytes'} of {n} bytes, {self.left(pos)} left", pos)
        p = self.buf + pos
        if not text:
            if col >= 0:
                (<list>self.objects[col]).append((<const char*>p)[:n])
            return pos + n
        if ascii(p, n):  # the common case: no decoder, a copy
            if col >= 0:
                append_ascii(self.objects[col], p, n)
            return pos + n
        try:  # not ASCII: Python's decoder checks it and names the bad byte
            s = PyUnicode_DecodeUTF8(<const char*>p, n, NULL)
        except UnicodeDecodeError as e:
            return self.fail(f"invalid UTF-8 in string ({e.reason})", pos + e.start)
        if col >= 0:
            (<list>self.objects[col]).append(s)
        return pos + n

    cdef inline Py_ssize_t scalar(self, OpC* op, Py_ssize_t pos, int col, int64_t row) except -2:
        """One value that is not an array; a struct field opens a row of its table."""
        cdef char* out
        if op.fixed:
            if op.fixed > self.end - pos:
                return self.fail(f"expected {KIND_TEXT[op.kind]} of {op.fixed} bytes, {self.left(pos)} left",
                                 pos)
            if col >= 0:
                out = self.room(&self.data[col], 1)
                store(op.kind, self.buf + pos, out)
                self.data[col].len += 1
            return pos + op.fixed
        if op.kind == STRING or op.kind == BYTES or op.kind == RECORDS:
            return self.variable(op, pos, col)
        if op.kind == UUID:
            if 16 > self.end - pos:
                return self.fail(f"expected a uuid of 16 bytes, {self.left(pos)} left", pos)
            if col >= 0:
                out = self.room(&self.data[col], 1)
                memcpy(out, self.buf + pos, 16)
                self.data[col].len += 1
            return pos + 16
        # a struct
        if op.nullable:
            if 1 > self.end - pos:
                return self.fail(f"expected a struct's null marker of 1 bytes, {self.left(pos)} left", pos)
            pos += 1
            if <int8_t>self.buf[pos - 1] < 0:
                return pos
        flush_rows(self, op.sub)  # (take_rows' rows of it, if any, count first)
        return self.walk(op.sub, pos, row)

    cdef Py_ssize_t array(self, OpC* op, Py_ssize_t pos, int64_t row) except -2:
        cdef int64_t n, i, k
        cdef int col = op.col
        cdef StructC* sub
        cdef Py_ssize_t size, after
        cdef char* out
        cdef const unsigned char* p
        cdef OpC elem
        if op.compact and pos < self.end and 0 < self.buf[pos] < 0x80:  # a short compact length: in line
            n = self.buf[pos] - 1
            pos += 1
        else:
            pos = self.length(op, pos, 1, "array")
            if pos < 0:
                return pos
            n = self.n
        if n >= 0 and n * op.elem_min > self.end - pos:
            return self.fail(f"array of {n} elements needs at least {n * op.elem_min} bytes, "
                             f"{self.left(pos)} left", pos)
        if n > 0:
            if op.kind == STRUCT:
                sub = &self.L.structs[op.sub]
                i = 0
                while i < n:  # rows of numbers by the fast loops; anything unusual, and other structs, the
                    if sub.skip:  # full path, with its checks and errors
                        k = skip_rows(self.buf, self.end, self.L.steps + sub.first_step, sub.nsteps,
                                      sub.flexible, n - i, &pos, &self.guesses[op.sub])
                        self.rows[op.sub] += k
                        i += k
                    elif sub.plain:
                        i += take_rows(self, op.sub, n - i, &pos, row)
                        if i < n:  # a row for the full way: the batch's rows count in the columns first
                            flush_rows(self, op.sub)
                    elif sub.named == 1:
                        i += topic_rows(self, op.sub, n - i, &pos)
                    elif sub.named:  # (pos -1: topic i failed past its partitions' count)
                        i += table_topic_rows(self, op.sub, n - i, &pos)
                        if pos < 0:
                            self.path.append(i)
                            return pos
                    if i < n:
                        pos = self.walk(op.sub, pos, row)
                        if pos < 0:
                            self.path.append(i)
                            return pos
                        i += 1
            elif op.fixed:
                size = op.fixed
                if col >= 0:
                    out = self.room(&self.values[col], n)
                    p = self.buf + pos
                    if op.kind == INT32 or op.kind == UINT32:
                        for i in range(n):
                            (<uint32_t*>out)[i] = be32(p + 4 * i)
                    else:
                        for i in range(n):
                            store(op.kind, p + size * i, out + size * i)
                    self.values[col].len += n
                pos += n * size
            else:  # strings, bytes, uuids: checked, not kept
                elem = op[0]
                elem.nullable = 0
                elem.col = -1
                for i in range(n):
                    pos = self.scalar(&elem, pos, -1, row)
                    if pos < 0:
                        self.path.append(i)
                        return pos
        if col >= 0:
            if op.kind == STRUCT:
                self.push32(&self.data[col], self.rows[op.sub])
            else:
                self.push32(&self.data[col], self.values[col].len)
            if self.L.has_nulls[col]:
                self.push8(&self.nulls[col], n < 0)
        return pos

    cdef inline Py_ssize_t tagged(self, Py_ssize_t pos) except -2:
        """The tagged-field section of a struct whose layout knows no tags: checked and skipped."""
        cdef uint64_t count, i, tag, size
        if pos < self.end and self.buf[pos] == 0:
            return pos + 1
        pos = self.uvarint(pos)
        if pos < 0:
            return pos
        count = self.v
        if <int64_t>(count * 2) > self.end - pos:
            return self.fail(f"{count} tagged fields need at least {count * 2} bytes, {self.left(pos)} left", pos)
        for i in range(count):
            pos = self.uvarint(pos)
            if pos < 0:
                return pos
            tag = self.v
            pos = self.uvarint(pos)
            if pos < 0:
                return pos
            size = self.v
            if <int64_t>size > self.end - pos:
                return self.fail(f"expected tagged field {tag} of {size} bytes, {self.left(pos)} left", pos)
            pos += size
        return pos

    cdef Py_ssize_t walk(self, int s, Py_ssize_t pos, int64_t parent) except -2:
        """One struct instance: a row of its table."""
        cdef StructC* st = &self.L.structs[s]
        cdef int64_t row = self.rows[s]
        cdef int i, how
        cdef OpC* op
        cdef Buf* b
        cdef int64_t n, k, total
        cdef Py_ssize_t after = 0
        cdef char* out
        cdef const unsigned char* p
        cdef const unsigned char* buf = self.buf  # (locals: every store may alias a field, and reloads it)
        cdef Py_ssize_t end = self.end
        cdef const OpC* ops = self.L.ops
        self.rows[s] = row + 1
        self.at = pos
        self.spare[s] = 0  # its columns move: take_rows sets its pointers up again
        if st.parent_col >= 0:
            self.push32(&self.data[st.parent_col], parent)
        for i in range(st.first, st.first + st.count):
            op = &ops[i]
            how = op.how
            if how == HOW_SKIP:
                if op.fixed <= end - pos:
                    pos += op.fixed
                    continue
            elif how == HOW_NUM:
                if op.fixed <= end - pos:
                    b = &self.data[op.col]
                    store(op.kind, buf + pos, self.room(b, 1))
                    b.len += 1
                    pos += op.fixed
                    continue
            elif how == HOW_NUMS:
                n = -1
                if op.compact:
                    if pos < end and 0 < buf[pos] < 0x80:
                        n = buf[pos] - 1
                        after = pos + 1
                elif 4 <= end - pos:
                    n = <int32_t>be32(buf + pos)
                    after = pos + 4
                if n >= 0 and n * op.fixed <= end - after:
                    pos = after + n * op.fixed
                    if op.col < 0:
                        continue
                    b = &self.values[op.col]
                    out = self.room(b, n)
                    p = buf + after
                    if op.fixed == 4:
                        for k in range(n):
                            (<uint32_t*>out)[k] = be32(p + 4 * k)
                    else:
                        for k in range(n):
                            store(op.kind, p + op.fixed * k, out + op.fixed * k)
                    b.len += n
                    total = b.len
                    b = &self.data[op.col]
                    (<int32_t*>self.room(b, 1))[0] = <int32_t>total
                    b.len += 1
                    if self.L.has_nulls[op.col]:
                        self.push8(&self.nulls[op.col], 0)
                    continue
            elif how == HOW_STR:
                if pos < end and 0 < buf[pos] < 0x80:
                    n = buf[pos] - 1  # a short string (under MAX_STRING): inline when there and ASCII
                    p = buf + pos + 1
                    if n < end - pos and ascii(p, n):
                        if op.col >= 0:
                            append_ascii(<list>PyList_GET_ITEM(self.objects, op.col), p, n)
                        pos += 1 + n
                        continue
            elif how == HOW_UUID:
                if 16 <= end - pos:
                    if op.col >= 0:
                        b = &self.data[op.col]
                        memcpy(self.room(b, 1), buf + pos, 16)
                        b.len += 1
                    pos += 16
                    continue
            if op.array:
                pos = self.array(op, pos, row)
            else:
                pos = self.scalar(op, pos, op.col, row)
            if pos < 0:
                self.path.append(self.L.attrs[i])
                return pos
        if st.flexible:
            if pos < end and buf[pos] == 0:
                return pos + 1
            pos = self.tagged(pos)
        return pos


include "_columnar_rows.pxi"
include "_columnar_skip.pxi"
include "_columnar_names.pxi"
include "_columnar_topics.pxi"
include "_columnar_result.pxi"
include "_columnar_sizing.pxi"


cdef Py_ssize_t walk_buffer(Walker w, data) except -2:
    """Runs w over all of data: the position after the body, or -1 (w.reason, w.offset and w.path say why)."""
    cdef Py_buffer view
    cdef int i
    cdef Py_ssize_t pos
    cdef Layout layout = w.L
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        w.buf = <const unsigned char*>view.buf
        w.at = 0
        w.end = view.len
        if view.len > 0x7FFFFFFF:  # offsets and row numbers are int32, as a Kafka frame's size is
            raise ValueError("a Kafka body is under 2 GiB")
        expect(w, view.len)
        for i in range(layout.ncols):
            if layout.is_offsets[i]:
                w.push32(&w.data[i], 0)
        pos = w.walk(0, 0, -1)
        for i in range(layout.nstructs):
            flush_rows(w, i)
    finally:
        PyBuffer_Release(&view)
        w.buf = NULL
    if pos >= 0:
        learn(w, pos)
    return pos


def tables(Layout layout not None, Result result not None, data):
    """Decode all of data by the layout into kcodec.columnar's result (Tables or TopicNames). Returns
    ``(True, end, buffer length, result)``, or ``(False, reason, offset, path)``."""
    if len(result.arrays) != layout.ncols:  # (result.make indexes them by the layout's columns)
        raise ValueError(f"tables: the result has {len(result.arrays)} columns, the layout {layout.ncols}")
    cdef Walker w = Walker(layout)
    cdef Py_ssize_t pos = walk_buffer(w, data)
    if pos < 0:
        return False, w.reason, w.offset, w.path
    return True, pos, w.end, result.make(w)
