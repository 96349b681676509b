# Included by _crecords.pyx: a v2 batch's records walked without Record objects, into the columns of
# record_columns (fill_columns) and the counts of record_summary (summarize).

cdef extern from *:
    """
    /* One record's fields, as the walks below read them. */
    typedef struct { int64_t ts_delta, off_delta, kpos, klen, vpos, vlen, nh; } kc_record_fields;
    /* fast_record taken into its loops (summarize's, fill_columns'), where its fields stay in registers;
       skip_record, the cold full walk behind it, and skip_headers (a record's headers, rare) kept out of line
       so that the loops stay small: the fields they give go through memory, the fast path's do not. The
       names are Cython's for the functions below. */
    #if defined(__GNUC__)
    static CYTHON_INLINE Py_ssize_t __pyx_f_6kcodec_7records_9_crecords_read_short(unsigned char const *,
        Py_ssize_t, Py_ssize_t, int64_t *, int) __attribute__((always_inline));
    static CYTHON_INLINE int __pyx_f_6kcodec_7records_9_crecords_short_unsigned(unsigned char const *,
        Py_ssize_t *, uint32_t *) __attribute__((always_inline));
    static CYTHON_INLINE int __pyx_f_6kcodec_7records_9_crecords_short_varint(unsigned char const *,
        Py_ssize_t *, int64_t *) __attribute__((always_inline));
    static CYTHON_INLINE int __pyx_f_6kcodec_7records_9_crecords_fast_record(unsigned char const *,
        Py_ssize_t *, Py_ssize_t, kc_record_fields *) __attribute__((always_inline));
    static CYTHON_INLINE int __pyx_f_6kcodec_7records_9_crecords_walk_record(unsigned char const *,
        Py_ssize_t *, Py_ssize_t, kc_record_fields *) __attribute__((always_inline));
    static Py_ssize_t __pyx_f_6kcodec_7records_9_crecords_skip_record(unsigned char const *,
        Py_ssize_t, Py_ssize_t, kc_record_fields *) __attribute__((noinline));
    static Py_ssize_t __pyx_f_6kcodec_7records_9_crecords_skip_headers(unsigned char const *,
        Py_ssize_t, Py_ssize_t, int64_t *) __attribute__((noinline));
    #endif
    """
    ctypedef struct kc_record_fields:
        int64_t ts_delta, off_delta, kpos, klen, vpos, vlen, nh


cdef inline bint short_unsigned(const unsigned char* p, Py_ssize_t* pos, uint32_t* out) noexcept nogil:
    """The bits of a one- or two-byte varint at pos[0], read without a bound check (the caller has checked
    that two bytes are there); False, pos[0] unmoved, when it is longer."""
    cdef uint32_t v = p[pos[0]]
    if v & 0x80:
        if p[pos[0] + 1] & 0x80:
            return False
        v = (v & 0x7F) | (<uint32_t>p[pos[0] + 1] << 7)
        pos[0] += 1
    pos[0] += 1
    out[0] = v
    return True


cdef inline bint short_varint(const unsigned char* p, Py_ssize_t* pos, int64_t* out) noexcept nogil:
    """short_unsigned's zigzag value (v < 2**14: no 32-bit wrap to mimic)."""
    cdef uint32_t v
    if not short_unsigned(p, pos, &v):
        return False
    out[0] = <int64_t>(v >> 1) ^ -<int64_t>(v & 1)
    return True


cdef inline bint fast_record(const unsigned char* p, Py_ssize_t* at, Py_ssize_t end,
                             kc_record_fields* f) noexcept nogil:
    """skip_record for the common record: its length, deltas and key and value lengths varints of one or two
    bytes (its headers, if any, read by skip_headers); the bounds checked once a group of fields, not once a
    byte. False (at[0] unmoved) when the record is not such a one (or is malformed): skip_record then
    decides, so both read every record alike. (A flag, not -1: the loop need not test the next position's
    sign.)"""
    cdef int64_t n, nh
    cdef uint32_t length
    cdef Py_ssize_t rend, pos = at[0]
    if end - pos < 11 or not short_unsigned(p, &pos, &length) or length & 1:  # 11: two bytes of length and the
        return False                                                          # 9 below; odd: negative
    length >>= 1
    # 9 <= length <= end - pos in one unsigned compare (end - pos >= 9 here): the attributes and three
    # two-byte varints are read unchecked, and two bytes follow the key (the value's length, the header count)
    if <uint64_t>length - 9 > <uint64_t>(end - pos - 9):
        return False
    rend = pos + length
    pos += 1  # the attributes (the batch's are the records')
    if not (short_varint(p, &pos, &f.ts_delta) and short_varint(p, &pos, &f.off_delta)
            and short_varint(p, &pos, &f.klen)):
        return False
    n = f.klen  # -1 <= n and max(n, 0) <= rend - pos - 2, where rend - pos >= 2 (at most 7 bytes read)
    if <uint64_t>(n + 1) > <uint64_t>(rend - pos - 1):
        return False
    f.kpos = pos
    pos += n if n > 0 else 0
    if not short_varint(p, &pos, &f.vlen):
        return False
    n = f.vlen
    if n < -1:
        return False
    f.vpos = pos
    pos += n if n > 0 else 0
    if pos == rend - 1 and p[pos] == 0:  # the value ends on a header count of 0 in the record's last byte
        f.nh = 0
    else:  # headers, out of line (bounded by rend: a value past it fails there); nh, not &f.nh, given to it
        if skip_headers(p, pos, rend, &nh) < 0:  # so that f stays out of memory
            return False
        f.nh = nh
    at[0] = rend
    return True


cdef Py_ssize_t skip_record(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end,
                            kc_record_fields* f) noexcept nogil:
    """Walk one record without making objects; the next position, or -1 when malformed."""
    cdef int64_t length
    cdef Py_ssize_t rend
    pos = read_short(p, pos, end, &length, 5)
    if pos < 0 or length < 6 or length > end - pos:
        return -1
    rend = pos + length
    pos = read_short(p, pos + 1, rend, &f.ts_delta, 10)
    if pos < 0:
        return -1
    pos = read_short(p, pos, rend, &f.off_delta, 5)
    if pos < 0:
        return -1
    pos = read_short(p, pos, rend, &f.klen, 5)
    if pos < 0 or f.klen < -1 or f.klen > rend - pos:
        return -1
    f.kpos = pos
    pos += f.klen if f.klen > 0 else 0
    pos = read_short(p, pos, rend, &f.vlen, 5)
    if pos < 0 or f.vlen < -1 or f.vlen > rend - pos:
        return -1
    f.vpos = pos
    pos += f.vlen if f.vlen > 0 else 0
    if pos == rend - 1 and p[pos] == 0:  # no headers (a one-byte count at the record's end: read_short's
        f.nh = 0                         # fall-back, since its fast path wants two bytes there)
        return rend
    return skip_headers(p, pos, rend, &f.nh)


cdef Py_ssize_t skip_headers(const unsigned char* p, Py_ssize_t pos, Py_ssize_t rend,
                             int64_t* nh) noexcept nogil:
    """A record's header count at pos and its headers, which end the record at rend: rend, or -1."""
    cdef int64_t hk, hv, h
    pos = read_short(p, pos, rend, nh, 5)
    if pos < 0 or nh[0] < 0 or nh[0] * 2 > rend - pos:
        return -1
    for h in range(nh[0]):
        pos = read_varint(p, pos, rend, &hk, 5)
        if pos < 0 or hk < 0 or hk > rend - pos:
            return -1
        pos = read_varint(p, pos + hk, rend, &hv, 5)
        if pos < 0 or hv < -1 or hv > rend - pos:
            return -1
        pos += hv if hv > 0 else 0
    return pos if pos == rend else -1


cdef inline bint walk_record(const unsigned char* p, Py_ssize_t* pos, Py_ssize_t end,
                             kc_record_fields* f) noexcept nogil:
    """The record at pos[0] into f and pos[0] moved past it; False when it is malformed."""
    cdef kc_record_fields slow
    cdef Py_ssize_t nxt
    if fast_record(p, pos, end, f):
        return True
    nxt = skip_record(p, pos[0], end, &slow)  # (its own fields: f's stay out of memory)
    f[0] = slow
    pos[0] = nxt
    return nxt >= 0


def fill_columns(list jobs, dict cols):
    """As _pure.fill_columns: each job (buf, pos, end, count, base_offset, base_timestamp, append_time, shift,
    row, origin, compressed, batch_index, batch_position, attributes) fills its rows; the columns' memory
    is taken once for all the batches."""
    cdef int64_t[::1] offset = cols["offset"], timestamp = cols["timestamp"]
    cdef int64_t[::1] key_offset = cols["key_offset"], value_offset = cols["value_offset"]
    cdef int32_t[::1] key_length = cols["key_length"], value_length = cols["value_length"]
    cdef int32_t[::1] header_count = cols["header_count"], batch = cols["batch"]
    cdef int16_t[::1] attrs = cols["attributes"]
    cdef int64_t base_offset, base_timestamp, at, shift
    cdef kc_record_fields f
    cdef Py_ssize_t i, pos, end, count, row, start
    cdef int32_t batch_pos
    cdef int16_t attributes
    cdef bint has_append, ok
    cdef Py_buffer pb
    cdef const unsigned char* p
    cdef BatchHeader h
    cdef Py_ssize_t nrows = offset.shape[0]
    if (timestamp.shape[0] != nrows or key_offset.shape[0] != nrows or value_offset.shape[0] != nrows
            or key_length.shape[0] != nrows or value_length.shape[0] != nrows or header_count.shape[0] != nrows
            or batch.shape[0] != nrows or attrs.shape[0] != nrows):  # once a call: each job's rows are checked on nrows
        raise ValueError("fill_columns: the columns differ in length")
    for job in jobs:  # (the module runs without bounds checks: a job's length and row are checked here)
        if type(job) is not tuple or len(job) not in (3, 14):
            raise TypeError(f"fill_columns: a job is a tuple of 3 or 14 items, not {job!r:.80}")
        if len(job) == 3:  # (batch, row, position): an uncompressed v2 batch, read in place
            h = <BatchHeader?>job[0]
            buf, start, end, count, base_offset, base_timestamp = h._buf, h._start, h._end, h.record_count, \
                h.base_offset, h.base_timestamp
            shift, row, batch_pos, attributes = 0, job[1], job[2], h.attributes
            has_append = (attributes & 0x08) != 0
            at = h.max_timestamp
        else:
            buf, start, end, count, base_offset, base_timestamp, append_time, shift, row = job[:9]
            batch_pos, attributes = job[12], job[13]
            has_append = append_time is not None
            at = append_time if has_append else 0
        pos = start
        # (count <= nrows - row, not row + count <= nrows: a huge row and count wrap that sum and the rows are
        # written unchecked)
        ok = count >= 0 and count <= (end - pos) // 7 and row >= 0 and count <= nrows - row
        if ok:
            PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)
            p = <const unsigned char*>pb.buf
            ok = 0 <= pos <= end <= pb.len
            i = 0
            while ok and i < count:
                if not walk_record(p, &pos, end, &f):
                    ok = False
                    break
                offset[row] = base_offset + f.off_delta
                timestamp[row] = at if has_append else base_timestamp + f.ts_delta
                key_offset[row] = f.kpos + shift if f.klen >= 0 else -1
                key_length[row] = <int32_t>f.klen
                value_offset[row] = f.vpos + shift if f.vlen >= 0 else -1
                value_length[row] = <int32_t>f.vlen
                header_count[row] = <int32_t>f.nh
                batch[row] = batch_pos
                attrs[row] = attributes
                row += 1
                i += 1
            PyBuffer_Release(&pb)
            ok = ok and pos == end
        if not ok:  # the reference raises the precise error
            _pure.fill_columns([_pure.batch_job(*job) if len(job) == 3 else job], cols)
            raise RuntimeError("kcodec.records: the Cython reader refused bytes the reference accepts")


def summarize(buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_timestamp, append_time,
              Py_ssize_t origin, bint compressed, Py_ssize_t batch_index):
    """As _pure.summarize: the records' count, key and value bytes and timestamp range, no object per record."""
    cdef kc_record_fields f
    cdef int64_t ts, lo = INT64_MAX, hi = INT64_MIN  # (a batch of no record returns Nones below)
    cdef int64_t key_bytes = 0, value_bytes = 0
    cdef bint has_append = append_time is not None
    cdef int64_t at = append_time if has_append else 0
    cdef Py_ssize_t i = 0, start = pos
    cdef Py_buffer pb
    cdef const unsigned char* p
    cdef bint ok = count >= 0 and count <= (end - pos) // 7  # (not count * 7: a huge count wraps it)
    if ok:
        PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)
        p = <const unsigned char*>pb.buf
        ok = 0 <= pos <= end <= pb.len
        while ok and i < count:
            if not walk_record(p, &pos, end, &f):
                ok = False
                break
            key_bytes += f.klen if f.klen > 0 else 0
            value_bytes += f.vlen if f.vlen > 0 else 0
            ts = base_timestamp + f.ts_delta  # (with append_time, lo and hi are set once below)
            lo = ts if ts < lo else lo
            hi = ts if ts > hi else hi
            i += 1
        PyBuffer_Release(&pb)
        ok = ok and pos == end
        if has_append:
            lo = hi = at
    if not ok:  # the reference raises the precise error
        _pure.summarize(buf, start, end, count, base_timestamp, append_time, origin, compressed, batch_index)
        raise RuntimeError("kcodec.records: the Cython reader refused bytes the reference accepts")
    return (count, key_bytes, value_bytes, lo, hi) if count else (0, 0, 0, None, None)
