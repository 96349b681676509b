"""The state's own rules, below the wire: atomic saves, ACL filters, placement."""

from __future__ import annotations

import json
import uuid

import pytest

from kcodec_broker import ClusterState
from kcodec_broker.topic import Topic
from kcodec_broker.acl import ANY, LITERAL, MATCH, PREFIXED, Acl, acl_filter


def test_a_failed_save_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    state = ClusterState([1, 2], state_file=path, system_topic_partitions=1)
    state.create_topic("first", 1, 1)
    before = path.read_text()

    def broken_dump(obj, f, **kw):
        f.write('{"format": 1, "cluster_id": "half')  # a crash in the middle of writing
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(OSError):
        state.create_topic("second", 1, 1)
    monkeypatch.undo()
    assert path.read_text() == before and not list(tmp_path.glob(".*.tmp"))
    assert set(ClusterState([1, 2], state_file=path).topics) == {"__consumer_offsets", "__transaction_state", "first"}


def test_leaders_spread_and_missing_brokers_are_offline(tmp_path):
    path = tmp_path / "s.json"
    state = ClusterState([1, 2, 3], state_file=path, system_topic_partitions=1)
    t = state.create_topic("spread", 6, 2)
    assert sorted({r[0] for r in t.replicas}) == [1, 2, 3] and all(r[0] != r[1] for r in t.replicas)
    fewer = ClusterState([1, 2], state_file=path)  # restarted with one broker less
    spread = fewer.topics["spread"]
    for index, replicas in enumerate(spread.replicas):
        leader, isr, offline = fewer.partition_leadership(spread, index)
        assert leader == isr[0] == next(b for b in replicas if b != 3) and offline == [b for b in replicas if b == 3]
    gone = Topic("gone", uuid.uuid4(), [[3]])
    assert fewer.partition_leadership(gone, 0) == (-1, [], [3])


@pytest.mark.parametrize("acl, filt, match", [
    (Acl("alice", "Read", "topic", "logs-*"), (2, "logs-", PREFIXED), True),
    (Acl("alice", "Read", "topic", "logs-*"), (2, "logs-", LITERAL), False),
    (Acl("alice", "Read", "topic", "logs-*"), (2, "logs-a", MATCH), True),
    (Acl("alice", "Read", "topic", "logs-*"), (2, "metrics", MATCH), False),
    (Acl("alice", "Read", "topic", "*"), (2, "anything", MATCH), True),
    (Acl("alice", "Read", "topic", "orders"), (ANY, None, ANY), True),
    (Acl("alice", "Create", "cluster"), (2, None, ANY), False),
    (Acl("alice", "Create", "cluster"), (4, "kafka-cluster", LITERAL), True),
])
def test_describe_acls_filters(acl, filt, match):
    rtype, name, pattern = filt
    assert acl_filter(acl, rtype, name, pattern, None, None, ANY, ANY) is match
    assert not acl_filter(acl, rtype, name, pattern, "User:bob", None, ANY, ANY)
