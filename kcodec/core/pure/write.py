"""The reference backend's writing half (kcodec/core/pure/__init__.py is the backend's entry): sizing and encoding by
interpreting the IR, the oracle for the compiled fast path in kcodec/core/pure/gen.py. Over kcodec/core/pure/read.py
only (see its docstring for the order of the reference's modules)."""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, Any, Callable

from .read import _FMT, _KIND_TEXT, MAX_STRING, _Fail, _I16, _I32, _element, as_bytes_view
from ..coerce import as_index
from ...buffers import Buffers
from ...exceptions import EncodeError
from ..ir import BOOL, BYTES, FIXED_SIZE, FLOAT64, RECORDS, STRING, STRUCT, UUID, FieldOp, Program, is_default, other_tag

if TYPE_CHECKING:  # annotations only: the plans are made above this module (kcodec/core/pure/plan.py)
    from .plan import _Plan


# ---------------------------------------------------------------------------------------- writing

_ONE_BYTE = [bytes((i,)) for i in range(128)]


def _uvarint_bytes(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    if n < 0 or n > 0xFFFFFFFF:
        raise _Fail(f"{n} does not fit an unsigned varint")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def uvarint_size(n: int) -> int:
    size = 1
    while n > 0x7F:
        n >>= 7
        size += 1
    return size


def _w_length(op: FieldOp, n: int, out: bytearray, wide: bool) -> None:
    if op.compact:
        out += _uvarint_bytes(n + 1)
    else:
        out += (_I32 if wide else _I16).pack(n)


def _s_length(op: FieldOp, n: int, wide: bool) -> int:
    return uvarint_size(n + 1) if op.compact else (4 if wide else 2)


def _null_ok(op: FieldOp, what: str) -> None:
    if not op.nullable:
        raise _Fail(f"{what} is None but the field is not nullable in this version")


def _utf8(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Fail(f"expected str, got {type(value).__name__}")
    try:
        b = value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise _Fail(f"string is not encodable as UTF-8 ({e.reason})") from None
    if len(b) > MAX_STRING:
        raise _Fail(f"string of {len(b)} UTF-8 bytes exceeds {MAX_STRING}")
    return b


def _w_string(plans, op, v, out):
    if v is None:
        _null_ok(op, "string")
        _w_length(op, -1, out, False)
        return
    b = _utf8(v)
    _w_length(op, len(b), out, False)
    out += b


def _s_string(plans, op, v):
    if v is None:
        _null_ok(op, "string")
        return _s_length(op, -1, False)
    n = len(_utf8(v))
    return _s_length(op, n, False) + n


def _bytes_of(v: Any) -> memoryview:
    try:
        return as_bytes_view(v)
    except TypeError:
        raise _Fail(f"expected a bytes-like value, got {type(v).__name__}") from None


def _parts_of(v: Buffers) -> list[tuple[Any, memoryview]]:
    """A Buffers value's parts, each with its flat bytes (a part that is not bytes-like is named)."""
    out = []
    for i, part in enumerate(v):
        try:
            out.append((part, _bytes_of(part)))
        except _Fail as e:
            e.path.append(i)
            raise
    return out


def _w_bytes(plans, op, v, out):
    if v is None:
        _null_ok(op, "bytes")
        _w_length(op, -1, out, True)
        return
    if type(v) is Buffers:  # several buffers, written one after the other
        parts = _parts_of(v)
        n = sum(len(b) for _, b in parts)
        _w_length(op, n, out, True)
        spliced = out.__class__ is Spliced and out.takes(op.kind, n)
        for part, b in parts:
            if not spliced:
                out += b
            elif len(b):
                out.splice(part, b)
        return
    b = _bytes_of(v)
    _w_length(op, len(b), out, True)
    if out.__class__ is Spliced and out.takes(op.kind, len(b)):
        out.splice(v, b)
    else:
        out += b


def _s_bytes(plans, op, v):
    if v is None:
        _null_ok(op, "bytes")
        return _s_length(op, -1, True)
    n = sum(len(b) for _, b in _parts_of(v)) if type(v) is Buffers else len(_bytes_of(v))
    return _s_length(op, n, True) + n


class Spliced(bytearray):
    """What encode_buffers writes: the message's bytes but for the values it splices, which stay the caller's
    buffers, each remembered with the position it goes to. Spliced: every non-empty records value, and any
    bytes value of at least ``threshold`` bytes. Tagged fields are written apart and never spliced."""

    threshold = 0
    spliced: list[tuple[int, Any]]
    spliced_bytes = 0

    def takes(self, kind: int, n: int) -> bool:
        return n > 0 and (kind == RECORDS or n >= self.threshold)

    def splice(self, v: Any, b: memoryview) -> None:
        self.spliced.append((len(self), spliced_value(v, b)))
        self.spliced_bytes += len(b)


def spliced_output(threshold: int) -> Spliced:
    out = Spliced()
    out.threshold, out.spliced = threshold, []
    return out


def spliced_value(v: Any, flat: memoryview) -> Any:
    """The buffer a spliced value goes out as: the caller's own object when it is flat bytes (bytes,
    bytearray, a byte memoryview), else a flat byte view of it (a numpy array's, say): never a copy."""
    t = type(v)
    if t is bytes or t is bytearray or t is memoryview and v.ndim == 1 and v.format == "B":
        return v
    return flat


def split_buffers(data: bytes, spliced: list[tuple[int, Any]]) -> list[Any]:
    """The buffers of an encoding: slices of ``data`` (views, not copies) with each spliced value inserted
    at its position; ``[data]`` when nothing was spliced, ``[]`` for an empty body (no empty buffer for a
    transport to keep queued). Both backends' encode_buffers end here."""
    if not spliced:
        return [data] if data else []
    view = memoryview(data)
    out: list[Any] = []
    prev = 0
    for pos, value in spliced:
        if pos > prev:
            out.append(view[prev:pos])
            prev = pos
        out.append(value)
    if prev < len(data):
        out.append(view[prev:])
    return out


def _uuid_int(v: Any) -> int:
    if not isinstance(v, uuid.UUID):
        raise _Fail(f"expected uuid.UUID, got {type(v).__name__}")
    i = v.int  # the UUID's value (its bytes are made from it); set by hand, it may be anything
    if not isinstance(i, int) or not 0 <= i < 1 << 128:
        raise _Fail(f"a UUID's int must be 0 to 2**128 - 1, got {i!r}")
    return i


def _w_uuid(plans, op, v, out):
    out += _uuid_int(v).to_bytes(16, "big")


def _s_uuid(plans, op, v):
    _uuid_int(v)
    return 16


def _pack_checked(st: struct.Struct, kind: int, v: Any) -> bytes:
    if kind == BOOL:
        if not isinstance(v, int):
            raise _Fail(f"expected bool, got {type(v).__name__}")
    elif kind == FLOAT64:
        if not isinstance(v, (int, float)):
            raise _Fail(f"expected float, got {type(v).__name__}")
    elif not isinstance(v, int):
        raise _Fail(f"expected int, got {type(v).__name__}")
    try:
        return st.pack(v)
    except (struct.error, OverflowError):
        raise _Fail(f"{v!r} is out of range for {_KIND_TEXT[kind]}") from None



def _w_fixed(kind: int) -> Callable:
    st = struct.Struct(">" + _FMT[kind])

    def write(plans, op, v, out):
        out += _pack_checked(st, kind, v)
    return write


def _s_fixed(kind: int) -> Callable:
    size = FIXED_SIZE[kind]
    st = struct.Struct(">" + _FMT[kind])

    def size_of(plans, op, v):
        _pack_checked(st, kind, v)
        return size
    return size_of


def _w_struct(plans, op, v, out):
    if v is None:
        _null_ok(op, "struct")
        out += b"\xff"
        return
    if op.nullable:
        out += b"\x01"
    encode_struct(plans, op.struct, v, out)


def _s_struct(plans, op, v):
    if v is None:
        _null_ok(op, "struct")
        return 1
    return (1 if op.nullable else 0) + size_struct(plans, op.struct, v)


def _scalar_writer(op: FieldOp) -> tuple[Callable, Callable]:
    k = op.kind
    if k == STRING:
        return _w_string, _s_string
    if k in (BYTES, RECORDS):
        return _w_bytes, _s_bytes
    if k == UUID:
        return _w_uuid, _s_uuid
    if k == STRUCT:
        return _w_struct, _s_struct
    return _w_fixed(k), _s_fixed(k)


def _sequence(v: Any) -> Any:
    if type(v) is list or type(v) is tuple:
        return v
    if isinstance(v, (str, bytes, bytearray, dict)) or not hasattr(v, "__len__") or not hasattr(v, "__iter__"):
        raise _Fail(f"expected a list, got {type(v).__name__}")
    return list(v)


def _array_writer(op: FieldOp) -> tuple[Callable, Callable]:
    elem = _element(op)
    w_one, s_one = _scalar_writer(elem)
    packed = op.kind in _FMT  # fixed-size numbers: one pack for the whole array
    code = _FMT.get(op.kind, "")
    cache: dict[int, struct.Struct] = {}

    def pack_all(v: Any) -> bytes:
        st = cache.get(len(v))
        if st is None:
            st = cache[len(v)] = struct.Struct(f">{len(v)}{code}")
        try:
            if op.kind == BOOL and not all(isinstance(x, int) for x in v):
                raise struct.error
            return st.pack(*v)
        except (struct.error, OverflowError, TypeError):
            for i, item in enumerate(v):  # find and name the bad element
                try:
                    s_one(None, elem, item)
                except _Fail as e:
                    e.path.append(i)
                    raise
            raise AssertionError("an array failed to pack but no element did")

    def write(plans, op_, v, out):
        if v is None:
            _null_ok(op, "array")
            _w_length(op, -1, out, True)
            return
        v = _sequence(v)
        _w_length(op, len(v), out, True)
        if packed:
            out += pack_all(v)
            return
        i = 0
        try:
            for i, item in enumerate(v):
                w_one(plans, elem, item, out)
        except _Fail as e:
            e.path.append(i)
            raise

    def size_of(plans, op_, v):
        if v is None:
            _null_ok(op, "array")
            return _s_length(op, -1, True)
        v = _sequence(v)
        n = _s_length(op, len(v), True)
        if packed:
            return n + len(pack_all(v))
        i = 0
        try:
            for i, item in enumerate(v):
                n += s_one(plans, elem, item)
        except _Fail as e:
            e.path.append(i)
            raise
        return n

    return write, size_of


def _writer_and_sizer(op: FieldOp) -> tuple[Callable, Callable]:
    return _array_writer(op) if op.array else _scalar_writer(op)


def _get(obj: Any, op: FieldOp) -> Any:
    try:
        return getattr(obj, op.attr)
    except AttributeError:
        raise _Fail(f"{type(obj).__name__} has no attribute {op.attr!r}") from None


def _check_struct(plan: _Plan, obj: Any) -> None:
    """Structs are duck-typed (any object with the attributes will do), but not None, dicts or lists."""
    if obj is None or not hasattr(obj, "__slots__") and not hasattr(obj, "__dict__"):
        raise _Fail(f"expected a {plan.sp.cls.__qualname__}, got {type(obj).__name__}")


def _check_absent(plan: _Plan, obj: Any) -> None:
    for op in plan.absent_checks:
        v = _get(obj, op)
        if not is_default(op, v):
            e = _Fail(f"{v!r} is not the default, and this version has no field {op.name} to carry it "
                      "(the field is not ignorable)")
            e.path.append(op.attr)
            raise e


def _tagged_items(plans, plan: _Plan, obj: Any) -> list[tuple[int, Any, Any, FieldOp | None]]:
    """(tag, value, writer, op) of every tagged field to write, ascending by tag."""
    items: list[tuple[int, Any, Any, FieldOp | None]] = []
    for op, w, s in plan.tag_writers:
        v = _get(obj, op)
        if not is_default(op, v):
            items.append((op.tag, v, (w, s), op))
    unknown = getattr(obj, "unknown_tagged_fields", None)
    if unknown:
        for tag, raw in unknown.items():
            if not isinstance(tag, int) or tag < 0 or tag > 0xFFFFFFFF:  # a tag is an unsigned varint: 32 bits
                raise _Fail(f"unknown tagged field key {tag!r} is not a tag number")
            if tag in plan.sp.tags:
                raise _Fail(f"unknown tagged field {tag} collides with the known tagged field "
                            f"{plan.sp.tags[tag].attr}")
            if tag in plan.sp.other_tags:
                raise _Fail(other_tag(plan.sp, tag))
            items.append((tag, raw, None, None))
    items.sort(key=lambda t: t[0])
    return items


def encode_struct(plans: list[_Plan], index: int, obj: Any, out: bytearray) -> None:
    plan = plans[index]
    op = None
    try:
        _check_struct(plan, obj)
        _check_absent(plan, obj)
        for step in plan.steps:
            if step[0] == 0:
                op = None  # _pack_group names the field itself
                out += _pack_group(step[1], step[3], obj)
            else:
                op = step[3]
                step[1](plans, op, _get(obj, op), out)
        op = None
        if plan.sp.flexible:
            _write_tagged(plans, plan, obj, out)
    except _Fail as e:
        if op is not None:
            e.path.append(op.attr)
        raise


def _write_tagged(plans: list[_Plan], plan: _Plan, obj: Any, out: bytearray) -> None:
    items = _tagged_items(plans, plan, obj)
    out += _uvarint_bytes(len(items))
    op = None
    try:
        for tag, v, ws, op in items:
            out += _uvarint_bytes(tag)
            if ws is None:
                raw = _bytes_of(v)
                out += _uvarint_bytes(len(raw))
                out += raw
            else:
                body = bytearray()
                ws[0](plans, op, v, body)
                out += _uvarint_bytes(len(body))
                out += body
    except _Fail as e:
        if op is not None:
            e.path.append(op.attr)
        raise


def size_struct(plans: list[_Plan], index: int, obj: Any) -> int:
    plan = plans[index]
    n = 0
    op = None
    try:
        _check_struct(plan, obj)
        _check_absent(plan, obj)
        for step in plan.steps:
            if step[0] == 0:
                op = None  # _pack_group names the field itself
                n += len(_pack_group(step[1], step[3], obj))
            else:
                op = step[3]
                n += step[2](plans, op, _get(obj, op))
        op = None
        if plan.sp.flexible:
            items = _tagged_items(plans, plan, obj)
            n += uvarint_size(len(items))
            for tag, v, ws, op in items:
                body = len(_bytes_of(v)) if ws is None else ws[1](plans, op, v)
                n += uvarint_size(tag) + uvarint_size(body) + body
            op = None
    except _Fail as e:
        if op is not None:
            e.path.append(op.attr)
        raise
    return n


_SINGLE = {k: struct.Struct(">" + f) for k, f in _FMT.items()}


def _pack_group(st: struct.Struct, ops: tuple, obj: Any) -> bytes:
    """A run of fixed-size fields in one pack; any doubt goes to the field-by-field check."""
    values = []
    for op in ops:
        try:
            values.append(_get(obj, op))
        except _Fail as e:
            e.path.append(op.attr)
            raise
    try:
        for op, v in zip(ops, values):
            if op.kind == BOOL and not isinstance(v, int):  # "?" would pack any object
                raise struct.error
        return st.pack(*values)
    except (struct.error, OverflowError, TypeError):
        for op, v in zip(ops, values):
            try:
                _pack_checked(_SINGLE[op.kind], op.kind, v)
            except _Fail as e:
                e.path.append(op.attr)
                raise
        raise AssertionError("a run failed to pack but no field did")


def writable_view(buffer: Any, offset: int) -> memoryview:
    """The flat writable bytes of a caller's buffer, with offset checked (both backends' encode_into)."""
    mv = memoryview(buffer)
    if mv.readonly:
        raise TypeError(f"encode_into needs a writable buffer, got a read-only {type(buffer).__name__}")
    if not mv.c_contiguous:
        raise TypeError("encode_into needs a contiguous buffer")
    mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
    offset = as_index(offset)  # (an array, a float: TypeError, as the compiled backend's Py_ssize_t says)
    if not 0 <= offset <= len(mv):
        raise ValueError(f"offset {offset} lies outside the buffer's {len(mv)} bytes")
    return mv


def no_room(prog: Program, room: int, offset: int, size: int) -> EncodeError:
    return EncodeError(f"the buffer has {room} bytes from offset {offset}, the message needs {size}", "",
                       prog.message, prog.version)
