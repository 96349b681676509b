"""The reference backend's reading half (kcodec/core/pure/__init__.py is the backend's entry): decoding by
interpreting the IR, and the pieces every part of the reference shares (struct formats, _Fail).

The reference is one module per concern, imported one way: _pure_read and _pure_write at the bottom,
_pure_plan (the IR grouped for Python) over both, _pure_gen (the compiled fast paths) over all three, and
_pure (the entry points) on top. No module imports one above it.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..coerce import as_bytes_view, flat_view  # noqa: F401  (the reference's, used by the compiled backend too)
from ..ir import (BOOL, BYTES, FIXED_SIZE, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, STRUCT, UINT16,
                 UINT32, UUID, FieldOp, Program, default_of, min_field_size, other_tag)

if TYPE_CHECKING:  # annotations only: the plans are made above this module (kcodec/core/pure/plan.py)
    from .plan import _Plan

_FMT: dict[int, str] = {BOOL: "?", INT8: "b", INT16: "h", UINT16: "H", INT32: "i", UINT32: "I", INT64: "q",
                        FLOAT64: "d"}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I8 = struct.Struct(">b")
_new = object.__new__
MAX_STRING = 0x7FFF


class _Fail(Exception):
    """A failure deep inside a message; the field path is collected on the way out."""

    def __init__(self, reason: str, offset: int = -1) -> None:
        self.reason = reason
        self.offset = offset
        self.path: list = []

    def path_text(self) -> str:
        out = ""
        for p in reversed(self.path):
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
        return out




_KIND_TEXT = {BOOL: "bool", INT8: "int8", INT16: "int16", UINT16: "uint16", INT32: "int32", UINT32: "uint32",
              INT64: "int64", FLOAT64: "float64"}


def _element(op: FieldOp) -> FieldOp:
    """The op of one array element: same kind and encoding, never null."""
    return FieldOp(op.name, op.attr, op.kind, False, False, op.compact, op.struct, -1, None, 0, False)





def _uvarint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _Fail("truncated unsigned varint", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if result > 0xFFFFFFFF:  # a fifth byte above 0x0f: Kafka's varints carry 32 bits
                raise _Fail("unsigned varint exceeds 32 bits", start)
            return result, pos
        shift += 7
        if shift >= 35:
            raise _Fail("unsigned varint longer than 5 bytes", start)


def _need(pos: int, n: int, end: int, what: str) -> None:
    if n > end - pos:
        raise _Fail(f"expected {what} of {n} bytes, {max(end - pos, 0)} left", pos)


def _length(op: FieldOp, buf: memoryview, pos: int, end: int, wide: bool, what: str) -> tuple[int, int]:
    """A length prefix: -1 means null. Classic: int16 (strings) or int32; compact: uvarint of n+1."""
    start = pos
    if op.compact:
        if pos < end and buf[pos] < 0x80:  # a one-byte varint: most lengths
            n = buf[pos] - 1
            if n >= 0:
                return n, pos + 1
            pos += 1
        else:
            n, pos = _uvarint(buf, pos, end)
            n -= 1
    elif wide:
        _need(pos, 4, end, f"the length of {what}")
        n = _I32.unpack_from(buf, pos)[0]
        pos += 4
    else:
        _need(pos, 2, end, f"the length of {what}")
        n = _I16.unpack_from(buf, pos)[0]
        pos += 2
    if n < -1:
        raise _Fail(f"negative length {n} of {what}", start)
    if n == -1 and not op.nullable:
        raise _Fail(f"null {what} in a non-nullable field", start)
    return n, pos


def _r_string(plans, op, buf, pos, end):
    n, pos = _length(op, buf, pos, end, False, "string")
    if n < 0:
        return None, pos
    if n > MAX_STRING:
        raise _Fail(f"string length {n} exceeds {MAX_STRING}", pos)
    _need(pos, n, end, "a string")
    try:
        return str(buf[pos:pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise _Fail(f"invalid UTF-8 in string ({e.reason})", pos + e.start) from None


def _r_bytes(plans, op, buf, pos, end):
    n, pos = _length(op, buf, pos, end, True, "bytes")
    if n < 0:
        return None, pos
    _need(pos, n, end, "bytes")
    if plans.zero_copy:
        return buf[pos:pos + n], pos + n
    return bytes(buf[pos:pos + n]), pos + n


def _r_uuid(plans, op, buf, pos, end):
    _need(pos, 16, end, "a uuid")
    return uuid.UUID(bytes=bytes(buf[pos:pos + 16])), pos + 16


def _r_fixed(kind: int) -> Callable:
    st = struct.Struct(">" + _FMT[kind])
    size = st.size

    def read(plans, op, buf, pos, end):
        _need(pos, size, end, "an " + ("int" if kind != BOOL else "bool"))
        return st.unpack_from(buf, pos)[0], pos + size
    return read


def _r_struct(plans, op, buf, pos, end):
    if op.nullable:
        _need(pos, 1, end, "a struct's null marker")
        if _I8.unpack_from(buf, pos)[0] < 0:
            return None, pos + 1
        pos += 1
    return decode_struct(plans, op.struct, buf, pos, end)


def _array_reader(op: FieldOp, prog: Program) -> Callable:
    elem = _element(op)
    elem_min = max(1, min_field_size(elem, prog.structs))

    def length(buf, pos, end):
        n, pos = _length(op, buf, pos, end, True, "array")
        if n < 0:
            return n, pos
        if n * elem_min > end - pos:
            raise _Fail(f"array of {n} elements needs at least {n * elem_min} bytes, {max(end - pos, 0)} left",
                        pos)
        return n, pos

    if op.kind in _FMT:  # fixed-size numbers: one unpack for the whole array
        code, size = _FMT[op.kind], FIXED_SIZE[op.kind]
        small = tuple(struct.Struct(f">{i}{code}") for i in range(33))

        def read_numbers(plans, op_, buf, pos, end):
            n, pos = length(buf, pos, end)
            if n < 0:
                return None, pos
            st = small[n] if n <= 32 else struct.Struct(f">{n}{code}")
            return st.unpack_from(buf, pos), pos + n * size
        return read_numbers

    if op.kind == STRUCT:
        index = op.struct

        def read_one(plans, elem, buf, pos, end):
            return decode_struct(plans, index, buf, pos, end)
    else:
        read_one = _scalar_reader(elem)

    def read_items(plans, op_, buf, pos, end):
        n, pos = length(buf, pos, end)
        if n < 0:
            return None, pos
        out = []
        append = out.append
        i = 0
        try:
            for i in range(n):
                v, pos = read_one(plans, elem, buf, pos, end)
                append(v)
        except _Fail as e:
            e.path.append(i)
            raise
        return (out if structs else tuple(out)), pos  # scalar arrays decode to tuples, struct arrays to lists
    structs = op.kind == STRUCT
    return read_items


def _scalar_reader(op: FieldOp) -> Callable:
    if op.kind == STRING:
        return _r_string
    if op.kind in (BYTES, RECORDS):
        return _r_bytes
    if op.kind == UUID:
        return _r_uuid
    if op.kind == STRUCT:
        return _r_struct
    return _r_fixed(op.kind)


def _reader(op: FieldOp, prog: Program) -> Callable:
    return _array_reader(op, prog) if op.array else _scalar_reader(op)


def _overrun(ops: tuple, pos: int, end: int) -> None:
    """Name the field of a fixed-size run that runs past the end."""
    for op in ops:
        if op.fixed_size > end - pos:
            e = _Fail(f"expected {_KIND_TEXT[op.kind]} of {op.fixed_size} bytes, {max(end - pos, 0)} left", pos)
            e.path.append(op.attr)
            raise e
        pos += op.fixed_size
    raise AssertionError("no field overruns")


def decode_struct(plans: list[_Plan], index: int, buf: memoryview, pos: int, end: int) -> tuple[Any, int]:
    plan = plans[index]
    obj: Any = _new(plan.cls)
    code = 0
    try:
        for code, fn, attr, op in plan.reads:
            if code:
                v, pos = fn(plans, op, buf, pos, end)
                setattr(obj, attr, v)
            else:
                size = fn.size
                if size > end - pos:
                    _overrun(op, pos, end)
                for a, v in zip(attr, fn.unpack_from(buf, pos)):
                    setattr(obj, a, v)
                pos += size
        code = 0
        for attr, op in plan.defaults:
            setattr(obj, attr, default_of(op))
        if plan.flexible:
            if pos < end and buf[pos] == 0 and not plan.tagged_defaults:
                obj.unknown_tagged_fields = None  # the common case: no tagged fields at all
                pos += 1
            else:
                pos = _read_tagged(plans, plan, obj, buf, pos, end)
        else:
            obj.unknown_tagged_fields = None
    except _Fail as e:
        if code:
            e.path.append(attr)
        raise
    return obj, pos


def _read_tagged(plans, plan: _Plan, obj: Any, buf: memoryview, pos: int, end: int) -> int:
    for attr, op in plan.tagged_defaults:
        setattr(obj, attr, default_of(op))
    count, pos = _uvarint(buf, pos, end)
    if count * 2 > end - pos:
        raise _Fail(f"{count} tagged fields need at least {count * 2} bytes, {max(end - pos, 0)} left", pos)
    unknown = None
    for _ in range(count):
        start = pos
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        known = plan.tag_readers.get(tag)
        if known is None and tag in plan.sp.other_tags:
            raise _Fail(other_tag(plan.sp, tag), start)
        try:
            _need(pos, size, end, f"tagged field {tag}")
        except _Fail as e:
            if known is not None:  # a known tagged field runs past the end: name it
                e.path.append(known[1].attr)
            raise
        if known is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = bytes(buf[pos:pos + size])
        else:
            read, op = known
            try:
                v, after = read(plans, op, buf, pos, pos + size)
                if after != pos + size:
                    raise _Fail(f"tagged field {tag} read {after - pos} of its {size} bytes", pos)
            except _Fail as e:
                e.path.append(op.attr)
                raise
            setattr(obj, op.attr, v)
        pos += size
    obj.unknown_tagged_fields = unknown
    return pos
