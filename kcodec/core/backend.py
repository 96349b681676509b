"""Backend selection: the Cython extension when it is built, the pure-Python reference otherwise.

``KCODEC_PURE=1`` forces the reference. An extension that is built but fails to import warns
(kcodec/core/extension.py), and ``KCODEC_REQUIRE_EXTENSION=1`` makes a missing one an error. Both modules expose ``decode(prog, data, pos, end, zero_copy)``,
``encode(prog, obj)``, ``encoded_size(prog, obj)`` and ``encode_into(prog, obj, buffer, offset)`` over
the same IR.
"""

from __future__ import annotations

from types import ModuleType

from . import pure as _pure
from .extension import load, pure


def _select() -> tuple[ModuleType, str]:
    if pure():
        return _pure, "python"
    fast = load("kcodec.core._fast")  # a built one that fails to import warns (kcodec/core/extension.py)
    return (_pure, "python") if fast is None else (fast, "cython")


backend, BACKEND = _select()


def available() -> dict[str, ModuleType]:
    """Every backend that can run here, by name (for differential tests)."""
    out = {"python": _pure}
    fast = load("kcodec.core._fast")
    if fast is not None:
        out["cython"] = fast
    return out
