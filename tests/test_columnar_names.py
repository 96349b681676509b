"""The names-only scan's topic loop (kcodec/columnar/_columnar_names.pxi): topics it reads in one loop and
topics it hands to the full walk (null, empty, long or non-ASCII names, tagged fields, no partitions) give
the object decode's names and flags, and bad bytes the same DecodeError, on every engine."""

from __future__ import annotations

import pytest
from test_columnar import errors_match, every_cut_and_mutation

import kcodec
from kcodec.messages import DescribeTopicPartitionsResponse, MetadataResponse

CASES = [(MetadataResponse, 1), (MetadataResponse, 12), (DescribeTopicPartitionsResponse, 0)]
IDS = ["md-v1", "md-v12", "dtp-v0"]


def _topics(cls, version: int):
    T, P = cls.Topic, cls.Partition
    flexible = cls is DescribeTopicPartitionsResponse or version >= 9
    names = ["orders", "", "x" * 130, "caf\u00e9", "logs", "metrics"]  # (130: a two-byte compact length)
    topics = []
    for i, name in enumerate(names):
        parts = [P(partition_index=k, leader_id=k, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3][: 3 - k % 2])
                 for k in range(i % 3)]  # none, one, two partitions
        t = T(name=name, is_internal=i % 2 == 1, partitions=parts, error_code=i)
        if flexible and i == 4:
            t.unknown_tagged_fields = {5: b"ab"}
        topics.append(t)
    if flexible:  # a nullable name, null, between ordinary topics
        topics.insert(2, T(name=None, partitions=[P(partition_index=0)]))
    return cls(topics=topics)


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_topic_loop_and_its_fallbacks_alike(cls, version):
    body = kcodec.encode(_topics(cls, version), version)
    assert errors_match(cls, body, version) == "ok"


@pytest.mark.parametrize("cls,version", CASES, ids=IDS)
def test_topic_loop_fails_alike(cls, version):
    """Every truncation and mutations of every byte: the same DecodeError (or the same names) everywhere."""
    body = kcodec.encode(_topics(cls, version), version)
    assert every_cut_and_mutation(cls, body, version) == {"ok", "error"}
