# Part of kcodec/columnar/_columnar.pyx (included there): a names-only scan's topic rows in one loop.
# A topic that keeps only its name (and fixed-size numbers) and skips its partitions (topic_shape, worked
# out once per layout) is read here without walk's per-field dispatch or the array call per topic: fixed
# bytes, the name, fixed bytes, the partitions (skip_rows), fixed bytes, the tags' byte. Anything else (a
# null or non-ASCII name, a long length, tagged fields, a short buffer) stops the loop before the row's
# values are stored, and walk takes that row the full way: the same rows and the same errors. The row's
# head (up to its partitions' count) is read by topic_head, which table_topic_rows shares.


cdef int topic_shape(Layout L, list ops, int s) except -1:
    """Fills structs[s].topic and returns 1 when struct s is such a topic, 2 when it is one of a tables
    decode (its partitions a plain struct: table_topic_rows, _columnar_topics.pxi), else 0."""
    cdef StructC* st = &L.structs[s]
    cdef TopicShape* t = &st.topic
    cdef int part = 0  # 0: before the name, 1: before the partitions, 2: after them
    cdef Py_ssize_t run[3]
    cdef int k, kind, array, nullable, compact, sub, col, fixed
    run[0] = run[1] = run[2] = 0
    t.nkept = t.npre = 0
    if st.parent_col >= 0 or st.skip or st.plain or st.count == 0:
        return 0
    for k in range(st.first, st.first + st.count):
        kind, array, nullable, compact, sub, col, fixed = ops[k][:7]
        if not array and (fixed > 0 or kind == UUID):
            if col >= 0:
                if t.nkept == TOPIC_KEPT:
                    return 0
                t.kept_part[t.nkept], t.kept_off[t.nkept], t.kept_op[t.nkept] = part, run[part], k
                t.kept_col[t.nkept], t.kept_kind[t.nkept] = col, kind
                t.kept_size[t.nkept] = fixed if fixed > 0 else 16
                t.nkept += 1
                t.npre += part < 2
            run[part] += fixed if fixed > 0 else 16
        elif part == 0 and not array and kind == STRING and col >= 0:
            t.name_compact, t.name_col = compact, col
            part = 1
        elif part == 1 and array and kind == STRUCT and (col < 0 and L.structs[sub].skip or L.structs[sub].plain):
            t.parts_op = k
            part = 2
        else:
            return 0
    if part != 2:
        return 0
    t.before, t.between, t.after = run[0], run[1], run[2]
    return 2 if L.structs[ops[t.parts_op][4]].plain else 1


cdef struct TopicHead:  # a topic row up to its partitions' count (topic_head)
    Py_ssize_t name       # the name's first byte
    Py_ssize_t mid        # the byte after the name
    int64_t m             # the name's length
    int64_t parts         # the partitions' count
    Py_ssize_t q          # where the partitions begin


cdef inline bint topic_head(const unsigned char* buf, Py_ssize_t end, const TopicShape* t, const OpC* arr,
                            Py_ssize_t q, TopicHead* h) noexcept nogil:
    """A topic row from q up to its partitions' count (fixed bytes, an ASCII name, fixed bytes, the count,
    room for that many partitions), into h; false before anything unusual (a null, long or non-ASCII
    name, a long or null count, a short buffer: walk's row). A boolean, not the position or -1: that form
    cost ~7 instructions a topic more (1k Metadata v12 tables). Read, not stored: topic_rows and
    table_topic_rows store the row's values once it is theirs."""
    cdef int64_t m, parts
    if t.before > end - q:
        return 0
    q += t.before
    if t.name_compact:
        if q >= end or <uint8_t>(buf[q] - 1) >= 0x7F:  # null, or a multi-byte length
            return 0
        m = buf[q] - 1
        q += 1
    else:
        if 2 > end - q:
            return 0
        m = <int16_t>be16(buf + q)
        if m < 0:
            return 0
        q += 2
    if m > end - q or not ascii(buf + q, m):
        return 0
    h.name = q
    h.m = m
    q += m
    h.mid = q
    if t.between > end - q:
        return 0
    q += t.between
    if arr.compact:
        if q >= end or <uint8_t>(buf[q] - 1) >= 0x7F:
            return 0
        parts = buf[q] - 1
        q += 1
    else:
        if 4 > end - q:
            return 0
        parts = <int32_t>be32(buf + q)
        if parts < 0:
            return 0
        q += 4
    if parts * arr.elem_min > end - q:
        return 0
    h.parts = parts
    h.q = q
    return 1


cdef int64_t topic_rows(Walker w, int s, int64_t n, Py_ssize_t* at) except -1:
    """Up to n rows of topic struct s from at[0] (its shape: topic_shape); returns how many, at[0] after
    them. A row is stored only once all of it was read (the loop stops before an unusual one)."""
    cdef const StructC* st = &w.L.structs[s]
    cdef const TopicShape* t = &st.topic
    cdef const OpC* arr = &w.L.ops[t.parts_op]
    cdef const StructC* sub = &w.L.structs[arr.sub]
    cdef const OpC* op
    cdef const unsigned char* buf = w.buf
    cdef Py_ssize_t end = w.end, q
    cdef Py_ssize_t start[3]
    cdef int64_t done = 0, parts
    cdef TopicHead h
    cdef int j
    cdef Buf* b
    cdef list names = <list>PyList_GET_ITEM(w.objects, t.name_col)
    while done < n:
        start[0] = at[0]
        if not topic_head(buf, end, t, arr, at[0], &h):
            break
        q = h.q
        start[1] = h.mid
        parts = h.parts
        if parts and skip_rows(buf, end, w.L.steps + sub.first_step, sub.nsteps, sub.flexible, parts, &q,
                               &w.guesses[arr.sub]) < parts:
            break
        start[2] = q
        if t.after > end - q:
            break
        q += t.after
        if st.flexible:
            if q >= end or buf[q] != 0:
                break
            q += 1
        w.at = start[0]  # the row is whole: its values
        for j in range(t.nkept):
            op = &w.L.ops[t.kept_op[j]]
            b = &w.data[op.col]
            store(op.kind, buf + start[t.kept_part[j]] + t.kept_off[j], w.room(b, 1))
            b.len += 1
        append_ascii(names, buf + h.name, h.m)
        w.rows[arr.sub] += parts
        at[0] = q
        done += 1
    w.rows[s] += done
    return done
