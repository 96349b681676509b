"""Messages to and from JSON-able dicts: uuids as strings, bytes as base64, structs as dicts."""

from __future__ import annotations

import base64
import uuid
from functools import lru_cache
from typing import Any

from . import definitions
from .definitions import FieldDef
from .exceptions import EncodeError

UNKNOWN_TAGS_KEY = "_unknown_tagged_fields"


@lru_cache(maxsize=None)
def _message_of(cls: type) -> Any:
    """The message class a struct class hangs off (its own class for a message)."""
    from . import messages

    return getattr(messages, cls.__qualname__.split(".")[0])


def _fields_of(cls: type) -> tuple[FieldDef, ...]:
    mdef = definitions.get(_message_of(cls)._KAFKA_NAME)
    name = cls._KAFKA_NAME  # type: ignore[attr-defined]
    sdef = mdef.root if name == mdef.name else mdef.structs[name]
    return tuple(sdef.fields)


def _class_for(owner: type, f: FieldDef) -> type:
    return _message_of(owner)._STRUCTS[f.struct.name]  # type: ignore[union-attr,no-any-return]


def to_dict(msg: Any) -> dict[str, Any]:
    """A JSON-able dict of a message or struct, every field included."""
    cls: Any = type(msg)
    out: dict[str, Any] = {}
    for f in _fields_of(cls):
        out[f.attr] = _value_to(getattr(msg, f.attr), f)
    unknown = getattr(msg, "unknown_tagged_fields", None)
    if unknown:
        out[UNKNOWN_TAGS_KEY] = {str(t): base64.b64encode(bytes(v)).decode("ascii") for t, v in unknown.items()}
    return out


def _value_to(v: Any, f: FieldDef) -> Any:
    if v is None:
        return None
    if f.is_array:
        return [_scalar_to(x, f) for x in v]
    return _scalar_to(v, f)


def _scalar_to(v: Any, f: FieldDef) -> Any:
    if f.struct is not None:
        return to_dict(v)
    if f.elem == "uuid":
        return str(v)
    if f.elem in ("bytes", "records"):
        return base64.b64encode(bytes(v)).decode("ascii")
    return v


def from_dict(cls: type, data: dict[str, Any], _path: str = "") -> Any:
    """The message or struct that ``to_dict`` made ``data`` from. Missing fields take defaults."""
    if not isinstance(data, dict):
        raise EncodeError(f"expected a dict for {cls.__qualname__}, got {type(data).__name__}", _path)
    fields = {f.attr: f for f in _fields_of(cls)}
    kwargs: dict[str, Any] = {}
    for key, v in data.items():
        path = f"{_path}.{key}" if _path else key
        if key == UNKNOWN_TAGS_KEY:
            try:
                kwargs["unknown_tagged_fields"] = {int(t): base64.b64decode(b) for t, b in v.items()}
            except (ValueError, AttributeError, TypeError) as e:
                raise EncodeError(f"bad unknown tagged fields: {e}", path) from None
            continue
        f = fields.get(key)
        if f is None:
            raise EncodeError(f"{cls.__qualname__} has no field {key!r}", path)
        kwargs[key] = _value_from(cls, v, f, path)
    return cls(**kwargs)


def _value_from(owner: type, v: Any, f: FieldDef, path: str) -> Any:
    if v is None:
        return None
    if f.is_array:
        if not isinstance(v, list):
            raise EncodeError(f"expected a list, got {type(v).__name__}", path)
        return [_scalar_from(owner, x, f, f"{path}[{i}]") for i, x in enumerate(v)]
    return _scalar_from(owner, v, f, path)


def _scalar_from(owner: type, v: Any, f: FieldDef, path: str) -> Any:
    try:
        if f.struct is not None:
            return from_dict(_class_for(owner, f), v, path)
        if f.elem == "uuid":
            return uuid.UUID(v) if isinstance(v, str) else v
        if f.elem in ("bytes", "records"):
            return base64.b64decode(v, validate=True) if isinstance(v, str) else v
    except (ValueError, TypeError) as e:
        raise EncodeError(f"bad {f.elem} value: {e}", path) from None
    return v
