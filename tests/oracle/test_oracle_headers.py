"""Request and response headers against Kafka's: for every API and version kcodec has, the header version
(Kafka's ApiMessageType.requestHeaderVersion / responseHeaderVersion), and whole frames: kcodec's
encode_request / encode_response write Kafka's header bytes then Kafka's body bytes, and kcodec's
decode_request / decode_response read the frames Kafka's classes make. The headers' own versions are
checked field by field with every other message (test_oracle_messages.py)."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
import tally
from kafka_json import kafka_class, renames, to_kafka

import kcodec
from kcodec import definitions

pytestmark = pytest.mark.oracle

APIS = sorted({(definitions.get(n).api_key, n) for n in definitions.names()
               if definitions.get(n).kind in ("request", "response") and not n.startswith("ListTopics")})
# Headers' values, taken in turn: correlation ids at the int32 edges, client ids null, empty, long and not ASCII.
CORRELATION_IDS = (0, -1, 0x7FFFFFFF, -0x80000000, 7)
CLIENT_IDS = (None, "", "kcodec", "clïent-€-𝄞" * 20)


def _api_of(oracle: Any, line: str, api_key: int) -> dict:
    return next(a for a in oracle.catalogs[line]["apis"] if a["key"] == api_key)


def _cases(oracle: Any) -> list[tuple[str, int, int, str, int]]:
    """(message name, api key, version, Kafka line, index) of every request and response version."""
    out: list[tuple[str, int, int, str, int]] = []
    for api_key, name in APIS:
        for v in definitions.get(name).versions:
            line = oracle.line_for(kafka_class(name), v)
            assert line is not None, f"{name} v{v}"
            out.append((name, api_key, v, line, len(out)))
    return out


def test_header_versions_are_kafkas(oracle: Any) -> None:
    wrong = []
    for name, api_key, v, line, _ in _cases(oracle):
        api = _api_of(oracle, line, api_key)
        kind = definitions.get(name).kind
        theirs = api[f"{kind}_header"][v - api["lowest"]]
        ours = (kcodec.request_header_version if kind == "request" else kcodec.response_header_version)(api_key, v)
        if ours != theirs:
            wrong.append(f"{name} v{v}: kcodec's {kind} header version {ours}, Kafka {line}'s {theirs}")
        tally.count(f"{kind} header versions checked")
    assert not wrong, "\n".join(wrong)


def test_frames_are_kafkas(oracle: Any) -> None:
    """Kafka writes header and body (the message at its defaults), kcodec the whole frame: the same bytes;
    kcodec reads Kafka's frame back."""
    by_line: dict[str, list] = {}
    for case in _cases(oracle):
        by_line.setdefault(case[3], []).append(case)
    wrong = []
    for line, cases in by_line.items():
        jobs, frames = [], []
        for name, api_key, v, _, i in cases:
            cls = kcodec.message_class(name=name)
            msg, corr, client = cls(), CORRELATION_IDS[i % 5], CLIENT_IDS[i % 4]
            if definitions.get(name).kind == "request":
                hv = kcodec.request_header_version(api_key, v)
                header: dict[str, Any] = {"requestApiKey": api_key, "requestApiVersion": v, "correlationId": corr}
                if hv >= 1:
                    header["clientId"] = client
                jobs.append({"cls": "RequestHeaderData", "v": hv, "json": header})
                frames.append(kcodec.encode_request(msg, v, corr, client))
            else:
                jobs.append({"cls": "ResponseHeaderData", "v": kcodec.response_header_version(api_key, v),
                             "json": {"correlationId": corr}})
                frames.append(kcodec.encode_response(msg, v, corr))
            jobs.append({"cls": kafka_class(name), "v": v, "json": to_kafka(msg, v, names=renames(name, line))})
        done = oracle.jvms[line].call("encode", cases=jobs)["results"]
        for (name, api_key, v, _, i), ours, head, body in zip(cases, frames, done[::2], done[1::2]):
            if "error" in head or "error" in body:
                wrong.append(f"{name} v{v}: Kafka {line} could not encode the frame: {head} {body}")
                continue
            theirs = base64.b64decode(head["bytes"]) + base64.b64decode(body["bytes"])
            if ours != struct.pack(">i", len(theirs)) + theirs:
                wrong.append(f"{name} v{v}: kcodec's frame\n    {ours.hex()}\n  Kafka's header and body\n    {theirs.hex()}")
                continue
            wrong += _read_back(name, api_key, v, struct.pack(">i", len(theirs)) + theirs, CORRELATION_IDS[i % 5],
                                CLIENT_IDS[i % 4])
            tally.count("frames checked")
    assert not wrong, f"{len(wrong)} frames differ:\n" + "\n".join(wrong[:12])


def _read_back(name: str, api_key: int, v: int, frame: bytes, corr: int, client: Any) -> list[str]:
    cls = kcodec.message_class(name=name)
    got: tuple[Any, ...]
    want: tuple[Any, ...]
    if definitions.get(name).kind == "request":
        header, msg = kcodec.decode_request(frame)
        got = (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id)
        want = (api_key, v, corr, client if kcodec.request_header_version(api_key, v) >= 1 else "")
    else:
        header, msg = kcodec.decode_response(frame, api_key=api_key, api_version=v)
        got, want = (header.correlation_id,), (corr,)
    if got != want or msg != cls():
        return [f"{name} v{v}: kcodec reads Kafka's frame as {got} {msg!r}, not {want} {cls()!r}"]
    return []
