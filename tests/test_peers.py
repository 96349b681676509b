"""Byte-for-byte agreement with two independent encoders: kio 0.6.5 and kafka-python 3.0.12.

For each (peer, api, request/response, version) both sides support: hypothesis makes a kcodec instance,
a generic converter builds the peer's object from it (driven by the instance's attributes and the peer's
own schema introspection: kio's frozen dataclasses, kafka-python's json-schema fields), the peer encodes
it, and the bytes must equal ``kcodec.encode``; kcodec must decode the peer's bytes back to the instance.

Neither peer can write unknown tagged fields, so instances are made without them: kio's dataclasses have
no place for them, and kafka-python keeps ``_<tag>`` keyword arguments in ``unknown_tags`` but its
``TaggedFields`` encoder writes only the tags of its schema, dropping them silently. Where a peer cannot
represent a value, or is wrong, only that case is adapted or excluded, with the peer's limitation named
(see ``KIO_ERROR_CODES`` and ``EXCLUDED``).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
from typing import Any, Callable

import pytest
from needs import missing, need_module
from hypothesis import given, settings

import kcodec
from kcodec import messages
from kcodec.testing import instances

pytestmark = pytest.mark.peers

try:  # kio needs Python 3.11+ (the test extra installs it there only); kafka-python does not
    import kio.index
    import kio.serial
    from kio.schema.errors import ErrorCode
    from kio.schema.index import api_key_map, schema_name_map
    from kio.serial._introspect import (EntityField, EntityTupleField, PrimitiveField, PrimitiveTupleField,
                                        classify_field)
    from kio.static.primitive import i32Timedelta, i64Timedelta
except ImportError:
    kio = None  # type: ignore[assignment]

kafka_protocol_admin = need_module("kafka.protocol.admin")
import kafka.protocol.metadata as kafka_protocol_metadata  # noqa: E402

APIS = ("Metadata", "ApiVersions", "CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs",
        "DescribeTopicPartitions")
KINDS = ("Request", "Response")


# --- kcodec side --------------------------------------------------------------------------------------

def _children(obj: Any):
    """The kcodec struct objects directly inside ``obj`` (struct fields and arrays of structs)."""
    for attr in obj._ATTRS:
        v = getattr(obj, attr)
        if isinstance(v, list):
            yield from (x for x in v if hasattr(x, "_ATTRS"))
        elif hasattr(v, "_ATTRS"):
            yield v


def without_unknown_tags(obj: Any) -> Any:
    """``obj`` with ``unknown_tagged_fields`` cleared everywhere: neither peer can write them."""
    obj.unknown_tagged_fields = None
    for child in _children(obj):
        without_unknown_tags(child)
    return obj


_DEFAULTS: dict[type, Any] = {}


def _default_of(cls: type, attr: str) -> Any:
    if cls not in _DEFAULTS:
        _DEFAULTS[cls] = cls()
    return getattr(_DEFAULTS[cls], attr)


def _attr_for(cls: type, name: str) -> str:
    """The kcodec attribute a peer's field name stands for.

    Both peers name fields as snake_case of Kafka's names, like kcodec, with two renames:
    kio models ``...Ms`` durations as timedeltas and drops the suffix (``throttle_time`` for
    ``ThrottleTimeMs``, ``timeout`` for ``TimeoutMs``), and kafka-python's ``MetadataResponse.json_patch``
    renames ``ClusterAuthorizedOperations`` and ``TopicAuthorizedOperations`` to ``AuthorizedOperations``.
    """
    attrs = cls._ATTRS
    if name in attrs:
        return name
    if name + "_ms" in attrs:
        return name + "_ms"
    suffixed = [a for a in attrs if a.endswith("_" + name)]
    if len(suffixed) == 1:
        return suffixed[0]
    raise AssertionError(f"no kcodec attribute of {cls.__qualname__} for peer field {name!r}")


class Unrepresentable(Exception):
    """The peer has no field for a value the instance holds (a peer limitation, see EXCLUDED)."""


def _check_all_used(obj: Any, used: set[str]) -> None:
    for attr in obj._ATTRS:
        v = getattr(obj, attr)
        if attr not in used and (list(v) if type(v) is tuple else v) != _default_of(type(obj), attr):
            raise Unrepresentable(f"{type(obj).__qualname__}.{attr} = {getattr(obj, attr)!r}")


# --- kio ----------------------------------------------------------------------------------------------

# kio's ErrorCode is a closed IntEnum and its writer writes ``error_code.value``: an int16 that is not a
# Kafka error code kio knows cannot be given to kio at all. Instances for kio get such codes replaced by
# known ones (a limitation of kio, not a case excluded: every error_code field is still compared).
KIO_ERROR_CODES = sorted(int(c) for c in ErrorCode) if kio is not None else []


def _kio_scalar(v: Any, f: dataclasses.Field, type_: Any) -> Any:
    kafka_type = f.metadata["kafka_type"]
    if kafka_type == "error_code":
        return ErrorCode(v)
    if kafka_type == "timedelta_i32":
        return i32Timedelta.parse(datetime.timedelta(milliseconds=v))
    if kafka_type == "timedelta_i64":
        return i64Timedelta.parse(datetime.timedelta(milliseconds=v))
    if hasattr(type_, "parse"):
        return type_.parse(v)  # kio's nominal types (i32, BrokerId, TopicName, Records ...) check the value
    return v


def to_kio(obj: Any, cls: type) -> Any:
    """The kio entity of class ``cls`` (one frozen dataclass per version) holding ``obj``'s values."""
    kwargs, used = {}, set()
    for f in dataclasses.fields(cls):
        attr = _attr_for(type(obj), f.name)
        used.add(attr)
        v = getattr(obj, attr)
        if f.metadata.get("kafka_type") == "error_code" and v not in KIO_ERROR_CODES:
            v = KIO_ERROR_CODES[v % len(KIO_ERROR_CODES)]
            setattr(obj, attr, v)
        if v is None:
            kwargs[f.name] = None
            continue
        match classify_field(f):
            case EntityField(type_):
                kwargs[f.name] = to_kio(v, type_)
            case EntityTupleField(type_):
                kwargs[f.name] = tuple(to_kio(x, type_) for x in v)
            case PrimitiveTupleField(type_):
                kwargs[f.name] = tuple(_kio_scalar(x, f, type_) for x in v)
            case PrimitiveField(type_):
                kwargs[f.name] = _kio_scalar(v, f, type_)
    _check_all_used(obj, used)
    return cls(**kwargs)


# kio 0.6.5's versions of each API (requests and responses alike): without kio its cases are still
# made, and each fails in CI (skips elsewhere) naming kio; with kio, test_case_counts checks this table.
KIO_VERSIONS = {"Metadata": (0, 13), "ApiVersions": (0, 4), "CreateTopics": (2, 7), "DeleteTopics": (1, 6),
                "CreatePartitions": (0, 3), "DescribeConfigs": (1, 4), "DescribeTopicPartitions": (0, 0)}


def kio_versions(api: str, kind: str) -> list[int]:
    if kio is None:
        lo, hi = KIO_VERSIONS[api]
        return list(range(lo, hi + 1))
    key = getattr(messages, api + kind).API_KEY
    return sorted(schema_name_map[api_key_map[key]])


def kio_encode(msg: Any, version: int) -> bytes:
    if kio is None:
        missing("kio 0.6.5 (`make test` installs it)", since=(3, 11))
    load = kio.index.load_request_schema if type(msg).KIND == "request" else kio.index.load_response_schema
    entity = to_kio(msg, load(type(msg).API_KEY, version))
    buf = io.BytesIO()
    kio.serial.entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


# --- kafka-python ---------------------------------------------------------------------------------------

def kp_class(api: str, kind: str) -> type:
    for mod in (kafka_protocol_metadata, kafka_protocol_admin):
        if hasattr(mod, api + kind):
            return getattr(mod, api + kind)
    raise LookupError(api + kind)


def _bits(v: int) -> set[int]:
    """kafka-python's ``bitfield`` (a json_patch type) is a set of bit numbers."""
    return {i for i in range(32) if (v & 0xFFFFFFFF) >> i & 1}


def _kp_value(v: Any, f: Any, version: int) -> Any:
    if v is None:
        return None
    if f.is_struct_array():
        return [_kp_fields(x, f.array_of, version, f.data_class) for x in v]
    if f.is_struct():
        return _kp_fields(v, f, version, f.data_class)
    if f.is_array():
        return list(v)
    if f.type_str == "bitfield":
        return _bits(v)
    return v


def _kp_fields(obj: Any, struct: Any, version: int, make: Callable[..., Any]) -> Any:
    fields = list(struct.untagged_fields(version)) + list(struct.tagged_fields(version)._fields)
    kwargs, used = {}, set()
    for f in fields:
        attr = _attr_for(type(obj), f.name)
        used.add(attr)
        kwargs[f.name] = _kp_value(getattr(obj, attr), f, version)
    _check_all_used(obj, used)
    return make(version=version, **kwargs)


def to_kafka_python(msg: Any, version: int) -> Any:
    cls = kp_class(type(msg).__name__[:-len(type(msg).KIND)], type(msg).KIND.capitalize())
    return _kp_fields(msg, cls._struct, version, cls)


def kp_versions(api: str, kind: str) -> list[int]:
    # kafka-python's own range: its ApiMessageData sets every request/response's min version to 0
    # ("we'll get the broker's supported versions via ApiVersionsRequest"), even for versions that
    # Kafka 4.0 dropped from the json schema it ships.
    cls = kp_class(api, kind)
    return list(range(cls.min_version, cls.max_version + 1))


def kp_encode(msg: Any, version: int) -> bytes:
    return bytes(to_kafka_python(msg, version).encode(version=version))


# --- cases --------------------------------------------------------------------------------------------

PEERS: dict[str, tuple[Callable[[str, str], list[int]], Callable[[Any, int], bytes]]] = {
    "kio": (kio_versions, kio_encode),
    "kafka-python": (kp_versions, kp_encode),
}

# (peer, message, version) -> the peer's bug or limitation that makes that one case differ.
EXCLUDED: dict[tuple[str, str, int], str] = {}


def _cases() -> list[Any]:
    out = []
    for peer, (versions, _) in PEERS.items():
        for api in APIS:
            for kind in KINDS:
                cls = getattr(messages, api + kind)
                lo, hi = cls.VALID_VERSIONS
                for v in versions(api, kind):
                    if not lo <= v <= hi:
                        continue
                    reason = EXCLUDED.get((peer, api + kind, v))
                    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
                    out.append(pytest.param(peer, api + kind, v, marks=marks, id=f"{peer}-{api}{kind}-v{v}"))
    return out


CASES = _cases()


def test_case_counts() -> None:
    per_peer = {"kio": 0, "kafka-python": 0}
    for case in CASES:
        per_peer[case.values[0]] += 1
    # kio: KIO_VERSIONS; kafka-python: the same from v0 up.
    assert per_peer == {"kio": 80, "kafka-python": 88}
    if kio is None:
        missing("kio 0.6.5 (`make test` installs it) to check KIO_VERSIONS", since=(3, 11))
    for api in APIS:
        for kind in KINDS:
            lo, hi = KIO_VERSIONS[api]
            assert kio_versions(api, kind) == list(range(lo, hi + 1)), (api, kind)


def inflated(obj: Any, depth: int = 0) -> Any:
    """``obj`` with every string made 150+ characters (300+ bytes) and each array of the root repeated
    to 130+ elements: lengths and tagged-field sizes then take multi-byte varints, which the generated
    instances (short strings, arrays of at most 4) never reach."""
    for attr in obj._ATTRS:
        v = getattr(obj, attr)
        if isinstance(v, str) and v != _default_of(type(obj), attr):  # defaults: maybe not in the version
            setattr(obj, attr, v + "\u00fc" * 150)
        elif isinstance(v, list):
            for x in v:
                if hasattr(x, "_ATTRS"):
                    inflated(x, depth + 1)
            if depth == 0 and v:
                setattr(obj, attr, (v * (130 // len(v) + 1))[:130])
        elif hasattr(v, "_ATTRS"):
            inflated(v, depth + 1)
    return obj


@pytest.mark.parametrize("peer,name,version", CASES)
def test_peer_bytes(peer: str, name: str, version: int) -> None:
    cls = getattr(messages, name)
    encode = PEERS[peer][1]

    @given(instances(cls, version).map(without_unknown_tags))
    def check(msg: Any) -> None:
        theirs = encode(msg, version)  # may adapt msg to what the peer can hold (kio's error codes)
        ours = kcodec.encode(msg, version)
        assert theirs == ours, f"{peer} v{version}: {theirs.hex()} != kcodec {ours.hex()}"
        assert kcodec.decode(cls, theirs, version) == msg

    check()


@pytest.mark.parametrize("peer,name,version", CASES)
def test_peer_bytes_large(peer: str, name: str, version: int) -> None:
    cls = getattr(messages, name)
    encode = PEERS[peer][1]

    @settings(max_examples=6)
    @given(instances(cls, version).map(without_unknown_tags).map(inflated))
    def check(msg: Any) -> None:
        theirs = encode(msg, version)
        assert theirs == kcodec.encode(msg, version), f"{peer} v{version}"
        assert kcodec.decode(cls, theirs, version) == msg

    check()
