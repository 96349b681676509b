"""Answers to requests the broker does not implement, in the request's own response form.

Like Kafka's ``AbstractRequest.getErrorResponse``: the response mirrors the request (each topic, each
partition, each group it names) with the error code set everywhere the response has one. A response
with no error code anywhere cannot say "unsupported"; the caller then closes the connection.
"""

from __future__ import annotations

from typing import Any, Optional

import kcodec
from kcodec import definitions
from kcodec.definitions import FieldDef


def _struct_arrays(fields: list[FieldDef], version: int) -> list[FieldDef]:
    return [f for f in fields if version in f.versions and f.is_array and f.struct is not None]


def _mirror(resp_fields: list[FieldDef], req_fields: list[FieldDef], req: dict[str, Any], version: int,
            code: int) -> tuple[dict[str, Any], bool]:
    req_here = {f.attr: f for f in req_fields if version in f.versions}
    req_arrays, resp_arrays = _struct_arrays(req_fields, version), _struct_arrays(resp_fields, version)
    out: dict[str, Any] = {}
    hit = False
    for f in resp_fields:
        if version not in f.versions:
            continue
        if f.attr == "error_code":
            out[f.attr] = code
            hit = True
        elif f.is_array and f.struct is not None:
            rf = req_here.get(f.attr)
            if rf is None or rf.struct is None or not rf.is_array:
                # the one array of each side pair up (Produce's topic_data -> responses)
                rf = req_arrays[0] if len(req_arrays) == 1 and len(resp_arrays) == 1 else None
            if rf is None or rf.struct is None:
                continue
            items = []
            for item in req.get(rf.attr) or []:
                sub, h = _mirror(f.struct.fields, rf.struct.fields, item, version, code)
                hit = hit or h
                items.append(sub)
            out[f.attr] = items
        elif f.struct is None and f.attr in req_here and req_here[f.attr].type == f.type:
            out[f.attr] = req.get(f.attr)
    return out, hit


def error_response(api_key: int, version: int, request: Any, code: int) -> Optional[Any]:
    """The response to ``request`` carrying ``code``, or None when its form has no error code."""
    resp_def = definitions.get(definitions.by_api_key(api_key, "response"))
    req_def = definitions.get(definitions.by_api_key(api_key, "request"))
    body, hit = _mirror(resp_def.root.fields, req_def.root.fields, kcodec.to_dict(request), version, code)
    if not hit:
        return None
    return kcodec.from_dict(kcodec.message_class(api_key, "response"), body)
