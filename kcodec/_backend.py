"""Backend selection: the Cython extension when it is built, the pure-Python reference otherwise.

``KCODEC_PURE=1`` forces the reference. Both modules expose ``decode(prog, data, pos, end, zero_copy)``,
``encode(prog, obj)``, ``encoded_size(prog, obj)`` and ``encode_into(prog, obj, buffer, offset)`` over
the same IR.
"""

from __future__ import annotations

import os
from types import ModuleType

from . import _pure


def _select() -> tuple[ModuleType, str]:
    if os.environ.get("KCODEC_PURE", "") not in ("", "0"):
        return _pure, "python"
    try:
        from . import _fast  # type: ignore[attr-defined]
    except ImportError:
        return _pure, "python"
    return _fast, "cython"


backend, BACKEND = _select()


def available() -> dict[str, ModuleType]:
    """Every backend that can run here, by name (for differential tests)."""
    out = {"python": _pure}
    try:
        from . import _fast  # type: ignore[attr-defined]
    except ImportError:
        pass
    else:
        out["cython"] = _fast
    return out
