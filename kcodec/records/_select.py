"""Backend of the record layer: the Cython twin (``_crecords``) when built, the pure reference otherwise.

``KCODEC_PURE=1`` forces the reference, as for the messages.
"""

from __future__ import annotations

import os
from types import ModuleType

from . import _pure


def available() -> dict[str, ModuleType]:
    """Every record backend that can run here, by name (for the differential tests)."""
    out = {"python": _pure}
    try:
        from . import _crecords  # type: ignore[attr-defined]
        out["cython"] = _crecords
    except ImportError:
        pass
    return out


_PURE = os.environ.get("KCODEC_PURE", "") not in ("", "0")
BACKEND = "cython" if not _PURE and "cython" in available() else "python"
backend: ModuleType = available()[BACKEND]
