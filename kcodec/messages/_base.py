"""Base classes of the generated message classes: equality, repr, class facts."""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, Optional, Union

ZERO_UUID = uuid.UUID(int=0)

# A bytes or records field: decode gives bytes, or memoryview slices of the input with zero_copy=True, and
# encode takes any of these (a kcodec.Buffers too, left out here so that reading a field needs no case for it).
BytesLike = Union[bytes, bytearray, memoryview]


class _Empty:
    """Default of array and struct arguments that may also be passed as None (null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY: Any = _Empty()


def _same_items(x: Any, y: Any) -> bool:
    """A decoded scalar array (a tuple) equals a list of the same items."""
    return (type(x) in (list, tuple) and type(y) in (list, tuple) and len(x) == len(y)
            and all(a == b for a, b in zip(x, y)))


class Struct:
    """A Kafka struct: one attribute per field of any version, plus ``unknown_tagged_fields``."""

    __slots__ = ()
    _KAFKA_NAME: ClassVar[str]
    _ATTRS: ClassVar[tuple[str, ...]] = ()

    unknown_tagged_fields: Optional[dict[int, bytes]]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for a in self._ATTRS:
            x, y = getattr(self, a), getattr(other, a)
            if x != y and not _same_items(x, y):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"{a}={getattr(self, a)!r}" for a in self._ATTRS]
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__qualname__}({', '.join(parts)})"


class Message(Struct):
    """A whole Kafka message (request, response, header or data); one class for every version."""

    __slots__ = ()
    API_KEY: ClassVar[Optional[int]] = None
    KIND: ClassVar[str]
    VALID_VERSIONS: ClassVar[tuple[int, int]]
    FLEXIBLE_FROM: ClassVar[Optional[int]]  # first flexible version, None when never flexible
    _STRUCTS: ClassVar[dict[str, type]]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return cls.FLEXIBLE_FROM is not None and version >= cls.FLEXIBLE_FROM


class RequestHeaderBase(Message):
    """Adds the short names the public API documents (``header.api_key``, ``header.api_version``)."""

    __slots__ = ()

    @property
    def api_key(self) -> int:
        return self.request_api_key  # type: ignore[attr-defined,no-any-return]

    @property
    def api_version(self) -> int:
        return self.request_api_version  # type: ignore[attr-defined,no-any-return]
