"""Shared fixtures: where ../shared is, hypothesis profiles, the backend under test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KCODEC_SHARED", REPO.parent / "shared"))

# ci: deterministic, the default; long: for local runs (HYPOTHESIS_PROFILE=long).
settings.register_profile("ci", derandomize=True, max_examples=15, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared beside the checkout. In CI its absence is a failure, elsewhere a skip."""
    if not (SHARED / "kafka-message-schemas").is_dir():
        msg = f"../shared not found at {SHARED} (set KCODEC_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED
