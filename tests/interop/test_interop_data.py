"""Four real clients produce to `kcodec broker` with every codec and acks 0, 1 and all (idempotent where
the client allows it: acks=all), then read everything back by partition: every message acknowledged
(acks >= 1) is read exactly once and in order per partition; acks=0 messages at most once. A cluster
restarted on its state file serves everything acknowledged before."""

from __future__ import annotations

from collections import Counter
from typing import Iterator

import pytest
from data_clients import CONSUMERS, PRODUCERS, Sent, confluent_consume

from kcodec_broker import Cluster

pytestmark = pytest.mark.interop
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = 3
N = 60  # per acks setting


@pytest.fixture(scope="module")
def data_cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, system_topic_partitions=1) as c:  # leaders spread over the three brokers
        yield c


def _messages(client: str, codec: str, acks: str) -> Sent:
    return [(i % PARTITIONS, f"{client}-{codec}-{acks}-{i}".encode()) for i in range(N)]


def _check(got: Sent, acknowledged: Sent, unacknowledged: Sent) -> None:
    assert not [m for m, n in Counter(got).items() if n > 1], "a message was read twice"
    extra = set(got) - set(acknowledged) - set(unacknowledged)
    assert not extra, f"read messages nobody produced: {sorted(extra)[:3]}"
    for p in range(PARTITIONS):
        want = [v for q, v in acknowledged if q == p]
        assert [v for q, v in got if q == p and (q, v) in set(acknowledged)] == want, f"partition {p}"


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_produce_and_consume(data_cluster, client, codec):
    topic = f"data-{client}-{codec}"
    data_cluster.create_topic(topic, PARTITIONS, 1)
    acknowledged: Sent = []
    for acks in ("all", "1"):
        sent = _messages(client, codec, acks)
        PRODUCERS[client](data_cluster.bootstrap, topic, sent, codec, acks, idempotent=acks == "all")
        acknowledged += sent
    fire_and_forget = _messages(client, codec, "0")
    PRODUCERS[client](data_cluster.bootstrap, topic, fire_and_forget, codec, "0", idempotent=False)
    got = CONSUMERS[client](data_cluster.bootstrap, topic, PARTITIONS, 3 * N)
    _check(got, acknowledged, fire_and_forget)


def test_restart_on_the_state_file_serves_everything_acknowledged(tmp_path):
    state = tmp_path / "state.json"
    sent = _messages("restart", "zstd", "all")
    with Cluster(brokers=2, system_topic_partitions=1, state_file=state) as c:
        c.create_topic("kept", PARTITIONS, 1)
        PRODUCERS["confluent-kafka"](c.bootstrap, "kept", sent, "zstd", "all", idempotent=True)
    with Cluster(brokers=2, system_topic_partitions=1, state_file=state) as c:
        _check(confluent_consume(c.bootstrap, "kept", PARTITIONS, N), sent, [])
        more = _messages("after", "none", "all")
        PRODUCERS["confluent-kafka"](c.bootstrap, "kept", more, "none", "all", idempotent=True)
        _check(confluent_consume(c.bootstrap, "kept", PARTITIONS, 2 * N), sent + more, [])


def test_a_stopped_leader_hands_its_partitions_over_with_their_data():
    with Cluster(brokers=3, system_topic_partitions=1) as c:
        c.create_topic("moving", PARTITIONS, 2)
        before = _messages("before", "lz4", "all")
        PRODUCERS["confluent-kafka"](c.bootstrap, "moving", before, "lz4", "all", idempotent=True)
        leader = c.topics()["moving"].replicas[0][0]
        c.stop_broker(leader)  # partition 0 now leads on its second replica, with the same log
        after = _messages("after", "lz4", "all")
        PRODUCERS["confluent-kafka"](c.bootstrap, "moving", after, "lz4", "all", idempotent=True)
        _check(confluent_consume(c.bootstrap, "moving", PARTITIONS, 2 * N), before + after, [])
