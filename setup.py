"""Builds the optional Cython extensions, every kcodec/**/*.pyx (kcodec.core._fast,
kcodec.columnar._columnar, kcodec.records._crecords); without
a compiler kcodec installs pure Python.

KCODEC_REQUIRE_EXTENSION=1 turns a failed build into an error (CI sets it). KCODEC_PURE_BUILD=1 builds
none. KCODEC_SANITIZE=address builds them with AddressSanitizer (for the atheris harness, `make fuzz-atheris`).
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
    sources = sorted((HERE / "kcodec").rglob("*.pyx"))
    if not sources or os.environ.get("KCODEC_PURE_BUILD"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if REQUIRE:
            raise
        return []
    from setuptools import Extension

    args, link = ["-O3"], []
    sanitize = os.environ.get("KCODEC_SANITIZE")
    if sanitize:  # keep frames and symbols so the sanitizer's reports point at lines
        args = ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitize}"]
        # The runtime is not linked in but preloaded (LD_PRELOAD): atheris' asan_with_fuzzer.so, so that
        # one runtime serves both the sanitizer and libFuzzer's coverage (make fuzz-atheris).
    exts = []
    for p in sources:
        rel = p.relative_to(HERE).with_suffix("")
        exts.append(Extension(".".join(rel.parts), [rel.with_suffix(".pyx").as_posix()], extra_compile_args=args,
                              extra_link_args=link))
    # binding=False: a cdef class's methods are CPython's method descriptors, which refuse a `self` of another
    # type (`RecordsWriter.append(5, ...)`) with a TypeError; Cython 3's default, cyfunctions, hand any object
    # on as `self` unchecked and the method reads its fields from it (a crash; cython/cython#1903, #6127).
    # embedsignature in Argument Clinic's form keeps inspect.signature working on the functions and methods.
    return cythonize(exts, language_level=3, compiler_directives={
        "boundscheck": False, "wraparound": False, "cdivision": True, "initializedcheck": False,
        "binding": False, "embedsignature": True, "embedsignature.format": "clinic"})


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
