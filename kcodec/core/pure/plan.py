"""The reference backend's plans: each struct's IR grouped for Python (runs of fixed-size scalars as one
struct.Struct), with the reader and writer of every other field. Over kcodec/core/pure/read.py and
kcodec/core/pure/write.py, under the compiled fast paths (kcodec/core/pure/gen.py) and the entry points
(kcodec/core/pure/__init__.py)."""

from __future__ import annotations

import struct

from .read import _FMT, _reader
from .write import _writer_and_sizer
from ..ir import FieldOp, Program, StructProgram


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
