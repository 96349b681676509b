"""Every response's error codes as `kcodec analyze` reads them (kcodec.spark.decode.error_codes, which does not
walk the structs that can hold no error code): the same codes, in the same order, as a walk over every
struct of the message, for generated responses of every API at its newest version."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import definitions
from kcodec.messages._base import Struct
from kcodec.spark import decode
from kcodec.testing import instances

RESPONSES = [kcodec.message_class(key, "response") for key in sorted(definitions.api_keys())]


def every_struct(msg: Any) -> list[int]:
    """Non-zero error codes depth first in field order, every field of every struct looked at."""
    out: list[int] = []

    def walk(s: Any) -> None:
        if "error_code" in s.__slots__ and s.error_code:
            out.append(s.error_code)
        for name in s.__slots__:
            value = getattr(s, name, None)
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, Struct):
                    walk(v)

    walk(msg)
    return out


def test_only_structs_without_codes_are_left_out():
    from kcodec.messages import FetchResponse as F
    assert decode._shape(F.PartitionData) == (True, ())  # its four nested structs hold no code
    assert decode._shape(F) == (True, ("responses",))
    assert all(decode._holds_codes(c) for c in RESPONSES if "error_code" in c.__slots__)


@pytest.mark.parametrize("cls", RESPONSES, ids=lambda c: c.__name__)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_codes_of_every_struct(cls, data):
    version = max(definitions.get(cls._KAFKA_NAME).versions)
    msg = data.draw(instances(cls, version))
    assert decode.error_codes(msg) == every_struct(msg)


def test_a_list_of_leaves_is_read_in_one_loop_in_its_place():
    from kcodec.messages import FetchResponse as F
    assert decode._plan(F.FetchableTopicResponse) == (False, (("partitions", F.PartitionData),))
    assert decode._plan(F) == (True, (("responses", None),))
    msg = F(error_code=1, responses=[
        F.FetchableTopicResponse(partitions=[F.PartitionData(error_code=c) for c in (2, 0, 3)]),
        F.FetchableTopicResponse(partitions=[F.PartitionData(error_code=4)])])
    assert decode.error_codes(msg) == every_struct(msg) == [1, 2, 3, 4]


def test_a_struct_of_another_class_in_a_list_of_leaves_is_walked_whole():
    from kcodec.messages import FetchResponse as F
    from kcodec.messages import MetadataResponse as M
    other = M.Topic(error_code=7, partitions=[M.Partition(error_code=8)])
    msg = F(responses=[F.FetchableTopicResponse(partitions=[F.PartitionData(error_code=2), other,
                                                            F.PartitionData(error_code=9)])])
    assert decode.error_codes(msg) == every_struct(msg) == [2, 7, 8, 9]
