# Part of kcodec/columnar/_columnar.pyx (included there): each column's first allocation sized from the
# layout's last whole run (expect), and that run's items per byte recorded for the next one (learn).


cdef void expect(Walker w, Py_ssize_t nbytes) noexcept:
    """Each column's first allocation: as many items per byte as the layout's last whole run had (a poll
    of the same cluster decodes the same shape), 5% more, in one step instead of a dozen; else it grows
    as it goes. Capped at an item per input byte, so that a hint from another shape stays within the
    input's size (a column that needs more grows as before)."""
    cdef Layout L = w.L
    cdef Buf* bufs[3]
    cdef int i, k
    cdef double x
    for i in range(L.ncols):
        bufs[0], bufs[1], bufs[2] = &w.data[i], &w.values[i], &w.nulls[i]
        for k in range(3):
            x = L.learned[3 * i + k] * nbytes * 1.05
            bufs[k].first = <Py_ssize_t>min(x, <double>nbytes) + 1 if x > 0 else 0


cdef void learn(Walker w, Py_ssize_t nbytes) noexcept:
    """The items per byte of a whole run, for the next run's first allocations (expect)."""
    cdef Layout L = w.L
    cdef int i
    if nbytes <= 0:
        return
    for i in range(L.ncols):
        L.learned[3 * i] = <double>w.data[i].len / nbytes
        L.learned[3 * i + 1] = <double>w.values[i].len / nbytes
        L.learned[3 * i + 2] = <double>w.nulls[i].len / nbytes
