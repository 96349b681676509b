# Part of kcodec/core/_fast.pyx (included there): reading a message straight from the caller's buffer.

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
        short(pos, n, end, what)
    return 0


cdef int short(Py_ssize_t pos, Py_ssize_t n, Py_ssize_t end, str what) except -1:
    """Raises need's failure (callers whose ``what`` is made with the value check first, so that the
    text is made only when it fails: a name's int16 length was a string concatenation per topic)."""
    raise _Fail(f"expected {what} of {n} bytes, {max(end - pos, 0)} left", pos)


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
        if 4 > end - p:
            short(p, 4, end, f"the length of {what}")
        b = r.buf + p
        n = <int32_t>((<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | b[3])
        pos[0] = p + 4
    else:
        if 2 > end - p:
            short(p, 2, end, f"the length of {what}")
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
    if kc_be64(b) == 0 and kc_be64(b + 8) == 0:  # a request's "no topic id": one shared immutable uuid
        return ZERO_UUID
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


cdef object read_struct(_Reader r, const ReadOp* op, Py_ssize_t* pos, Py_ssize_t end):
    if op.nullable:
        need(pos[0], 1, end, "a struct's null marker")
        if r.buf[pos[0]] >= 0x80:
            pos[0] += 1
            return None
        pos[0] += 1
    return decode_struct(r, op.struct_index, pos, end)


cdef object read_array(_Reader r, const ReadOp* op, Py_ssize_t* pos, Py_ssize_t end):
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
        return kc_int32_tuple(r.buf + p, n)
    if kind != K_STRUCT:  # scalars: a tuple, untracked by the cyclic GC (no scalar can form a cycle)
        return read_scalars(r, op, n, pos, end)
    out = PyList_New(n)
    d = r.depth  # (a failure leaves the list's unfilled items NULL, which freeing it allows)
    r.trail_op[d] = NULL
    r.depth = d + 1
    for i in range(n):
        r.trail_i[d] = i
        v = decode_struct(r, op.struct_index, pos, end)
        Py_INCREF(v)
        PyList_SET_ITEM(out, i, v)
    r.depth = d
    return out


cdef tuple read_scalars(_Reader r, const ReadOp* op, int64_t n, Py_ssize_t* pos, Py_ssize_t end):
    cdef Py_ssize_t i, p = pos[0], size
    cdef int kind = op.kind, d
    cdef const unsigned char* b
    cdef tuple out = PyTuple_New(n)
    if n == 0:
        return out
    if op.fixed:  # fixed-size numbers: their bytes are all there
        size = op.fixed
        b = r.buf + p
        for i in range(n):
            v = fixed_value(kind, b)
            Py_INCREF(v)
            PyTuple_SET_ITEM(out, i, v)
            b += size
        pos[0] = p + n * size
        kc_untrack(out)
        return out
    d = r.depth  # (a failure leaves the tuple's unfilled items NULL, which freeing it allows)
    r.trail_op[d] = NULL
    r.depth = d + 1
    for i in range(n):
        r.trail_i[d] = i
        if kind == K_STRING:
            v = read_string(r, op.compact, False, pos, end)
        elif kind == K_UUID:
            v = read_uuid(r, pos, end)
        else:
            v = read_bytes(r, op.compact, False, pos, end)
        Py_INCREF(v)
        PyTuple_SET_ITEM(out, i, v)
    r.depth = d
    if not r.zero_copy:  # (zero-copy bytes are memoryviews, which the GC tracks)
        kc_untrack(out)
    return out


cdef object read_field(_Reader r, _Op op, Py_ssize_t* pos, Py_ssize_t end):
    """One field, as a tagged field's body reads it (the reference's single-field readers)."""
    cdef int kind = op.kind
    if op.array:
        return read_array(r, &op.c, pos, end)
    if op.fixed:
        if op.fixed > end - pos[0]:
            short(pos[0], op.fixed, end, "an " + ("int" if kind != K_BOOL else "bool"))
        v = fixed_value(kind, r.buf + pos[0])
        pos[0] += op.fixed
        return v
    if kind == K_STRING:
        return read_string(r, op.compact, op.nullable, pos, end)
    if kind == K_STRUCT:
        return read_struct(r, &op.c, pos, end)
    if kind == K_UUID:
        return read_uuid(r, pos, end)
    return read_bytes(r, op.compact, op.nullable, pos, end)


cdef inline object default_of(_Op op):
    if op.default_make == 1:
        return [] if op.kind == K_STRUCT else ()  # (scalar arrays decode to tuples; () is shared)
    if op.default_make == 2:
        return op.default()
    return op.default


cdef inline int store(object obj, _Plan plan, const ReadOp* op, object v) except -1:
    if plan.slots:
        kc_set_slot(obj, op.offset, v)
    else:
        setattr(obj, (<_Op>op.op).attr, v)
    return 0


cdef object decode_struct(_Reader r, Py_ssize_t index, Py_ssize_t* pos, Py_ssize_t end):
    cdef _Plan plan = <_Plan>PyList_GET_ITEM(r.plans, index)
    cdef const ReadOp* op
    cdef _Op made
    cdef Py_ssize_t i, p, n
    cdef int kind, d = r.depth
    cdef bint slots = plan.slots
    cdef const unsigned char* last_b = NULL  # the struct's last non-empty int32 array: bytes, count, tuple
    cdef Py_ssize_t last_n = -1  # (n is never -1 there: no compare before a first one)
    cdef PyObject* last_t = NULL
    if slots:
        obj = kc_alloc(plan.cls)
    else:
        obj = plan.cls.__new__(plan.cls)
    r.depth = d + 1
    for i in range(plan.nreads):
        op = plan.reads + i
        r.trail_op[d] = op.op
        kind = op.kind
        if op.array:
            if slots and kind == K_INT32:  # replicas, ISR: read_array's int32 way without the call
                p = pos[0]
                n = -1
                if op.compact:
                    if p < end and 0 < r.buf[p] < 0x80:
                        n = r.buf[p] - 1
                        p += 1
                elif end - p >= 4 and r.buf[p] < 0x80:
                    n = <Py_ssize_t>kc_be32(r.buf + p)
                    p += 4
                if 0 <= n and n <= (end - p) // 4:
                    if n == last_n and kc_same_words(last_b, r.buf + p, n):  # ISR = replicas: one tuple
                        kc_put_new(obj, op.offset, kc_same_tuple(last_t))
                    elif n > 0:  # (the last one is borrowed from obj's slot, which keeps it to the end)
                        last_t = kc_int32_tuple_new_ref(r.buf + p, n)
                        kc_put_new(obj, op.offset, last_t)
                        last_b = r.buf + p
                        last_n = n
                    else:
                        kc_put_new(obj, op.offset, kc_int32_tuple_new_ref(r.buf + p, 0))
                    pos[0] = p + 4 * n
                    continue
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
            p = pos[0]
            if slots and op.compact and p < end and 0 < r.buf[p] < 0x80 and r.buf[p] <= end - p:
                # a one-byte length and ASCII (topic names): straight into the slot
                if kc_store_ascii(obj, op.offset, r.buf + p + 1, r.buf[p] - 1):
                    pos[0] = p + r.buf[p]
                    continue
            elif slots and not op.compact and end - p >= 2 and r.buf[p] < 0x80:
                # an int16 length, not null (so at most MAX_STRING), and ASCII (v0-v8 names): the same
                n = (<Py_ssize_t>r.buf[p] << 8) | r.buf[p + 1]
                if n <= end - p - 2 and kc_store_ascii(obj, op.offset, r.buf + p + 2, n):
                    pos[0] = p + 2 + n
                    continue
            v = read_string(r, op.compact, op.nullable, pos, end)
        elif kind == K_STRUCT:
            v = read_struct(r, op, pos, end)
        elif kind == K_UUID:
            p = pos[0]
            if 16 > end - p:
                v = read_uuid(r, pos, end)  # (fails)
            elif slots and kc_be64(r.buf + p) == 0 and kc_be64(r.buf + p + 8) == 0:
                kc_set_slot(obj, op.offset, ZERO_UUID)  # a request's "no topic id" (make_uuid's shared one)
                pos[0] = p + 16
                continue
            else:
                v = make_uuid(r.buf + p)
                pos[0] = p + 16
        else:
            v = read_bytes(r, op.compact, op.nullable, pos, end)
        store(obj, plan, op, v)
    r.depth = d
    for i in range(plan.nshared):  # (slots only: the reader's copy keeps none otherwise)
        kc_set_slot(obj, plan.shared_offsets[i], <object>plan.shared_values[i])
    for made in plan.made:
        store(obj, plan, &made.c, default_of(made))
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
        store(obj, plan, &op.c, default_of(op))
    count = uvarint(r, pos, end)
    p = pos[0]
    if <int64_t>count * 2 > end - p:
        raise _Fail(f"{count} tagged fields need at least {count * 2} bytes, {max(end - p, 0)} left", p)
    unknown = None
    for k in range(count):
        p = pos[0]
        tag = uvarint(r, pos, end)
        size = uvarint(r, pos, end)
        if plan.other_tags and tag in plan.other_tags:
            raise _Fail(ir.other_tag(plan.sp, tag), p)
        p = pos[0]
        known = plan.tags.get(tag)
        if known is not None:
            r.trail_op[d] = <PyObject*>known
            r.depth = d + 1
        if <Py_ssize_t>size > end - p:
            short(p, size, end, f"tagged field {tag}")
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
            store(obj, plan, &op.c, v)
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
    try:
        PyObject_GetBuffer(base, &view, PyBUF_SIMPLE)
    except BufferError:  # not contiguous: copied, as the reference does (a check before costs every decode)
        if base.c_contiguous:
            raise
        base = flat_view(base)
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
        # young objects that all survive (and promote them, so they are scanned again later). The
        # return value is built before the GC resumes, so that its allocation does not start one.
        enabled = PyGC_Disable()
        try:
            obj = decode_struct(r, 0, &p, stop)
            result = (obj, p)
        finally:
            if enabled:
                PyGC_Enable()
        return result
    except _Fail as e:
        raise DecodeError(e.reason, e.offset, path_text(trail_path(r)), fp.message, fp.version) from None
    finally:
        PyBuffer_Release(&view)
