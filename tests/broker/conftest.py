"""Fixtures for the broker tests: a running cluster, wire clients to its brokers."""

from __future__ import annotations

from typing import Iterator

import pytest

from kcodec_broker import Cluster


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        yield c
