"""Runs a probe of the compiled extensions in a child process, so that a crash is the child's exit and not the
test run's (tests/test_extension_self.py, tests/test_extension_args.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from needs import need_extension

from kcodec.core.extension import load


def run_child(code: str, pure: bool) -> Any:
    """The JSON the child prints last (after ``RESULT ``), with KCODEC_PURE set for ``pure``; the child prints
    a line naming each call before making it, so that a crash names the call."""
    need_extension(load("kcodec.core._fast"), "the Cython extensions (a C compiler and Cython at install)")
    env = dict(os.environ, KCODEC_PURE="1" if pure else "0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    lines = r.stdout.splitlines()
    assert r.returncode == 0, (f"the child died ({r.returncode}) in {lines[-1] if lines else '?'}:\n"
                               + r.stderr[-3000:])
    return json.loads(lines[-1].removeprefix("RESULT "))
