# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: binding=False, embedsignature=True, embedsignature.format=clinic
"""The Cython backend: runs the same IR as ``kcodec.core.pure``, with the same results and errors.

Decoding reads straight from the caller's buffer (buffer protocol, no copy), makes objects without
calling ``__init__`` (``tp_alloc`` and direct slot writes) and loops over fields and records in C.
Encoding sizes the message first, then writes once into an exact-size buffer (UTF-8 is computed once:
CPython keeps a string's UTF-8 form with the string, so the write pass reuses what the size pass made).

Decode errors are made here, with the reference's reason, offset and field path. An encode error is
detected here, then reported by running the reference on the same message: encoding is the cold path
once something is wrong, and the reference is the definition of its message.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AsDouble, PyFloat_FromDouble
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLong, PyLong_FromLong, PyLong_FromLongLong, PyLong_FromUnsignedLong
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import uuid as _uuid
from operator import itemgetter

from . import pure as _pure
from ..buffers import Buffers
from ..exceptions import DecodeError
from . import ir

include "_fast_dealloc.pxi"
include "_fast_support.pxi"
include "_fast_read.pxi"
include "_fast_write.pxi"
