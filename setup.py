"""Builds the optional Cython extension kcodec._fast; without a compiler kcodec installs pure Python.

KCODEC_REQUIRE_EXTENSION=1 turns a failed build into an error (CI sets it).
"""

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
REQUIRE = os.environ.get("KCODEC_REQUIRE_EXTENSION", "") not in ("", "0")


class OptionalBuildExt(build_ext):
    def run(self):
        try:
            super().run()
        except Exception as e:  # no compiler, no Cython: the reference backend still works
            if REQUIRE:
                raise
            print(f"kcodec: building the extension failed ({e}); installing the pure-Python backend",
                  file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:
            if REQUIRE:
                raise
            print(f"kcodec: building {ext.name} failed ({e}); installing the pure-Python backend",
                  file=sys.stderr)


def extensions():
    if not (HERE / "kcodec" / "_fast.pyx").exists() or os.environ.get("KCODEC_PURE_BUILD"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise
        return []
    from setuptools import Extension

    ext = Extension("kcodec._fast", ["kcodec/_fast.pyx"], extra_compile_args=["-O3"])
    return cythonize([ext], language_level=3, compiler_directives={
        "boundscheck": False, "wraparound": False, "cdivision": True, "initializedcheck": False})


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
