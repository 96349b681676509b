"""ListTopics (KIP-142): kcodec's overlay message, its wire layout and its movable api key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kcodec
from kcodec import definitions
from kcodec.messages import ListTopicsRequest, ListTopicsResponse, MetadataResponse


def test_kip_142_layout_v0():
    req = ListTopicsRequest(list_internal=True)
    assert kcodec.encode(req, 0) == b"\x01"
    resp = ListTopicsResponse(error_code=0, topics=[ListTopicsResponse.Topic(name="ab", internal=False)])
    # error_code int16, topics int32 count, name int16 length + bytes, internal bool
    assert kcodec.encode(resp, 0) == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x02ab" + b"\x00"


def test_v1_is_flexible_with_throttle_time():
    resp = ListTopicsResponse(throttle_time_ms=7, topics=[ListTopicsResponse.Topic(name="ab", internal=True)])
    # throttle int32, error int16, compact array (n+1), compact string (len+1), bool, tags of topic, tags
    assert kcodec.encode(resp, 1) == b"\x00\x00\x00\x07" + b"\x00\x00" + b"\x02" + b"\x03ab" + b"\x01\x00" + b"\x00"
    assert kcodec.decode(ListTopicsResponse, kcodec.encode(resp, 1), 1) == resp
    assert ListTopicsRequest.FLEXIBLE_FROM == 1 and ListTopicsResponse.VALID_VERSIONS == (0, 1)


def test_names_of_the_thousand_topic_vector_take_32045_bytes(shared):
    data = (shared / "vectors" / "metadata" / "metadata_v12_1k_body.bin").read_bytes()
    meta = kcodec.decode(MetadataResponse, data, 12)
    lt = ListTopicsResponse(topics=[ListTopicsResponse.Topic(name=t.name, internal=t.is_internal) for t in meta.topics])
    assert kcodec.encoded_size(lt, 0) == 32045


def test_default_api_key_lies_outside_apache_range():
    key = definitions.list_topics_api_key()
    assert key == ListTopicsRequest.API_KEY == ListTopicsResponse.API_KEY == definitions.LIST_TOPICS_DEFAULT_API_KEY
    apache = {k for k in definitions.api_keys() if k != key}
    assert key > max(apache) + 100
    assert kcodec.message_class(key, "response") is ListTopicsResponse
    header, body = kcodec.decode_request(kcodec.encode_request(ListTopicsRequest(), 1, correlation_id=3))
    assert header.request_api_key == key and isinstance(body, ListTopicsRequest)


def _run(env_value: str) -> subprocess.CompletedProcess:
    code = ("import kcodec; from kcodec.messages import ListTopicsRequest as R;"
            "print(R.API_KEY, kcodec.message_class(R.API_KEY).__name__)")
    env = dict(os.environ, KCODEC_LIST_TOPICS_API_KEY=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_api_key_moves_with_the_environment():
    out = _run("2001")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2001", "ListTopicsRequest"]


@pytest.mark.parametrize("value, words", [("3", "is an Apache Kafka api key"), ("x", "must be an integer"),
                                          ("40000", "not an int16")])
def test_bad_api_key_is_refused(value, words):
    out = _run(value)
    assert out.returncode != 0 and words in out.stderr
