"""Importing kcodec's compiled extensions, loudly: the pure-Python fallback is for extensions never built.

An extension that is not there (no compiler at install time, or ``KCODEC_PURE_BUILD``) leaves its pure-Python
twin in charge without a word. One that is there but fails to import (a broken build, an ABI that does not
match, a missing shared library) warns with a RuntimeWarning naming the error, since the fallback is
several times slower. ``KCODEC_REQUIRE_EXTENSION=1`` (CI sets it) turns either case into an ImportError.
"""

from __future__ import annotations

import importlib
import os
import warnings
from functools import lru_cache
from types import ModuleType
from typing import Optional


def required() -> bool:
    return os.environ.get("KCODEC_REQUIRE_EXTENSION", "") not in ("", "0")


def pure() -> bool:
    """``KCODEC_PURE=1``: every part with a compiled twin runs its pure-Python reference."""
    return os.environ.get("KCODEC_PURE", "") not in ("", "0")


@lru_cache(maxsize=None)
def load(name: str) -> Optional[ModuleType]:
    """The extension module ``name`` (absolute, e.g. "kcodec.core._fast"), or None when it is not built."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        not_built = isinstance(e, ModuleNotFoundError) and e.name == name
        why = "is not built" if not_built else f"is built but fails to import ({type(e).__name__}: {e})"
        if required():
            raise ImportError(f"{name} {why}, and KCODEC_REQUIRE_EXTENSION is set") from e
        if not not_built:
            warnings.warn(f"{name} {why}; kcodec falls back to its pure-Python reference, several times slower "
                          "(rebuild it: pip install --force-reinstall --no-binary kcodec kcodec)", RuntimeWarning,
                          stacklevel=2)
        return None
