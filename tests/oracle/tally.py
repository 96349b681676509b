"""What the oracle tests checked, counted across the session (printed at its end by conftest.py)."""

from __future__ import annotations

from collections import Counter

COUNTS: Counter[str] = Counter()


def count(what: str, n: int = 1) -> None:
    COUNTS[what] += n


def summary() -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(COUNTS.items()))
