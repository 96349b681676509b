# Part of kcodec/columnar/_columnar.pyx (included there): the columns' memory. C buffers (Buf) grow while a run
# decodes and become numpy arrays without a copy (Column). Memory fresh from the OS costs a page fault per
# 4 KiB page (a quarter of a 10,000-topic decode's time), and glibc hands large freed blocks back to the OS
# at once; so a few large blocks of dropped columns are kept for the next decode (at most KEEP_BYTES).

DEF KEEP_BLOCKS = 64
DEF KEEP_BYTES = 16 << 20     # a 10,000-topic Metadata's columns (~7 MB) fit; kept for the process's life
DEF KEEP_MIN = 256 << 10      # smaller blocks: malloc keeps them itself, and hands back the ones freed last,
                              # still in the caches (a 1k-topic Metadata decode after the fallback engine:
                              # 265-280 µs, against 295-345 with 16 KiB, whose kept blocks had gone cold)

cdef char* kept[KEEP_BLOCKS]
cdef Py_ssize_t kept_size[KEEP_BLOCKS]
cdef int nkept = 0
cdef Py_ssize_t kept_bytes = 0
cdef Py_ssize_t n_resizes = 0  # every growth of a column (counts for tests, memory_counts())
cdef Py_ssize_t n_fresh = 0    # growths to a large block that no kept block served


cdef inline void drop_kept(int i) noexcept:
    """Removes entry i, keeping the rest in the order they were given back (oldest first)."""
    global nkept
    nkept -= 1
    memmove(&kept[i], &kept[i + 1], (nkept - i) * sizeof(char*))
    memmove(&kept_size[i], &kept_size[i + 1], (nkept - i) * sizeof(Py_ssize_t))


cdef void give_back(char* p, Py_ssize_t size) noexcept:
    """A column's block (untracked already): kept for reuse when large, else freed. The oldest kept blocks
    make room for it: after a switch to another message or size, blocks of the old shapes (which reuse
    would not take) would otherwise fill the room for good and every decode would fault in fresh pages."""
    global nkept, kept_bytes
    if size < KEEP_MIN or size > KEEP_BYTES:
        free(p)
        return
    while nkept and (nkept == KEEP_BLOCKS or kept_bytes + size > KEEP_BYTES):
        free(kept[0])
        kept_bytes -= kept_size[0]
        drop_kept(0)
    kept[nkept] = p
    kept_size[nkept] = size
    nkept += 1
    kept_bytes += size


cdef char* reuse(Py_ssize_t size, Py_ssize_t* got) noexcept:
    """The smallest kept block of at least size bytes (and at most a quarter more: a column holds no more
    memory than it would have had from malloc), its size in got; NULL when none."""
    global nkept, kept_bytes
    cdef int i, best = -1
    cdef char* p
    for i in range(nkept):
        if size <= kept_size[i] <= size + size // 4 and (best < 0 or kept_size[i] < kept_size[best]):
            best = i
    if best < 0:
        return NULL
    p = kept[best]
    got[0] = kept_size[best]
    kept_bytes -= got[0]
    drop_kept(best)
    return p


def memory_counts():
    """(column growths, large blocks no kept block served) since the module was loaded."""
    return n_resizes, n_fresh


def kept_memory():
    """(blocks, bytes) kept for reuse."""
    return nkept, kept_bytes


def release_kept():
    """Frees every kept block; returns the bytes freed."""
    global nkept, kept_bytes
    cdef Py_ssize_t freed = kept_bytes
    while nkept:
        nkept -= 1
        free(kept[nkept])
    kept_bytes = 0
    return freed


cdef int resize(Buf* b, Py_ssize_t cap) except -1:
    """Gives b room for cap items, keeping its items: a kept block when one fits, else realloc."""
    cdef Py_ssize_t got = 0, size = cap * b.itemsize
    cdef char* p = NULL
    global n_resizes, n_fresh
    n_resizes += 1
    if b.data != NULL:
        PyTraceMalloc_Untrack(TRACE_DOMAIN, <uintptr_t>b.data)
    if size >= KEEP_MIN:
        p = reuse(size, &got)
    if p != NULL:
        if b.data != NULL:
            memcpy(p, b.data, b.len * b.itemsize)
            give_back(b.data, b.cap * b.itemsize)
        cap = got // b.itemsize
    else:
        if size >= KEEP_MIN:
            n_fresh += 1
        p = <char*>realloc(b.data, size)
        if p == NULL:
            if b.data != NULL:
                PyTraceMalloc_Track(TRACE_DOMAIN, <uintptr_t>b.data, b.cap * b.itemsize)
            raise MemoryError()
    PyTraceMalloc_Track(TRACE_DOMAIN, <uintptr_t>p, cap * b.itemsize)
    b.data = p
    b.cap = cap
    return 0


cdef void release(Buf* b) noexcept:
    if b.data != NULL:
        PyTraceMalloc_Untrack(TRACE_DOMAIN, <uintptr_t>b.data)
        give_back(b.data, b.cap * b.itemsize)
        b.data = NULL


cdef class Column:
    """C memory that numpy adopts without a copy (np.frombuffer); given back with the last array over it."""
    cdef char* data
    cdef Py_ssize_t nbytes
    cdef Py_ssize_t size      # of the block
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __getbuffer__(self, Py_buffer* view, int flags):
        self.shape[0] = self.nbytes
        self.strides[0] = 1
        view.buf = self.data
        view.obj = self
        view.len = self.nbytes
        view.readonly = 0
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = self.shape
        view.strides = self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        if self.data != NULL:
            PyTraceMalloc_Untrack(TRACE_DOMAIN, <uintptr_t>self.data)
            give_back(self.data, self.size)


cdef Column adopt(Buf* b):
    """Hand a buffer's memory to a Column; trimmed to its length when a quarter or more is unused (reuse
    serves blocks up to a quarter larger than asked: trimming less would shrink a block each run, and the
    next run would find none of its size)."""
    cdef Column c = Column.__new__(Column)
    cdef Py_ssize_t nbytes = b.len * b.itemsize, size = b.cap * b.itemsize
    cdef char* p = b.data
    if p == NULL:  # numpy wants memory even for no items
        p = <char*>malloc(1)
        if p == NULL:
            raise MemoryError()
        size = 1
        PyTraceMalloc_Track(TRACE_DOMAIN, <uintptr_t>p, 1)
    elif nbytes < size - size // 4 and nbytes > 0:
        PyTraceMalloc_Untrack(TRACE_DOMAIN, <uintptr_t>p)
        p = <char*>realloc(p, nbytes)
        if p == NULL:
            p = b.data
        else:
            size = nbytes
        PyTraceMalloc_Track(TRACE_DOMAIN, <uintptr_t>p, size)
    c.data = p
    c.nbytes = nbytes
    c.size = size
    b.data = NULL
    b.len = b.cap = 0
    return c
