# Included by _cwriter.pyx: the vectorcall fast path of RecordsWriter.append (and so BatchBuilder.append).

# append's common calls (bytes, bytes, no headers, an int or no timestamp; positional or by keyword) parsed
# here: Cython's method and its wrapper for arguments with keywords and defaults fill an array of
# four new references, look for keywords and drop the references again. RecordsWriter's `append`, and
# BatchBuilder's (builder_classes: CPython's call of a method descriptor takes its inlined path only for an
# instance of the descriptor's own type), become plain methods of the same name, doc and signature whose C
# function is append_fast; any other call goes on to Cython's method unchanged (the same checks and errors).
cdef extern from *:
    """
    static PyMethodDef kc_append_def;

    /* the original method called as unbound, self first (a small array on the stack for append's few) */
    static PyObject *kc_append_general(PyObject *general, PyObject *self, PyObject **args, Py_ssize_t nargs,
                                       PyObject *kwnames) {
        PyObject *stack[8];
        PyObject **all = stack, *out;
        Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0), i;
        if (n + 1 > 8 && !(all = PyMem_Malloc((n + 1) * sizeof(PyObject *)))) return PyErr_NoMemory();
        all[0] = self;
        for (i = 0; i < n; i++) all[i + 1] = args[i];
        out = PyObject_Vectorcall(general, all, nargs + 1, kwnames);
        if (all != stack) PyMem_Free(all);
        return out;
    }

    static int kc_install_append(PyObject *type, void *fast, const char *doc) {
        PyObject *descr;
        int rc;
        kc_append_def.ml_name = "append";  /* (the same each time: one definition, a method per type) */
        kc_append_def.ml_meth = (PyCFunction)(void (*)(void))fast;
        kc_append_def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
        kc_append_def.ml_doc = doc;
        descr = PyDescr_NewMethod((PyTypeObject *)type, &kc_append_def);
        if (descr == NULL) return -1;
        rc = PyDict_SetItemString(((PyTypeObject *)type)->tp_dict, "append", descr);
        Py_DECREF(descr);
        if (rc < 0) return -1;
        PyType_Modified((PyTypeObject *)type);
        return 0;
    }
    """
    object kc_append_general(object general, object self, PyObject** args, Py_ssize_t nargs, PyObject* kwnames)
    int kc_install_append(object type, void* fast, const char* doc) except -1


cdef object _append_general = RecordsWriter.__dict__["append"]
cdef bytes _append_doc = ("append($self, key, value, headers=(), timestamp=None)\n--\n\n"
                          + _append_general.__doc__).encode()  # (kept: the method's doc points into it)


cdef str _HEADERS = intern("headers"), _TIMESTAMP = intern("timestamp")  # (a call's keywords: interned names)
cdef tuple _NO_HEADERS = ()


cdef int append_plain(RecordsWriter w, PyObject* key, PyObject* value, PyObject* headers,
                      PyObject* timestamp) except -1:
    """Write a record of bytes for key and value, no headers and an int or no timestamp: 1; any other: 0."""
    cdef int64_t ts
    if not (type(<object>key) is bytes and type(<object>value) is bytes and type(<object>headers) is tuple
            and not PyTuple_GET_SIZE(<object>headers)):
        return 0
    if type(<object>timestamp) is int:
        ts = <object>timestamp
    elif timestamp == <PyObject*>None:
        ts = now_ms()
    else:
        return 0
    write_plain(w, PyBytes_AS_STRING(<object>key), PyBytes_GET_SIZE(<object>key),
                PyBytes_AS_STRING(<object>value), PyBytes_GET_SIZE(<object>value), ts)
    return 1


cdef object append_fast(object self, PyObject** args, Py_ssize_t nargs, PyObject* kwnames):
    """append's common calls, positional or by keyword; anything else (a name it does not know at once
    included) goes on to Cython's method. Four positional arguments, the producer loop's call, are checked
    and written here without a further call."""
    cdef RecordsWriter w = <RecordsWriter>self
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* headers = <PyObject*>_NO_HEADERS
    cdef PyObject* timestamp = <PyObject*>None
    cdef PyObject* name
    cdef Py_ssize_t nk, i
    if kwnames is NULL and nargs == 4:
        key, value, headers, timestamp = args[0], args[1], args[2], args[3]
        if (type(<object>key) is bytes and type(<object>value) is bytes and type(<object>timestamp) is int
                and type(<object>headers) is tuple and not PyTuple_GET_SIZE(<object>headers)):
            write_plain(w, PyBytes_AS_STRING(<object>key), PyBytes_GET_SIZE(<object>key),
                        PyBytes_AS_STRING(<object>value), PyBytes_GET_SIZE(<object>value), <object>timestamp)
            return delta(w._count - 1)
    elif kwnames is NULL and 2 <= nargs <= 3:
        if append_plain(w, args[0], args[1], args[2] if nargs == 3 else headers, timestamp):
            return delta(w._count - 1)
    elif kwnames is not NULL and 2 <= nargs <= 3 and nargs + PyTuple_GET_SIZE(<object>kwnames) <= 4:
        nk = PyTuple_GET_SIZE(<object>kwnames)
        if nargs == 3:
            headers = args[2]
        for i in range(nk):
            name = PyTuple_GET_ITEM(<object>kwnames, i)
            if name == <PyObject*>_TIMESTAMP:  # (nargs is 3 at most here)
                timestamp = args[nargs + i]
            elif name == <PyObject*>_HEADERS and nargs < 3:
                headers = args[nargs + i]
            else:
                break
        else:
            if append_plain(w, args[0], args[1], headers, timestamp):
                return delta(w._count - 1)
    return kc_append_general(_append_general, self, args, nargs, kwnames)


kc_install_append(RecordsWriter, <void*>append_fast, _append_doc)
