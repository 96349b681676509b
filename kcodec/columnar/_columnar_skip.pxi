# Part of kcodec/columnar/_columnar.pyx (included there, after _columnar_rows.pxi): skip_rows, which steps over
# rows nothing is kept of (a names-only scan's partitions), and its guess of the next row's lengths (RowGuess):
# a row whose length bytes are the last full row's is stepped over at once; anything else takes the general
# step, so the same rows and the same errors come out.


DEF GUESS_MAX = 10  # lengths a row guess holds: up to 9 arrays and the tagged fields' byte


cdef struct RowGuess:  # the last row skip_rows stepped over the full way, for the next ones of its struct
    Py_ssize_t size        # the row's bytes (0: no guess)
    int count              # the lengths below
    Py_ssize_t at[GUESS_MAX]   # each length's offset in the row (arrays' lengths, then the tags' byte)
    int wide[GUESS_MAX]        # a 4-byte length (else one byte)
    uint32_t value[GUESS_MAX]  # its bytes
    int quick              # the same for skip_rows' unrolled loops (quick_guess), made when it is recorded
    Py_ssize_t qa[8]
    uint8_t qv[8]
    int quick2             # the quick guess before it (0: none), tried when this one misses: a shape that
    Py_ssize_t size2       # alternates with the usual one (an ISR one replica short) costs no full row
    Py_ssize_t qa2[8]
    uint8_t qv2[8]


cdef inline bint same_lengths(const unsigned char* row, const RowGuess* g) noexcept nogil:
    """Whether a row's bytes at the guess's offsets are the guess's: then every step of the full way
    would read the same lengths at the same places, so the row has the guess's size."""
    cdef int k
    cdef uint32_t v
    for k in range(g.count):
        if g.wide[k]:
            memcpy(&v, row + g.at[k], 4)
            if v != g.value[k]:
                return False
        elif row[g.at[k]] != g.value[k]:
            return False
    return True


DEF QUICK_FOUR = 4   # quick_guess: up to four one-byte lengths (compact arrays, the tags' byte: Metadata v9+)
DEF QUICK_EIGHT = 8  # five to eight of them (DescribeTopicPartitions)


cdef inline void quick_guess(RowGuess* g) noexcept nogil:
    """g's quick form for skip_rows' unrolled inner loops, when its lengths are one byte each (compact):
    their offsets (qa) and values (qv), unused entries repeating the first, and which loop (QUICK_*); else
    0 (4-byte lengths stay with same_lengths: padded to four words they measured no faster)."""
    cdef int k
    g.quick = 0
    if not g.size or g.count < 1 or g.count > 8:
        return
    for k in range(g.count):
        if g.wide[k]:
            return
    for k in range(8):
        g.qa[k] = g.at[k] if k < g.count else g.at[0]
        g.qv[k] = <uint8_t>(g.value[k] if k < g.count else g.value[0])
    g.quick = QUICK_FOUR if g.count <= 4 else QUICK_EIGHT


cdef inline bint same4(const unsigned char* row, const Py_ssize_t* a, const uint8_t* v) noexcept nogil:
    return row[a[0]] == v[0] and row[a[1]] == v[1] and row[a[2]] == v[2] and row[a[3]] == v[3]


cdef int64_t skip_rows(const unsigned char* buf, Py_ssize_t end, const Step* steps, int nsteps, int flexible,
                       int64_t n, Py_ssize_t* at, RowGuess* g) noexcept nogil:
    """Steps over up to n instances of a struct of numbers that keeps nothing (a names-only scan's
    partitions), from at[0]; returns how many, with at[0] after them. A row whose lengths are the last
    full row's (``g``, kept across calls: a topic's partitions, then the next topic's) is one step; a row
    the full way records its lengths in ``g``. The usual guesses (quick_guess) are checked by unrolled loops
    of their own from locals (same_lengths' loop over the guess cost about 50 instructions a partition)."""
    cdef int64_t done = 0, m
    cdef int k, nl
    cdef const Step* st
    cdef Py_ssize_t q = at[0], q0, size = 0
    cdef Py_ssize_t a[8]
    cdef Py_ssize_t a2[8]
    cdef uint8_t v[8]
    cdef uint8_t v2[8]
    cdef int quick
    cdef uint32_t v4
    cdef bint record = nsteps <= GUESS_MAX
    cdef const Step* tail = steps + nsteps - 1  # the numbers after the last array (Layout ends every
    quick = g.quick                             # skipped struct's steps with one, without an array)
    if quick:
        size = g.size
        memcpy(a, g.qa, sizeof(a))
        memcpy(v, g.qv, sizeof(v))
    while done < n:
        if size:
            if quick == QUICK_FOUR:
                while done < n and size <= end - q and same4(buf + q, a, v):
                    prefetch(buf + q + PREFETCH_AHEAD)
                    q += size
                    done += 1
            else:
                while done < n and size <= end - q and same4(buf + q, a, v) and same4(buf + q, a + 4, v + 4):
                    prefetch(buf + q + PREFETCH_AHEAD)
                    q += size
                    done += 1
            if done == n:
                break
            if (g.quick2 and g.size2 <= end - q and same4(buf + q, g.qa2, g.qv2)
                    and (g.quick2 == QUICK_FOUR or same4(buf + q, g.qa2 + 4, g.qv2 + 4))):
                memcpy(a2, g.qa2, sizeof(a2))  # the two guesses change places
                memcpy(v2, g.qv2, sizeof(v2))
                memcpy(g.qa2, a, sizeof(a))
                memcpy(g.qv2, v, sizeof(v))
                memcpy(g.qa, a2, sizeof(a2))
                memcpy(g.qv, v2, sizeof(v2))
                memcpy(a, a2, sizeof(a2))
                memcpy(v, v2, sizeof(v2))
                g.quick2, g.quick = quick, g.quick2
                g.size2, g.size = size, g.size2
                quick = g.quick
                size = g.size
                continue
        elif g.size and g.size <= end - q and same_lengths(buf + q, g):
            prefetch(buf + q + PREFETCH_AHEAD)
            q += g.size
            done += 1
            continue
        prefetch(buf + q + PREFETCH_AHEAD)
        if quick and size:  # the guess that missed is the one before now
            g.quick2 = quick
            g.size2 = size
            memcpy(g.qa2, a, sizeof(a))
            memcpy(g.qv2, v, sizeof(v))
        g.size = 0
        g.quick = 0
        size = 0
        q0 = q
        nl = 0
        for k in range(nsteps - 1):  # each a run of numbers, then an array
            st = steps + k
            if st.run > end - q:
                at[0] = q0
                return done
            q += st.run
            if st.compact:
                if q >= end or buf[q] >= 0x80:
                    at[0] = q0
                    return done
                if record:
                    g.at[nl] = q - q0
                    g.wide[nl] = 0
                    g.value[nl] = buf[q]
                    nl += 1
                m = <int64_t>buf[q] - 1
                q += 1
            else:
                if 4 > end - q:
                    at[0] = q0
                    return done
                if record:
                    memcpy(&v4, buf + q, 4)
                    g.at[nl] = q - q0
                    g.wide[nl] = 1
                    g.value[nl] = v4
                    nl += 1
                m = <int32_t>be32(buf + q)
                q += 4
            if m < 0:
                if m == -1 and st.nullable:
                    continue
                at[0] = q0
                return done
            if m * st.elem > end - q:
                at[0] = q0
                return done
            q += m * st.elem
        if tail.run > end - q:
            at[0] = q0
            return done
        q += tail.run
        if flexible:
            if q >= end or buf[q] != 0:
                at[0] = q0
                return done
            if record:
                g.at[nl] = q - q0
                g.wide[nl] = 0
                g.value[nl] = 0
                nl += 1
            q += 1
        if record:
            g.count = nl
            g.size = q - q0
            quick_guess(g)
            quick = g.quick
            if quick:
                size = g.size
                memcpy(a, g.qa, sizeof(a))
                memcpy(v, g.qv, sizeof(v))
        done += 1
    at[0] = q
    return n
