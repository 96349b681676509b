"""A function or type of kcodec's compiled modules, called with hostile arguments, raises and does not crash the
interpreter. The modules are built with boundscheck=False and Cython lets None through a typed argument, so
each entry point checks what it indexes or casts itself (crash2: Walker(None), tables(None, ...),
iter_batch(None), builder_classes(int, int), fill_columns with a short job or a negative row,
trial_array before numpy's table is taken or with a type wider than its itemsize: each killed the
interpreter or read past its buffer on main).

Every module-level function and type of each compiled module is found by walking kcodec, not listed, and called
with 0 to 11 copies of each of a few values (None, ints small and huge, bytes, empty containers); the findings
above are called as well with the arguments that reached them. One child process per backend (the extensions
are imported with KCODEC_PURE=1 too), so that a crash is the child's exit, not the test run's."""

from __future__ import annotations

import textwrap

import pytest
from crash_child import run_child

CHILD = textwrap.dedent(r"""
    import faulthandler, importlib, importlib.machinery, json, pkgutil
    import numpy as np
    import kcodec
    from kcodec.records import BatchBuilder, iter_batches

    faulthandler.enable()
    SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    modules = []
    for m in pkgutil.walk_packages(kcodec.__path__, "kcodec."):
        if m.name.endswith("__main__"):
            continue
        try:
            mod = importlib.import_module(m.name)
        except ImportError:  # an optional dependency not installed (pyspark, dpkt): its modules hold no C code
            continue
        if str(getattr(mod, "__file__", "")).endswith(SUFFIXES):
            modules.append(mod)

    def call(where, fn, *args):
        print(where, flush=True)  # (the last line names the call when the child crashes)
        try:
            fn(*args)
        except Exception as e:
            return type(e).__name__
        return None

    VALUES = [None, 0, -1, 2**70, b"", b"\x00" * 64, [], {}, ()]
    names, calls = [], 0
    for mod in modules:
        for name, fn in sorted(vars(mod).items()):
            if name.startswith("__") or not callable(fn) or getattr(fn, "__module__", None) != mod.__name__:
                continue
            names.append(f"{mod.__name__}.{name}")
            for n in range(12):
                for v in VALUES:
                    calls += 1
                    call(f"{mod.__name__}.{name}{(v,) * n!r:.60}", fn, *(v,) * n)

    from kcodec.columnar import _columnar as C
    from kcodec.records import _crecords as R, _cwriter as W
    b = BatchBuilder()
    b.append(b"k", b"v", (), 1)
    batch = bytes(b.build())
    cols = {k: np.zeros(4, t) for k, t in [("offset", "i8"), ("timestamp", "i8"), ("key_offset", "i8"),
            ("value_offset", "i8"), ("key_length", "i4"), ("value_length", "i4"), ("header_count", "i4"),
            ("batch", "i4"), ("attributes", "i2")]}
    raised = {}
    raised["fill_columns short job"] = call("fill_columns short", R.fill_columns,
                                            [(batch, 0, 0, 0, 0, 0, None, 0, 0)], cols)
    raised["fill_columns row -3"] = call("fill_columns row", R.fill_columns, [(next(iter_batches(batch)), -3, 0)], cols)
    raised["builder_classes(int, int)"] = call("builder_classes", W.builder_classes, int, int)
    raised["(5).append"] = call("int append", lambda: (5).append(b"k", b"v", (), 1))
    C.use_numpy_api(None, None, None)  # (no table: trial_array has nothing to make arrays with)
    raised["trial_array without the table"] = call("trial_array", C.trial_array, 5, 4, b"abcd")
    from kcodec import columnar
    if columnar._numpy_api():
        raised["trial_array int64 over 3 bytes"] = call("trial_array wide", C.trial_array,
                                                        np.dtype(np.int64).num, 1, b"abc")
    print("RESULT " + json.dumps({"names": names, "calls": calls, "raised": raised}))
""")


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_hostile_arguments_raise_not_crash(pure):
    result = run_child(CHILD, pure)
    for name in ("kcodec.columnar._columnar.Walker", "kcodec.columnar._columnar.tables",
                 "kcodec.columnar._columnar.trial_array", "kcodec.records._crecords.iter_batch",
                 "kcodec.records._crecords.fill_columns", "kcodec.records._cwriter.builder_classes"):
        assert name in result["names"], f"the walk did not find {name}"
    assert result["calls"] > 3000
    # each reached its check: a clean exception, where main's tree crashed or read past the buffer
    assert len(result["raised"]) >= 5 and all(result["raised"].values()), result["raised"]
