"""encode / decode / encoded_size over the selected backend."""

from __future__ import annotations

import sys
import warnings
from typing import Any, Optional, TypeVar

from .. import definitions
from .backend import backend
from ..buffers import Buffers
from ..exceptions import DecodeError, EncodeError, TrailingBytesWarning, UnsupportedVersionError
from .ir import program_for
from .coerce import as_size

M = TypeVar("M")
SPLICE_THRESHOLD = 16384  # encode_buffers: bytes values at least this long are the caller's buffers


def _check_message(msg: Any) -> Any:
    """The message's class (typed Any: its class facts are generated attributes)."""
    cls = type(msg)
    if not hasattr(cls, "VALID_VERSIONS"):
        raise EncodeError(f"expected a kcodec message, got {cls.__name__}")
    return cls


def _check_class(cls: Any) -> None:
    if not isinstance(cls, type) or not hasattr(cls, "VALID_VERSIONS"):
        raise TypeError(f"expected a kcodec message class, got {cls!r}")


def _check_version(version: Any) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnsupportedVersionError(f"version must be an int, got {version!r}")


def encode(msg: Any, version: int) -> bytes:
    """The body of ``msg`` at ``version``, as Kafka writes it."""
    cls = _check_message(msg)
    _check_version(version)
    return backend.encode(program_for(cls, version), msg)


def encoded_size(msg: Any, version: int) -> int:
    """The exact length of ``encode(msg, version)``, computed without writing."""
    cls = _check_message(msg)
    _check_version(version)
    return backend.encoded_size(program_for(cls, version), msg)


def encode_buffers(msg: Any, version: int, *, threshold: int = SPLICE_THRESHOLD) -> Buffers:
    """The body of ``msg`` at ``version`` as buffers whose concatenation is ``encode(msg, version)``, for
    ``socket.sendmsg`` or ``transport.writelines``: the value of every records field, and of every bytes
    field of at least ``threshold`` bytes, is the caller's own buffer object in the list, never a copy (a
    buffer that is not flat bytes, a numpy array say, goes as a flat byte view of it). ``nbytes``, the
    total, is known before anything is written. The caller's buffers must not change until written.
    Values of tagged fields are always copied."""
    cls = _check_message(msg)
    _check_version(version)
    threshold = as_size(threshold)  # (a float: TypeError from both backends, not only the compiled one)
    if threshold < 0:  # (every value is that long: the same as 0, which the compiled backend can hold)
        threshold = 0
    parts, size = backend.encode_buffers(program_for(cls, version), msg, threshold)
    return Buffers(parts, size)


def encode_into(msg: Any, version: int, buffer: Any, offset: int = 0) -> int:
    """Write the body of ``msg`` into a writable buffer (bytearray, memoryview, mmap, numpy array) at
    ``offset``; returns the number of bytes written. Too little room is an EncodeError, and nothing
    is written then; an offset outside the buffer, however large, is a ValueError."""
    cls = _check_message(msg)
    _check_version(version)
    try:
        return backend.encode_into(program_for(cls, version), msg, buffer, offset)  # type: ignore[no-any-return]
    except OverflowError:  # an offset past Py_ssize_t (compiled backend): outside the buffer, as the pure one says
        if not -sys.maxsize - 1 <= offset <= sys.maxsize:
            raise ValueError(f"offset {offset} lies outside the buffer's {memoryview(buffer).nbytes} bytes") from None
        raise


def decode_from(cls: type[M], data: Any, version: int, offset: int = 0,
                end: Optional[int] = None, *, zero_copy: bool = False) -> tuple[M, int]:
    """Decode one body from ``data[offset:end]``; returns it and the offset just after it. A non-contiguous
    buffer is copied first (see ``decode``)."""
    _check_class(cls)
    _check_version(version)
    size = memoryview(data).nbytes
    end = size if end is None else end
    if not 0 <= offset <= end <= size:
        raise ValueError(f"offset {offset} and end {end} do not lie within the buffer's {size} bytes")
    return backend.decode(program_for(cls, version), data, offset, end, zero_copy)  # type: ignore[no-any-return]


def finish(obj: Any, pos: int, end: int, strict: bool, what: str, version: int) -> Any:
    """Trailing bytes after a body: an error when strict, a TrailingBytesWarning otherwise."""
    if pos != end:
        reason = f"{end - pos} trailing bytes after the body"
        if strict:
            raise DecodeError(reason + " (pass strict=False to tolerate them)", pos, "", what, version)
        warnings.warn(TrailingBytesWarning(f"{reason} at byte {pos} of {what} v{version}"), stacklevel=3)
    return obj


def decode(cls: type[M], data: Any, version: int, *, strict: bool = True, zero_copy: bool = False) -> M:
    """Decode a whole body from any buffer (bytes, bytearray, memoryview, mmap, numpy array).

    The buffer is read in place, never copied (but for a non-contiguous one, ``memoryview(b)[::2]`` or a
    strided numpy array, copied first by both backends). With ``zero_copy=True`` bytes and records fields are
    memoryview slices of it instead of copies (of the copy, for a non-contiguous buffer): they see later changes
    to the buffer and keep it alive.
    """
    _check_class(cls)
    _check_version(version)
    mv = memoryview(data)  # (a non-contiguous one is copied by the backends, on their way in)
    end = mv.nbytes
    # Indexed, not unpacked: an unpack not yet specialized allocates a tuple iterator, and the first
    # tracked allocation after a decode starts a collection that scans the whole fresh result.
    done = backend.decode(program_for(cls, version), mv, 0, end, zero_copy)
    return finish(done[0], done[1], end, strict, cls.__name__, version)  # type: ignore[no-any-return]


_CLASSES: dict[tuple[int, str], type] = {}


def message_class(api_key: Optional[int] = None, kind: str = "request", *, name: Optional[str] = None) -> type:
    """The class of a request or response by api key, or of any message by Kafka name."""
    if name is None and type(api_key) is int:
        found = _CLASSES.get((api_key, kind))  # kept by key: pass 2 of `kcodec analyze` asks per frame
        if found is not None:
            return found
    from .. import messages

    if name is not None:
        return getattr(messages, name)  # type: ignore[no-any-return]
    if kind not in ("request", "response"):
        raise ValueError("kind is 'request' or 'response'")
    try:
        name = definitions.by_api_key(int(api_key), kind)  # type: ignore[arg-type]
    except KeyError:
        raise UnsupportedVersionError(f"no {kind} with api key {api_key}") from None
    found = getattr(messages, name)
    if type(api_key) is int:
        _CLASSES[(api_key, kind)] = found
    return found
