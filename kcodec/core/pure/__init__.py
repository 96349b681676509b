"""The reference backend: runs the IR in plain Python. It stays forever as the oracle that the
Cython backend is fuzzed against, so it favours being obviously right over being clever.

Entry points (the same in ``_fast``): ``decode(prog, buf, pos, end, zero_copy) -> (obj, pos)``,
``encode(prog, obj) -> bytes``, ``encoded_size(prog, obj) -> int``,
``encode_into(prog, obj, buffer, offset) -> int``, ``encode_buffers(prog, obj, threshold) -> (buffers, size)``.

This module holds the entry points only, over the rest of the reference, which is imported one way
(no cycle): kcodec/core/pure/read.py (reading, and what all parts share) and kcodec/core/pure/write.py (writing)
at the bottom, kcodec/core/pure/plan.py (each struct's IR grouped for Python) over both, kcodec/core/pure/gen.py
(the generated fast paths) over the three.
"""

from __future__ import annotations

import gc
from typing import Any, Callable

from .gen import _fast_reader, _fast_writer, reader_source, writer_source  # noqa: F401
from .plan import _plans
from .read import _KIND_TEXT, _Fail, _element, as_bytes_view, decode_struct, flat_view  # noqa: F401
from .write import (_sequence, _uvarint_bytes, _writer_and_sizer, encode_struct, no_room,  # noqa: F401
                          size_struct, split_buffers, spliced_output, spliced_value, uvarint_size, writable_view)
from ..coerce import as_index
from ...exceptions import DecodeError, EncodeError
from ..ir import BYTES, RECORDS, Program


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
        if type(pos) is not int or (end is not None and type(end) is not int):  # (as the compiled backend's Py_ssize_t)
            pos, end = as_index(pos), None if end is None else as_index(end)
        buf = as_bytes_view(data)
        if not buf.c_contiguous:  # (copied, as the compiled backend copies it)
            buf = flat_view(buf)
        end = len(buf) if end is None else end
        if not 0 <= pos <= end <= len(buf):
            raise ValueError(f"offset {pos} and end {end} do not lie within the buffer's {len(buf)} bytes")
        return read(buf, pos, end)
    except _Fail as e:
        raise DecodeError(e.reason, e.offset, e.path_text(), prog.message, prog.version) from None
    finally:
        if enabled:
            gc.enable()


def encode(prog: Program, obj: Any) -> bytes:
    return _encode(prog, obj, _fast_writer(prog))


def encode_interpreted(prog: Program, obj: Any) -> bytes:
    """encode by the interpreter alone (without the compiled fast path): for tests that compare the two."""
    plans = _plans(prog)
    return _encode(prog, obj, lambda obj, out: encode_struct(plans, 0, obj, out))


def _encode(prog: Program, obj: Any, write: Callable) -> bytes:
    out = bytearray()
    try:
        write(obj, out)
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


def encode_into(prog: Program, obj: Any, buffer: Any, offset: int = 0) -> int:
    """Write obj into buffer at offset; returns the number of bytes written."""
    mv = writable_view(buffer, offset)
    data = encode(prog, obj)
    if len(data) > len(mv) - offset:
        raise no_room(prog, len(mv) - offset, offset, len(data))
    mv[offset:offset + len(data)] = data
    return len(data)


def _may_splice(prog: Program) -> bool:
    """Whether any field of the program (tagged ones aside) holds bytes or records."""
    found = prog.backend_cache.get("pure-may-splice")
    if found is None:
        found = prog.backend_cache["pure-may-splice"] = any(
            op.kind in (BYTES, RECORDS) for sp in prog.structs for op in sp.fields)
    return bool(found)


def encode_buffers(prog: Program, obj: Any, threshold: int) -> tuple[list[Any], int]:
    """The encoding as buffers to write one after the other, and their total size: records values and bytes
    values of at least ``threshold`` bytes are the caller's own buffers, not copies (see split_buffers)."""
    if not _may_splice(prog):
        data = encode(prog, obj)
        return split_buffers(data, []), len(data)
    # The interpreter writes it: the compiled path rewrites a struct from its start when it meets anything
    # unusual, which would leave splices behind; this is the oracle, the Cython backend the fast one.
    out = spliced_output(threshold)
    try:
        encode_struct(_plans(prog), 0, obj, out)
    except _Fail as e:
        raise EncodeError(e.reason, e.path_text(), prog.message, prog.version) from None
    return split_buffers(bytes(out), out.spliced), len(out) + out.spliced_bytes
