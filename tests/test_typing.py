"""The generated classes are visible to type checkers, and the package type-checks (mypy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Optional

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


def test_the_broker_type_checks():
    need_module("kcodec_broker")  # kcodec-broker, its own distribution (pyproject's mypy_path finds broker/)
    r = _mypy("-p", "kcodec_broker")
    assert r.returncode == 0, r.stdout + r.stderr


def test_fields_are_typed_for_users(tmp_path):
    snippet = tmp_path / "user.py"
    snippet.write_text(
        "from kcodec.messages import MetadataResponse\n"
        "m = MetadataResponse(topics=[MetadataResponse.Topic(name='t')])\n"
        "ok: int = m.topics[0].partitions[0].leader_id\n"
        "bad: str = m.topics[0].partitions[0].leader_id\n"
        "MetadataResponse(no_such_field=1)\n"
        "from kcodec.messages import ProduceRequest\n"  # records and bytes fields take any bytes-like value
        "ProduceRequest.PartitionProduceData(records=memoryview(b'x'))\n")
    r = _mypy(str(snippet))
    lines = [line for line in r.stdout.splitlines() if line.startswith(str(snippet)) and ": error:" in line]
    assert len(lines) == 2, r.stdout
    assert ":4:" in lines[0] and "incompatible types" in lines[0].lower()
    assert ":5:" in lines[1] and "no_such_field" in lines[1]


STUBS = {"kcodec.core._fast": "kcodec/core/_fast.pyi", "kcodec.columnar._columnar": "kcodec/columnar/_columnar.pyi",
         "kcodec.records._crecords": "kcodec/records/_crecords.pyi", "kcodec.records._cwriter": "kcodec/records/_cwriter.pyi",
         "kcodec.tap._cscan": "kcodec/tap/_cscan.pyi"}


def _stub_signatures(path: Path) -> dict[str, Optional[list[str]]]:
    """Names a stub declares at module level: functions with their parameter names, others with None."""
    import ast

    out: dict[str, Optional[list[str]]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out[node.name] = [x.arg for x in [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []),
                                              *a.kwonlyargs, *([a.kwarg] if a.kwarg else [])]]
        elif isinstance(node, ast.ClassDef):
            out[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = None
        elif isinstance(node, ast.ImportFrom):  # re-exports only: "import X as X"
            out.update({a.name: None for a in node.names if a.asname == a.name})
    return out


@pytest.mark.parametrize("module", sorted(STUBS))
def test_the_stubs_say_what_the_extensions_have(module):
    import importlib
    import inspect

    from kcodec.core.extension import load

    from needs import need_extension

    mod = load(module)
    need_extension(mod, f"the Cython extension {module}")
    stub = _stub_signatures(Path(importlib.import_module("kcodec").__file__).parent.parent / STUBS[module])
    made_here = {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == module}
    assert made_here <= stub.keys(), f"{STUBS[module]} lacks {sorted(made_here - stub.keys())}"
    assert not [n for n in stub if not hasattr(mod, n)], f"{STUBS[module]} names what {module} lacks"
    for name, params in stub.items():
        if params is not None:
            assert list(inspect.signature(getattr(mod, name)).parameters) == params, f"{module}.{name}"


def test_callers_of_the_extensions_are_type_checked(tmp_path):
    snippet = tmp_path / "caller.py"
    snippet.write_text(
        "from kcodec.core import _fast\nfrom kcodec.records import _crecords\n"
        "size: str = _fast.encoded_size(None, None)\n"
        "_crecords.iter_batch(3)\n")
    r = _mypy(str(snippet))
    lines = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert len(lines) == 3, r.stdout  # a str for an int, a None for a Program, an int for a BatchHeader
