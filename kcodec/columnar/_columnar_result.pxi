# Part of kcodec/columnar/_columnar.pyx (included there): a run's columns made into kcodec.columnar's result objects
# (Tables, or TopicNames for the names-only scan) here rather than in Python: at 10 topics that Python was
# three quarters of the call, and after other work its bytecode and objects are out of the caches. What the
# result is made of is worked out once per layout by kcodec.columnar (Result's arguments); its _assemble
# builds the same objects for the fallback engine, and the tests compare the two engines' results.

# What a column holds (kcodec.columnar's SCALAR, UUIDS, OBJECTS, LISTS, CHILDREN)
DEF W_SCALAR = 0
DEF W_UUIDS = 1
DEF W_OBJECTS = 2
DEF W_LISTS = 3
DEF W_CHILDREN = 4


cdef object scalar_value(int kind, const char* p):
    """The one value of a root column of int16 or int32 (the root numbers of the three messages), as
    numpy's item() gives it; kcodec.columnar gives the others arrays."""
    if kind == INT32:
        return (<const int32_t*>p)[0]
    return (<const int16_t*>p)[0]


cdef extern from *:
    """
    /* Four entries of numpy's C-API table, reached through the capsule numpy publishes
       (numpy._core._multiarray_umath._ARRAY_API), as numpy's own import_array() reaches them: kcodec builds
       without numpy, so without its headers. numpy keeps every entry's index fixed (its ABI); use_numpy_api
       checks the table before the first use, and without it arrays come from numpy.frombuffer. */
    static void **kc_np_api = NULL;
    typedef PyObject *(*kc_descr_from_type)(int);
    typedef PyObject *(*kc_new_from_descr)(PyTypeObject *, PyObject *, int, const Py_ssize_t *,
                                           const Py_ssize_t *, void *, int, PyObject *);
    typedef int (*kc_set_base)(PyObject *, PyObject *);
    #define KC_NP_ARRAY_TYPE 2
    #define KC_NP_DESCR_FROM_TYPE 45
    #define KC_NP_NEW_FROM_DESCR 94
    #define KC_NP_SET_BASE 282
    #define KC_NP_CARRAY 0x0501  /* C_CONTIGUOUS | ALIGNED | WRITEABLE */

    /* An array of type_num over data (nd 1 or 2), kept alive by base; a new reference, NULL on error. */
    static PyObject *kc_np_array(int type_num, int nd, Py_ssize_t *dims, void *data, PyObject *base) {
        PyObject *descr = ((kc_descr_from_type)kc_np_api[KC_NP_DESCR_FROM_TYPE])(type_num);
        if (descr == NULL) return NULL;
        PyObject *arr = ((kc_new_from_descr)kc_np_api[KC_NP_NEW_FROM_DESCR])(
            (PyTypeObject *)kc_np_api[KC_NP_ARRAY_TYPE], descr, nd, dims, NULL, data, KC_NP_CARRAY, NULL);
        if (arr == NULL) return NULL;  /* (the descriptor's reference is taken, even on failure) */
        Py_INCREF(base);
        if (((kc_set_base)kc_np_api[KC_NP_SET_BASE])(arr, base) < 0) {  /* (takes base's reference) */
            Py_DECREF(arr);
            return NULL;
        }
        return arr;
    }
    """
    void** kc_np_api
    int KC_NP_ARRAY_TYPE
    object kc_np_array(int type_num, int nd, Py_ssize_t* dims, void* data, object base)


cdef extern from "Python.h":
    void* PyCapsule_GetPointer(object capsule, const char* name) except? NULL


def use_numpy_api(capsule, ndarray, check):
    """Arrays straight from numpy's C API (a third of the cost of numpy.frombuffer) when its table is the
    one expected: ``ndarray`` at its place and ``check(make)`` true of a trial array made through it;
    otherwise numpy.frombuffer stays. Returns whether the API is used."""
    global kc_np_api
    cdef void** api = NULL
    kc_np_api = NULL
    try:
        api = <void**>PyCapsule_GetPointer(capsule, NULL)
    except (TypeError, ValueError):  # not a capsule, or one of another name
        return False
    if api == NULL or api[KC_NP_ARRAY_TYPE] != <void*>ndarray:
        return False
    kc_np_api = api
    ok = False
    try:
        ok = bool(check(trial_array))
    finally:  # a check that fails, or raises, leaves numpy.frombuffer in use
        if not ok:
            kc_np_api = NULL
    return ok


def trial_array(int type_num, Py_ssize_t itemsize, data):
    """An array over a Column holding data's bytes, made through the C API (use_numpy_api's check)."""
    cdef Buf b = Buf(NULL, 0, 0, 1, 0)
    cdef bytes raw = bytes(data)
    if kc_np_api == NULL:  # (called outside use_numpy_api's check: no table to make arrays with)
        raise RuntimeError("trial_array: numpy's C API is not in use")
    if itemsize < 0:
        raise ValueError(f"trial_array: itemsize {itemsize} is negative")
    resize(&b, max(len(raw), 1))
    memcpy(b.data, <const char*>raw, len(raw))
    b.len = len(raw)
    out = column_array(adopt(&b), type_num, itemsize)
    if out.nbytes > len(raw):  # a type wider than itemsize says: the array would reach past data's bytes
        raise ValueError(f"trial_array: type {type_num} is wider than itemsize {itemsize}")
    return out


cdef object column_array(Column c, int type_num, Py_ssize_t itemsize):
    """The numpy array over a Column: of type_num items of itemsize bytes, or (when itemsize is 0) rows of
    16 uint8 (uuids)."""
    cdef Py_ssize_t dims[2]
    if itemsize:
        dims[0] = c.nbytes // itemsize
        return kc_np_array(type_num, 1, dims, c.data, c)
    dims[0] = c.nbytes // 16
    dims[1] = 16
    return kc_np_array(type_num, 2, dims, c.data, c)


cdef bint fits(dtype, num, itemsize) except -1:
    """Whether an array of dtype, of type number num, has items of itemsize bytes (0: rows of 16 bytes)."""
    return (type(num) is int and dtype.num == num and type(itemsize) is int
            and dtype.itemsize == (itemsize if itemsize else 1))


@cython.final
cdef class Result:
    """How a layout's columns become the result. ``arrays``: per present column, None when the root reads
    it without an array, else (dtype, its type number, bytes per item or 0 for rows of 16 uuid bytes,
    values' dtype, its type number, bytes per value); ``tables``: (struct, name, ((attr, column, what),
    ...)); ``root``: (attr, column, what, kind, absent) where absent is a one-item tuple of a field this
    version lacks; ``absent``: (column, struct, make) for the other absent fields, make(rows) giving the
    column; ``names``: (names column, internal column) for a names-only scan, else None. ``api``: what it
    calls (numpy and kcodec.columnar's classes)."""
    cdef list arrays
    cdef list tables
    cdef list root
    cdef list absent
    cdef object names
    cdef int ncolumns
    cdef object message
    cdef object version
    cdef object frombuffer, bool_, arange, index, root_value
    cdef object Tables, Table, Lists, TopicNames
    cdef int bool_num

    def __cinit__(self, list arrays, list tables, list root, list absent, names, int ncolumns, message,
                  version, dict api):
        # make() indexes these without bounds checks and arrays over its columns by these types and item
        # sizes: checked here, once, on copies (a caller's list may change later; crash4)
        arrays, tables, root, absent = list(arrays), list(tables), list(root), list(absent)
        if not 0 <= len(arrays) <= ncolumns:
            raise ValueError(f"Result: {len(arrays)} arrays for {ncolumns} columns")
        for spec in arrays:
            if spec is not None and not (type(spec) is tuple and len(spec) == 6 and fits(spec[0], spec[1], spec[2])
                                         and (spec[3] is None or fits(spec[3], spec[4], spec[5]))):
                raise ValueError(f"Result: an array spec is (dtype, its number, its size) twice, not {spec!r:.80}")
        for entry in root:
            if not (type(entry) is tuple and len(entry) == 5 and type(entry[1]) is int
                    and (0 <= entry[1] < len(arrays) if entry[4] is None  # (read from the walk's columns)
                         else type(entry[4]) is tuple and len(entry[4]) == 1 and 0 <= entry[1] < ncolumns)):
                raise ValueError(f"Result: a root entry is (attr, column, what, kind, absent), not {entry!r:.80}")
        for entry in absent:
            if not (type(entry) is tuple and len(entry) == 3 and type(entry[0]) is int
                    and len(arrays) <= entry[0] < ncolumns):
                raise ValueError(f"Result: an absent entry is (absent column, struct, make), not {entry!r:.80}")
        if names is not None and not (type(names) is tuple and len(names) == 2
                                      and all(type(c) is int and 0 <= c < ncolumns for c in names)):
            raise ValueError(f"Result: names is two columns or None, not {names!r:.80}")
        if api["bool_"].itemsize != 1:
            raise ValueError("Result: the null masks' dtype is of one byte")
        self.arrays, self.tables, self.root, self.absent, self.names = arrays, tables, root, absent, names
        self.ncolumns = ncolumns
        self.message, self.version = message, version
        self.frombuffer, self.bool_, self.arange = api["frombuffer"], api["bool_"], api["arange"]
        self.bool_num = self.bool_.num
        self.index, self.root_value = api["index"], api["root_value"]
        self.Tables, self.Table, self.Lists, self.TopicNames = (api["Tables"], api["Table"], api["Lists"],
                                                                api["TopicNames"])

    cdef object array(self, Column c, dtype, int num, Py_ssize_t itemsize):
        if kc_np_api != NULL:
            return column_array(c, num, itemsize)
        a = self.frombuffer(c, dtype)
        return a if itemsize else a.reshape(-1, 16)

    cdef object make(self, Walker w):
        cdef Layout L = w.L
        cdef list raw = [None] * self.ncolumns
        cdef list rows = [w.rows[i] for i in range(L.nstructs)]
        cdef int i
        cdef object d, v, n
        cdef Buf* b
        for i in range(L.ncols):
            if L.is_object[i]:
                raw[i] = (None, None, None, w.objects[i])
                continue
            spec = self.arrays[i]
            if spec is None:  # a root number: read below, no array
                continue
            d = self.array(adopt(&w.data[i]), spec[0], spec[1], spec[2])
            v = self.array(adopt(&w.values[i]), spec[3], spec[4], spec[5]) if L.value_size[i] else None
            n = self.array(adopt(&w.nulls[i]), self.bool_, self.bool_num, 1) if L.has_nulls[i] else None
            raw[i] = (d, v, n, None)
        for col, s, make in self.absent:
            made = make(rows[s])
            if type(made) is not tuple or len(made) != 4:  # (indexed below without bounds checks)
                raise ValueError(f"Result: an absent column is made of 4 items, not {made!r:.80}")
            raw[col] = made
        root = {}
        for attr, col, what, kind, absent in self.root:
            if absent is not None:
                root[attr] = absent[0]
            elif what == W_SCALAR and self.arrays[col] is None:  # (int16, int32: no array made)
                b = &w.data[col]
                if b.data == NULL or b.len < 1 or b.itemsize < (4 if kind == INT32 else 2):
                    raise ValueError(f"Result: root column {col} holds no int{32 if kind == INT32 else 16}")
                root[attr] = scalar_value(kind, b.data)
            elif what == W_OBJECTS:
                objs = w.objects[col]
                if not objs:
                    raise ValueError(f"Result: root column {col} holds no object")
                root[attr] = objs[0]
            else:
                root[attr] = self.root_value(what, *raw[col])
        if self.names is not None:
            return self.TopicNames(raw[self.names[0]][3], raw[self.names[1]][0], root)
        tables = {}
        Lists = self.Lists
        for s, name, plan in self.tables:
            columns = {}
            for attr, col, what in plan:
                d, v, n, objs = raw[col]
                if what == W_OBJECTS:
                    columns[attr] = objs
                elif what == W_LISTS:
                    columns[attr] = Lists(d, v, n)
                elif what == W_CHILDREN and n is not None:
                    columns[attr] = Lists(d, self.arange(d[len(d) - 1], dtype=self.index), n)
                else:
                    columns[attr] = d
            tables[name] = self.Table(name, rows[s], columns)
        return self.Tables(self.message, self.version, root, tables)
