"""Without a C compiler kcodec still installs and works, as pure Python (setup.py's optional build)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from needs import need_module

REPO = Path(__file__).resolve().parents[1]


def test_install_without_a_compiler(tmp_path):
    if not (REPO / "setup.py").exists():
        pytest.skip("needs the source tree (this run tests an installed wheel)")
    need_module("Cython")
    src = tmp_path / "src"
    shutil.copytree(REPO / "kcodec", src / "kcodec", ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy(REPO / name, src / name)
    env = {k: v for k, v in os.environ.items() if k != "KCODEC_REQUIRE_EXTENSION"}
    env.update(CC="false", CXX="false", LDSHARED="false")  # every compiler call fails
    # The build tools come from this environment (no network): --no-build-isolation.
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path / "dist"), str(src)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    wheel = next((tmp_path / "dist").glob("kcodec-*.whl"))
    venv.create(tmp_path / "venv", with_pip=False)
    py = tmp_path / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                        site, str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check = ("import kcodec, importlib.util as u\n"
             "from kcodec.messages import MetadataResponse as M\n"
             "m = M(topics=[M.Topic(name='t')])\n"
             "assert kcodec.decode(M, kcodec.encode(m, 12), 12) == m\n"
             "print(kcodec.BACKEND, u.find_spec('kcodec._columnar') is not None)\n")
    r = subprocess.run([str(py), "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in env.items() if k not in ("PYTHONPATH", "KCODEC_PURE")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["python", "False"]
