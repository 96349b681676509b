"""Benchmarks (pytest-benchmark): `make bench`. Payloads come from ../shared/vectors/metadata."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("KCODEC_SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture(scope="session")
def metadata_payloads() -> dict[int, bytes]:
    d = SHARED / "vectors" / "metadata"
    if not d.is_dir():
        pytest.skip(f"no payloads at {d} (set KCODEC_SHARED)")
    return {v: (d / f"metadata_v{v}_1k_body.bin").read_bytes() for v in (1, 12)}
