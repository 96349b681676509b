"""What a test needs and does not find: a skip on a developer's machine, a failure in CI.

With ``CI`` set (.ci/run exports CI=true) a missing peer, tool or ../shared fails the test, naming what
is missing; elsewhere it skips. Every test that needs something uses these, never a bare pytest.skip or
pytest.importorskip (tests/test_ci_policy.py checks), and any other skip in CI fails unless
``CI_ALLOWED_SKIPS`` names it (the hooks in tests/conftest.py).

    from needs import missing, need_extension, need_module, need_tool
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from types import ModuleType
from typing import NoReturn

import pytest

def in_ci() -> bool:
    return bool(os.environ.get("CI"))


# The reason of a skip that CI allows: the package does not exist for the Python running (PySpark 4.3 and
# kio need 3.11+; the oldest Python a wheel is built for is 3.10)
NOT_FOR_THIS_PYTHON = "not for this Python: "


def missing(what: str, since: tuple[int, int] | None = None) -> NoReturn:
    """Skip (fail in CI) because ``what`` is not here; works inside a test and at module level. ``since``:
    the oldest Python ``what`` exists for; before it, a skip that CI allows."""
    if since is not None and sys.version_info < since:
        pytest.skip(f"{NOT_FOR_THIS_PYTHON}{what} needs Python {since[0]}.{since[1]}+", allow_module_level=True)
    if in_ci():
        pytest.fail(f"CI needs {what}, and it is missing", pytrace=False)
    pytest.skip(f"needs {what}", allow_module_level=True)


def need_module(name: str, since: tuple[int, int] | None = None) -> ModuleType:
    """``import name``, or `missing` naming the package (pytest.importorskip that fails in CI; ``since``: see
    `missing`)."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        missing(f"the Python module {name!r} ({e}; `make test` installs it)", since)


def need_extension(backend: object, what: str) -> None:
    """A compiled backend the test compares against the reference: when it is None, an error under
    KCODEC_REQUIRE_EXTENSION (CI builds every extension), else `missing` naming ``what``."""
    if backend is not None:
        return
    if os.environ.get("KCODEC_REQUIRE_EXTENSION", "") not in ("", "0"):
        raise RuntimeError(f"{what} is required (KCODEC_REQUIRE_EXTENSION) but not built")
    missing(what)


def need_tool(name: str, hint: str) -> str:
    """The path of the command ``name``, or `missing` naming it and how to get it."""
    path = shutil.which(name)
    if path is None:
        missing(f"the command {name!r} on PATH ({hint})")
    return path


# The only skips allowed while CI is set: (test id prefix, why). A skip of any other test in CI is turned
# into a failure by the hooks in tests/conftest.py; tests/test_ci_policy.py checks this list.
CI_ALLOWED_SKIPS: dict[str, str] = {
    "tests/test_build.py::test_install_without_a_compiler":
        "the wheel runs (.ci/test_wheel.py) have no source tree to build from",
    "tests/test_spark_cluster.py::test_submitted_with_a_packed_environment":
        "the checkout run has no packed venv: .ci/wheel.sh packs one with the wheel it built and runs this test",
    "tests/broker/test_broker_cluster.py::test_a_fixed_port_and_the_ones_after_it":
        "five tries found no three consecutive free ports on 127.0.0.1: the machine's, not kcodec's",
    **{f"tests/client/test_client_interop.py::test_sasl_plain[{b}]": "a broker without SASL PLAIN users"
       for b in ("tansu", "rdkafka_mock", "kcodec_broker", "kafka")},
}


def ci_allows_skip(nodeid: str, reason: str = "") -> bool:
    return reason.startswith(NOT_FOR_THIS_PYTHON) or any(nodeid == p or nodeid.startswith(p + "::") or nodeid.startswith(p + "[") for p in CI_ALLOWED_SKIPS)


def parse_python(source: str, filename: str = "<unknown>") -> "ast.Module":
    """ast.parse with the cyclic collector paused. CPython 3.11 before 3.11.8 can raise a spurious
    ``SystemError: AST constructor recursion depth mismatch`` (gh-106905) when a collection runs
    finalizers (a leaked asyncio future logging its exception, in CI) while the tree is being built."""
    import ast
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if enabled:
            gc.enable()
