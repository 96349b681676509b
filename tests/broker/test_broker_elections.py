"""ElectLeaders v0-2 over the wire: preferred and unclean elections, their errors, and clients following
the new leader (Metadata, Produce, Fetch) once a stopped broker is back."""

from __future__ import annotations

from typing import Iterator, Optional

import pytest
from broker_wire import Wire, authenticated

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import (ApiVersionsRequest, ElectLeadersRequest, FetchRequest, MetadataRequest,
                             ProduceRequest)
from kcodec.records import BatchBuilder

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."


def add_topic(c: Cluster, name: str, replicas: list[list[int]]) -> None:
    with c.state.lock:
        c.state.add_topic(c.state.plan_topic(name, assignments=dict(enumerate(replicas))))


@pytest.fixture
def kept() -> Iterator[Cluster]:
    """Leaders stay where they moved (auto.leader.rebalance.enable=false)."""
    with Cluster(brokers=3, auto_leader_rebalance=False, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2, 3], [2, 3, 1]])
        yield c


def wire(c: Cluster, node: int) -> Wire:
    server = c.server(node)
    return Wire((server.host, server.port))


def elect(c: Cluster, version: int, topics: Optional[dict[str, list[int]]], election_type: int = PREFERRED,
          node: Optional[int] = None) -> ElectLeadersRequest:
    parts = None if topics is None else [ElectLeadersRequest.TopicPartitions(topic=t, partitions=p)
                                         for t, p in topics.items()]
    with wire(c, node if node is not None else c.controller_id) as w:
        return w.call(ElectLeadersRequest(election_type=election_type, topic_partitions=parts, timeout_ms=1000),
                      version)


def results(resp) -> dict[tuple[str, int], tuple[int, Optional[str]]]:
    return {(t.topic, p.partition_id): (p.error_code, p.error_message)
            for t in resp.replica_election_results for p in t.partition_result}


def partition(c: Cluster, topic: str, index: int = 0, node: int = 1) -> tuple[int, int, list[int], list[int]]:
    """What Metadata says of a partition: error code, leader, ISR, offline replicas."""
    with wire(c, node) as w:
        p = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name=topic)]), 12).topics[0].partitions[index]
    return p.error_code, p.leader_id, list(p.isr_nodes), list(p.offline_replicas)


def leader(c: Cluster, topic: str, index: int = 0, node: int = 1) -> int:
    return partition(c, topic, index, node)[1]


def produce(c: Cluster, node: int, topic: str, index: int) -> int:
    builder = BatchBuilder()
    builder.append(None, b"v", timestamp=1)
    batch = builder.build()
    req = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=index, records=batch)])])
    with wire(c, node) as w:
        return w.call(req, 9).responses[0].partition_responses[0].error_code


def fetch(c: Cluster, node: int, topic: str, index: int, version: int = 12) -> int:
    req = FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, session_epoch=-1, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=index, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)])])
    with wire(c, node) as w:
        return w.call(req, version).responses[0].partitions[0].error_code


def test_api_versions_advertise_elect_leaders_v0_to_v2(kept):
    with wire(kept, 1) as w:
        keys = {k.api_key: (k.min_version, k.max_version) for k in w.call(ApiVersionsRequest(), 0).api_keys}
    assert keys[ElectLeadersRequest.API_KEY] == (0, 2)


@pytest.mark.parametrize("version", range(0, 3))
def test_preferred_election_moves_leadership_back_to_a_restarted_broker(kept, version):
    kept.stop_broker(1)
    assert partition(kept, "t", 0, node=2) == (0, 2, [2, 3], [1])
    kept.start_broker(1)
    assert partition(kept, "t", 0) == (0, 2, [1, 2, 3], [])  # a follower again
    assert produce(kept, 1, "t", 0) == E.NOT_LEADER_OR_FOLLOWER
    resp = elect(kept, version, {"t": [0, 1]})
    assert resp.throttle_time_ms == 0 and (version == 0 or resp.error_code == 0)
    assert results(resp) == {("t", 0): (0, None), ("t", 1): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}
    assert leader(kept, "t", 0) == 1
    assert produce(kept, 1, "t", 0) == 0 and fetch(kept, 1, "t", 0) == 0
    # a follower again: Produce and Fetch below v11 are the leader's; from v11 followers serve consumers (KIP-392)
    assert produce(kept, 2, "t", 0) == fetch(kept, 2, "t", 0, version=10) == E.NOT_LEADER_OR_FOLLOWER
    assert fetch(kept, 2, "t", 0) == 0
    assert results(elect(kept, version, {"t": [0]})) == {("t", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}


def test_by_default_a_restarted_broker_leads_again_and_no_election_is_needed():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        add_topic(c, "t", [[1, 2, 3]])
        c.stop_broker(1)
        assert leader(c, "t", node=2) == 2
        assert results(elect(c, 2, {"t": [0]})) == {("t", 0): (E.PREFERRED_LEADER_NOT_AVAILABLE,
                                                               "The preferred leader was not available.")}
        c.start_broker(1)
        assert leader(c, "t") == 1
        assert results(elect(c, 2, {"t": [0]})) == {("t", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}


@pytest.mark.parametrize("version", range(0, 3))
def test_preferred_leader_not_available_and_unknown_partitions(kept, version):
    kept.stop_broker(2)
    resp = elect(kept, version, {"t": [1, 0, 7], "nope": [0]})
    assert results(resp) == {
        ("t", 1): (E.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available."),
        ("t", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED),
        ("t", 7): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-7"),
        ("nope", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")}
    assert [t.topic for t in resp.replica_election_results] == ["t", "nope"]


@pytest.mark.parametrize("version", (1, 2))
def test_unclean_election_brings_an_offline_partition_back(kept, version):
    add_topic(kept, "u", [[1, 2]])
    add_topic(kept, "v", [[3]])
    kept.stop_broker(2)  # u-0's ISR shrinks to [1]
    kept.stop_broker(1)  # its last in-sync replica goes: offline, ISR [1]
    kept.start_broker(2)  # not in sync: the partition stays offline
    assert partition(kept, "u", node=2) == (E.LEADER_NOT_AVAILABLE, -1, [1], [1])
    assert results(elect(kept, version, {"u": [0]}, PREFERRED)) == {
        ("u", 0): (E.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")}
    assert results(elect(kept, version, {"u": [0], "v": [0]}, UNCLEAN)) == {
        ("u", 0): (0, None), ("v", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}
    assert partition(kept, "u", node=2) == (0, 2, [2], [1])
    assert produce(kept, 2, "u", 0) == 0
    kept.stop_broker(3)
    assert results(elect(kept, version, {"v": [0]}, UNCLEAN)) == {
        ("v", 0): (E.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available.")}


def test_the_last_in_sync_replica_takes_its_partition_back_when_it_returns(kept):
    add_topic(kept, "u", [[1, 2]])
    kept.stop_broker(2)
    kept.stop_broker(1)
    kept.start_broker(1)  # a clean election: it was the last in sync
    assert partition(kept, "u") == (0, 1, [1], [2])
    kept.start_broker(2)
    assert partition(kept, "u") == (0, 1, [1, 2], [])


def test_a_partition_created_while_its_preferred_replica_was_away_stays_led_elsewhere(kept):
    kept.stop_broker(1)
    add_topic(kept, "late", [[1, 2]])
    kept.start_broker(1)
    assert partition(kept, "late") == (0, 2, [1, 2], [])
    assert results(elect(kept, 2, {"late": [0]})) == {("late", 0): (0, None)}
    assert leader(kept, "late") == 1


@pytest.mark.parametrize("version", range(0, 3))
def test_a_null_list_elects_everywhere_and_leaves_out_what_needed_no_election(kept, version):
    kept.stop_broker(1)
    kept.start_broker(1)
    resp = elect(kept, version, None)
    by_topic = {t.topic: [(p.partition_id, p.error_code) for p in t.partition_result]
                for t in resp.replica_election_results}
    moved = {name: [(i, 0) for i, r in enumerate(topic.replicas) if r[0] == 1] for name, topic in kept.topics().items()}
    assert by_topic == moved and moved["t"] == [(0, 0)] and set(moved) == {"__consumer_offsets", "__transaction_state", "t"}
    assert leader(kept, "t") == 1


def test_unknown_election_type_is_an_invalid_request(kept):
    resp = elect(kept, 2, {"t": [0]}, election_type=2)
    assert resp.error_code == E.INVALID_REQUEST
    assert results(resp) == {("t", 0): (E.INVALID_REQUEST, "Unknown election type 2")}


@pytest.mark.parametrize("version", range(0, 3))
def test_elections_need_alter_on_the_cluster(version):
    with Cluster(brokers=1, users={"admin": "a", "alice": "b"}, acls=["alice:Describe:cluster"],
                 super_users=["admin"], system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        req = ElectLeadersRequest(election_type=0, timeout_ms=1000, topic_partitions=[
            ElectLeadersRequest.TopicPartitions(topic="t", partitions=[0])])
        with authenticated(c, "alice", "b") as w:
            denied = w.call(req, version)
            everything = w.call(ElectLeadersRequest(topic_partitions=None), version)
        with authenticated(c, "admin", "a") as w:
            allowed = w.call(req, version)
    assert results(denied) == {("t", 0): (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")}
    assert version == 0 or denied.error_code == everything.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    assert everything.replica_election_results == []
    assert results(allowed) == {("t", 0): (E.ELECTION_NOT_NEEDED, NOT_NEEDED)}


def test_without_forwarding_only_the_controller_elects():
    with Cluster(brokers=2, forward_admin=False, auto_leader_rebalance=False, system_topic_partitions=1) as c:
        add_topic(c, "t", [[2, 1]])
        c.stop_broker(2)
        c.start_broker(2)
        other = next(n for n in (1, 2) if n != c.controller_id)
        refused = elect(c, 2, {"t": [0]}, node=other)
        assert refused.error_code == 0 and results(refused) == {("t", 0): (E.NOT_CONTROLLER, None)}
        assert results(elect(c, 2, {"t": [0]})) == {("t", 0): (0, None)}
        assert leader(c, "t") == 2


@pytest.mark.parametrize("flags, kept_leaders", [([], False), (["--no-auto-leader-rebalance"], True)])
def test_kcodec_broker_no_auto_leader_rebalance(monkeypatch, flags, kept_leaders):
    import argparse

    from kcodec_broker import cli

    given: dict = {}

    class Built(Exception):
        pass

    def record(*args, **kwargs):
        given.update(kwargs)
        raise Built

    monkeypatch.setattr("kcodec_broker.cluster.Cluster", record)
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    with pytest.raises(Built):
        cli.run(parser.parse_args(["--listen", "127.0.0.1:0", *flags]))
    assert given["auto_leader_rebalance"] is not kept_leaders
