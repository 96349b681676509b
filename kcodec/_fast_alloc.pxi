# Part of kcodec/_fast.pyx (included there): free lists for the generated classes' instances.

cdef extern from *:
    """
    #include "structmember.h"
    /* A decode makes one object per struct (a topic, a partition) and the user drops them all at once. Through
       pymalloc, each object's memory comes from blocks other code just used and freed in another order: after
       20,000 small tuples made and freed in random order, a 1,000-topic Metadata request took 86 instead of
       55 us to decode (issue 12). Here the blocks of a class's instances are kept for its
       next instances, in a list per block size threaded through the freed blocks (LIFO: a decode gets back
       the blocks its predecessor's objects had, in the same order), up to a bound, past which they go back
       to pymalloc. Instances allocated before a class was adopted have blocks of the same size (presize +
       basicsize, as PyType_GenericAlloc allocates), so either kind can be freed either way. Not with the
       free-threaded build (the lists rely on the GIL). */
    #if !defined(Py_GIL_DISABLED)
    #define KC_POOLS 1
    #else
    #define KC_POOLS 0
    #endif
    #define KC_GC_HEAD (2 * sizeof(void*))   /* CPython's PyGC_Head before a GC object (3.8 to 3.13) */
    #define KC_POOL_MAX 512                   /* bytes: the largest block kept (a struct of ~60 fields) */
    #define KC_POOL_BYTES ((Py_ssize_t)2 << 20)   /* bytes kept per block size */
    #define KC_POOL_TOTAL ((Py_ssize_t)8 << 20)   /* bytes kept in all */
    static void* kc_pool_head[KC_POOL_MAX / 8 + 1];
    static Py_ssize_t kc_pool_count[KC_POOL_MAX / 8 + 1];
    static Py_ssize_t kc_pool_bytes = 0;

    static PyObject* kc_pool_alloc(PyTypeObject* tp, Py_ssize_t nitems) {
        size_t size = KC_GC_HEAD + (size_t)tp->tp_basicsize, k = size / 8;
        char* mem = (char*)kc_pool_head[k];
        PyObject* op;
        (void)nitems;  /* adopted classes have no items */
        if (mem != NULL) {
            kc_pool_head[k] = *(void**)mem;
            kc_pool_count[k]--;
            kc_pool_bytes -= (Py_ssize_t)size;
        } else if ((mem = (char*)PyObject_Malloc(size)) == NULL) {
            return PyErr_NoMemory();
        }
        memset(mem, 0, size);
        op = (PyObject*)(mem + KC_GC_HEAD);
        PyObject_Init(op, tp);  /* (a heap type: takes a reference to it, as PyType_GenericAlloc does) */
        PyObject_GC_Track(op);
        return op;
    }
    static void kc_pool_free(void* p) {
        PyObject* op = (PyObject*)p;
        size_t size = KC_GC_HEAD + (size_t)Py_TYPE(op)->tp_basicsize, k = size / 8;
        char* mem = (char*)op - KC_GC_HEAD;
        if (PyObject_GC_IsTracked(op)) PyObject_GC_UnTrack(op);
        if ((Py_ssize_t)size * (kc_pool_count[k] + 1) > KC_POOL_BYTES || kc_pool_bytes + (Py_ssize_t)size > KC_POOL_TOTAL) {
            PyObject_Free(mem);
            return;
        }
        *(void**)mem = kc_pool_head[k];
        kc_pool_head[k] = mem;
        kc_pool_count[k]++;
        kc_pool_bytes += (Py_ssize_t)size;
    }
    /* An adopted class's tp_dealloc, in place of CPython's subtype_dealloc, which per object walks the class's
       bases twice and looks for finalizers, __dict__ and weakrefs (16% of a 1,000-topic Metadata response's
       decode and free). Adopted classes have no finalizer; their slots and their bases' are object slots. A
       Python subclass of one keeps subtype_dealloc, which clears the subclass's own slots and then calls this
       (its first base with another dealloc): this clears from the adopted class down, frees the block the
       subclass's way, and drops the reference to the type, as a heap type's dealloc does. */
    static void kc_pool_free(void* p);
    static void kc_pool_dealloc(PyObject* self) {
        PyTypeObject* tp = Py_TYPE(self);
        PyTypeObject* b = tp;
        PyMemberDef* m;
        PyObject_GC_UnTrack(self);
        Py_TRASHCAN_BEGIN(self, kc_pool_dealloc)
        if (tp->tp_weaklistoffset && *(PyObject**)((char*)self + tp->tp_weaklistoffset) != NULL)
            PyObject_ClearWeakRefs(self);
        while (b->tp_dealloc != kc_pool_dealloc) b = b->tp_base;  /* a subclass's slots are cleared */
        for (; b != NULL && (b->tp_flags & Py_TPFLAGS_HEAPTYPE); b = b->tp_base) {
            for (m = b->tp_members; m != NULL && m->name != NULL; m++) {
                if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) {
                    PyObject** slot = (PyObject**)((char*)self + m->offset);
                    Py_CLEAR(*slot);
                }
            }
        }
        tp->tp_free(self);
        Py_DECREF(tp);
        Py_TRASHCAN_END
    }
    /* Gives every kept block back to pymalloc; returns how many bytes. */
    static Py_ssize_t kc_pool_release(void) {
        Py_ssize_t k, n = kc_pool_bytes;
        for (k = 0; k <= KC_POOL_MAX / 8; k++) {
            while (kc_pool_head[k] != NULL) {
                void* mem = kc_pool_head[k];
                kc_pool_head[k] = *(void**)mem;
                PyObject_Free(mem);
            }
            kc_pool_count[k] = 0;
        }
        kc_pool_bytes = 0;
        return n;
    }
    /* Makes a generated class allocate from the lists: 1 when it does (now or before), 0 when it cannot
       (not a plain heap type with a GC header only and a fixed size, as a subclass with __dict__ is not). */
    static int kc_pool_adopt(PyObject* cls) {
        PyTypeObject* tp = (PyTypeObject*)cls;
        size_t size = KC_GC_HEAD + (size_t)tp->tp_basicsize;
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
        PyTypeObject* b;
        if (tp->tp_alloc == kc_pool_alloc) return 1;
        if (!KC_POOLS || !PyType_Check(cls) || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || !PyType_IS_GC(tp)
                || (tp->tp_flags & extra) || tp->tp_itemsize != 0 || tp->tp_dictoffset != 0
                || tp->tp_alloc != PyType_GenericAlloc || tp->tp_free != PyObject_GC_Del
                || size > KC_POOL_MAX || size % 8 != 0)
            return 0;
        for (b = tp; b != NULL && b != &PyBaseObject_Type; b = b->tp_base) {
            /* heap types (the generated class and its bases), no finalizer, no dict */
            if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE) || b->tp_finalize != NULL || b->tp_del != NULL
                    || b->tp_dictoffset != 0 || b->tp_dealloc != tp->tp_dealloc)
                return 0;
        }
        if (b == NULL) return 0;
        tp->tp_alloc = kc_pool_alloc;
        tp->tp_free = kc_pool_free;
        tp->tp_dealloc = kc_pool_dealloc;
        return 1;
    }
    static Py_ssize_t kc_pool_kept(void) { return kc_pool_bytes; }
    static int kc_pool_has(PyObject* cls) { return PyType_Check(cls) && ((PyTypeObject*)cls)->tp_alloc == kc_pool_alloc; }
    """
    bint kc_pool_adopt(object cls)
    Py_ssize_t kc_pool_release()
    Py_ssize_t kc_pool_kept()
    bint kc_pool_has(object cls)


def release_free_objects() -> int:
    """Gives the memory kept for the next decode's objects back to the allocator; returns how many bytes."""
    return kc_pool_release()


def free_object_bytes() -> int:
    """Bytes of freed objects' memory kept for reuse (at most 8 MiB, 2 MiB per object size)."""
    return kc_pool_kept()


def pooled(cls) -> bool:
    """Whether instances of this class allocate from the free lists (classes are adopted when a program
    that decodes them is first prepared)."""
    return kc_pool_has(cls)

