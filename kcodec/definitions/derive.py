"""Derive kcodec's message definitions from Apache Kafka's.

    python -m kcodec.definitions.derive [--shared ../shared] [--check]

Reads ``kafka-message-schemas`` (the 3.9 line, every old version) and ``kafka-message-schemas-4.3``
(newer versions of 52 APIs), and ``kafka-record-schemas`` (the control record key and transaction marker
value inside record batches). Each version of a message comes from the newest set that defines it;
the field trees of both are merged into one tree for all versions (Kafka 4 dropped fields that only
old versions had, which the 3.9 set still carries). Only facts are kept: names, types, version
ranges, tags, defaults and flags. Prose ("about", comments) is dropped.

``corrections/`` beside this file holds a later Kafka's definition of the few versions that the 3.9 line
defined while they were unstable and that Kafka changed before they shipped (found by tests/oracle against
Kafka's own classes); each takes the 4.3 set's place for its message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from .versions import OPEN, VersionRange

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "messages.json"
OVERLAYS = HERE / "overlays"
CORRECTIONS = HERE / "corrections"

MESSAGE_KEYS = ("name", "type", "apiKey", "listeners", "validVersions", "flexibleVersions",
                "deprecatedVersions", "latestVersionUnstable")
FIELD_FACTS = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
               "flexibleVersions", "default", "ignorable", "mapKey", "entityType", "zeroCopy")
_COMMENT = re.compile(r"^\s*//.*$", re.M)


def default_shared() -> Path:
    """../shared beside the checkout, or $KCODEC_SHARED."""
    env = os.environ.get("KCODEC_SHARED")
    return Path(env) if env else HERE.parents[2] / "shared"


def read_schema(path: Path) -> dict[str, Any]:
    text = _COMMENT.sub("", path.read_text(encoding="utf-8"))
    return json.loads(text)


def _versions_where(field: dict | None, key: str, versions: range) -> set[int]:
    if field is None:
        return set()
    rng = VersionRange.parse(field.get(key)) if key in field or key == "versions" else VersionRange(1, 0)
    return {v for v in versions if v in rng}


def _merge_fields(old: list[dict], new: list[dict], old_only: range, new_span: range,
                  max_version: int, where: str) -> list[dict]:
    """Merge two field lists of one struct. Versions in `old_only` come from `old`, `new_span` from `new`."""
    old_by = {f["name"]: f for f in old}
    new_by = {f["name"]: f for f in new}
    # Field order: the new list, with old-only fields placed after their predecessor in the old list.
    order = [f["name"] for f in new]
    prev = None
    for f in old:
        if f["name"] not in new_by:
            order.insert(order.index(prev) + 1 if prev in order else 0, f["name"])
        prev = f["name"]
    common = [n for n in (f["name"] for f in old) if n in new_by]
    if common != [n for n in order if n in common]:
        raise ValueError(f"{where}: field order differs between the two schema sets")

    merged = []
    for name in order:
        o, n = old_by.get(name), new_by.get(name)
        either: dict = n or o  # type: ignore[assignment]  # every name comes from one of the lists
        out = _field_facts(either)
        spans = {}
        for key in ("versions", "nullableVersions", "taggedVersions", "flexibleVersions"):
            present = _versions_where(o, key, old_only) | _versions_where(n, key, new_span)
            if key == "versions" and not present:
                break
            if key == "flexibleVersions":
                if key in either:
                    out[key] = either[key]
                continue
            if present:
                spans[key] = str(VersionRange.of_set(present, max_version))
        else:
            out.update(spans)
            if o and n and (o.get("tag") != n.get("tag") or
                            (o["type"] != n["type"] and not _is_struct(o["type"]))):
                raise ValueError(f"{where}.{name}: type or tag differs between the schema sets")
            if "fields" in either:
                out["fields"] = _merge_fields((o or {}).get("fields", []), (n or {}).get("fields", []),
                                              old_only, new_span, max_version, f"{where}.{name}")
            merged.append(out)
    return merged


def _is_struct(type_name: str) -> bool:
    return type_name.removeprefix("[]")[:1].isupper()


def _field_facts(field: dict) -> dict:
    out = {k: field[k] for k in FIELD_FACTS if k in field}
    if "tag" in out:
        out["tag"] = int(out["tag"])
    if "default" in out:
        out["default"] = str(out["default"]).lower() if isinstance(out["default"], bool) else str(out["default"])
    return out


def _strip(fields: list[dict]) -> list[dict]:
    out = []
    for f in fields:
        g = _field_facts(f)
        if "fields" in f:
            g["fields"] = _strip(f["fields"])
        out.append(g)
    return out


def _message_facts(schema: dict) -> dict:
    out = {k: schema[k] for k in MESSAGE_KEYS if k in schema}
    out["fields"] = _strip(schema.get("fields", []))
    if schema.get("commonStructs"):
        out["commonStructs"] = [{"name": c["name"], "versions": c.get("versions", "0+"),
                                 "fields": _strip(c["fields"])} for c in schema["commonStructs"]]
    return out


def merge(old: dict | None, new: dict | None) -> dict:
    """One message from its 3.9 schema (`old`) and its 4.3 schema (`new`); either may be missing."""
    if old is None or new is None:
        only = old or new
        assert only is not None
        return _message_facts(only)
    o_rng, n_rng = VersionRange.parse(old["validVersions"]), VersionRange.parse(new["validVersions"])
    lo, hi = min(o_rng.lo, n_rng.lo), max(o_rng.hi, n_rng.hi)
    old_only = range(o_rng.lo, min(o_rng.hi, n_rng.lo - 1) + 1)
    new_span = range(n_rng.lo, n_rng.hi + 1)
    if VersionRange.parse(old.get("flexibleVersions")).lo != VersionRange.parse(new.get("flexibleVersions")).lo \
            and old_only and VersionRange.parse(old.get("flexibleVersions")).lo <= old_only[-1]:
        raise ValueError(f"{new['name']}: flexible versions differ between the schema sets")
    out = {k: new[k] for k in MESSAGE_KEYS if k in new}
    out["validVersions"] = str(VersionRange(lo, hi))
    where = new["name"]
    out["fields"] = _merge_fields(old.get("fields", []), new.get("fields", []), old_only, new_span, hi, where)
    commons_old = {c["name"]: c for c in old.get("commonStructs", [])}
    commons_new = {c["name"]: c for c in new.get("commonStructs", [])}
    commons = []
    for name in list(commons_new) + [n for n in commons_old if n not in commons_new]:
        c_old, c_new = commons_old.get(name), commons_new.get(name)
        fields = _merge_fields((c_old or {}).get("fields", []), (c_new or {}).get("fields", []),
                               old_only, new_span, hi, f"{where}.{name}")
        versions = (c_new or c_old or {}).get("versions", "0+")
        commons.append({"name": name, "versions": versions, "fields": fields})
    if commons:
        out["commonStructs"] = commons
    if old["name"] != new["name"]:
        out["formerNames"] = [old["name"]]
    return out


def _key(schema: dict) -> tuple:
    if "apiKey" in schema and schema.get("type") in ("request", "response"):
        return (schema["type"], schema["apiKey"])
    return ("name", schema["name"])


def derive(shared: Path) -> dict[str, Any]:
    old_dir, new_dir = shared / "kafka-message-schemas", shared / "kafka-message-schemas-4.3"
    old = {_key(s): s for s in map(read_schema, sorted(old_dir.glob("*.json")))}
    new = {_key(s): s for s in map(read_schema, sorted(new_dir.glob("*.json")))}
    new.update({_key(s): s for s in map(read_schema, sorted(CORRECTIONS.glob("*.json")))})
    messages = [merge(old.get(k), new.get(k)) for k in sorted(set(old) | set(new), key=str)]
    # The data inside record batches: a control record's key (ControlRecordType) and a transaction
    # marker's value (EndTxnMarker), kept apart in ../shared (kcodec.records reads them).
    for path in sorted((shared / "kafka-record-schemas").glob("*.json")):
        messages.append(_message_facts(read_schema(path)))
    for path in sorted(OVERLAYS.glob("*.json")):
        messages.append(_message_facts(json.loads(path.read_text(encoding="utf-8"))) | {"overlay": True})
    messages.sort(key=lambda m: m["name"])
    errors = []
    for line in (shared / "kafka-error-codes.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            code, name, retriable = line.split("\t")
            errors.append([int(code), name, retriable.strip() == "true"])
    return {
        "generated": "by kcodec/definitions/derive.py from Apache Kafka's message definitions "
                     "(Apache License 2.0); do not edit",
        "messages": messages,
        "errorCodes": errors,
    }


def render(data: dict) -> str:
    # One message per line keeps diffs readable and the file small.
    lines = ["{", f'"generated": {json.dumps(data["generated"])},', '"messages": [']
    msgs = data["messages"]
    for i, m in enumerate(msgs):
        lines.append(json.dumps(m, separators=(",", ":"), sort_keys=False) + ("," if i < len(msgs) - 1 else ""))
    lines.append("],")
    lines.append('"errorCodes": ' + json.dumps(data["errorCodes"], separators=(",", ":")))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=default_shared())
    parser.add_argument("--check", action="store_true", help="fail if the shipped file is out of date")
    args = parser.parse_args(argv)
    from .validate import validate_all

    data = derive(args.shared)
    validate_all(data["messages"])
    text = render(data)
    if args.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is out of date: run python -m kcodec.definitions.derive", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.name}: {len(data['messages'])} messages, {len(data['errorCodes'])} error codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
