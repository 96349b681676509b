"""Backend of the record layer: the Cython twin (``_crecords``) when built, the pure reference otherwise.

``KCODEC_PURE=1`` forces the reference, as for the messages.
"""

from __future__ import annotations

from types import ModuleType

from ..core.extension import load, pure
from . import _compression, _pure


def available() -> dict[str, ModuleType]:
    """Every record backend that can run here, by name (for the differential tests). A built twin that
    fails to import warns; KCODEC_REQUIRE_EXTENSION=1 makes a missing one an error (kcodec/core/extension.py)."""
    out = {"python": _pure}
    crecords = load("kcodec.records._crecords")
    if crecords is not None:
        out["cython"] = crecords
    return out


BACKEND = "cython" if not pure() and "cython" in available() else "python"
backend: ModuleType = available()[BACKEND]
if BACKEND == "cython":  # lz4 batches inflated by liblz4 into the bytes kept (kcodec/records/_crecords_lz4.pxi)
    _compression.native_lz4 = backend.inflate_lz4
