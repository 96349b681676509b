# Included by _crecords.pyx: a v2 batch's records walked without Record objects, into the columns of
# record_columns (fill_columns) and the counts of record_summary (summarize).

cdef extern from *:
    """
    /* skip_record taken into its loops (summarize's, fill_columns') and read_short into it: gcc keeps the
       first out of line for its size (the read_varint fall-backs it holds), where the call costs a record
       ~40 of its ~200 instructions (seven results passed through memory, arguments on the stack), and
       once it is taken in, calls read_short out of line from the grown loop. The names are Cython's for the
       functions below. */
    #if defined(__GNUC__)
    static CYTHON_INLINE Py_ssize_t __pyx_f_6kcodec_7records_9_crecords_read_short(unsigned char const *,
        Py_ssize_t, Py_ssize_t, int64_t *, int) __attribute__((always_inline));
    static CYTHON_INLINE Py_ssize_t __pyx_f_6kcodec_7records_9_crecords_skip_record(unsigned char const *,
        Py_ssize_t, Py_ssize_t, int64_t *, int64_t *, int64_t *, int64_t *, int64_t *, int64_t *, int64_t *)
        __attribute__((always_inline));
    #endif
    """


cdef inline Py_ssize_t skip_record(const unsigned char* p, Py_ssize_t pos, Py_ssize_t end, int64_t* ts_delta,
                                   int64_t* off_delta, int64_t* kpos, int64_t* klen, int64_t* vpos, int64_t* vlen,
                                   int64_t* nh) noexcept nogil:
    """Walk one record without making objects; the next position, or -1 when malformed."""
    cdef int64_t length, hk, hv, h
    cdef Py_ssize_t rend
    pos = read_short(p, pos, end, &length, 5)
    if pos < 0 or length < 6 or length > end - pos:
        return -1
    rend = pos + length
    pos = read_short(p, pos + 1, rend, ts_delta, 10)
    if pos < 0:
        return -1
    pos = read_short(p, pos, rend, off_delta, 5)
    if pos < 0:
        return -1
    pos = read_short(p, pos, rend, klen, 5)
    if pos < 0 or klen[0] < -1 or klen[0] > rend - pos:
        return -1
    kpos[0] = pos
    pos += klen[0] if klen[0] > 0 else 0
    pos = read_short(p, pos, rend, vlen, 5)
    if pos < 0 or vlen[0] < -1 or vlen[0] > rend - pos:
        return -1
    vpos[0] = pos
    pos += vlen[0] if vlen[0] > 0 else 0
    if pos == rend - 1 and p[pos] == 0:  # no headers (a one-byte count at the record's end: read_short's
        nh[0] = 0                        # fall-back, since its fast path wants two bytes there)
        return rend
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


def fill_columns(list jobs, dict cols):
    """As _pure.fill_columns: each job (buf, pos, end, count, base_offset, base_timestamp, append_time, shift,
    row, origin, compressed, batch_index, batch_position, attributes) fills its rows; the columns' memory
    is taken once for all the batches."""
    cdef int64_t[::1] offset = cols["offset"], timestamp = cols["timestamp"]
    cdef int64_t[::1] key_offset = cols["key_offset"], value_offset = cols["value_offset"]
    cdef int32_t[::1] key_length = cols["key_length"], value_length = cols["value_length"]
    cdef int32_t[::1] header_count = cols["header_count"], batch = cols["batch"]
    cdef int16_t[::1] attrs = cols["attributes"]
    cdef int64_t ts_delta, off_delta, kpos, klen, vpos, vlen, nh, base_offset, base_timestamp, at, shift
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
        ok = count >= 0 and count * 7 <= end - pos and row >= 0 and row + count <= nrows
        if ok:
            PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)
            p = <const unsigned char*>pb.buf
            ok = 0 <= pos <= end <= pb.len
            i = 0
            while ok and i < count:
                pos = skip_record(p, pos, end, &ts_delta, &off_delta, &kpos, &klen, &vpos, &vlen, &nh)
                if pos < 0:
                    ok = False
                    break
                offset[row] = base_offset + off_delta
                timestamp[row] = at if has_append else base_timestamp + ts_delta
                key_offset[row] = kpos + shift if klen >= 0 else -1
                key_length[row] = <int32_t>klen
                value_offset[row] = vpos + shift if vlen >= 0 else -1
                value_length[row] = <int32_t>vlen
                header_count[row] = <int32_t>nh
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
    cdef int64_t ts_delta, off_delta, kpos, klen, vpos, vlen, nh, ts, lo = 0, hi = 0
    cdef int64_t key_bytes = 0, value_bytes = 0
    cdef bint has_append = append_time is not None
    cdef int64_t at = append_time if has_append else 0
    cdef Py_ssize_t i = 0, start = pos
    cdef Py_buffer pb
    cdef const unsigned char* p
    cdef bint ok = count >= 0 and count * 7 <= end - pos
    if ok:
        PyObject_GetBuffer(buf, &pb, PyBUF_SIMPLE)
        p = <const unsigned char*>pb.buf
        ok = 0 <= pos <= end <= pb.len
        while ok and i < count:
            pos = skip_record(p, pos, end, &ts_delta, &off_delta, &kpos, &klen, &vpos, &vlen, &nh)
            if pos < 0:
                ok = False
                break
            key_bytes += klen if klen > 0 else 0
            value_bytes += vlen if vlen > 0 else 0
            ts = at if has_append else base_timestamp + ts_delta
            if i == 0 or ts < lo:
                lo = ts
            if i == 0 or ts > hi:
                hi = ts
            i += 1
        PyBuffer_Release(&pb)
        ok = ok and pos == end
    if not ok:  # the reference raises the precise error
        _pure.summarize(buf, start, end, count, base_timestamp, append_time, origin, compressed, batch_index)
        raise RuntimeError("kcodec.records: the Cython reader refused bytes the reference accepts")
    return (count, key_bytes, value_bytes, lo, hi) if count else (0, 0, 0, None, None)
