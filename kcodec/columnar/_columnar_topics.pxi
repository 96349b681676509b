# Part of kcodec/columnar/_columnar.pyx (included there): a tables decode's topic rows in one loop.
# A topic of the shape topic_shape finds (fixed bytes, the name, fixed bytes, the partitions, fixed bytes, the
# tags' byte), whose partitions are a plain struct, is read here without walk's per-field dispatch: its
# numbers and name are stored straight into their columns (their room taken once for many rows: kept_room)
# and its partitions handed to take_rows' run of usual rows (partition_run, called here while take_rows'
# column pointers have room, else take_rows). Up to
# the partitions' length (topic_head, _columnar_names.pxi) nothing is stored, and anything unusual there (a
# null, long or non-ASCII name, a long or null count, a short buffer) stops the loop before the row, for
# walk to take it the full way. From there on the row is finished here whatever comes, by the full path's
# own steps (walk per partition take_rows stops at, scalar and tagged for the rest), so the rows and the
# errors are walk's.


cdef inline void put_kept(int size, int kind, const unsigned char* p, char* out) noexcept nogil:
    """A kept value at out, by its size (no switch on the kind but for the rest)."""
    if size == 2:
        (<uint16_t*>out)[0] = be16(p)
    elif size == 4:
        (<uint32_t*>out)[0] = be32(p)
    elif size == 16:
        memcpy(out, p, 16)
    elif size == 1:
        (<uint8_t*>out)[0] = (p[0] != 0) if kind == BOOL else p[0]
    else:
        store(kind, p, out)


cdef inline int keep(Walker w, const TopicShape* t, int j, const unsigned char* p) except -1:
    """Kept value j of a topic row, from p, onto its column, its room checked (a row without kept_room's)."""
    cdef Buf* b = &w.data[t.kept_col[j]]
    put_kept(t.kept_size[j], t.kept_kind[j], p, w.room(b, 1))
    b.len += 1
    return 0


cdef struct KeptRun:  # the topic columns' next free items, for rows that all have room (kept_room)
    char* dst[TOPIC_KEPT]  # each kept value's, then
    int32_t* offs          # the partitions' offsets' (or NULL)
    int64_t pre            # rows stored here since the lengths were last written back (kept_sync):
    int64_t mid            # kept values before the partitions, the partitions' offsets, those after
    int64_t post


cdef inline int64_t kept_room(Walker w, const TopicShape* t, int pcol, KeptRun* k) noexcept:
    """Topic rows that every kept column and the partitions' offsets (pcol) have room for, with k's
    pointers at their first free items: one check a call and a refill, where keep checked each value."""
    cdef int64_t room = w.data[pcol].cap - w.data[pcol].len if pcol >= 0 else (<int64_t>1) << 40
    cdef Buf* b
    cdef int j
    for j in range(t.nkept):
        b = &w.data[t.kept_col[j]]
        room = min(room, b.cap - b.len)  # (no memory yet: 0)
        k.dst[j] = b.data + b.len * b.itemsize
    k.offs = <int32_t*>(w.data[pcol].data) + w.data[pcol].len if pcol >= 0 else NULL
    return max(room, 0)


cdef inline void kept_sync(Walker w, const TopicShape* t, int pcol, KeptRun* k) noexcept:
    """The rows stored through k counted in their columns' lengths (before keep, scalar or a return)."""
    cdef int j
    for j in range(t.npre):
        w.data[t.kept_col[j]].len += k.pre
    for j in range(t.npre, t.nkept):
        w.data[t.kept_col[j]].len += k.post
    if pcol >= 0:
        w.data[pcol].len += k.mid
    k.pre = k.mid = k.post = 0


cdef int64_t table_topic_rows(Walker w, int s, int64_t n, Py_ssize_t* at) except -1:
    """Up to n rows of topic struct s from at[0]; returns how many were whole, with at[0] after them, or with
    at[0] = -1 when the next row failed past its partitions' count (w.reason, w.offset; w.path up to the
    partitions' field: the caller adds the row's index)."""
    cdef const StructC* st = &w.L.structs[s]
    cdef const TopicShape* t = &st.topic
    cdef const OpC* arr = &w.L.ops[t.parts_op]
    cdef int sub = arr.sub
    cdef const unsigned char* buf = w.buf
    cdef Py_ssize_t end = w.end, q, start
    cdef int64_t done = 0, parts, i, row
    cdef TopicHead h
    cdef int j, k
    cdef list names = <list>PyList_GET_ITEM(w.objects, t.name_col)
    cdef const StructC* sub_st = &w.L.structs[sub]
    cdef Plan* plans = w.plans + sub_st.first
    cdef int A = plans[0].shape if sub_st.parent_col >= 0 else 0
    cdef int64_t r0, r
    cdef int32_t* parents
    cdef RunState S
    cdef int loaded = 0
    cdef int ssse3 = kc_ssse3
    cdef KeptRun K  # the kept values' and the offsets' room, checked once for rows (kroom), not per value
    cdef int64_t kroom = 0
    cdef int pcol = arr.col, npre = t.npre, nkept = t.nkept, fast
    cdef int ksize[TOPIC_KEPT]  # (the shape in locals: the stores through char* would reload t's fields)
    cdef int kkind[TOPIC_KEPT]
    cdef Py_ssize_t koff[TOPIC_KEPT]
    cdef int kpart[TOPIC_KEPT]
    cdef const unsigned char* base[2]  # a kept value's run of fixed bytes: before the name, or after it
    for j in range(nkept):
        ksize[j], kkind[j], koff[j], kpart[j] = t.kept_size[j], t.kept_kind[j], t.kept_off[j], t.kept_part[j]
    K.pre = K.mid = K.post = 0
    while done < n:
        start = at[0]
        if not topic_head(buf, end, t, arr, start, &h):
            break
        q = h.q
        parts = h.parts
        # the row is walk's from here (its parent row, where it began, its values before the partitions)
        row = w.rows[s]
        w.rows[s] = row + 1
        w.at = start
        if kroom == 0:  # (none left, or a refill: the lengths written back first)
            kept_sync(w, t, pcol, &K)
            kroom = kept_room(w, t, pcol, &K)
        fast = kroom > 0
        base[0], base[1] = buf + start, buf + h.mid
        if fast:  # room for the whole row: its values stored, counted at kept_sync
            kroom -= 1
            for j in range(npre):
                put_kept(ksize[j], kkind[j], base[kpart[j]] + koff[j], K.dst[j])
                K.dst[j] += ksize[j]
            K.pre += 1
        else:  # a column without room: keep grows it (and the next row refills K)
            for j in range(npre):
                keep(w, t, j, base[kpart[j]] + koff[j])
        append_ascii(names, buf + h.name, h.m)
        i = 0
        if 0 < parts <= w.spare[sub] and (A == 3 or A == 5):  # take_rows' pointers have room: its run here
            # (without take_rows' set-up and close a call), its rows counted as it would; the run's state
            # is loaded once for the topics up to the next row take_rows or walk takes (S, loaded)
            if not loaded:  # (A a constant in each: the state's arrays then in locals)
                if A == 3:
                    run_load(&S, plans, 3)
                else:
                    run_load(&S, plans, 5)
                loaded = 1
            r0 = w.pending[sub]
            parents = <int32_t*>w.data[sub_st.parent_col].data + w.data[sub_st.parent_col].len
            if A == 3:  # (and X a constant too: SSSE3's copy of the ids, or SSE2's)
                if ssse3:
                    r = partition_run(buf, end, &S, 3, 1, r0, r0 + parts, &q, parents, <int32_t>row)
                else:
                    r = partition_run(buf, end, &S, 3, 0, r0, r0 + parts, &q, parents, <int32_t>row)
            elif ssse3:
                r = partition_run(buf, end, &S, 5, 1, r0, r0 + parts, &q, parents, <int32_t>row)
            else:
                r = partition_run(buf, end, &S, 5, 0, r0, r0 + parts, &q, parents, <int32_t>row)
            i = r - r0
            w.pending[sub] = r
            w.spare[sub] -= i
            w.rows[sub] += i
        if i < parts and loaded:  # take_rows and walk read and grow the plans: the lengths back first
            run_store(&S, plans, A)
            loaded = 0
        while i < parts:  # as Walker.array's loop
            i += take_rows(w, sub, parts - i, &q, row)
            if i < parts:
                flush_rows(w, sub)
                q = w.walk(sub, q, row)
                if q < 0:
                    kept_sync(w, t, pcol, &K)
                    w.path.append(i)
                    w.path.append(w.L.attrs[t.parts_op])
                    at[0] = -1
                    return done
                i += 1
        if pcol >= 0:
            if fast:
                K.offs[0] = <int32_t>w.rows[sub]
                K.offs += 1
                K.mid += 1
            else:
                w.push32(&w.data[pcol], w.rows[sub])
            if w.L.has_nulls[pcol]:
                w.push8(&w.nulls[pcol], 0)
        if t.after <= end - q and (not st.flexible or (t.after < end - q and buf[q + t.after] == 0)):
            if fast:
                for j in range(npre, nkept):
                    put_kept(ksize[j], kkind[j], buf + q + koff[j], K.dst[j])
                    K.dst[j] += ksize[j]
                K.post += 1
            else:
                for j in range(npre, nkept):
                    keep(w, t, j, buf + q + koff[j])
            q += t.after + st.flexible
        else:  # short, or tagged fields: field by field, as walk (the lengths written back first, K
            kept_sync(w, t, pcol, &K)  # refilled at the next row: scalar may grow a column)
            kroom = 0
            for k in range(t.parts_op + 1, st.first + st.count):
                q = w.scalar(&w.L.ops[k], q, w.L.ops[k].col, row)
                if q < 0:
                    w.path.append(w.L.attrs[k])
                    break
            else:
                if st.flexible:
                    q = w.tagged(q)
            if q < 0:
                at[0] = -1
                break
        at[0] = q
        done += 1
    if loaded:
        run_store(&S, plans, A)
    kept_sync(w, t, pcol, &K)
    return done
