# Part of kcodec/columnar/_columnar.pyx (included there): the layout a run follows (fields, structs, the skip steps of
# structs that keep nothing) and the C buffers that become numpy columns.

cdef struct OpC:
    int kind
    int array
    int nullable
    int compact
    int sub         # struct index of a struct field, else -1
    int col         # the column it feeds, -1: validate and skip
    int fixed       # size of a fixed-size scalar, else 0
    Py_ssize_t elem_min  # fewest bytes per array element
    int how         # walk's case for it (HOW_*), worked out once: one switch per field instead of a chain of tests


# walk's cases: its in-line paths, each falling back to the full one (array / scalar) when it cannot finish
DEF HOW_FULL = 0    # anything else: array or scalar
DEF HOW_SKIP = 1    # a number not kept
DEF HOW_NUM = 2     # a number kept
DEF HOW_NUMS = 3    # an array of numbers
DEF HOW_STR = 4     # a compact string
DEF HOW_UUID = 5    # a uuid


DEF TOPIC_KEPT = 6  # fixed-size values a topic row may keep (topic_rows, table_topic_rows)


cdef struct TopicShape:  # a topic (_columnar_names.pxi, _columnar_topics.pxi): fixed bytes, a kept string,
    Py_ssize_t before    # fixed bytes, an array of skipped structs (partitions), fixed bytes
    Py_ssize_t between
    Py_ssize_t after
    int name_compact
    int name_col
    int parts_op         # the partitions' op
    int nkept            # kept numbers: in which run of fixed bytes, where in it, their op
    int npre             # (those before the partitions first)
    int kept_part[TOPIC_KEPT]
    Py_ssize_t kept_off[TOPIC_KEPT]
    int kept_op[TOPIC_KEPT]
    int kept_col[TOPIC_KEPT]
    int kept_size[TOPIC_KEPT]   # bytes (16: a uuid)
    int kept_kind[TOPIC_KEPT]


cdef struct StructC:
    int first
    int count
    int flexible
    int parent_col  # the column that takes each row's parent row, -1 when none
    int skip        # nothing kept and only numbers (a names-only scan's partitions): skip_rows' steps
    int plain       # only numbers and arrays of numbers, something kept: take_rows
    int first_step  # its steps in Layout.steps
    int nsteps
    int named       # a topic: 1 of a names-only scan (topic_rows), 2 of tables (table_topic_rows); its shape
    TopicShape topic


cdef struct Step:
    Py_ssize_t run  # fixed-size bytes to step over (a run of number fields), then
    int elem        # an array of numbers of this size (0: none)
    int compact
    int nullable


cdef struct Buf
cdef struct RowGuess  # skip_rows' guess of the next row (_columnar_skip.pxi)


cdef struct Plan:   # a plain struct's field in take_rows
    int code        # which case of the row loop (_columnar_rows.pxi)
    int kind
    int size        # bytes per number
    int array       # 0: a number, 1: a compact array of numbers, 2: one with an int32 length
    Buf* data       # its column (one item per row), NULL when not kept
    Buf* values     # an array's values
    Buf* nulls      # an array's null mask, or NULL
    int nullable    # a null array is allowed
    char* ndst      # its null mask's first free item in this batch
    int64_t zeroed  # the batch's rows whose mask is zeroed (at the first null: the rows reserved so far)
    char* dst       # its column's first free item in this batch of rows
    int64_t vlen    # values written, the unfinished row's included
    char* vdata     # the values' memory and capacity (items), as of this batch
    Py_ssize_t vcap
    int last        # a compact array's last length byte (at most 4 items; -1: none), and its count: the
    int64_t lastm   # guess for the next row's
    int shape       # a struct's first field: partition_shape of its struct (worked out once, not per call)


cdef struct Buf:
    char* data
    Py_ssize_t len   # items
    Py_ssize_t cap   # items
    Py_ssize_t itemsize
    Py_ssize_t first # items its first allocation takes (from the last run of the layout), 0: grow as it goes


cdef int how_of(const OpC* op) noexcept:
    if op.fixed:
        return HOW_NUMS if op.array else HOW_NUM if op.col >= 0 else HOW_SKIP
    if op.array:
        return HOW_FULL
    if op.kind == STRING and op.compact:
        return HOW_STR
    return HOW_UUID if op.kind == UUID else HOW_FULL


cdef class Layout:
    """A message version's fields as C arrays, and what each column is."""
    cdef OpC* ops
    cdef StructC* structs
    cdef Step* steps
    cdef int nops
    cdef int nstructs
    cdef int ncols
    cdef Py_ssize_t* itemsize      # per column: bytes per value (offsets for lists: 8)
    cdef Py_ssize_t* value_size    # per column: bytes per list value, 0 when not a list of numbers
    cdef int* has_nulls            # per column: keeps a null mask
    cdef int* is_object            # per column: a Python list (strings, bytes)
    cdef int* is_offsets           # per column: offsets (int32, one more than rows) of lists or child tables
    cdef double* learned           # per column's data, values, nulls: items per input byte, last whole run
    cdef list attrs

    def __cinit__(self, list ops not None, list structs not None, list columns not None):
        """ops: (kind, array, nullable, compact, sub, col, fixed, elem_min, attr) in struct order;
        structs: (first, count, flexible, parent_col); columns: (itemsize, value_size, nulls, is_object,
        is_offsets)."""
        cdef int i, j
        self.nops = len(ops)
        self.nstructs = len(structs)
        self.ncols = len(columns)
        self.ops = <OpC*>malloc(max(self.nops, 1) * sizeof(OpC))
        self.structs = <StructC*>malloc(max(self.nstructs, 1) * sizeof(StructC))
        self.itemsize = <Py_ssize_t*>malloc(max(self.ncols, 1) * sizeof(Py_ssize_t))
        self.value_size = <Py_ssize_t*>malloc(max(self.ncols, 1) * sizeof(Py_ssize_t))
        self.has_nulls = <int*>malloc(max(self.ncols, 1) * sizeof(int))
        self.is_object = <int*>malloc(max(self.ncols, 1) * sizeof(int))
        self.is_offsets = <int*>malloc(max(self.ncols, 1) * sizeof(int))
        self.learned = <double*>calloc(3 * max(self.ncols, 1), sizeof(double))
        if (self.learned == NULL or self.is_offsets == NULL or self.ops == NULL or self.structs == NULL
                or self.itemsize == NULL or self.value_size == NULL or self.has_nulls == NULL
                or self.is_object == NULL):
            raise MemoryError()
        self.attrs = []
        for i, o in enumerate(ops):
            self.ops[i].kind, self.ops[i].array, self.ops[i].nullable, self.ops[i].compact = o[0], o[1], o[2], o[3]
            self.ops[i].sub, self.ops[i].col, self.ops[i].fixed, self.ops[i].elem_min = o[4], o[5], o[6], o[7]
            self.attrs.append(o[8])
            self.ops[i].how = how_of(&self.ops[i])
        for i, s in enumerate(structs):
            self.structs[i].first, self.structs[i].count = s[0], s[1]
            self.structs[i].flexible, self.structs[i].parent_col = s[2], s[3]
            self.structs[i].skip = s[3] < 0 and all(
                ops[k][5] < 0 and ops[k][6] > 0 for k in range(s[0], s[0] + s[1]))
            self.structs[i].plain = not self.structs[i].skip and s[1] > 0 and all(
                ops[k][6] > 0 for k in range(s[0], s[0] + s[1]))
        self.steps = <Step*>malloc((self.nops + self.nstructs + 1) * sizeof(Step))  # a step per field, one more per struct
        if self.steps == NULL:
            raise MemoryError()
        j = 0
        for i in range(self.nstructs):  # a skipped struct's fields as steps: runs of numbers, each then an array
            self.structs[i].first_step = j
            if self.structs[i].skip:
                self.steps[j] = Step(0, 0, 0, 0)
                for o in ops[self.structs[i].first:self.structs[i].first + self.structs[i].count]:
                    if o[1]:  # an array: ends the step
                        self.steps[j].elem, self.steps[j].compact, self.steps[j].nullable = o[6], o[3], o[2]
                        j += 1
                        self.steps[j] = Step(0, 0, 0, 0)
                    else:
                        self.steps[j].run += o[6]
                j += 1
            self.structs[i].nsteps = j - self.structs[i].first_step
        for i in range(self.nstructs):  # (after every struct's skip flag)
            self.structs[i].named = topic_shape(self, ops, i)
        for i, c in enumerate(columns):
            self.itemsize[i], self.value_size[i], self.has_nulls[i], self.is_object[i], self.is_offsets[i] = c

    def __dealloc__(self):
        free(self.ops)
        free(self.steps)
        free(self.structs)
        free(self.itemsize)
        free(self.value_size)
        free(self.has_nulls)
        free(self.is_object)
        free(self.is_offsets)
        free(self.learned)
