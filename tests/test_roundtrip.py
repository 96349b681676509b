"""Every message at every version: generated instances round-trip, and encoded_size is exact."""

from __future__ import annotations

import pytest
from hypothesis import given

import kcodec
from kcodec import definitions, messages
from kcodec.testing import instances

CASES = [(name, v) for name in definitions.names() for v in definitions.get(name).versions]


def test_every_message_is_covered():
    assert len(definitions.names()) >= 180
    assert len(CASES) >= 700
    for key, api in definitions.api_keys().items():
        req = definitions.get(definitions.by_api_key(key, "request"))
        resp = definitions.get(definitions.by_api_key(key, "response"))
        assert req.valid == resp.valid, api


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_roundtrip(name: str, version: int) -> None:
    cls = getattr(messages, name)

    @given(instances(cls, version))
    def check(msg):
        data = kcodec.encode(msg, version)
        assert kcodec.encoded_size(msg, version) == len(data)
        again = kcodec.decode(cls, data, version)
        assert again == msg
        assert kcodec.encode(again, version) == data

    check()
