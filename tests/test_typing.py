"""The generated classes are visible to type checkers, and the package type-checks (mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from needs import need_module

REPO = Path(__file__).resolve().parents[1]
need_module("mypy")


def _mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--no-error-summary", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_package_type_checks():
    r = _mypy("-p", "kcodec")
    assert r.returncode == 0, r.stdout + r.stderr


def test_fields_are_typed_for_users(tmp_path):
    snippet = tmp_path / "user.py"
    snippet.write_text(
        "from kcodec.messages import MetadataResponse\n"
        "m = MetadataResponse(topics=[MetadataResponse.Topic(name='t')])\n"
        "ok: int = m.topics[0].partitions[0].leader_id\n"
        "bad: str = m.topics[0].partitions[0].leader_id\n"
        "MetadataResponse(no_such_field=1)\n")
    r = _mypy(str(snippet))
    lines = [line for line in r.stdout.splitlines() if line.startswith(str(snippet)) and ": error:" in line]
    assert len(lines) == 2, r.stdout
    assert ":4:" in lines[0] and "incompatible types" in lines[0].lower()
    assert ":5:" in lines[1] and "no_such_field" in lines[1]
