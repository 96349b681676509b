"""Real Kafka clients administer kcodec's broker. Every test records the API versions its client used;
at the end of the session they are written to report/broker-interop-versions.json."""

from __future__ import annotations

from typing import Iterator

import pytest
from interop_support import ACLS, USERS, write_report

from kcodec.broker import Cluster


@pytest.fixture(scope="session", autouse=True)
def _write_report() -> Iterator[None]:
    yield
    write_report()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        yield c


@pytest.fixture
def secured() -> Iterator[Cluster]:
    with Cluster(brokers=2, users=USERS, acls=ACLS, super_users=["admin"], system_topic_partitions=2) as c:
        c.create_topic("secret", 1, 1)
        yield c
