"""Hypothesis strategies that make valid instances of any message at any version (needs hypothesis).

    from kcodec.testing import instances
    @given(instances(MetadataResponse, 12))
    def test_roundtrip(msg): ...

An instance is valid for its version: fields the version lacks hold their defaults, nulls appear only
where the version allows them, and unknown tagged fields use tags the version does not know.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .core.ir import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16, UINT32,
                 UUID, FieldOp, Program, default_of, program_for)

_INT_BOUNDS = {INT8: 7, INT16: 15, INT32: 31, INT64: 63}
MAX_ARRAY = 4


def _scalar(op: FieldOp, prog: Program, depth: int) -> st.SearchStrategy[Any]:
    k = op.kind
    if k == BOOL:
        return st.booleans()
    if k in _INT_BOUNDS:
        b = _INT_BOUNDS[k]
        return st.integers(-(1 << b), (1 << b) - 1)
    if k == UINT16:
        return st.integers(0, 0xFFFF)
    if k == UINT32:
        return st.integers(0, 0xFFFFFFFF)
    if k == FLOAT64:
        return st.floats(allow_nan=False)
    if k == UUID:
        return st.uuids()
    if k == STRING:
        return st.text(max_size=12)
    if k in (BYTES, RECORDS):
        return st.binary(max_size=16)
    if k == STRUCT:
        return _struct(prog, op.struct, depth + 1)
    raise AssertionError(k)


def _field(op: FieldOp, prog: Program, depth: int) -> st.SearchStrategy[Any]:
    if op.array:
        elem = _scalar(op, prog, depth)
        value: st.SearchStrategy[Any] = st.lists(elem, max_size=MAX_ARRAY if depth < 3 else 1)
    else:
        value = _scalar(op, prog, depth)
    if op.nullable:
        value = st.none() | value
    return value


def _struct(prog: Program, index: int, depth: int) -> st.SearchStrategy[Any]:
    sp = prog.structs[index]
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for op in sp.fields + sp.tagged:
        parts[op.attr] = _field(op, prog, depth)
    absent = sp.absent
    cls = sp.cls
    known = set(sp.tags) | set(sp.other_tags)  # tags of other versions are refused, as by Kafka

    @st.composite
    def build(draw: Any) -> Any:
        obj = cls()
        for attr, strat in parts.items():
            setattr(obj, attr, draw(strat))
        for op in absent:
            setattr(obj, op.attr, default_of(op))
        if sp.flexible and draw(st.integers(0, 7)) == 0:
            tags = draw(st.lists(st.integers(0, 40).filter(lambda t: t not in known), max_size=2, unique=True))
            obj.unknown_tagged_fields = {t: draw(st.binary(max_size=6)) for t in tags} or None
        return obj

    return build()


def instances(cls: type, version: int) -> st.SearchStrategy[Any]:
    """Valid instances of a message class at one version."""
    return program_instances(program_for(cls, version))


def program_instances(prog: Program) -> st.SearchStrategy[Any]:
    """Valid instances of the message a compiled program describes."""
    return _struct(prog, 0, 0)
