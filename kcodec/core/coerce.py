"""Public arguments as both backends take them, in one place for every caller: an int-like argument as an
int, and a buffer as a flat byte view (a non-contiguous one copied, as the compiled code, which reads
contiguous memory, copies it)."""

from __future__ import annotations

import operator
import sys
from typing import Any


def as_index(value: Any) -> int:
    """An int-like argument (an int, a numpy integer, anything with ``__index__``) as an int: a float, a str,
    an array is operator.index's TypeError from both backends, as the compiled one's Py_ssize_t says."""
    return value if type(value) is int else operator.index(value)


def as_size(value: Any) -> int:
    """as_index, capped at sys.maxsize: nothing is longer (the compiled backend's largest size)."""
    n = as_index(value)
    return sys.maxsize if n > sys.maxsize else n


def flat_view(data: Any) -> memoryview:
    """A memoryview of data's bytes; a non-contiguous buffer (``memoryview(b)[::2]``, a strided numpy array)
    copied first, as the compiled backend, which reads contiguous memory, copies it (and kcodec.columnar)."""
    mv = memoryview(data)
    return mv if mv.c_contiguous else memoryview(mv.tobytes())


def as_bytes_view(data: Any) -> memoryview:
    """A flat unsigned-byte view of any buffer (bytes, bytearray, memoryview, mmap, numpy). A 1-D byte view
    that is not contiguous is returned as it is (callers that need contiguous memory find out when they ask
    for it: a check here would cost every call)."""
    mv = memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B") if mv.c_contiguous else flat_view(mv)
    return mv
