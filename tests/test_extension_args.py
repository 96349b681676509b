"""A function or type of kcodec's compiled modules, called with hostile arguments, raises and does not crash the
interpreter. The modules are built with boundscheck=False and Cython lets None through a typed argument, so
each entry point checks what it indexes or casts itself (crash2: Walker(None), tables(None, ...),
iter_batch(None), builder_classes(int, int), fill_columns with a short job or a negative row,
trial_array before numpy's table is taken or with a type wider than its itemsize: each killed the
interpreter or read past its buffer on main).

Every module-level function and type of each compiled module is found by walking kcodec, not listed, and called
with 0 to 11 copies of each of a few values (None, ints small and huge, bytes, empty containers); the findings
above are called as well with the arguments that reached them. One child process per backend (the extensions
are imported with KCODEC_PURE=1 too), so that a crash is the child's exit, not the test run's.
crash4 added fill_columns with columns of unequal lengths, Result given array specs or columns that do not fit
its layout, and a sweep of the public API (tests/api_sweep.py) whose outcomes must be the same on both
backends."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
    short = dict(cols, batch=np.zeros(2, "i4"))  # (a column shorter than the rows to fill: crash4)
    raised["fill_columns unequal columns"] = call("fill_columns unequal", R.fill_columns,
                                                  [(next(iter_batches(batch)), 0, 0)], short)
    from kcodec.columnar import _layout
    lay = _layout(kcodec.messages.MetadataResponse, 12, False)
    args = lay._result_args()  # (arrays, plans, root, absent, names, ncolumns, message, version, api)
    arrays, root, ncols = args[0], args[2], args[5]
    bad = {"a short array spec": ([a if a is None else a[:2] for a in arrays],) + args[1:],
           "a type wider than its size": ([a if a is None else (np.dtype("f8"), 12, 1) + a[3:] for a in arrays],)
                                         + args[1:],
           "a root column past the arrays": args[:2] + ([r[:1] + (len(arrays),) + r[2:] for r in root],) + args[3:],
           "names past the columns": args[:4] + ((ncols, ncols),) + args[5:]}
    for what, wrong in bad.items():
        raised["Result: " + what] = call("Result " + what, C.Result, *wrong)
    fewer = C.Result(arrays[:-1], args[1], [r for r in root if r[1] < len(arrays) - 1], *args[3:])
    raised["tables: fewer arrays than the layout's columns"] = call(
        "tables fewer", C.tables, lay.cython, fewer, kcodec.encode(kcodec.messages.MetadataResponse(), 12))
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


def test_public_api_agrees_on_hostile_arguments():
    code = (Path(__file__).with_name("api_sweep.py")).read_text()
    compiled, pure = run_child(code, False), run_child(code, True)
    assert len(compiled) > 1500 and set(compiled) == set(pure)
    valid = [name for name in compiled if "[" not in name and " " not in name]
    assert len(valid) > 40 and all(compiled[name] == "ok" for name in valid), compiled  # the unchanged calls work
    assert compiled["resize under a batch"] == "BufferError" and compiled["the batch after"] == "ok"
    differ = {name: (compiled[name], pure[name]) for name in compiled if compiled[name] != pure[name]}
    assert not differ, f"(compiled, pure) outcomes differ: {differ}"
