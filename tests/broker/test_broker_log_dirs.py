"""DescribeLogDirs over the wire: each broker names the partitions it holds a replica of, with their sizes."""

from __future__ import annotations

import pytest
from broker_wire import Wire, authenticated
from test_broker_data import batch, produce

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import DescribeLogDirsRequest

Topic = DescribeLogDirsRequest.DescribableLogDirTopic


def held(resp) -> dict[tuple[str, int], int]:
    """(topic, partition) -> size, over the one log directory."""
    [result] = resp.results
    assert result.error_code == 0
    return {(t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions}


def leader_of(cluster: Cluster, partition: int) -> tuple[str, int]:
    return cluster.addresses[cluster.state.broker_ids.index(cluster.topics()["t"].replicas[partition][0])]


@pytest.fixture(scope="module")
def three():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        c.create_topic("t", 3, 2)
        with Wire(leader_of(c, 0)) as w:
            assert w.call(produce("t", 0, batch(b"a" * 100, b"b" * 100)), 9).responses[0] \
                .partition_responses[0].error_code == 0
        yield c


@pytest.mark.parametrize("version", range(0, 6))
def test_each_broker_names_its_replicas_with_their_sizes(three, version):
    replicas = three.topics()["t"].replicas
    sizes = {}
    for node, address in zip(three.state.broker_ids, three.addresses):
        with Wire(address) as w:
            resp = w.call(DescribeLogDirsRequest(topics=None), version)
        assert resp.error_code == 0
        [result] = resp.results
        assert result.log_dir == "memory" and not result.topics[0].partitions[0].is_future_key
        if version >= 4:
            assert (result.total_bytes, result.usable_bytes) == (-1, -1)  # unknown: the data is in memory
        mine = {k: v for k, v in held(resp).items() if k[0] == "t"}
        assert set(mine) == {("t", i) for i, r in enumerate(replicas) if node in r}
        sizes.update(mine)
    assert sizes[("t", 0)] > 200 and sizes[("t", 1)] == sizes[("t", 2)] == 0  # one batch, two records


def test_only_the_partitions_asked_for(three):
    with Wire(leader_of(three, 0)) as w:
        resp = w.call(DescribeLogDirsRequest(topics=[Topic(topic="t", partitions=[0, 7]),
                                                     Topic(topic="nope", partitions=[0])]), 4)
        assert list(held(resp)) == [("t", 0)]  # unknown topics and partitions are left out, as Kafka does
        assert held(w.call(DescribeLogDirsRequest(topics=[]), 4)) == {}


def test_a_state_file_names_its_directory_and_its_disk(tmp_path):
    with Cluster(brokers=1, system_topic_partitions=1, state_file=tmp_path / "state.json") as c:
        with Wire(c.addresses[0]) as w:
            [result] = w.call(DescribeLogDirsRequest(topics=None), 4).results
    assert result.log_dir == str(tmp_path) and 0 < result.usable_bytes <= result.total_bytes


def test_needs_describe_on_the_cluster():
    users = {"alice": "alice-secret", "admin": "admin-secret"}
    with Cluster(brokers=1, users=users, acls=["alice:Describe:topic:*", "admin:Describe:cluster"],
                 system_topic_partitions=1) as c:
        with authenticated(c, "alice", "alice-secret") as w:
            resp = w.call(DescribeLogDirsRequest(topics=None), 3)
            assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and resp.results == []
        with authenticated(c, "admin", "admin-secret") as w:
            assert w.call(DescribeLogDirsRequest(topics=None), 3).error_code == 0
