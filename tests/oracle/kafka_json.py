"""kcodec's messages to and from Kafka's JSON, the format of the generated *JsonConverter classes.

Kafka's JSON names a field in camelCase (its name with the first letter lowered: ``ThrottleTimeMs`` ->
``throttleTimeMs``), holds only the fields of the version it is written at (tagged fields only when not at
their default), writes bytes as base64, a uuid as Kafka's ``Uuid.toString()`` (URL-safe base64 without
padding), int64 and uint32 as JSON numbers and float64 as a number (bare ``Infinity`` too: both sides allow
non-numeric numbers). Records fields are written by Kafka as empty bytes whatever they hold (KIP-673: its
converter never serializes records), so what Kafka read in a records field is compared through its
re-encoding, not its JSON.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any, Mapping

import kcodec
from kcodec import definitions
from kcodec.definitions import FieldDef, MessageDef, StructDef

# Where Kafka's class for a kcodec message is named otherwise than ``Name + "Data"`` (requests, responses
# and headers) or ``Name`` (data messages): Kafka renamed the control record key's schema class.
KAFKA_CLASS = {"ControlRecordType": "ControlRecordTypeSchema"}
RECORDS_IN_JSON = "<records>"  # what a non-null records field is compared as, on the JSON path

# Fields Kafka 4.x renamed (the wire is the same; kcodec keeps the names of its definitions), by message:
# kcodec's (Kafka 3.9's) name -> Kafka 4.4's. Reviewed: a name missing here fails loudly on both sides
# (Kafka's converter wants its mandatory fields by name, and from_kafka refuses names it does not know).
RENAMED_IN_KAFKA_4 = {
    # the group's generation, or the member epoch of a consumer-protocol group (KIP-848)
    "TxnOffsetCommitRequest": {"GenerationId": "GenerationIdOrMemberEpoch"},
    # version 2 (KIP-996, pre-vote) renamed the candidate to the replica asking, for a vote or a pre-vote
    "VoteRequest": {"CandidateEpoch": "ReplicaEpoch", "CandidateId": "ReplicaId",
                    "CandidateDirectoryId": "ReplicaDirectoryId"},
}


def kafka_class(name: str) -> str:
    """The simple name of Kafka's generated class for kcodec's message ``name``."""
    mdef = definitions.get(name)
    if name in KAFKA_CLASS:
        return KAFKA_CLASS[name]
    return name + "Data" if mdef.kind in ("request", "response", "header") else name


def renames(name: str, line: str) -> dict[str, str]:
    """kcodec's field names -> Kafka's, for message ``name`` in Kafka line ``line`` ("4.4" or "3.9")."""
    return RENAMED_IN_KAFKA_4.get(name, {}) if line.startswith("4.") else {}


def camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def kafka_uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_of(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _b64(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


# ----------------------------------------------------------------------------- kcodec -> Kafka's JSON

def to_kafka(msg: Any, version: int, records: bool = True, names: Mapping[str, str] = {}) -> dict[str, Any]:
    """Kafka's JSON of a kcodec message at ``version``. ``records=False`` writes a non-null records field
    as RECORDS_IN_JSON (to compare with the JSON Kafka writes); ``names``: fields Kafka calls otherwise
    (``renames``)."""
    mdef = definitions.get(type(msg).__name__)
    return _struct_to(msg, mdef.root, version, records, names)


def _struct_to(obj: Any, sdef: StructDef, version: int, records: bool, names: Mapping[str, str]) -> dict[str, Any]:
    return {camel(names.get(f.name, f.name)): _value_to(getattr(obj, f.attr), f, version, records, names)
            for f in sdef.fields if version in f.versions}


def _value_to(v: Any, f: FieldDef, version: int, records: bool, names: Mapping[str, str]) -> Any:
    if v is None:
        return None
    if f.is_array:
        return [_scalar_to(x, f, version, records, names) for x in v]
    return _scalar_to(v, f, version, records, names)


def _scalar_to(v: Any, f: FieldDef, version: int, records: bool, names: Mapping[str, str]) -> Any:
    if f.struct is not None:
        return _struct_to(v, f.struct, version, records, names)
    if f.elem == "uuid":
        return kafka_uuid(v)
    if f.elem == "records" and not records:
        return RECORDS_IN_JSON
    if f.elem in ("bytes", "records"):
        return _b64(v)
    return v


# ----------------------------------------------------------------------------- Kafka's JSON -> kcodec

def from_kafka(cls: type, data: dict[str, Any], version: int, names: Mapping[str, str] = {}) -> Any:
    """The kcodec message Kafka's JSON at ``version`` describes (fields Kafka left out take defaults).
    A records field becomes empty bytes when not null (its content is not in Kafka's JSON)."""
    mdef: MessageDef = definitions.get(cls.__name__)
    return kcodec.from_dict(cls, _struct_from(data, mdef.root, version, names))


def _struct_from(data: dict[str, Any], sdef: StructDef, version: int, names: Mapping[str, str]) -> dict[str, Any]:
    fields = {camel(names.get(f.name, f.name)): f for f in sdef.fields if version in f.versions}
    unknown = set(data) - set(fields)
    if unknown:
        raise ValueError(f"Kafka's JSON of {sdef.name} at version {version} has fields kcodec lacks: {sorted(unknown)}")
    return {f.attr: _value_from(data[key], f, version, names) for key, f in fields.items() if key in data}


def _value_from(v: Any, f: FieldDef, version: int, names: Mapping[str, str]) -> Any:
    if v is None:
        return None
    if f.is_array:
        return [_scalar_from(x, f, version, names) for x in v]
    return _scalar_from(v, f, version, names)


def _scalar_from(v: Any, f: FieldDef, version: int, names: Mapping[str, str]) -> Any:
    if f.struct is not None:
        return _struct_from(v, f.struct, version, names)
    if f.elem == "uuid":
        return str(uuid_of(v))
    if f.elem == "float64":
        return float(v)
    return v  # bytes and records stay base64, as kcodec.from_dict takes them
