"""The reference backend's generated fast paths do the work they are there for.

The reference compiles Python source per message (kcodec/core/pure/gen.py) and falls back to its interpreter
for a struct whenever the generated code meets something it does not handle. A fallback gives the same
result, only about 3x slower, so results alone cannot show that the fast path runs: these tests count
the fallbacks, in the compiled functions kcodec itself runs (their interpreter replaced by a counting one
while a check runs, then put back). Well-formed instances of every message at every version must be read and written by the
generated code alone, with no struct handed to the interpreter.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest
from hypothesis import given, settings

from kcodec import definitions, messages
from kcodec.core import pure as _pure
from kcodec.core.pure.gen import _fast_reader, _fast_writer
from kcodec.core.pure.read import decode_struct
from kcodec.core.pure.write import encode_struct
from kcodec.core.ir import Program, program_for
from kcodec.testing import instances

CASES = [(name, v) for name in definitions.names() for v in definitions.get(name).versions]


@contextlib.contextmanager
def observed(prog: Program) -> Iterator[tuple[Callable, Callable, list[int]]]:
    """The program's generated reader and writer (the cached ones kcodec runs), each struct they hand to the
    interpreter counted in the list while the block runs."""
    fallbacks: list[int] = []

    def read_slowly(plans: Any, index: int, *args: Any) -> Any:
        fallbacks.append(index)
        return decode_struct(plans, index, *args)

    def write_slowly(plans: Any, index: int, *args: Any) -> Any:
        fallbacks.append(index)
        return encode_struct(plans, index, *args)

    read, write = _fast_reader(prog, False), _fast_writer(prog)
    names = [(read.__globals__, "decode_struct", read_slowly), (write.__globals__, "encode_struct", write_slowly)]
    saved = [(g, name, g[name]) for g, name, _ in names]
    try:
        for g, name, counting in names:
            g[name] = counting
        yield read, write, fallbacks
    finally:
        for g, name, original in saved:
            g[name] = original


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_well_formed_messages_never_reach_the_interpreter(name: str) -> None:
    cls = getattr(messages, name)
    for version in definitions.get(name).versions:
        prog = program_for(cls, version)

        @settings(max_examples=2)
        @given(instances(cls, version))
        def check(msg: Any) -> None:
            with observed(prog) as (read, write, fallbacks):
                out = bytearray()
                write(msg, out)
                obj, end = read(memoryview(bytes(out)), 0, len(out))
            assert fallbacks == [], f"{name} v{version}: structs {sorted(set(fallbacks))} fell back to the interpreter"
            assert bytes(out) == _pure.encode_interpreted(prog, msg)
            assert end == len(out) and obj == msg

        check()


def test_a_fallback_is_seen():
    # The counting must be able to fail: a truncated body and a subclass instance both go the slow way.
    from kcodec.messages import MetadataResponse

    prog = program_for(MetadataResponse, 12)
    msg = MetadataResponse(topics=[MetadataResponse.Topic(name="t")])
    data = _pure.encode(prog, msg)

    class Odd(MetadataResponse):
        __slots__ = ()

    with observed(prog) as (read, write, fallbacks):
        with pytest.raises(Exception):
            read(memoryview(data[:-3]), 0, len(data) - 3)
        assert fallbacks
        fallbacks.clear()
        out = bytearray()
        write(Odd(topics=msg.topics), out)
    assert bytes(out) == data and fallbacks == [0]
    assert _fast_writer(prog).__globals__["encode_struct"] is encode_struct  # put back
