"""The reference backend's generated fast paths do the work they are there for.

The reference compiles Python source per message (kcodec/_pure_gen.py) and falls back to its interpreter
for a struct whenever the generated code meets something it does not handle. A fallback gives the same
result, only about 3x slower, so results alone cannot show that the fast path runs: these tests count
the fallbacks. Well-formed instances of every message at every version must be read and written by the
generated code alone, with no struct handed to the interpreter.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, settings

from kcodec import _pure, definitions, messages
from kcodec._pure_read import decode_struct
from kcodec._pure_write import encode_struct
from kcodec.ir import Program, program_for
from kcodec.testing import instances

CASES = [(name, v) for name in definitions.names() for v in definitions.get(name).versions]


def compiled(source_and_names: tuple[str, dict], root: str, name: str, counting: Callable) -> Callable:
    """The generated functions compiled afresh (the cached ones untouched), ``name`` replaced by ``counting``."""
    source, names = source_and_names
    names[name] = counting
    exec(compile(source, f"<observed {root}>", "exec"), names)
    return names[root]  # type: ignore[no-any-return]


def observed(prog: Program) -> tuple[Callable, Callable, list[int]]:
    """The program's generated reader and writer, and the list of struct indexes either handed to the
    interpreter."""
    fallbacks: list[int] = []

    def read_slowly(plans: Any, index: int, *args: Any) -> Any:
        fallbacks.append(index)
        return decode_struct(plans, index, *args)

    def write_slowly(plans: Any, index: int, *args: Any) -> Any:
        fallbacks.append(index)
        return encode_struct(plans, index, *args)

    read = compiled(_pure.reader_source(prog), "read_0", "decode_struct", read_slowly)
    write = compiled(_pure.writer_source(prog), "write_0", "encode_struct", write_slowly)
    return read, write, fallbacks


@pytest.mark.parametrize("name", sorted({n for n, _ in CASES}))
def test_well_formed_messages_never_reach_the_interpreter(name: str) -> None:
    cls = getattr(messages, name)
    for version in definitions.get(name).versions:
        prog = program_for(cls, version)
        read, write, fallbacks = observed(prog)

        @settings(max_examples=2)
        @given(instances(cls, version))
        def check(msg: Any) -> None:
            out = bytearray()
            write(msg, out)
            assert bytes(out) == _pure.encode_interpreted(prog, msg)
            obj, end = read(memoryview(bytes(out)), 0, len(out))
            assert end == len(out) and obj == msg
            assert fallbacks == [], f"{name} v{version}: structs {sorted(set(fallbacks))} fell back to the interpreter"

        check()


def test_a_fallback_is_seen():
    # The counting must be able to fail: a truncated body and a subclass instance both go the slow way.
    from kcodec.messages import MetadataResponse

    prog = program_for(MetadataResponse, 12)
    read, write, fallbacks = observed(prog)
    msg = MetadataResponse(topics=[MetadataResponse.Topic(name="t")])
    data = _pure.encode(prog, msg)
    with pytest.raises(Exception):
        read(memoryview(data[:-3]), 0, len(data) - 3)
    assert fallbacks
    fallbacks.clear()

    class Odd(MetadataResponse):
        __slots__ = ()

    out = bytearray()
    write(Odd(topics=msg.topics), out)
    assert bytes(out) == data and fallbacks == [0]
