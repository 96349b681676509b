"""Hand-made instances of a message at a version, beside the strategies' random ones: each field at an
edge Kafka's writer must get right.

- ``defaults``: every field at its default (tagged fields unset, so not written);
- ``nulls``: every field that is nullable at the version null, the others at defaults (arrays of structs
  get one element, so that the nulls inside are reached);
- ``low``: every field set: integers at their minimum, -0.0, empty strings, bytes and arrays, every tagged
  field written (set off its default), every struct with two unknown tagged fields when the version is
  flexible (one of them empty);
- ``high``: integers at their maximum, infinity, long non-ASCII strings, 300 bytes, 130-element arrays at the
  top (two below: a compact array's length needs two varint bytes past 127), tagged fields and unknown
  tagged fields likewise.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

import kcodec
from kcodec import definitions
from kcodec.convert import UNKNOWN_TAGS_KEY
from kcodec.definitions import FieldDef, StructDef

KINDS = ("defaults", "nulls", "low", "high")
_BITS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
_LONG_TEXT = "kcodec é€ 𝄞 " * 15  # 1-, 2-, 3- and 4-byte UTF-8
_BYTES = bytes(range(256)) + bytes(44)
_TOP_ARRAY, _INNER_ARRAY = 130, 2


def extreme(cls: type, version: int, kind: str) -> Any:
    """The ``kind`` instance of message class ``cls`` at ``version``."""
    if kind == "defaults":
        return cls()
    mdef = definitions.get(cls.__name__)
    return kcodec.from_dict(cls, _struct(mdef.root, version, kind, 0, mdef.is_flexible(version)))


def _struct(sdef: StructDef, version: int, kind: str, depth: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in sdef.fields:
        if version in f.versions:
            value = _field(f, version, kind, depth, flexible)
            if value is not _DEFAULT:
                out[f.attr] = value
    if flexible and kind != "nulls":
        # Tags far above any Kafka defines: a tag that a later version of the struct defines (even one only a
        # newer Kafka than kcodec's definitions knows) is refused by Kafka's reader, not kept as unknown.
        out[UNKNOWN_TAGS_KEY] = {str(1_000 + depth): base64.b64encode(b"\x00\xff").decode(), str(100_000): ""}
    return out


_DEFAULT = object()


def _field(f: FieldDef, version: int, kind: str, depth: int, flexible: bool) -> Any:
    if kind == "nulls":
        if version in f.nullable:
            return None
        if f.struct is None:
            return _DEFAULT
        element = _struct(f.struct, version, kind, depth + 1, flexible)
        return [element] if f.is_array else element
    if f.is_array:
        n = 0 if kind == "low" else _TOP_ARRAY if depth == 0 else _INNER_ARRAY
        return [_scalar(f, version, kind, depth, flexible) for _ in range(n)]
    return _scalar(f, version, kind, depth, flexible)


def _scalar(f: FieldDef, version: int, kind: str, depth: int, flexible: bool) -> Any:
    high = kind == "high"
    e = f.elem
    if f.struct is not None:
        return _struct(f.struct, version, kind, depth + 1, flexible)
    if e in _BITS:
        return (1 << _BITS[e]) - 1 if high else -(1 << _BITS[e])
    if e == "uint16":
        return 0xFFFF if high else 0
    if e == "uint32":
        return 0xFFFFFFFF if high else 0
    if e == "bool":
        return high
    if e == "float64":
        return float("inf") if high else -0.0
    if e == "string":
        return _LONG_TEXT if high else ""
    if e == "uuid":
        return str(uuid.UUID(int=(1 << 128) - 1 if high else 1))
    if e in ("bytes", "records"):
        return base64.b64encode(_BYTES if high else b"").decode()
    raise AssertionError(f"{f.name}: {e}")
