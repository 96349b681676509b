# Part of kcodec/_columnar.pyx (included there): a run's columns made into kcodec.columnar's result objects
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


@cython.final
cdef class Result:
    """How a layout's columns become the result. ``arrays``: per present column (-1 when the root reads it
    without an array), its numpy dtype, the values' dtype or None, and whether it holds uuids; ``tables``:
    (struct, name, ((attr, column, what), ...)); ``root``: (attr, column, what, kind, absent) where absent
    is a one-item tuple of a field this version lacks; ``absent``: (column, struct, make) for the other
    absent fields, make(rows) giving the column; ``names``: (names column, internal column) for a
    names-only scan, else None. ``api``: what it calls (numpy and kcodec.columnar's classes)."""
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

    def __cinit__(self, list arrays, list tables, list root, list absent, names, int ncolumns, message,
                  version, dict api):
        self.arrays, self.tables, self.root, self.absent, self.names = arrays, tables, root, absent, names
        self.ncolumns = ncolumns
        self.message, self.version = message, version
        self.frombuffer, self.bool_, self.arange = api["frombuffer"], api["bool_"], api["arange"]
        self.index, self.root_value = api["index"], api["root_value"]
        self.Tables, self.Table, self.Lists, self.TopicNames = (api["Tables"], api["Table"], api["Lists"],
                                                                api["TopicNames"])

    cdef object make(self, Walker w):
        cdef Layout L = w.L
        cdef list raw = [None] * self.ncolumns
        cdef list rows = [w.rows[i] for i in range(L.nstructs)]
        cdef int i
        cdef object d, v, n
        frombuffer = self.frombuffer
        for i in range(L.ncols):
            if L.is_object[i]:
                raw[i] = (None, None, None, w.objects[i])
                continue
            spec = self.arrays[i]
            if spec is None:  # a root number: read below, no array
                continue
            d = frombuffer(adopt(&w.data[i]), spec[0])
            if spec[2]:
                d = d.reshape(-1, 16)
            v = frombuffer(adopt(&w.values[i]), spec[1]) if L.value_size[i] else None
            n = frombuffer(adopt(&w.nulls[i]), self.bool_) if L.has_nulls[i] else None
            raw[i] = (d, v, n, None)
        for col, s, make in self.absent:
            raw[col] = make(rows[s])
        root = {}
        for attr, col, what, kind, absent in self.root:
            if absent is not None:
                root[attr] = absent[0]
            elif what == W_SCALAR:
                root[attr] = scalar_value(kind, w.data[col].data)
            elif what == W_OBJECTS:
                root[attr] = w.objects[col][0]
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
                    columns[attr] = Lists(d, self.arange(d[-1], dtype=self.index), n)
                else:
                    columns[attr] = d
            tables[name] = self.Table(name, rows[s], columns)
        return self.Tables(self.message, self.version, root, tables)
