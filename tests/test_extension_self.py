"""A method of one of kcodec's extension types, called unbound with a `self` of another type, raises TypeError
and does not crash the interpreter (Cython's methods are built as method descriptors: setup.py's binding=False,
which CPython checks `self` for, where a cyfunction hands any object on as `self`).

The types are found by walking every kcodec module, not listed: each class defined in a compiled module, and
each Python class deriving from one (BatchBuilder), with every method implemented in C that it has or inherits
from a kcodec class. Each is called in one child process per backend, so that a crash is the child's exit, not
the test run's."""

from __future__ import annotations

import textwrap

import pytest
from crash_child import run_child

CHILD = textwrap.dedent(r"""
    import faulthandler, importlib, importlib.machinery, json, pkgutil, sys, types
    import kcodec
    from kcodec.exceptions import KcodecError

    faulthandler.enable()
    SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)

    HEAPTYPE = 1 << 9  # (a class statement's type; a cdef class is a static type: kcodec builds no limited API)

    def extension(cls):
        mod = sys.modules.get(cls.__module__)
        return str(getattr(mod, "__file__", None) or "").endswith(SUFFIXES) and not cls.__flags__ & HEAPTYPE

    classes, seen = [], set()

    def visit(obj):
        for v in list(vars(obj).values()):
            if isinstance(v, type) and v not in seen and v.__module__.startswith("kcodec"):
                seen.add(v)
                if any(extension(c) for c in v.__mro__):
                    classes.append(v)
                visit(v)

    modules = ["kcodec"] + [m.name for m in pkgutil.walk_packages(kcodec.__path__, "kcodec.")
                            if not m.name.endswith("__main__")]
    for name in modules:
        try:
            visit(importlib.import_module(name))
        except ImportError:  # an optional dependency not installed (pyspark, dpkt): its modules hold no C types
            pass

    pool = []  # instances of the extension types that take no arguments: wrong selves for the others
    for cls in classes:
        try:
            pool.append(cls())
        except Exception:
            pass

    PYTHON_LEVEL = (types.FunctionType, staticmethod, classmethod, property)
    SHAPES = [(), (None,), (0,), (b"",), (b"k", b"v"), (None, None, None, None)]
    calls, wrong = 0, []
    for cls in sorted(classes, key=lambda c: (c.__module__, c.__qualname__)):
        for name in sorted(dir(cls)):
            owner = next(c for c in cls.__mro__ if name in vars(c))
            raw = vars(owner)[name]
            if (not owner.__module__.startswith("kcodec") or isinstance(raw, PYTHON_LEVEL)
                    or type(raw).__name__ == "classmethod_descriptor" or not callable(raw)):
                continue
            where = f"{cls.__module__}.{cls.__qualname__}.{name}"
            print(where, flush=True)  # (the last line names the method when the child crashes)
            fn = getattr(cls, name)
            for self in [None, 5, "x", *[p for p in pool if not isinstance(p, owner)]]:
                for args in SHAPES:
                    calls += 1
                    try:
                        out = fn(self, *args)
                    except (TypeError, KcodecError):
                        continue
                    except BaseException as e:
                        wrong.append(f"{where}({type(self).__name__}, {args!r}): {type(e).__name__}: {e}")
                    else:
                        wrong.append(f"{where}({type(self).__name__}, {args!r}) returned {type(out).__name__}")
    print("RESULT " + json.dumps({"types": sorted(f"{c.__module__}.{c.__qualname__}" for c in classes),
                                  "calls": calls, "wrong": wrong}))
""")


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_a_wrong_self_is_a_type_error_not_a_crash(pure):
    result = run_child(CHILD, pure)
    # (with KCODEC_PURE=1 BatchBuilder derives from the reference builder; the walk still imports the extensions)
    for name in ("kcodec.records._cwriter.RecordsWriter", "kcodec.records._cwriter.BuilderBase",
                 "kcodec.records._crecords.RecordIterator", "kcodec.core._fast._Reader",
                 "kcodec.columnar._columnar.Walker", *([] if pure else ["kcodec.records._builder.BatchBuilder"])):
        assert name in result["types"], f"the walk did not find {name}: {result['types']}"
    assert result["calls"] > 1000
    assert not result["wrong"], "\n".join(result["wrong"][:40])
