# Part of kcodec/core/_fast.pyx (included there): a deallocator of its own for the generated classes' instances.

cdef extern from *:
    """
    #include "structmember.h"
    /* The tp_dealloc of a generated class that a decode has prepared, in place of CPython's subtype_dealloc,
       which per object walks the class's bases twice and looks for finalizers, a __dict__ and weakrefs: 16%
       of a 1,000-topic Metadata response's decode and free (perf). Adopted classes have no finalizer and no
       __dict__; their slots and their bases' are object slots. A Python subclass of one keeps
       subtype_dealloc, which clears the subclass's own slots and then calls this (its first base with another
       dealloc): this clears from the adopted class down, frees the object the subclass's way (tp_free), and
       drops the reference to the type, as a heap type's dealloc does. Allocation stays CPython's: free lists
       of kcodec's own were tried and dropped (issue 12, stop 26): they made a 1,000-name request's decode
       and free 10% cheaper again, but a 10k-topic response's 20% dearer, its topics (88-byte blocks) no
       longer beside their partitions (96) as pymalloc's 96-byte class places both. */
    static void kc_dealloc(PyObject* self) {
        PyTypeObject* tp = Py_TYPE(self);
        PyTypeObject* b = tp;
        PyObject** slot;
        PyObject** end;
        PyObject_GC_UnTrack(self);
        Py_TRASHCAN_BEGIN(self, kc_dealloc)
        if (tp->tp_weaklistoffset > 0 && *(PyObject**)((char*)self + tp->tp_weaklistoffset) != NULL)
            PyObject_ClearWeakRefs(self);  /* (a subclass's __weakref__) */
        while (b->tp_dealloc != kc_dealloc) b = b->tp_base;  /* a subclass's own slots are cleared */
        /* the adopted class's slots and its bases' fill its instance from the header on (kc_adopt checks):
           one pass over them, not a walk of each class's member table (a third of this function's cost) */
        end = (PyObject**)((char*)self + b->tp_basicsize);
        for (slot = (PyObject**)((char*)self + sizeof(PyObject)); slot < end; slot++)
            Py_XDECREF(*slot);  /* (no NULL stored: nothing reaches a freed object, as tuple's dealloc) */
        tp->tp_free(self);
        Py_DECREF(tp);
        Py_TRASHCAN_END
    }
    /* Whether tp's instances are object slots alone, one after another from the header to tp_basicsize:
       every member of tp and its heap bases a writable object slot, each word covered once. */
    static int kc_flat_slots(PyTypeObject* tp) {
        Py_ssize_t words = (tp->tp_basicsize - (Py_ssize_t)sizeof(PyObject)) / (Py_ssize_t)sizeof(PyObject*);
        Py_ssize_t count = 0, k;
        PyTypeObject* b;
        PyMemberDef* m;
        unsigned char* seen;
        int ok = 1;
        if (words < 0 || tp->tp_basicsize != (Py_ssize_t)sizeof(PyObject) + words * (Py_ssize_t)sizeof(PyObject*))
            return 0;
        seen = (unsigned char*)PyMem_Calloc(words + 1, 1);
        if (seen == NULL) return 0;
        for (b = tp; ok && b != NULL && (b->tp_flags & Py_TPFLAGS_HEAPTYPE); b = b->tp_base) {
            for (m = b->tp_members; ok && m != NULL && m->name != NULL; m++) {
                k = (m->offset - (Py_ssize_t)sizeof(PyObject)) / (Py_ssize_t)sizeof(PyObject*);
                if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset < (Py_ssize_t)sizeof(PyObject)
                        || (m->offset - (Py_ssize_t)sizeof(PyObject)) % (Py_ssize_t)sizeof(PyObject*) != 0
                        || k >= words || seen[k])
                    ok = 0;
                else {
                    seen[k] = 1;
                    count++;
                }
            }
        }
        PyMem_Free(seen);
        return ok && count == words;
    }
    /* Gives a generated class kc_dealloc: 1 when it has it (now or before), 0 when it cannot (not a heap
       type made of object slots alone (kc_flat_slots) over heap bases with CPython's deallocator and no
       finalizer). */
    static int kc_adopt(PyObject* cls) {
        PyTypeObject* tp = (PyTypeObject*)cls;
        PyTypeObject* b;
        unsigned long extra = 0;
    #ifdef Py_TPFLAGS_MANAGED_DICT
        extra |= Py_TPFLAGS_MANAGED_DICT;
    #endif
    #ifdef Py_TPFLAGS_MANAGED_WEAKREF
        extra |= Py_TPFLAGS_MANAGED_WEAKREF;
    #endif
    #ifdef Py_TPFLAGS_INLINE_VALUES
        extra |= Py_TPFLAGS_INLINE_VALUES;
    #endif
        if (!PyType_Check(cls)) return 0;
        if (tp->tp_dealloc == kc_dealloc) return 1;
        if (!PyType_IS_GC(tp) || tp->tp_itemsize != 0 || !kc_flat_slots(tp))
            return 0;
        for (b = tp; b != NULL && b != &PyBaseObject_Type; b = b->tp_base) {
            if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE) || (b->tp_flags & extra) || b->tp_dictoffset != 0
                    || b->tp_weaklistoffset != 0 || b->tp_finalize != NULL || b->tp_del != NULL
                    || b->tp_dealloc != tp->tp_dealloc)
                return 0;
        }
        if (b == NULL) return 0;
        tp->tp_dealloc = kc_dealloc;
        return 1;
    }
    static int kc_adopted(PyObject* cls) { return PyType_Check(cls) && ((PyTypeObject*)cls)->tp_dealloc == kc_dealloc; }
    """
    bint kc_adopt(object cls)
    bint kc_adopted(object cls)


def adopted(cls) -> bool:
    """Whether this class's instances are freed by kcodec's deallocator (classes are adopted when a program
    that decodes them is first prepared)."""
    return kc_adopted(cls)
