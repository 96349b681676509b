"""append's calls: the Cython twin's fast path for four positional arguments (kcodec/records/_cwriter.pyx's
append_fast) and every other call, which goes on to Cython's own method, write and refuse as the reference
writer does, on RecordsWriter, BatchBuilder and a subclass of either."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest
from needs import need_extension

from kcodec.records import BatchBuilder, _pure
from kcodec.records._select import available

FAST = available().get("cython")
need_extension(FAST, "the Cython record backend (kcodec.records._crecords): a C compiler and Cython at install")
CWRITER = importlib.import_module("kcodec.records._cwriter")  # (its now_ms, patched)

TS = 1_700_000_000_000
CALLS: list[tuple[tuple, dict]] = [
    ((b"k", b"v", (), TS), {}),  # the fast path
    ((b"", b"", (), TS + 1), {}),
    ((b"k", b"v"), {}),  # (now: the time patched below)
    ((b"k", b"v", ()), {}),
    ((b"k", b"v", (), None), {}),
    ((b"k", b"v"), {"timestamp": TS}),
    ((b"k", b"v"), {"headers": (), "timestamp": TS}),
    ((b"k", b"v"), {"timestamp": TS, "headers": ()}),
    ((b"k", b"v", ()), {"timestamp": TS}),
    ((b"k", b"v"), {"headers": ()}),
    ((None, b"v", (), TS), {}),  # the rest: Cython's method
    ((b"k", None, (), TS), {}),
    ((bytearray(b"k"), memoryview(b"v"), (), TS), {}),
    ((b"k", b"v", [], TS), {}),
    ((b"k", b"v", (("h", b"1"),), TS), {}),
    ((b"k",), {"value": b"v", "headers": (), "timestamp": TS}),
    ((), {"key": b"k", "value": b"v", "timestamp": TS - 5}),
    ((memoryview(b"kxkx")[::2], memoryview(b"vyvy")[::2], (), TS), {}),  # non-contiguous: copied (crash4)
    ((b"k", b"v", (), True), {}),  # (an int subclass: not the fast path, taken as an int)
    ((b"k", b"v", (), -1), {}),
    ((b"k", b"v", (), 1 << 63), {}),  # refused from here on
    ((b"k", b"v", (), -(1 << 70)), {}),
    ((b"k", b"v", (), 1.5), {}),
    ((b"k", b"v", (), "1"), {}),
    ((5, b"v", (), TS), {}),
    ((b"k", "v", (), TS), {}),
    ((b"k", b"v", (("h", 1),), TS), {}),
    ((b"k", b"v", (1,), TS), {}),
    ((b"k", b"v", None, TS), {}),  # (not iterable: the twin let None through as no headers, crash4)
    ((b"k",), {}),
    ((), {}),
    ((b"k", b"v", (), TS, 1), {}),
    ((b"k", b"v", (), TS), {"key": b"k"}),
    ((b"k", b"v", ()), {"headers": ()}),
    ((b"k", b"v", (), TS), {"timestamp": TS}),
    ((b"k", b"v"), {"stamp": TS}),
    ((b"k", b"v"), {"timestamp": 1.5}),
    ((b"k", b"v"), {"headers": [("h", None)], "timestamp": TS}),
    ((b"k", b"v"), {"headers": "no", "timestamp": TS}),
]
NOW = TS + 7


def outcome(fn: Any) -> Any:
    """What a call returns and the writer holds after it, or the error's type and text."""
    try:
        return fn()
    except Exception as e:  # (compared, not hidden)
        return type(e), str(e)


class Sub(BatchBuilder):
    __slots__ = ()


@pytest.mark.parametrize("make", [lambda: FAST.RecordsWriter(), BatchBuilder, Sub,  # type: ignore[union-attr]
                                  type("W", (FAST.RecordsWriter,), {})],  # type: ignore[union-attr]
                         ids=["RecordsWriter", "BatchBuilder", "subclass", "writer-subclass"])
@pytest.mark.parametrize("args, kwargs", CALLS)
def test_a_call_writes_or_refuses_as_the_reference(make, args, kwargs, monkeypatch):
    """The same result, records and error type as the reference (whose error texts differ from the twin's in
    places); append's common shapes (bytes, bytes, no headers, an int or no timestamp) the same error text as
    the same call through Cython's own method (a keyword it does not take at once, ``key=``, sends it there)."""
    monkeypatch.setattr(_pure, "_now_ms", lambda: NOW)
    monkeypatch.setattr(CWRITER, "now_ms", lambda: NOW)

    def run(w: Any, call: Any) -> Any:
        w.append(b"first", b"1", (), TS)
        got = outcome(lambda: call(w))
        return got, w.records_bytes(), w.writer_state()

    def kind(run: Any) -> Any:
        got, *rest = run
        return (got[0] if isinstance(got, tuple) else got), *rest

    called = run(make(), lambda w: w.append(*args, **kwargs))
    assert kind(called) == kind(run(_pure.RecordsWriter(), lambda w: w.append(*args, **kwargs)))
    if len(args) == 4 and not kwargs:
        key, value, headers, timestamp = args
        assert called == run(make(), lambda w: w.append(key, value, headers=headers, timestamp=timestamp))
        assert called == run(make(), lambda w: w.append(value=value, headers=headers, timestamp=timestamp, key=key))


def test_appends_past_the_kept_deltas_return_their_offset_deltas():
    b = BatchBuilder()
    assert [b.append(b"k", b"v", (), TS + i) for i in range(3000)] == list(range(3000))
    assert b.writer_state() == (3000, TS, TS + 2999)


def test_the_method_keeps_its_name_doc_and_signature():
    for cls in (FAST.RecordsWriter, BatchBuilder):  # type: ignore[union-attr]
        method = cls.append
        assert method.__name__ == "append"
        assert "returns its offset delta" in method.__doc__
        assert list(inspect.signature(method).parameters) == ["self", "key", "value", "headers", "timestamp"]
    with pytest.raises(TypeError):
        FAST.RecordsWriter.append(5, b"k", b"v", (), TS)  # type: ignore[union-attr]
