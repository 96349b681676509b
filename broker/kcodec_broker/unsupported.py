"""Error answers in the request's own response form: for requests the broker does not implement, for a
handler that failed, and for ``Cluster.fail_next``.

Like Kafka's ``AbstractRequest.getErrorResponse``: the response mirrors the request (each topic, each
partition, each group it names, as structs or as lists of names and ids) with the error code set
everywhere the response has one; lists whose answers would carry no error stay empty. A response with no
error code anywhere cannot say "unsupported"; the caller then closes the connection.
"""

from __future__ import annotations

from typing import Any, Optional

import kcodec
from kcodec import definitions
from kcodec.definitions import FieldDef


ALTER_REPLICA_LOG_DIRS = 34  # its answer's topics are those of every directory of the request
ALTER_USER_SCRAM_CREDENTIALS = 51  # its answer's users come from two lists of the request

# The error codes Kafka's getErrorResponse sets (AddPartitionsToTxn v0-3 names its partitions' one so).
ERROR_FIELDS = ("error_code", "partition_error_code")


def _struct_arrays(fields: list[FieldDef], version: int) -> list[FieldDef]:
    return [f for f in fields if version in f.versions and f.is_array and f.struct is not None]


def _mirror(resp_fields: list[FieldDef], req_fields: list[FieldDef], req: dict[str, Any], version: int,
            code: int) -> tuple[dict[str, Any], bool]:
    req_here = {f.attr: f for f in req_fields if version in f.versions}
    resp_arrays = [f for f in _struct_arrays(resp_fields, version) if version not in f.tagged]
    out: dict[str, Any] = {}
    hit = False
    for f in resp_fields:
        if version not in f.versions:
            continue
        if f.attr in ERROR_FIELDS:
            out[f.attr] = code
            hit = True
        elif f.is_array and f.struct is not None:
            rf = _paired(f, req_here, len(resp_arrays) if f in resp_arrays else 0)
            if rf is None:
                continue
            key = None if rf.struct is not None else _key_field(f.struct.fields, rf.elem, version)
            if rf.struct is None and (key is None or not _carries_error(f.struct.fields, version)):
                continue  # names that are not answered one by one (ListGroups' states_filter: no groups)
            items, carried = [], False
            for item in req.get(rf.attr) or []:
                if rf.struct is not None:
                    sub, h = _mirror(f.struct.fields, rf.struct.fields, item, version, code)
                else:  # a name or an id: a struct of the response per item, keyed by it
                    assert key is not None
                    sub, h = _mirror(f.struct.fields, [], {}, version, code)
                    sub[key.attr] = item
                carried = carried or h
                items.append(sub)
            if carried:  # items that carry no error are not answered (JoinGroup's protocols: no members)
                out[f.attr] = items
                hit = True
        elif f.struct is None and f.attr in req_here and req_here[f.attr].type == f.type:
            out[f.attr] = req.get(f.attr)
    return out, hit


def _paired(f: FieldDef, req_here: dict[str, FieldDef], resp_arrays: int) -> Optional[FieldDef]:
    """The request array a response's array of structs answers item by item: the one of the same name
    (DescribeGroups' groups, a list of names), else the one array of structs on each side, tagged ones
    aside (Produce's topic_data -> responses; v10+ also has node_endpoints), else the request's one array
    of names or ids (OffsetFetch v0-1's partition_indexes -> partitions)."""
    rf = req_here.get(f.attr)
    if rf is not None and rf.is_array:
        return rf
    if resp_arrays != 1:
        return None
    structs = [r for r in req_here.values() if r.is_array and r.struct is not None]
    scalars = [r for r in req_here.values() if r.is_array and r.struct is None]
    if len(structs) == 1:
        return structs[0]
    return scalars[0] if not structs and len(scalars) == 1 else None


def _carries_error(fields: list[FieldDef], version: int) -> bool:
    return any(version in f.versions and f.attr in ERROR_FIELDS for f in fields)


def _key_field(fields: list[FieldDef], elem: str, version: int) -> Optional[FieldDef]:
    """The field of a response struct that names the request's item: the first of its type that is not
    an error's (ConsumerGroupDescribe's groups: error_code, error_message, group_id)."""
    for f in fields:
        if (version in f.versions and not f.is_array and f.struct is None and f.type == elem
                and "error" not in f.attr):
            return f
    return None


def error_response(api_key: int, version: int, request: Any, code: int) -> Optional[Any]:
    """The response to ``request`` carrying ``code``, or None when its form has no error code."""
    resp_def = definitions.get(definitions.by_api_key(api_key, "response"))
    req_def = definitions.get(definitions.by_api_key(api_key, "request"))
    req = kcodec.to_dict(request)
    body, hit = _mirror(resp_def.root.fields, req_def.root.fields, req, version, code)
    if api_key == ALTER_USER_SCRAM_CREDENTIALS:  # a result per user either list names, each once (sorted)
        users = sorted({c["name"] for c in (req.get("deletions") or []) + (req.get("upsertions") or [])})
        body["results"] = [{"user": u, "error_code": code} for u in users]
        hit = bool(users)
    if api_key == ALTER_REPLICA_LOG_DIRS:  # Kafka: a result per topic of each directory, in request order
        body["results"] = [{"topic_name": t["name"], "partitions": [{"partition_index": p, "error_code": code}
                                                                    for p in t["partitions"]]}
                           for d in req.get("dirs") or [] for t in d["topics"]]
        hit = any(r["partitions"] for r in body["results"])
    if not hit:
        return None
    return kcodec.from_dict(kcodec.message_class(api_key, "response"), body)
