"""The real-Kafka fixtures themselves (tests/kafka/real_kafka.py): what the other suites rely on."""

from __future__ import annotations

import time
import uuid

import pytest
import real_kafka as rk

from kcodec.client import AuthenticationError, KafkaConnectionError, NewTopic, Sasl, SyncClient
from kcodec.errors import ErrorCode

pytestmark = pytest.mark.kafka


def test_one_node_plaintext_is_unrestricted_and_sasl_needs_a_login(real_kafka):
    assert real_kafka.alive() and len(real_kafka.nodes) == 1
    with SyncClient(real_kafka.bootstrap, request_timeout=10) as c:
        d = c.describe_cluster()
        assert d.cluster_id == real_kafka.cluster_id and [b.port for b in d.brokers] == [real_kafka.nodes[0].port]
        assert d.release.startswith("newer than 4.3")  # Kafka 4.4 advertises APIs past kcodec's release table
    for mechanism in rk.MECHANISMS[:3]:
        with SyncClient(real_kafka.sasl_bootstrap, sasl=Sasl(mechanism, "alice", rk.SASL_USERS["alice"]),
                        request_timeout=10) as c:
            assert c.list_topics() == []  # alice has no ACL (no test gives her one): she sees no topic
            name = f"denied-{uuid.uuid4().hex[:6]}"
            [made] = c.create_topics([NewTopic(name, 1, 1)])
            assert made.error == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # the authorizer is on, alice has no ACL
    with pytest.raises((KafkaConnectionError, AuthenticationError)):
        with SyncClient(real_kafka.sasl_bootstrap, connect_timeout=5, request_timeout=5) as c:
            c.list_topics()  # no login on the SASL listener: Kafka closes the connection


def test_three_nodes_replicate(real_kafka3):
    assert len(real_kafka3.nodes) == 3 and real_kafka3.alive()
    name = f"replicated-{uuid.uuid4().hex[:6]}"
    with SyncClient(real_kafka3.bootstrap, request_timeout=20) as c:
        assert [b.node_id for b in c.describe_cluster().brokers] == [1, 2, 3]
        [made] = c.create_topics([NewTopic(name, 2, 3)])
        assert made.ok, made
        deadline = time.monotonic() + 15  # the followers join the ISR once they have fetched
        while True:
            [described] = c.describe_topics([name])
            if time.monotonic() > deadline or described.ok and all(len(p.isr) == 3 for p in described.partitions):
                break
            time.sleep(0.1)
        assert [sorted(p.replicas) for p in described.partitions] == [[1, 2, 3]] * 2
        assert all(sorted(p.isr) == [1, 2, 3] for p in described.partitions)
