"""kcodec's message definitions: facts derived from Apache Kafka's, loaded on first use.

``messages.json`` beside this file is made by ``python -m kcodec.definitions.derive``; a test checks that
it is up to date with ``../shared``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from .validate import INT_RANGES, parse_int_default, validate_message
from .versions import NONE, OPEN, VersionRange

__all__ = ["list_topics_api_key", "api_key_of", "LIST_TOPICS_DEFAULT_API_KEY", "FieldDef", "StructDef", "MessageDef", "VersionRange", "get", "parse", "names", "by_api_key",
           "error_codes", "snake_case", "OPEN", "NONE"]

DATA_FILE = Path(__file__).resolve().parent / "messages.json"

_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """Kafka's CamelCase field name in Python's snake_case: ThrottleTimeMs -> throttle_time_ms."""
    return _SNAKE.sub("_", name).lower()


@dataclass(eq=False)
class FieldDef:
    name: str
    attr: str
    type: str                 # as written: "int32", "[]int32", "[]MetadataResponseTopic", "Cursor"
    elem: str                 # the type without "[]"
    is_array: bool
    struct: Optional["StructDef"]
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: Optional[int]
    flexible: Optional[VersionRange]  # a field's own flexibleVersions ("none" for the header's client id)
    default_text: Optional[str]
    ignorable: bool
    map_key: bool
    entity_type: Optional[str]
    zero_copy: bool

    def default_value(self) -> Any:
        """The field's default as an immutable Python value; arrays and structs return None here
        when their default is null, and NotImplemented when a fresh object must be made."""
        d = self.default_text
        if d == "null":
            return None
        if self.is_array or self.struct is not None:
            return NotImplemented
        e = self.elem
        if e in INT_RANGES:
            return parse_int_default(d, e) if d not in (None, "") else 0
        if e == "bool":
            return d == "true"
        if e == "float64":
            return float(d) if d else 0.0
        if e == "string":
            return d or ""
        if e == "uuid":
            import uuid

            return uuid.UUID(d) if d else uuid.UUID(int=0)
        if e == "bytes":
            return b""
        if e == "records":
            return None if not self.nullable.empty else b""
        raise AssertionError(e)


@dataclass(eq=False)
class StructDef:
    name: str                 # Kafka's struct type name ("MetadataResponseTopic"), or the message name
    fields: list[FieldDef]
    versions: VersionRange = field(default_factory=lambda: VersionRange(0, OPEN))


@dataclass(eq=False)
class MessageDef:
    name: str
    kind: str                 # request, response, header, data, metadata, ...
    api_key: Optional[int]
    valid: VersionRange
    flexible: VersionRange
    root: StructDef
    structs: dict[str, StructDef]  # every struct type of the message by Kafka name, root excluded
    raw: dict[str, Any]

    @property
    def versions(self) -> range:
        return range(self.valid.lo, self.valid.hi + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


# ListTopics (KIP-142) never got an api key from Apache Kafka; kcodec's overlay uses one far outside
# Apache's range. KCODEC_LIST_TOPICS_API_KEY moves it (read once, when the definitions first load).
LIST_TOPICS_DEFAULT_API_KEY = 1142
LIST_TOPICS_ENV = "KCODEC_LIST_TOPICS_API_KEY"


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    override = os.environ.get(LIST_TOPICS_ENV)
    if override:
        key = _parse_api_key(override)
        taken = {m["apiKey"] for m in data["messages"] if "apiKey" in m and not m.get("overlay")}
        if key in taken:
            raise ValueError(f"{LIST_TOPICS_ENV}={key} is an Apache Kafka api key")
        for m in data["messages"]:
            if m.get("overlay") and m["name"] in ("ListTopicsRequest", "ListTopicsResponse"):
                m["apiKey"] = key
    return data


def _parse_api_key(text: str) -> int:
    try:
        key = int(text)
    except ValueError:
        raise ValueError(f"{LIST_TOPICS_ENV} must be an integer, not {text!r}") from None
    if not 0 <= key <= 0x7FFF:
        raise ValueError(f"{LIST_TOPICS_ENV}={key} is not an int16 api key")
    return key


def list_topics_api_key() -> int:
    """The api key ListTopics uses in this process (1142 unless KCODEC_LIST_TOPICS_API_KEY says otherwise)."""
    return int(_raw_by_name()["ListTopicsRequest"]["apiKey"])


def api_key_of(name: str) -> Optional[int]:
    """The api key of a message as loaded (overlay keys may be moved by the environment)."""
    return _raw_by_name()[name].get("apiKey")


@lru_cache(maxsize=1)
def _raw_by_name() -> dict[str, dict]:
    return {m["name"]: m for m in _data()["messages"]}


def names() -> list[str]:
    """Every message name, sorted."""
    return sorted(_raw_by_name())


def error_codes() -> list[tuple[int, str, bool]]:
    return [tuple(e) for e in _data()["errorCodes"]]  # type: ignore[misc]


@lru_cache(maxsize=None)
def get(name: str) -> MessageDef:
    """The parsed, validated definition of one message."""
    try:
        raw = _raw_by_name()[name]
    except KeyError:
        raise KeyError(f"no message named {name!r}") from None
    return parse(raw)


def parse(raw: dict[str, Any]) -> MessageDef:
    """Validate and parse one message definition (the form of messages.json)."""
    name = raw["name"]
    validate_message(raw)
    structs: dict[str, StructDef] = {}
    common = {c["name"]: c for c in raw.get("commonStructs", [])}

    def build_fields(fields: list[dict]) -> list[FieldDef]:
        out = []
        for f in fields:
            t = f["type"]
            elem = t.removeprefix("[]")
            sdef = None
            if elem[:1].isupper():
                if elem not in structs:
                    body = f.get("fields")
                    if body is None:
                        body = common[elem]["fields"]
                    structs[elem] = StructDef(elem, [])
                    structs[elem].fields = build_fields(body)
                sdef = structs[elem]
            ffv = f.get("flexibleVersions")
            out.append(FieldDef(
                name=f["name"], attr=snake_case(f["name"]), type=t, elem=elem, is_array=t.startswith("[]"),
                struct=sdef, versions=VersionRange.parse(f["versions"]),
                nullable=VersionRange.parse(f.get("nullableVersions")),
                tagged=VersionRange.parse(f.get("taggedVersions")),
                tag=int(f["tag"]) if "tag" in f else None,
                flexible=VersionRange.parse(ffv) if ffv is not None else None,
                default_text=f.get("default"), ignorable=bool(f.get("ignorable", False)),
                map_key=bool(f.get("mapKey", False)), entity_type=f.get("entityType"),
                zero_copy=bool(f.get("zeroCopy", False))))
        return out

    root = StructDef(name, build_fields(raw["fields"]))
    return MessageDef(name=name, kind=raw.get("type", "data"), api_key=raw.get("apiKey"),
                      valid=VersionRange.parse(raw.get("validVersions", "0")),
                      flexible=VersionRange.parse(raw.get("flexibleVersions", "none")),
                      root=root, structs=structs, raw=raw)


@lru_cache(maxsize=1)
def _api_index() -> dict[tuple[int, str], str]:
    return {(m["apiKey"], m["type"]): m["name"] for m in _data()["messages"]
            if m.get("type") in ("request", "response")}


def by_api_key(api_key: int, kind: str) -> str:
    """The name of the request or response message with this api key."""
    try:
        return _api_index()[(api_key, kind)]
    except KeyError:
        raise KeyError(f"no {kind} with api key {api_key}") from None


def api_keys() -> dict[int, str]:
    """api key -> API name (the request name without "Request")."""
    return {k: n.removesuffix("Request") for (k, kind), n in _api_index().items() if kind == "request"}
