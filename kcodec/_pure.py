"""The reference backend: runs the IR in plain Python. It stays forever as the oracle that the
Cython backend is fuzzed against, so it favours being obviously right over being clever.

Entry points (the same in ``_fast``): ``decode(prog, buf, pos, end, zero_copy) -> (obj, pos)``,
``encode(prog, obj) -> bytes``, ``encoded_size(prog, obj) -> int``,
``encode_into(prog, obj, buffer, offset) -> int``.
"""

from __future__ import annotations

import gc
import struct
import uuid
from typing import Any, Callable

from .exceptions import DecodeError, EncodeError
from .ir import (BOOL, BYTES, FIXED_SIZE, FLOAT64, INT8, INT16, INT32, INT64, KIND_NAMES, RECORDS, STRING,
                 STRUCT, UINT16, UINT32, UUID, FieldOp, Program, StructProgram, default_of, is_default,
                 min_field_size)

_FMT = {BOOL: "?", INT8: "b", INT16: "h", UINT16: "H", INT32: "i", UINT32: "I", INT64: "q", FLOAT64: "d"}
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


# ---------------------------------------------------------------- plans: the IR, grouped for Python

class _Plan:
    """A struct's IR prepared for this backend: runs of fixed-size scalars become one struct.Struct."""

    __slots__ = ("sp", "cls", "steps", "reads", "tag_readers", "tag_writers", "absent_checks", "defaults",
                 "tagged_defaults", "flexible")

    def __init__(self, sp: StructProgram, prog: Program) -> None:
        self.sp = sp
        self.cls = sp.cls
        self.flexible = sp.flexible
        steps: list[tuple] = []
        reads: list[tuple] = []
        run: list[FieldOp] = []

        def flush() -> None:
            if run:
                st = struct.Struct(">" + "".join(_FMT[o.kind] for o in run))
                steps.append((0, st, None, tuple(run)))
                reads.append((0, st, tuple(o.attr for o in run), tuple(run)))
                run.clear()

        for op in sp.fields:
            if not op.array and op.kind in _FMT:
                run.append(op)
                continue
            flush()
            steps.append((1, *_writer_and_sizer(op), op))
            reads.append((1, _reader(op, prog), op.attr, op))
        flush()
        self.steps = steps  # for writing: (0, Struct, None, ops) or (1, writer, sizer, op)
        self.reads = tuple(reads)  # (0, Struct, attrs, ops) or (1, reader, attr, op)
        self.tag_readers = {op.tag: (_reader(op, prog), op) for op in sp.tagged}
        self.tag_writers = [(op, *_writer_and_sizer(op)) for op in sp.tagged]
        self.absent_checks = tuple(op for op in sp.absent if not op.ignorable)
        self.defaults = tuple((op.attr, op) for op in sp.absent)
        self.tagged_defaults = tuple((op.attr, op) for op in sp.tagged)


class _Plans(list):
    """A program's plans, and whether bytes fields come back as views of the input (zero-copy)."""

    zero_copy = False


def _plans(prog: Program, zero_copy: bool = False) -> _Plans:
    key = "pure-zero-copy" if zero_copy else "pure"
    plans = prog.backend_cache.get(key)
    if plans is None:
        if zero_copy:
            plans = _Plans(_plans(prog))
            plans.zero_copy = True
        else:
            plans = _Plans([None] * len(prog.structs))
            for sp in prog.structs:
                plans[sp.index] = _Plan(sp, prog)
        prog.backend_cache[key] = plans
    return plans


def _element(op: FieldOp) -> FieldOp:
    """The op of one array element: same kind and encoding, never null."""
    return FieldOp(op.name, op.attr, op.kind, False, False, op.compact, op.struct, -1, None, 0, False)


# ---------------------------------------------------------------------------------------- reading

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
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        known = plan.tag_readers.get(tag)
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


def as_bytes_view(data: Any) -> memoryview:
    """A flat unsigned-byte view of any buffer (bytes, bytearray, memoryview, mmap, numpy)."""
    mv = memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
    return mv


def decode(prog: Program, data: Any, pos: int = 0, end: int | None = None,
           zero_copy: bool = False) -> tuple[Any, int]:
    """Decode one body from data[pos:end]; returns the object and the offset after it. With zero_copy,
    bytes and records fields are memoryview slices of data instead of copies."""
    return _decode(prog, data, pos, end, zero_copy, _fast_reader(prog, zero_copy))


def decode_interpreted(prog: Program, data: Any, pos: int = 0, end: int | None = None,
                       zero_copy: bool = False) -> tuple[Any, int]:
    """decode by the interpreter alone (without the compiled fast path): for tests that compare the two."""
    plans = _plans(prog, zero_copy)
    return _decode(prog, data, pos, end, zero_copy, lambda buf, pos, end: decode_struct(plans, 0, buf, pos, end))


def _decode(prog: Program, data: Any, pos: int, end: int | None, zero_copy: bool,
            read: Callable) -> tuple[Any, int]:
    # A decode makes many containers and no cycles: collections while it runs would only scan young
    # objects that all survive (and promote them, to be scanned again), which grows faster than linearly.
    # (Paused before the first allocation, so that a collection owed to earlier work does not fall in it.)
    enabled = gc.isenabled()
    gc.disable()
    try:
        buf = as_bytes_view(data)
        end = len(buf) if end is None else end
        if not 0 <= pos <= end <= len(buf):
            raise ValueError(f"offset {pos} and end {end} do not lie within the buffer's {len(buf)} bytes")
        return read(buf, pos, end)
    except _Fail as e:
        raise DecodeError(e.reason, e.offset, e.path_text(), prog.message, prog.version) from None
    finally:
        if enabled:
            gc.enable()


# ------------------------------------------------------------- the compiled fast path of decoding
#
# Per struct program, Python source for the well-formed common case is generated, compiled once and cached
# in Program.backend_cache: fields are read straight into slots, runs of fixed-size fields in one unpack,
# one-byte lengths and child structs inline. It returns only what it has fully checked; on anything else
# (every error, and whatever it does not handle itself) the struct is decoded again from its start by the
# interpreter above (decode_struct), which is the reference for results and errors alike.

class _Gen:
    """Source of one struct's reader, with the constants it refers to."""

    def __init__(self, plan: _Plan, plans: _Plans, prog: Program, names: dict) -> None:
        self.plan, self.plans, self.prog, self.names = plan, plans, prog, names
        self.lines: list[str] = []

    def const(self, value: Any, hint: str) -> str:
        name = f"{hint}_{len(self.names)}"
        self.names[name] = value
        return name

    def emit(self, line: str, depth: int = 2) -> None:
        self.lines.append("    " * depth + line)

    def length(self, op: FieldOp, wide: bool, what: str, var: str, depth: int) -> None:
        """var = the length (-1: null); classic or compact, the common encodings inline."""
        emit = self.emit
        if op.compact:
            emit(f"{var} = buf[pos] - 1 if pos < end and buf[pos] < 0x80 else -2", depth)
            emit(f"if {var} >= {-1 if op.nullable else 0}:  # a one-byte varint", depth)
            emit("pos += 1", depth + 1)
            emit("else:", depth)
            emit(f"{var}, pos = _length({self.const(op, 'op')}, buf, pos, end, {wide}, {what!r})", depth + 1)
        else:
            st = "_I32" if wide else "_I16"
            emit(f"if {4 if wide else 2} > end - pos: raise _Slow", depth)
            emit(f"{var} = {st}.unpack_from(buf, pos)[0]", depth)
            emit(f"if {var} < {-1 if op.nullable else 0}: raise _Slow", depth)
            emit(f"pos += {4 if wide else 2}", depth)

    def field(self, op: FieldOp, target: str, depth: int) -> None:
        """Read one value of op (an element op for array items) into target."""
        emit = self.emit
        kind = op.kind
        if target.startswith("obj."):
            emit(f"# {op.attr}: {KIND_NAMES[kind]}", depth)
        if kind == STRING:
            # n: the one-byte compact length (n - 1 bytes follow), or the int16 length (n bytes follow)
            read_n, fits, first, after = (
                ("buf[pos] if pos < end else 0", "0 < n < 0x80 and n <= end - pos", "pos + 1", "pos + n")
                if op.compact else
                ("_I16.unpack_from(buf, pos)[0] if 2 <= end - pos else -2", "0 <= n <= end - pos - 2",
                 "pos + 2", "pos + 2 + n"))
            emit(f"n = {read_n}", depth)
            emit(f"if {fits}:", depth)
            emit(f"{target} = str(buf[{first}:{after}], 'utf-8')", depth + 1)
            emit(f"pos = {after}", depth + 1)
            emit("else:", depth)
            emit(f"{target}, pos = _r_string(plans, {self.const(op, 'op')}, buf, pos, end)", depth + 1)
        elif kind == UUID:
            emit("if 16 > end - pos: raise _Slow", depth)
            emit(f"{target} = _uuid(bytes=bytes(buf[pos:pos + 16]))", depth)
            emit("pos += 16", depth)
        elif kind == STRUCT:
            child = f"read_{op.struct}"
            if op.nullable:
                emit("if pos >= end: raise _Slow", depth)
                emit("if buf[pos] >= 0x80:", depth)
                emit(f"{target} = None", depth + 1)
                emit("pos += 1", depth + 1)
                emit("else:", depth)
                emit(f"{target}, pos = {child}(buf, pos + 1, end)", depth + 1)
            else:
                emit(f"{target}, pos = {child}(buf, pos, end)", depth)
        elif kind in _FMT:
            st = self.const(_SINGLE[kind], "st")
            emit(f"if {FIXED_SIZE[kind]} > end - pos: raise _Slow", depth)
            emit(f"{target} = {st}.unpack_from(buf, pos)[0]", depth)
            emit(f"pos += {FIXED_SIZE[kind]}", depth)
        else:  # bytes and records: copies or views, as the interpreter makes them
            emit(f"{target}, pos = _r_bytes(plans, {self.const(op, 'op')}, buf, pos, end)", depth)

    def array(self, op: FieldOp) -> None:
        emit = self.emit
        elem = _element(op)
        elem_min = max(1, min_field_size(elem, self.prog.structs))
        emit(f"# {op.attr}: array of {KIND_NAMES[op.kind]}", 2)
        self.length(op, True, "array", "count", 2)
        emit("if count < 0:", 2)
        emit(f"obj.{op.attr} = None", 3)
        emit("else:", 2)
        emit(f"if count * {elem_min} > end - pos: raise _Slow", 3)
        if op.kind in _FMT:
            code, size = _FMT[op.kind], FIXED_SIZE[op.kind]
            small = self.const(tuple(struct.Struct(f">{i}{code}") for i in range(33)), "small")
            emit(f"st = {small}[count] if count <= 32 else struct.Struct(f'>{{count}}{code}')", 3)
            emit(f"obj.{op.attr} = st.unpack_from(buf, pos)", 3)
            emit(f"pos += count * {size}", 3)
            return
        emit("items = []", 3)
        emit("for _ in range(count):", 3)
        self.field(elem, "v", 4)
        emit("items.append(v)", 4)
        emit(f"obj.{op.attr} = {'items' if op.kind == STRUCT else 'tuple(items)'}", 3)

    def source(self) -> str:
        plan, emit = self.plan, self.emit
        index = plan.sp.index
        self.names[f"cls_{index}"] = plan.cls
        self.lines.append(f"def read_{index}(buf, pos, end):")
        emit(f'"""{plan.sp.name}: the well-formed common case; anything else goes to decode_struct."""', 1)
        emit("start = pos", 1)
        emit("try:", 1)
        emit(f"obj = _new(cls_{index})", 2)
        for code, fn, attr, op in plan.reads:
            if not code:
                targets = "".join(f"obj.{a}, " for a in attr)
                emit(f"if {fn.size} > end - pos: raise _Slow", 2)
                emit(f"{targets.rstrip(', ')}{',' if len(attr) == 1 else ''} = {self.const(fn, 'run')}"
                     ".unpack_from(buf, pos)", 2)
                emit(f"pos += {fn.size}", 2)
            elif op.array:
                self.array(op)
            else:
                self.field(op, f"obj.{attr}", 2)
        for attr, op in plan.defaults:
            emit(f"obj.{attr} = _default_of({self.const(op, 'op')})", 2)
        if plan.flexible:
            if not plan.tagged_defaults:
                emit("if pos < end and buf[pos] == 0:", 2)
                emit("obj.unknown_tagged_fields = None", 3)
                emit("pos += 1", 3)
                emit("else:", 2)
                emit(f"pos = _read_tagged(plans, plans[{index}], obj, buf, pos, end)", 3)
            else:
                emit(f"pos = _read_tagged(plans, plans[{index}], obj, buf, pos, end)", 2)
        else:
            emit("obj.unknown_tagged_fields = None", 2)
        emit("return obj, pos", 2)
        emit("except Exception:", 1)
        emit(f"return decode_struct(plans, {index}, buf, start, end)", 2)
        return "\n".join(self.lines)


class _Slow(Exception):
    """The fast path met something it leaves to the interpreter."""


def reader_source(prog: Program, zero_copy: bool = False) -> tuple[str, dict]:
    """The generated source of a program's fast readers (read_0 is the root) and the names it uses."""
    plans = _plans(prog, zero_copy)
    names: dict[str, Any] = {"plans": plans, "struct": struct, "_new": _new, "_uuid": uuid.UUID, "_Slow": _Slow,
                             "_I16": _I16, "_I32": _I32, "_length": _length, "_r_string": _r_string,
                             "_r_bytes": _r_bytes, "_read_tagged": _read_tagged, "_default_of": default_of,
                             "decode_struct": decode_struct}
    parts = [_Gen(plan, plans, prog, names).source() for plan in plans]
    return "\n\n\n".join(parts) + "\n", names


def _fast_reader(prog: Program, zero_copy: bool) -> Callable:
    key = "pure-reader-zero-copy" if zero_copy else "pure-reader"
    read = prog.backend_cache.get(key)
    if read is None:
        source, names = reader_source(prog, zero_copy)
        exec(compile(source, f"<kcodec reader {prog.message} v{prog.version}>", "exec"), names)
        read = prog.backend_cache[key] = names["read_0"]
    return read


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


def _w_bytes(plans, op, v, out):
    if v is None:
        _null_ok(op, "bytes")
        _w_length(op, -1, out, True)
        return
    b = _bytes_of(v)
    _w_length(op, len(b), out, True)
    out += b


def _s_bytes(plans, op, v):
    if v is None:
        _null_ok(op, "bytes")
        return _s_length(op, -1, True)
    n = len(_bytes_of(v))
    return _s_length(op, n, True) + n


def _w_uuid(plans, op, v, out):
    if not isinstance(v, uuid.UUID):
        raise _Fail(f"expected uuid.UUID, got {type(v).__name__}")
    out += v.bytes


def _s_uuid(plans, op, v):
    if not isinstance(v, uuid.UUID):
        raise _Fail(f"expected uuid.UUID, got {type(v).__name__}")
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


_KIND_TEXT = {BOOL: "bool", INT8: "int8", INT16: "int16", UINT16: "uint16", INT32: "int32", UINT32: "uint32",
              INT64: "int64", FLOAT64: "float64"}


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


def encode(prog: Program, obj: Any) -> bytes:
    out = bytearray()
    try:
        _fast_writer(prog)(obj, out)
    except _Fail as e:
        raise EncodeError(e.reason, e.path_text(), prog.message, prog.version) from None
    return bytes(out)


def encode_interpreted(prog: Program, obj: Any) -> bytes:
    """encode by the interpreter alone (without the compiled fast path): for tests that compare the two."""
    out = bytearray()
    try:
        encode_struct(_plans(prog), 0, obj, out)
    except _Fail as e:
        raise EncodeError(e.reason, e.path_text(), prog.message, prog.version) from None
    return bytes(out)


def encoded_size(prog: Program, obj: Any) -> int:
    out = bytearray()
    try:
        _fast_writer(prog)(obj, out)  # what is written is what is counted
        return len(out)
    except _Fail:
        pass  # the sizing pass states the error
    try:
        return size_struct(_plans(prog), 0, obj)
    except _Fail as e:
        raise EncodeError(e.reason, e.path_text(), prog.message, prog.version) from None


def writable_view(buffer: Any, offset: int) -> memoryview:
    """The flat writable bytes of a caller's buffer, with offset checked (both backends' encode_into)."""
    mv = memoryview(buffer)
    if mv.readonly:
        raise TypeError(f"encode_into needs a writable buffer, got a read-only {type(buffer).__name__}")
    if not mv.c_contiguous:
        raise TypeError("encode_into needs a contiguous buffer")
    mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
    if not 0 <= offset <= len(mv):
        raise ValueError(f"offset {offset} lies outside the buffer's {len(mv)} bytes")
    return mv


def no_room(prog: Program, room: int, offset: int, size: int) -> EncodeError:
    return EncodeError(f"the buffer has {room} bytes from offset {offset}, the message needs {size}", "",
                       prog.message, prog.version)


def encode_into(prog: Program, obj: Any, buffer: Any, offset: int = 0) -> int:
    """Write obj into buffer at offset; returns the number of bytes written."""
    mv = writable_view(buffer, offset)
    data = encode(prog, obj)
    if len(data) > len(mv) - offset:
        raise no_room(prog, len(mv) - offset, offset, len(data))
    mv[offset:offset + len(data)] = data
    return len(data)


# ------------------------------------------------------------- the compiled fast path of encoding
#
# As for decoding: per struct, generated source writes objects of exactly the message's classes whose
# values have exactly the expected types (int, str, list, ...) and are in range; anything else (every
# error, subclasses, duck-typed objects, tagged fields) is written again from the struct's start by the
# interpreter (encode_struct), the reference for bytes and errors alike.

def _writer_source(plan: _Plan, names: dict) -> str:
    index = plan.sp.index
    lines = [f"def write_{index}(obj, out):",
             f'    """{plan.sp.name}: the plain common case; anything else goes to encode_struct."""',
             "    start = len(out)",
             "    try:",
             f"        if type(obj) is not cls_{index}: raise _Slow"]
    names[f"cls_{index}"] = plan.cls
    names[f"plan_{index}"] = plan

    def const(value: Any, hint: str) -> str:
        name = f"{hint}_{len(names)}"
        names[name] = value
        return name

    def emit(line: str, depth: int = 2) -> None:
        lines.append("    " * depth + line)

    def null(op: FieldOp, what: str, depth: int) -> None:
        """v is None: the null length or marker, when the field may be null."""
        emit("if v is None:", depth)
        if not op.nullable:
            emit("raise _Slow", depth + 1)
        elif what == "struct":
            emit("out += b'\\xff'", depth + 1)
        else:
            marker = b"\x00" if op.compact else (b"\xff\xff" if what == "string" else b"\xff\xff\xff\xff")
            emit(f"out += {marker!r}", depth + 1)

    def length(op: FieldOp, n: str, wide: bool, depth: int) -> None:
        emit(f"out += _uvarint_bytes({n} + 1)" if op.compact else f"out += {'_I32' if wide else '_I16'}.pack({n})",
             depth)

    if plan.absent_checks:
        emit(f"_check_absent(plan_{index}, obj)")
    for step in plan.steps:
        if step[0] == 0:
            st, ops = step[1], step[3]
            values = ", ".join(f"obj.{op.attr}" for op in ops)
            emit(f"values = ({values},)")
            for i, op in enumerate(ops):  # the types the interpreter accepts without a second look
                ok = "bool" if op.kind == BOOL else "float" if op.kind == FLOAT64 else "int"
                emit(f"if type(values[{i}]) is not {ok}: raise _Slow")
            emit(f"out += {const(st, 'run')}.pack(*values)")
            continue
        writer, op = step[1], step[3]
        emit(f"v = obj.{op.attr}")
        if op.array and op.kind == STRUCT:
            null(op, "array", 2)
            emit("elif type(v) is list:")
            length(op, "len(v)", True, 3)
            emit("for item in v:", 3)
            emit(f"write_{op.struct}(item, out)", 4)
            emit("else: raise _Slow")
        elif op.kind == STRUCT:
            null(op, "struct", 2)
            emit("else:")
            if op.nullable:
                emit("out += b'\\x01'", 3)
            emit(f"write_{op.struct}(v, out)", 3)
        elif op.kind == STRING and not op.array:
            null(op, "string", 2)
            emit("elif type(v) is str:")
            emit("b = v.encode('utf-8')", 3)
            emit(f"if len(b) > {MAX_STRING}: raise _Slow", 3)
            length(op, "len(b)", False, 3)
            emit("out += b", 3)
            emit("else: raise _Slow")
        else:  # numbers arrays, bytes, uuids, arrays of strings: the interpreter's own writer of the field
            emit(f"{const(writer, 'w')}(plans, {const(op, 'op')}, v, out)")
    if plan.flexible:
        if plan.tag_writers:
            emit(f"_write_tagged(plans, plan_{index}, obj, out)")
        else:
            emit("if obj.unknown_tagged_fields:")
            emit(f"_write_tagged(plans, plan_{index}, obj, out)", 3)
            emit("else:")
            emit("out += b'\\x00'", 3)
    lines += ["    except Exception:",
              "        del out[start:]",
              f"        encode_struct(plans, {index}, obj, out)"]
    return "\n".join(lines)


def writer_source(prog: Program) -> tuple[str, dict]:
    """The generated source of a program's fast writers (write_0 is the root) and the names it uses."""
    plans = _plans(prog)
    names: dict[str, Any] = {"plans": plans, "_Slow": _Slow, "_I16": _I16, "_I32": _I32,
                             "_uvarint_bytes": _uvarint_bytes, "_check_absent": _check_absent,
                             "_write_tagged": _write_tagged, "encode_struct": encode_struct}
    return "\n\n\n".join(_writer_source(plan, names) for plan in plans) + "\n", names


def _fast_writer(prog: Program) -> Callable:
    write = prog.backend_cache.get("pure-writer")
    if write is None:
        source, names = writer_source(prog)
        exec(compile(source, f"<kcodec writer {prog.message} v{prog.version}>", "exec"), names)
        write = prog.backend_cache["pure-writer"] = names["write_0"]
    return write
