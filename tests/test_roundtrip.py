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


def _topics(n: int) -> messages.MetadataResponse:
    T, P = messages.MetadataResponse.Topic, messages.MetadataResponse.Partition
    return messages.MetadataResponse(topics=[T(name=f"topic-{i:05d}", partitions=[
        P(partition_index=k, leader_id=k % 3, replica_nodes=[1, 2, 3], isr_nodes=[1, 2]) for k in range(4)])
        for i in range(n)])


@pytest.mark.parametrize("order", [(0, 1, 3000, 40, 3000, 2, 3000), (3000, 0, 20000, 1)])
def test_encode_grows_and_cuts_its_output(order: tuple[int, ...]) -> None:
    """The compiled encode writes in one pass into an output as large as the message's last one, doubled
    as it fills and cut to size: a message larger than the last, or smaller, or of a size met before,
    comes out as the reference writes it."""
    from kcodec.core.backend import available
    from kcodec.core.ir import program_for

    backends = available()
    prog = program_for(messages.MetadataResponse, 12)
    for n in order:
        msg = _topics(n)
        expected = backends["python"].encode(prog, msg)
        for backend in backends.values():
            assert backend.encode(prog, msg) == expected
        assert kcodec.encode(msg, 12) == expected
