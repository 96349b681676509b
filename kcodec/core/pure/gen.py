"""The reference backend's compiled fast paths: Python source generated per struct program for the
well-formed common case, compiled once and cached; the interpreters in kcodec/core/pure/read.py (reading) and
kcodec/core/pure/write.py (writing) handle everything else and stay the reference. Over those two and
kcodec/core/pure/plan.py; kcodec/core/pure/__init__.py, the entry points, over it."""

from __future__ import annotations

import struct
import uuid
from typing import Any, Callable

from .plan import _Plan, _Plans, _plans
from .read import (_FMT, _I16, _I32, MAX_STRING, _element, _length, _new, _r_bytes, _r_string, _read_tagged,
                         decode_struct)
from .write import _SINGLE, _check_absent, _uvarint_bytes, _write_tagged, encode_struct
from ..ir import (BOOL, FIXED_SIZE, FLOAT64, KIND_NAMES, STRING, STRUCT, UUID, FieldOp, Program, default_of,
                 min_field_size)


# ------------------------------------------------------------- the compiled fast path of decoding
#
# Per struct program, Python source for the well-formed common case is generated, compiled once and cached
# in Program.backend_cache: fields are read straight into slots, runs of fixed-size fields in one unpack,
# one-byte lengths and child structs inline. It returns only what it has fully checked; on anything else
# (every error, and whatever it does not handle itself) the struct is decoded again from its start by the
# interpreter (decode_struct, kcodec/core/pure/read.py), which is the reference for results and errors alike.

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
