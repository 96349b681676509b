# Part of kcodec/core/_fast.pyx (included there): writing a message, sized first, then written once into an exact-size buffer.

# ---------------------------------------------------------------------------------------- writing

cdef unsigned char SCRATCH[16]  # where the size pass "writes" fixed-size values


cdef class _Writer:
    """Counts bytes (out is NULL: the size pass) or writes them into out[0:cap] (the write pass)."""
    cdef unsigned char* out
    cdef Py_ssize_t pos, cap
    cdef list plans
    cdef bint checked_later  # the size pass of an encode: the write pass checks every number, so this one
                             # counts numbers by their size without reading them (nor an int array's items)
    cdef list spliced  # encode_buffers: (position, the caller's buffer) of each value left out; else None
    cdef Py_ssize_t threshold, spliced_bytes  # bytes values of at least threshold are left out; their bytes


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


cdef inline bint put_small_int(_Writer w, int kind, PyObject* v) noexcept:
    """The common case of put_fixed, done in line: an exact one-digit int in an int32 or int16 field (v
    borrowed: no reference counted). False: not that case (nothing written); put_fixed does it, or names
    what is wrong."""
    cdef long long x
    cdef Py_ssize_t size = 4 if kind == K_INT32 else 2
    cdef unsigned char* p
    if (kind != K_INT32 and kind != K_INT16) or not kc_exact_small(v, &x):
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


cdef inline bint splices(_Writer w, int kind, Py_ssize_t n) noexcept:
    """Whether encode_buffers leaves this value out, as the reference's Spliced.takes decides."""
    return w.spliced is not None and n > 0 and (kind == K_RECORDS or n >= w.threshold)


cdef int splice(_Writer w, object v, object flat, Py_ssize_t n) except -1:
    """A value left out of the output: counted apart, and in the write pass remembered where it goes."""
    w.spliced_bytes += n
    if w.out != NULL:
        w.spliced.append((w.pos, v if flat is None else _pure.spliced_value(v, flat)))
    return 0


cdef int put_parts(_Writer w, bint compact, object v, int kind) except -1:
    """A Buffers value: its parts one after the other (each left out, when encode_buffers splices it). A
    part that is bytes or a bytearray (a broker's stored batch) is taken as it is, with no view made of it
    and no call per part: a Fetch response of many batches splices them at the cost of a list append."""
    cdef Py_buffer view
    cdef Py_ssize_t n = 0, size
    cdef bint spliced
    cdef list flats = []
    for part in v:
        flat = part if PyBytes_CheckExact(part) or PyByteArray_CheckExact(part) else as_bytes_view(part)
        flats.append(flat)
        n += len(flat)
    put_length(w, compact, n, True)
    spliced = splices(w, kind, n)
    for part, flat in zip(v, flats):
        if spliced:
            size = len(flat)
            if size:
                splice(w, part, None if flat is part else flat, size)
        elif w.out == NULL:
            w.pos += len(flat)
        else:
            PyObject_GetBuffer(flat, &view, PyBUF_SIMPLE)
            try:
                memcpy(room(w, view.len), view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
    return 0


cdef int put_bytes(_Writer w, bint compact, bint nullable, object v, int kind) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t n
    if v is None:
        if not nullable:
            raise _Invalid()
        return put_length(w, compact, -1, True)
    if type(v) is Buffers:
        return put_parts(w, compact, v, kind)
    if PyBytes_CheckExact(v):
        n = PyBytes_GET_SIZE(v)
        put_length(w, compact, n, True)
        if splices(w, kind, n):
            return splice(w, v, None, n)
        if w.out == NULL:
            w.pos += n
        else:
            memcpy(room(w, n), PyBytes_AS_STRING(v), n)
        return 0
    mv = as_bytes_view(v)
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    try:
        put_length(w, compact, view.len, True)
        if splices(w, kind, view.len):
            splice(w, v, mv, view.len)
        elif w.out == NULL:
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
    if w.out == NULL and w.checked_later:
        w.pos += 16
        return 0
    p = room(w, 16)  # (the size pass of encoded_size checks the value too, as the reference does)
    if type(v) is UUID and UUID_INT >= 0 and kc_get_slot(v, UUID_INT) != NULL \
            and kc_uint128_into(kc_get_slot(v, UUID_INT), p) == 0:
        return 0  # a uuid.UUID's int, read from its slot in one step
    value = v.int  # a subclass's, or one set by hand: checked as the reference checks it
    if not PyLong_Check(value) or value < 0 or value >> 128:
        raise _Invalid()
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
    if v is None:
        if not op.nullable:
            raise _Invalid()
        return put_length(w, op.compact, -1, True)
    items = v if PyList_CheckExact(v) or PyTuple_CheckExact(v) else _sequence(v)
    n = PySequence_Fast_GET_SIZE(items)
    put_length(w, op.compact, n, True)
    for i in range(n):
        if i >= PySequence_Fast_GET_SIZE(items):  # an element's __index__ or __eq__ may have shrunk it
            raise RuntimeError("a list changed while it was being encoded")
        if op.fixed and put_small_int(w, kind, PySequence_Fast_GET_ITEM(items, i)):
            continue
        item = <object>PySequence_Fast_GET_ITEM(items, i)  # held: the calls below may run Python code
        if op.fixed:
            put_fixed(w, kind, item, False)
        elif kind == K_STRUCT:
            encode_struct(w, op.struct_index, item)
        elif kind == K_STRING:
            put_string(w, op.compact, False, item)
        elif kind == K_UUID:
            put_uuid(w, item)
        else:
            put_bytes(w, op.compact, False, item, kind)
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
    return put_bytes(w, op.compact, op.nullable, v, kind)


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
        if PyList_CheckExact(v) or PyTuple_CheckExact(v):
            return PySequence_Fast_GET_SIZE(v) == 0
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
    cdef Py_ssize_t i, n
    cdef bint slots = plan.slots and type(obj) is plan.cls
    cdef PyObject* utf
    if not slots and (obj is None or not hasattr(obj, "__slots__") and not hasattr(obj, "__dict__")):
        raise _Invalid()
    for op in plan.absent_checks:
        if not is_default(op, get(obj, slots, op)):
            raise _Invalid()
    for i in range(PyTuple_GET_SIZE(fields)):
        op = <_Op>PyTuple_GET_ITEM(fields, i)
        if w.checked_later and op.fixed:
            if not op.array:
                w.pos += op.fixed
                continue
            v = get(obj, slots, op)
            if PyList_CheckExact(v) or PyTuple_CheckExact(v):
                n = PySequence_Fast_GET_SIZE(v)
                put_length(w, op.compact, n, True)
                w.pos += n * op.fixed
                continue
            put_array(w, op, v)  # None, or another sequence: the full way
            continue
        if slots and op.fixed and not op.array and kc_get_slot(obj, op.offset) != NULL \
                and put_small_int(w, op.kind, kc_get_slot(obj, op.offset)):
            continue
        v = get(obj, slots, op)
        if op.array or not put_small_int(w, op.kind, <PyObject*>v):
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
    spliced, w.spliced = w.spliced, None  # tagged fields are written whole, as in the reference
    items = []
    for op in plan.tagged:
        v = get(obj, slots, op)
        if not is_default(op, v):
            items.append((op.tag, v, op))
    unknown = getattr(obj, "unknown_tagged_fields", None)
    if unknown:
        for tag, raw in unknown.items():
            if not PyLong_Check(tag) or tag < 0 or tag > 0xFFFFFFFF or tag in plan.tags or tag in plan.other_tags:
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
    w.spliced = spliced
    return 0


cdef object _first = itemgetter(0)  # (a def here would be a module function indexing unchecked: boundscheck=False)


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


cdef Py_ssize_t size_of(_Prog fp, prog, obj, bint checked_later=False) except -1:
    cdef _Writer w = _Writer()
    w.plans = fp.plans
    w.checked_later = checked_later
    try:
        encode_struct(w, 0, obj)
    except Exception as e:
        _reference_error(prog, obj, e)
    return w.pos


cdef int _reference_error(prog, obj, Exception e) except -1:
    """The reference names what is wrong; it must find something wrong too."""
    _pure.encoded_size(prog, obj)
    raise AssertionError(f"kcodec.core._fast rejected a {type(obj).__name__} that the reference accepts: {e!r}")


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
    cdef Py_ssize_t size = size_of(fp, prog, obj, True)
    out = PyBytes_FromStringAndSize(NULL, size)
    if size >= HUGE_OUTPUT:
        kc_huge_pages(PyBytes_AS_STRING(out), size)
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


def encode_buffers(prog, obj, Py_ssize_t threshold):
    """(buffers, size): the encoding with records values and bytes values of at least threshold bytes left
    as the caller's buffers (see kcodec.core.pure.encode_buffers, whose buffers these are, byte for byte)."""
    cdef _Prog fp = prepared(prog)
    cdef _Writer sizing = _Writer()
    cdef _Writer w = _Writer()
    sizing.plans = w.plans = fp.plans
    sizing.checked_later = True
    sizing.spliced, sizing.threshold = [], threshold
    try:
        encode_struct(sizing, 0, obj)
    except Exception as e:
        _reference_error(prog, obj, e)
    out = PyBytes_FromStringAndSize(NULL, sizing.pos)
    w.out, w.cap = <unsigned char*>PyBytes_AS_STRING(out), sizing.pos
    w.spliced, w.threshold = [], threshold
    try:
        encode_struct(w, 0, obj)
    except RuntimeError:
        raise
    except Exception as e:
        _reference_error(prog, obj, e)
    if w.pos != sizing.pos or w.spliced_bytes != sizing.spliced_bytes:
        raise RuntimeError("the message changed between the size pass and the write pass")
    return _pure.split_buffers(out, w.spliced), w.pos + w.spliced_bytes


def _init_uuid_slots():
    global UUID_INT, UUID_SAFE
    a = slot_offset(UUID, "int")
    b = slot_offset(UUID, "is_safe")
    if a >= 0 and b >= 0 and UUID.__new__ is object.__new__:
        UUID_INT, UUID_SAFE = a, b


_init_uuid_slots()
