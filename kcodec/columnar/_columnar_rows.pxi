# Part of kcodec/columnar/_columnar.pyx (included there): the row loops of structs made only of numbers and arrays of
# numbers (a topic's partitions), run instead of Walker.walk per row. Each stops before the first row that is
# not the plain case (a short buffer, a null or long length, tagged fields); the caller walks that row the full
# way, which makes the reference's error when there is one, so errors stay those of the full path.
# Two shortcuts, each measured on Metadata v12 / DescribeTopicPartitions (issue 12): take_rows reads a
# partition (an error code, three numbers, arrays of up to 4 ids) without its per-field plan, and skip_rows
# (_columnar_skip.pxi) steps over a row whose length bytes are the last full row's at once. Either falls back to the general
# step for anything else, so the same rows and the same errors come out.


cdef extern from *:
    void prefetch "__builtin_prefetch"(const void* p) noexcept nogil

DEF PREFETCH_AHEAD = 1024  # bytes: the input is read this far ahead of the rows (after other work it is not
                           # in the cache, and the hardware's prefetcher stops at each 4 KiB page)


cdef inline void put(int size, int kind, const unsigned char* p, char* out, int64_t i) noexcept nogil:
    """Item i of a column of numbers of this size, from the big-endian value at p."""
    if size == 4:
        (<uint32_t*>out)[i] = be32(p)
    elif size == 2:
        (<uint16_t*>out)[i] = be16(p)
    elif size == 8:
        store(kind, p, out + 8 * i)
    else:
        (<uint8_t*>out)[i] = (p[0] != 0) if kind == BOOL else p[0]


# Plan.code: the cases of the row loop, the common ones first
DEF INT32_KEPT = 1
DEF INT16_KEPT = 2
DEF INT32S_KEPT = 3
DEF NUMBER = 4    # any other number, kept or not
DEF ARRAY = 5     # any other array


cdef inline int partition_shape(const Plan* plans, int nops, int flexible) noexcept:
    """take_rows' way for a partition (an error code, three int32 numbers, then compact arrays of int32
    ids, all kept, in a flexible struct: Metadata v9+, DescribeTopicPartitions): how many arrays, else 0."""
    cdef int i
    if not flexible or nops < 5 or nops > 12 or plans[0].code != INT16_KEPT:
        return 0
    for i in range(1, nops):
        if plans[i].code != (INT32_KEPT if i < 4 else INT32S_KEPT):
            return 0
    return nops - 4


cdef void plan_rows(Walker w) noexcept:
    """take_rows' fields, per op of every struct (what does not change within a run)."""
    cdef Plan* f
    cdef OpC* op
    cdef int i
    for i in range(w.L.nops):
        f = w.plans + i
        op = &w.L.ops[i]
        f.kind = op.kind
        f.size = op.fixed
        f.array = 0 if not op.array else 1 if op.compact else 2
        f.code = ARRAY if op.array else NUMBER
        f.nullable = op.nullable
        f.last = -1  # no guess yet
        f.data = f.values = f.nulls = NULL
        f.shape = 0
        if op.col >= 0:
            if not op.array and op.kind in (INT32, UINT32):
                f.code = INT32_KEPT
            elif not op.array and op.kind in (INT16, UINT16):
                f.code = INT16_KEPT
            elif op.array and op.compact and op.kind in (INT32, UINT32):
                f.code = INT32S_KEPT
            f.data = &w.data[op.col]
            if op.array:
                f.values = &w.values[op.col]
                if w.L.has_nulls[op.col]:
                    f.nulls = &w.nulls[op.col]
    for i in range(w.L.nstructs):
        if w.L.structs[i].count > 0:
            f = w.plans + w.L.structs[i].first
            f.shape = partition_shape(f, w.L.structs[i].count, w.L.structs[i].flexible)


cdef inline char* values_at(Walker w, Plan* f, int64_t vl, int64_t need, Py_ssize_t q) except NULL:
    """Where item vl of a kept array's values goes, with room for ``need`` items from there (growing keeps
    vl items, the batch's so far: the end of take_rows recounts; q, the row's start, extrapolates)."""
    if vl + need > f.vcap:
        w.at = q
        f.values.len = vl
        w.grow(f.values, need)
        f.vdata = f.values.data
        f.vcap = f.values.cap
    return f.vdata + 4 * vl


cdef extern from *:
    """
    /* Four big-endian 32-bit ids (16 bytes) to native order. SSE2 is in every x86-64 CPU, so this needs
       no flag: 8 instructions (bytes swapped in each 16-bit lane, then the lanes in each 32-bit one), where
       the compiler, without SSSE3's pshufb, made 4 loads, 4 bswaps and 4 stores. With SSSE3 (nearly every
       x86-64 CPU since 2006, but not the wheels' baseline) pshufb makes it 3: partition_run takes that
       way where kc_ssse3 says the CPU has it (a copy of the run each, chosen once a call, not per copy).
       pshufb is written in asm since the file builds without -mssse3 (its intrinsic would not inline). */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline void kc_copy4_sse2(char *out, const unsigned char *src) {
        __m128i x = _mm_loadu_si128((const __m128i *)src);
        x = _mm_or_si128(_mm_slli_epi16(x, 8), _mm_srli_epi16(x, 8));
        x = _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0xB1), 0xB1);
        _mm_storeu_si128((__m128i *)out, x);
    }
    #else
    static inline void kc_copy4_sse2(char *out, const unsigned char *src) {
        for (int k = 0; k < 4; k++) {
            const unsigned char *p = src + 4 * k;
            uint32_t v = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
            memcpy(out + 4 * k, &v, 4);
        }
    }
    #endif
    #if defined(__SSE2__) && defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    static int kc_ssse3 = -1;  /* the CPU's SSSE3, or 0 (kc_ssse3_init at import; tests turn it off) */
    static int kc_ssse3_init(void) { __builtin_cpu_init(); return kc_ssse3 = __builtin_cpu_supports("ssse3") != 0; }
    static inline void kc_copy4_ssse3(char *out, const unsigned char *src) {
        static const unsigned char order[16] __attribute__((aligned(16))) =
            {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12};
        __m128i x = _mm_loadu_si128((const __m128i *)src);
        __asm__("pshufb %1, %0" : "+x"(x) : "xm"(*(const __m128i *)order));
        _mm_storeu_si128((__m128i *)out, x);
    }
    #else
    static int kc_ssse3 = 0;
    static int kc_ssse3_init(void) { return kc_ssse3 = 0; }
    #define kc_copy4_ssse3 kc_copy4_sse2
    #endif
    /* (x a constant where partition_run is inlined: no test left in its loop) */
    #define kc_copy4(out, src, x) ((x) ? kc_copy4_ssse3((out), (src)) : kc_copy4_sse2((out), (src)))
    """
    void copy4 "kc_copy4"(char* out, const unsigned char* src, const int x) noexcept nogil
    # Four big-endian 32-bit ids, a fixed count for arrays of up to 4 (the items past theirs are not counted).
    int kc_ssse3
    int kc_ssse3_init() noexcept


cdef inline void unwind(Plan* arrays, int j, const unsigned char* p) noexcept:
    """Takes back the values a partition's first j arrays added (its row stopped at array j)."""
    cdef int i
    cdef int64_t m
    for i in range(j):
        m = p[0] - 1 if 2 <= p[0] <= 5 else 0
        arrays[i].vlen -= m
        p += 1 + 4 * m


DEF RUN_MAX = 8  # arrays a partition run keeps in locals (partition_shape allows up to 8)


cdef extern from *:
    """
    /* partition_run taken whole into run3 and run5, A a constant in each: gcc otherwise keeps it out of line
       for its size and, past six arguments, without its A propagated (the arrays' state then in memory: a
       1k Metadata v12 tables call 1.65 -> 2.03 M instructions). The name is Cython's for the function below. */
    #if defined(__GNUC__)
    struct __pyx_t_6kcodec_8columnar_9_columnar_Plan;
    struct __pyx_t_6kcodec_8columnar_9_columnar_RunState;
    static CYTHON_INLINE int64_t __pyx_f_6kcodec_8columnar_9_columnar_partition_run(unsigned char const *,
        Py_ssize_t, struct __pyx_t_6kcodec_8columnar_9_columnar_RunState *, int const, int const, int64_t, int64_t,
        Py_ssize_t *, int32_t *, int32_t) __attribute__((always_inline));
    #endif
    """


cdef struct RunState:  # partition_run's columns, kept in the caller's locals across its calls (a topic each)
    uint16_t* d0
    uint32_t* d1
    uint32_t* d2
    uint32_t* d3
    int32_t* offs[RUN_MAX]
    uint32_t* vals[RUN_MAX]
    int64_t vl[RUN_MAX]
    Py_ssize_t vcap[RUN_MAX]


cdef inline void run_load(RunState* S, const Plan* plans, const int A) noexcept nogil:
    """The run's state from take_rows' plans (valid while w.spare has room: the pointers do not move)."""
    cdef int j
    S.d0 = <uint16_t*>plans[0].dst
    S.d1 = <uint32_t*>plans[1].dst
    S.d2 = <uint32_t*>plans[2].dst
    S.d3 = <uint32_t*>plans[3].dst
    for j in range(A):
        S.offs[j] = <int32_t*>plans[4 + j].dst
        S.vals[j] = <uint32_t*>plans[4 + j].vdata
        S.vl[j] = plans[4 + j].vlen
        S.vcap[j] = plans[4 + j].vcap


cdef inline void run_store(const RunState* S, Plan* plans, const int A) noexcept nogil:
    """The values' lengths back in the plans, before take_rows or walk take a row (they may grow a column)."""
    cdef int j
    for j in range(A):
        plans[4 + j].vlen = S.vl[j]


cdef inline int64_t partition_run(const unsigned char* buf, Py_ssize_t end, RunState* S, const int A,
                                  const int X, int64_t r, int64_t n, Py_ssize_t* at, int32_t* parents,
                                  int32_t parent) noexcept nogil:
    """Rows r.. of take_rows' partition shape with A arrays (A a constant where it is inlined: the arrays'
    state then stays in registers, where the general loop reloads every Plan field after each store, since
    extensions build with -fno-strict-aliasing), each row's parent with it (a store a row, where a loop of
    its own after the run cost ~7); returns the row it stopped before, with at[0] there and S's lengths
    after its rows (run_load / run_store move them from and to the plans). It takes only rows whose arrays
    are empty or hold 1 to 4 ids with room for them, and never grows a column: any other row (null, longer,
    tagged, a short buffer, a column full) is left to take_rows' loop."""
    cdef Py_ssize_t q = at[0], p
    cdef uint16_t* d0 = S.d0
    cdef uint32_t* d1 = S.d1
    cdef uint32_t* d2 = S.d2
    cdef uint32_t* d3 = S.d3
    cdef int32_t* offs[RUN_MAX]
    cdef uint32_t* vals[RUN_MAX]
    cdef int64_t vl[RUN_MAX]
    cdef int64_t nv[RUN_MAX]
    cdef uint8_t most[RUN_MAX]  # per array: the ids a row may have here (4, or 0: no room for the rows;
                                # a byte: widened, gcc loaded each before its compare)
    cdef int j
    cdef size_t c  # (a length byte, widened once: no sign extension of c - 1 in each array's steps)
    cdef Py_ssize_t last = end - (15 + 17 * A)  # the last row start whose longest usual row is in the buffer
    for j in range(A):
        offs[j] = S.offs[j]
        vals[j] = S.vals[j]
        vl[j] = S.vl[j]
        # A row adds at most 4 ids to an array (copy4 writes 4 from its last one): whether its room takes all
        # n - r rows, checked here once instead of per array and row. One without (an array empty so far
        # has no memory) takes only empty rows here; take_rows' loop grows it at the first ids, by the
        # buffer's share read, so the next call has room for the rest.
        most[j] = 4 if vl[j] + 4 * (n - r) <= S.vcap[j] else 0  # (n - r is bounded by the buffer)
    while r < n and q <= last:  # (its numbers, then arrays of at most 4 ids each)
        prefetch(buf + q + PREFETCH_AHEAD)
        p = q + 14
        for j in range(A):
            c = buf[p]
            nv[j] = vl[j]
            if c == 1:  # empty
                p += 1
                continue
            if <uint8_t>(c - 2) >= most[j]:  # null (0 wraps), longer, a varint; or no room
                break
            copy4(<char*>(vals[j] + vl[j]), buf + p + 1, X)  # (the c - 1 ids; the items past them not counted)
            nv[j] = vl[j] + <int64_t>c - 1
            p += 4 * <Py_ssize_t>c - 3
        else:
            if buf[p] == 0:  # no tagged fields: the row is whole
                d0[r] = be16(buf + q)
                d1[r] = be32(buf + q + 2)
                d2[r] = be32(buf + q + 6)
                d3[r] = be32(buf + q + 10)
                parents[r] = parent
                for j in range(A):
                    vl[j] = nv[j]
                    offs[j][r] = <int32_t>nv[j]
                r += 1
                q = p + 1
                continue
        break
    for j in range(A):
        S.vl[j] = vl[j]
    at[0] = q
    return r


cdef int64_t run3(const unsigned char* buf, Py_ssize_t end, Plan* plans, int64_t r, int64_t n, Py_ssize_t* at,
                  int32_t* parents, int32_t parent) noexcept nogil:
    """partition_run of Metadata v9+'s partitions (replicas, ISR, offline replicas)."""
    cdef RunState S
    run_load(&S, plans, 3)
    if kc_ssse3:
        r = partition_run(buf, end, &S, 3, 1, r, n, at, parents, parent)
    else:
        r = partition_run(buf, end, &S, 3, 0, r, n, at, parents, parent)
    run_store(&S, plans, 3)
    return r


cdef int64_t run5(const unsigned char* buf, Py_ssize_t end, Plan* plans, int64_t r, int64_t n, Py_ssize_t* at,
                  int32_t* parents, int32_t parent) noexcept nogil:
    """partition_run of DescribeTopicPartitions' partitions (and the two ELR lists)."""
    cdef RunState S
    run_load(&S, plans, 5)
    if kc_ssse3:
        r = partition_run(buf, end, &S, 5, 1, r, n, at, parents, parent)
    else:
        r = partition_run(buf, end, &S, 5, 0, r, n, at, parents, parent)
    run_store(&S, plans, 5)
    return r


cdef int64_t take_rows(Walker w, int s, int64_t n, Py_ssize_t* at, int64_t parent) except -1:
    """Decodes up to n rows of plain struct s from at[0] into their columns; returns how many, with at[0]
    after them. Every column that takes one item per row has room for n reserved first (n is bounded by
    the bytes left: the caller checked n * the row's least size), so a row costs no capacity check but one
    per kept array; a row's items count only once the row is whole, so a row it stops in leaves nothing.
    The columns' pointers are set up once for as many rows as they have room for, not per call (a call
    per topic); a row that takes the full path (Walker.walk) moves the columns and clears w.spare[s].
    Rows count in w.rows at once and in the columns' lengths when flushed (flush_rows: before the pointers
    are set up again, before Walker.walk's row of s, at the end of the walk), not per call: this call's
    rows are rows r0.. of the batch since the last flush."""
    cdef int64_t r0 = w.pending[s]
    cdef StructC* st = &w.L.structs[s]
    cdef Plan* plans = w.plans + st.first
    cdef Plan* f
    cdef int nops = st.count, i, flexible = st.flexible, code, A, j, run
    cdef uint8_t c
    cdef const unsigned char* buf = w.buf
    cdef Py_ssize_t end = w.end, q = at[0], p
    cdef int64_t r = 0, m, k, vl, spare
    cdef Buf* b
    cdef char* out
    cdef const unsigned char* src
    cdef int32_t* parents = NULL
    w.at = q
    if n > w.spare[s]:  # room for n rows more in every column; the pointers then last the rows it has room
        flush_rows(w, s)  # for (a topic's partitions, call after call), until a row takes the full path
        r0 = 0
        spare = <int64_t>1 << 62
        if st.parent_col >= 0:
            b = &w.data[st.parent_col]
            w.room(b, n)
            spare = b.cap - b.len
        for i in range(nops):
            f = plans + i
            if f.data != NULL:
                f.dst = w.room(f.data, n)
                spare = min(spare, f.data.cap - f.data.len)
                if f.nulls != NULL:
                    f.ndst = w.room(f.nulls, n)
                    f.zeroed = 0
                    spare = min(spare, f.nulls.cap - f.nulls.len)
                if f.values != NULL:
                    f.vlen = f.values.len
                    f.vdata = f.values.data
                    f.vcap = f.values.cap
        w.spare[s] = spare
    if st.parent_col >= 0:
        b = &w.data[st.parent_col]
        parents = <int32_t*>b.data + b.len
    A = plans[0].shape
    r = r0
    n += r0  # the row of the batch it stops before
    # a run of usual rows in registers for Metadata v9+ (3 arrays) and DescribeTopicPartitions (5); it writes
    # the parents' column too (a partition is a topic's: it has one)
    run = A if parents != NULL and (A == 3 or A == 5) else 0
    while r < n:
        if run:
            if run == 3:
                r = run3(buf, end, plans, r, n, &q, parents, <int32_t>parent)
            else:
                r = run5(buf, end, plans, r, n, &q, parents, <int32_t>parent)
        if r == n:
            break
        p = q
        prefetch(buf + q + PREFETCH_AHEAD)
        if A and end - p > 14 + 17 * A:  # a partition: its numbers, then arrays of at most 4 ids each
            (<uint16_t*>plans[0].dst)[r] = be16(buf + p)
            (<uint32_t*>plans[1].dst)[r] = be32(buf + p + 2)
            (<uint32_t*>plans[2].dst)[r] = be32(buf + p + 6)
            (<uint32_t*>plans[3].dst)[r] = be32(buf + p + 10)
            p += 14
            for j in range(A):
                f = plans + 4 + j
                c = buf[p]
                vl = f.vlen
                if c == 1:  # empty
                    p += 1
                elif <uint8_t>(c - 2) < 4:  # 1 to 4 ids: a fixed copy of 4 (the items past m are not counted)
                    m = c - 1
                    copy4(values_at(w, f, vl, 8, q), buf + p + 1, 0)
                    vl += m
                    f.vlen = vl
                    p += 1 + 4 * m
                elif c == 0 and f.nullable:  # null: empty, marked
                    p += 1
                    if r >= f.zeroed:  # the batch's first null: the mask is zeroed now, not per row
                        memset(f.ndst + f.zeroed, 0, n - f.zeroed)
                        f.zeroed = n
                    f.ndst[r] = 1
                else:
                    break
                (<int32_t*>f.dst)[r] = <int32_t>vl
            else:
                if buf[p] == 0:  # no tagged fields
                    r += 1
                    q = p + 1
                    continue
                j = A
            unwind(plans + 4, j, buf + q + 14)  # the full way below reads this row again
            p = q
        for i in range(nops):
            f = plans + i
            code = f.code
            if code == INT32_KEPT:
                if 4 > end - p:
                    break
                (<uint32_t*>f.dst)[r] = be32(buf + p)
                p += 4
                continue
            if code == INT16_KEPT:
                if 2 > end - p:
                    break
                (<uint16_t*>f.dst)[r] = be16(buf + p)
                p += 2
                continue
            if code == INT32S_KEPT:  # a compact array of 32-bit numbers: a topic's replicas, ISR
                if p >= end:
                    break
                if buf[p] == 1:  # empty (offline replicas, ELR): a constant step, so the next field's
                    p += 1       # read need not wait for this byte's (the branch is predicted)
                    (<int32_t*>f.dst)[r] = <int32_t>f.vlen
                    continue
                if buf[p] == f.last:  # the last row's count (a replication factor): its step is known
                    m = f.lastm       # before this byte is read (a predicted branch), as in skip_rows; a
                    if 17 > end - p:  # way of its own (sharing the steps below measured slower); m <= 4:
                        break         # room for its bytes and the fixed copy of 4
                    vl = f.vlen
                    copy4(values_at(w, f, vl, 8, q), buf + p + 1, 0)  # the items past m are not counted
                    p += 1 + 4 * m
                    vl += m
                    f.vlen = vl
                    (<int32_t*>f.dst)[r] = <int32_t>vl
                    continue
                if <uint8_t>(buf[p] - 1) >= 0x7F:  # null, or a multi-byte varint
                    if buf[p] != 0 or not f.nullable:
                        break
                    p += 1  # null (a nullable ELR): empty, marked
                    (<int32_t*>f.dst)[r] = <int32_t>f.vlen
                    if r >= f.zeroed:  # the batch's first null: the mask is zeroed now, not per row
                        memset(f.ndst + f.zeroed, 0, n - f.zeroed)
                        f.zeroed = n
                    f.ndst[r] = 1
                    continue
                m = buf[p] - 1
                if 4 * m >= end - p:
                    break
                if m <= 4:  # the guess for the next row's count
                    f.last = buf[p]
                    f.lastm = m
                src = buf + p + 1
                p += 1 + 4 * m
                vl = f.vlen
                out = values_at(w, f, vl, m + 4, q)
                if m <= 4 and end - (src - buf) >= 16:
                    copy4(out, src, 0)  # the items past m are not counted
                else:
                    for k in range(m):
                        (<uint32_t*>out)[k] = be32(src + 4 * k)
                vl += m
                f.vlen = vl
                (<int32_t*>f.dst)[r] = <int32_t>vl
                continue
            if code == NUMBER:
                if f.size > end - p:
                    break
                if f.data != NULL:
                    put(f.size, f.kind, buf + p, f.dst, r)
                p += f.size
                continue
            if f.array == 1:
                if p >= end or <uint8_t>(buf[p] - 1) >= 0x7F:  # null, or a multi-byte varint
                    break
                m = buf[p] - 1
                p += 1
            else:
                if 4 > end - p:
                    break
                m = <int32_t>be32(buf + p)
                if m < 0:
                    break
                p += 4
            if m * f.size > end - p:
                break
            src = buf + p
            p += m * f.size
            if f.data == NULL:
                continue
            vl = f.vlen
            b = f.values
            if vl + m + 4 > b.cap:  # (growing keeps len items: count the batch's so far; the end recounts)
                w.at = q
                b.len = vl
                w.grow(b, m + 4)
            out = b.data
            if f.size == 4 and m <= 4 and end - (src - buf) >= 16:
                for k in range(4):  # a fixed count (unrolled, vectorised); the items past m are not counted
                    (<uint32_t*>out)[vl + k] = be32(src + 4 * k)
            elif f.size == 4:
                for k in range(m):
                    (<uint32_t*>out)[vl + k] = be32(src + 4 * k)
            else:
                for k in range(m):
                    put(f.size, f.kind, src + f.size * k, out, vl + k)
            vl += m
            f.vlen = vl
            (<int32_t*>f.dst)[r] = <int32_t>vl
        else:  # every field read
            if flexible:
                if p >= end or buf[p] != 0:
                    break
                p += 1
            r += 1
            q = p
            continue
        break
    # the whole rows count; an unfinished row's values are dropped (its offsets entry was never counted)
    if parents != NULL:
        for k in range(r0, r):
            parents[k] = <int32_t>parent
    if r < n:  # it stopped in a row: the arrays' values end at the last whole row's offset
        for i in range(nops):
            f = plans + i
            if f.values != NULL and f.data != NULL:
                f.vlen = (<int32_t*>f.data.data)[f.data.len + r - 1]
    w.pending[s] = r
    w.spare[s] -= r - r0
    w.rows[s] += r - r0
    at[0] = q
    return r - r0


cdef void flush_rows(Walker w, int s) noexcept:
    """take_rows' rows of struct s since the last flush, counted in its columns' lengths."""
    cdef StructC* st = &w.L.structs[s]
    cdef Plan* f
    cdef int64_t r = w.pending[s]
    cdef int i
    if r == 0:
        return
    if st.parent_col >= 0:
        w.data[st.parent_col].len += r
    for i in range(st.count):
        f = w.plans + st.first + i
        if f.data == NULL:
            continue
        f.data.len += r
        f.dst += r * f.data.itemsize
        if f.values != NULL:
            f.values.len = f.vlen
        if f.nulls != NULL:  # no null since the mask's last zeroing: zeroed here
            if f.zeroed < r:
                memset(f.ndst + f.zeroed, 0, r - f.zeroed)
            f.ndst += r
            f.zeroed = 0
            f.nulls.len += r
    w.pending[s] = 0


kc_ssse3_init()


def ssse3_ids(on: object = None) -> bool:
    """Whether partition_run copies ids by SSSE3 (the CPU's, found at import); ``on=False`` makes it take
    the SSE2 way, ``on=True`` the CPU's again (the tests run both ways on one machine). Returns the setting."""
    global kc_ssse3
    if on is not None:
        kc_ssse3 = kc_ssse3_init() if on else 0
    return kc_ssse3 != 0
