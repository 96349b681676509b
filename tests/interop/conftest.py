"""Real Kafka clients administer kcodec's broker. Every test records the API versions its client used;
at the end of the session they are written to report/broker-interop-versions.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from kcodec.broker import Cluster

REPORT = Path(__file__).resolve().parents[2] / "report" / "broker-interop-versions.json"
USERS = {"admin": "admin-pw", "alice": "alice-pw"}
# alice may see every topic and create none; she may delete nothing.
ACLS = ["alice:Describe:topic:*", "alice:DescribeConfigs:topic:*"]

_USED: dict[str, dict[str, set[int]]] = {}


def record(client: str, cluster: Cluster) -> dict[str, list[int]]:
    """Merge what ``cluster`` saw into the session's record under ``client``; returns the merge."""
    mine = _USED.setdefault(client, {})
    for apis in cluster.api_versions_used().values():
        for api, versions in apis.items():
            mine.setdefault(api, set()).update(versions)
    return {api: sorted(v) for api, v in mine.items()}


@pytest.fixture(scope="session", autouse=True)
def _write_report() -> Iterator[None]:
    yield
    if _USED:
        REPORT.parent.mkdir(exist_ok=True)
        data = {c: {a: sorted(v) for a, v in sorted(apis.items())} for c, apis in sorted(_USED.items())}
        REPORT.write_text("{\n" + ",\n".join(f" {json.dumps(c)}: {json.dumps(a)}" for c, a in data.items()) + "\n}\n")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        yield c


@pytest.fixture
def secured() -> Iterator[Cluster]:
    with Cluster(brokers=2, users=USERS, acls=ACLS, super_users=["admin"], system_topic_partitions=2) as c:
        c.create_topic("secret", 1, 1)
        yield c
