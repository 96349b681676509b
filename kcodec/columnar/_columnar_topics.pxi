# Part of kcodec/columnar/_columnar.pyx (included there): a tables decode's topic rows in one loop.
# A topic of the shape topic_shape finds (fixed bytes, the name, fixed bytes, the partitions, fixed bytes, the
# tags' byte), whose partitions are a plain struct, is read here without walk's per-field dispatch: its
# numbers and name are stored straight into their columns and its partitions handed to take_rows' run of
# usual rows (partition_run, called here while take_rows' column pointers have room, else take_rows). Up to
# the partitions' length (topic_head, _columnar_names.pxi) nothing is stored, and anything unusual there (a
# null, long or non-ASCII name, a long or null count, a short buffer) stops the loop before the row, for
# walk to take it the full way. From there on the row is finished here whatever comes, by the full path's
# own steps (walk per partition take_rows stops at, scalar and tagged for the rest), so the rows and the
# errors are walk's.


cdef inline int keep(Walker w, const TopicShape* t, int j, const unsigned char* p) except -1:
    """Kept value j of a topic row, from p, onto its column (by its size: no switch on the kind)."""
    cdef Buf* b = &w.data[t.kept_col[j]]
    cdef char* out = w.room(b, 1)
    cdef int size = t.kept_size[j]
    if size == 2:
        (<uint16_t*>out)[0] = be16(p)
    elif size == 4:
        (<uint32_t*>out)[0] = be32(p)
    elif size == 16:
        memcpy(out, p, 16)
    else:
        store(t.kept_kind[j], p, out)
    b.len += 1
    return 0


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
        for j in range(t.npre):
            keep(w, t, j, buf + (start if t.kept_part[j] == 0 else h.mid) + t.kept_off[j])
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
            if A == 3:
                r = partition_run(buf, end, &S, 3, r0, r0 + parts, &q, parents, <int32_t>row)
            else:
                r = partition_run(buf, end, &S, 5, r0, r0 + parts, &q, parents, <int32_t>row)
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
                    w.path.append(i)
                    w.path.append(w.L.attrs[t.parts_op])
                    at[0] = -1
                    return done
                i += 1
        if arr.col >= 0:
            w.push32(&w.data[arr.col], w.rows[sub])
            if w.L.has_nulls[arr.col]:
                w.push8(&w.nulls[arr.col], 0)
        if t.after <= end - q and (not st.flexible or (t.after < end - q and buf[q + t.after] == 0)):
            for j in range(t.npre, t.nkept):
                keep(w, t, j, buf + q + t.kept_off[j])
            q += t.after + st.flexible
        else:  # short, or tagged fields: field by field, as walk
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
    return done
