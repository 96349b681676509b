"""Kafka's generator rules, applied to kcodec's definitions before they ship and when they load."""

from __future__ import annotations

import uuid
from typing import Iterable

from .versions import VersionRange

PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
              "uuid", "string", "bytes", "records"}
INT_RANGES = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
              "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
              "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
NULLABLE_TYPES = {"string", "bytes", "records"}  # plus arrays and structs


class DefinitionError(ValueError):
    """A message definition breaks one of Kafka's generator rules."""


def parse_int_default(text: str, type_name: str) -> int:
    t = text.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if body.lower().startswith("0x"):
        value = int(body[2:], 16)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body[1:], 8)
    else:
        value = int(body, 10)
    value = -value if neg else value
    lo, hi = INT_RANGES[type_name]
    if not lo <= value <= hi:
        raise DefinitionError(f"default {text!r} does not fit {type_name}")
    return value


def validate_all(messages: Iterable[dict]) -> None:
    names = set()
    keys = set()
    for m in messages:
        if m["name"] in names:
            raise DefinitionError(f"message {m['name']} is defined twice")
        names.add(m["name"])
        if m.get("type") in ("request", "response"):
            key = (m["type"], m["apiKey"])
            if key in keys:
                raise DefinitionError(f"{m['name']}: api key {m['apiKey']} is used twice")
            keys.add(key)
        validate_message(m)


def validate_message(m: dict) -> None:
    where = m["name"]
    valid = VersionRange.parse(m.get("validVersions", "0+"))
    if valid.empty:
        raise DefinitionError(f"{where}: no valid versions")
    flexible = VersionRange.parse(m.get("flexibleVersions", "none"))
    if not flexible.empty and not flexible.open_ended:
        raise DefinitionError(f"{where}: flexibleVersions must be open-ended, not {flexible}")
    structs: dict[str, list] = {c["name"]: c["fields"] for c in m.get("commonStructs", [])}
    _collect_structs(m["fields"], structs, where)
    for c in m.get("commonStructs", []):
        _validate_fields(c["fields"], flexible, structs, f"{where}.{c['name']}")
    _validate_fields(m["fields"], flexible, structs, where)


def _collect_structs(fields: list, structs: dict, where: str) -> None:
    for f in fields:
        if "fields" in f:
            t = f["type"].removeprefix("[]")
            if t in structs and structs[t] is not f["fields"] and structs[t] != f["fields"]:
                raise DefinitionError(f"{where}: struct {t} is defined twice")
            structs[t] = f["fields"]
            _collect_structs(f["fields"], structs, f"{where}.{f['name']}")


def _validate_fields(fields: list, flexible: VersionRange, structs: dict, where: str) -> None:
    tags = []
    names = set()
    for f in fields:
        path = f"{where}.{f['name']}"
        if f["name"] in names:
            raise DefinitionError(f"{path}: duplicate field name")
        names.add(f["name"])
        versions = VersionRange.parse(f.get("versions"))
        if versions.empty:
            raise DefinitionError(f"{path}: field has no versions")
        t = f["type"]
        elem = t.removeprefix("[]")
        is_array = t.startswith("[]")
        if elem not in PRIMITIVES and elem not in structs:
            raise DefinitionError(f"{path}: unknown type {t}")
        if is_array and elem in ("records",) or elem == "records" and is_array:
            raise DefinitionError(f"{path}: arrays of records are not allowed")
        nullable = VersionRange.parse(f.get("nullableVersions"))
        if not nullable.empty:
            if not (is_array or elem in NULLABLE_TYPES or elem in structs):
                raise DefinitionError(f"{path}: type {t} cannot be nullable")
        if "tag" in f or "taggedVersions" in f:
            tagged = VersionRange.parse(f.get("taggedVersions"))
            if "tag" not in f or tagged.empty:
                raise DefinitionError(f"{path}: tag and taggedVersions go together")
            if not tagged.open_ended:
                raise DefinitionError(f"{path}: taggedVersions must be open-ended, not {tagged}")
            if tagged.intersect(flexible) != tagged:
                raise DefinitionError(f"{path}: tagged versions {tagged} outside flexible versions {flexible}")
            if tagged.intersect(versions) != tagged:
                raise DefinitionError(f"{path}: tagged versions {tagged} outside versions {versions}")
            tags.append(int(f["tag"]))
        ffv = f.get("flexibleVersions")
        if ffv is not None:
            if elem not in ("string", "bytes") or is_array:
                raise DefinitionError(f"{path}: only string and bytes fields may set flexibleVersions")
            r = VersionRange.parse(ffv)
            if not r.empty and not r.open_ended:
                raise DefinitionError(f"{path}: flexibleVersions must be open-ended or none")
        if "default" in f:
            _validate_default(f, path, versions, nullable, is_array, elem, structs)
        if "fields" in f:
            _validate_fields(f["fields"], flexible, structs, path)
    if sorted(tags) != list(range(len(tags))):
        raise DefinitionError(f"{where}: tags {sorted(tags)} are not unique and contiguous from 0")


def _validate_default(f: dict, path: str, versions: VersionRange, nullable: VersionRange,
                      is_array: bool, elem: str, structs: dict) -> None:
    d = str(f["default"])
    if d == "null":
        if versions.intersect(nullable) != versions:
            raise DefinitionError(f"{path}: default null needs the field nullable in all its versions")
        return
    if is_array or elem in structs:
        if d != "":
            raise DefinitionError(f"{path}: arrays and structs take no default but null")
    elif elem in INT_RANGES:
        try:
            parse_int_default(d, elem)
        except ValueError as e:
            raise DefinitionError(f"{path}: bad default {d!r}: {e}") from None
    elif elem == "bool":
        if d not in ("true", "false"):
            raise DefinitionError(f"{path}: bad bool default {d!r}")
    elif elem == "float64":
        try:
            float(d)
        except ValueError:
            raise DefinitionError(f"{path}: bad float64 default {d!r}") from None
    elif elem == "uuid":
        try:
            uuid.UUID(d)
        except ValueError:
            raise DefinitionError(f"{path}: bad uuid default {d!r}") from None
    elif elem in ("bytes", "records"):
        if d != "":
            raise DefinitionError(f"{path}: bytes and records take no default but null")
