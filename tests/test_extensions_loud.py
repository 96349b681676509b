"""A compiled extension that is built but does not import is never a silent fallback: kcodec warns, naming the
error, and with KCODEC_REQUIRE_EXTENSION=1 refuses to import; one that is simply not built is the quiet
pure-Python install (and an error under KCODEC_REQUIRE_EXTENSION=1). Each case runs a copy of the package
in a subprocess, its extension replaced by a broken file or left out."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kcodec

PKG = Path(kcodec.__file__).resolve().parent
# (An editable install's finder would find the checkout's extension when the copy lacks one: it goes.)
PROBE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in repr(f)]\n"
         "import kcodec, kcodec.records as r, kcodec.columnar as c; print(kcodec.BACKEND, r.BACKEND, c.ENGINE)")
EXTENSIONS = {"kcodec.core._fast": "core/_fast", "kcodec.records._crecords": "records/_crecords",
              "kcodec.columnar._columnar": "columnar/_columnar"}


def package_copy(tmp: Path, broken: str = "", absent: str = "") -> Path:
    """kcodec copied into tmp (sources and built extensions), ``broken`` (a path like "_fast") replaced by a
    file that is no shared library, ``absent`` left out."""
    def skip(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n == "__pycache__" or n.endswith(".c")}

    root = tmp / "site"
    shutil.copytree(PKG, root / "kcodec", ignore=skip)
    for rel in (broken, absent):
        if rel:
            for built in (root / "kcodec").glob(f"{rel}.*"):
                if built.suffix in (".so", ".pyd"):
                    built.unlink()
    if broken:
        (root / "kcodec" / f"{broken}{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"not an ELF file")
    return root


def probe(root: Path, require: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KCODEC_REQUIRE_EXTENSION", "KCODEC_PURE", "PYTHONPATH")}
    if require:
        env["KCODEC_REQUIRE_EXTENSION"] = "1"
    return subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def need_built() -> None:
    from needs import need_extension
    from kcodec.core.backend import available

    need_extension(available().get("cython"), "the Cython extensions, to break one of them")


@pytest.mark.parametrize("module", sorted(EXTENSIONS))
def test_a_built_extension_that_fails_to_import_warns_or_refuses(tmp_path, module):
    need_built()
    root = package_copy(tmp_path, broken=EXTENSIONS[module])
    loose = probe(root, require=False)
    assert loose.returncode == 0, loose.stderr
    assert "RuntimeWarning" in loose.stderr and f"{module} is built but fails to import (ImportError" in loose.stderr
    assert "python" in loose.stdout.split()
    strict = probe(root, require=True)
    assert strict.returncode != 0
    assert f"ImportError: {module} is built but fails to import" in strict.stderr
    assert "KCODEC_REQUIRE_EXTENSION is set" in strict.stderr


def test_an_extension_never_built_is_quiet_unless_required(tmp_path):
    need_built()
    root = package_copy(tmp_path, absent="core/_fast")
    loose = probe(root, require=False)
    assert loose.returncode == 0 and loose.stderr == "" and loose.stdout.split()[0] == "python"
    strict = probe(root, require=True)
    assert strict.returncode != 0 and "kcodec.core._fast is not built, and KCODEC_REQUIRE_EXTENSION is set" in strict.stderr


def test_the_real_package_imports_its_extensions_quietly(tmp_path):
    need_built()
    ok = probe(package_copy(tmp_path), require=True)
    assert ok.returncode == 0 and ok.stderr == "" and ok.stdout.split() == ["cython", "cython", "cython"]
