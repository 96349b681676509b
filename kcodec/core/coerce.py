"""Public arguments as both backends take them, in one place for every caller: an int-like argument as an
int."""

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
