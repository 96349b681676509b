"""Real admin clients against a kcodec broker cluster whose controller moves and whose brokers restart
(Cluster's topology API, issue 15 item 4): the faults must look to them like Kafka's own."""

from __future__ import annotations

import time

import pytest
from needs import need_module

from kcodec_broker import Cluster

pytestmark = pytest.mark.interop
TIMEOUT = 15


def _create_requests(cluster: Cluster) -> int:
    return sum(n for counts in cluster.requests_served().values()
               for (api, _), n in counts.items() if api == "CreateTopics")


def test_confluent_kafka_sees_not_controller_and_finds_the_new_controller_in_metadata():
    # librdkafka 2.16 does not retry a topic's NOT_CONTROLLER: it reports it, and keeps sending admin
    # requests to the controller of its cached metadata until that is refreshed (here every 0.3 s).
    ck = need_module("confluent_kafka")
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    def create(admin, name: str) -> None:
        for f in admin.create_topics([NewTopic(name, 1, 1)], request_timeout=TIMEOUT).values():
            f.result(timeout=TIMEOUT)

    with Cluster(brokers=3, forward_admin=False) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2,
                             "topic.metadata.refresh.interval.ms": 300})
        create(admin, "before")
        cluster.move_controller(3)
        with pytest.raises(KafkaException) as e:
            create(admin, "after")
        assert e.value.args[0].code() == ck.KafkaError.NOT_CONTROLLER
        deadline = time.monotonic() + TIMEOUT
        while "after" not in cluster.topics() and time.monotonic() < deadline:
            try:
                create(admin, "after")
            except KafkaException as again:
                assert again.args[0].code() == ck.KafkaError.NOT_CONTROLLER
                time.sleep(0.1)
        assert "after" in cluster.topics()
        assert "after" in cluster.topics()


def test_kafka_python_follows_a_moved_controller():
    # kafka-python's admin client refreshes its controller on NOT_CONTROLLER and sends again
    need_module("kafka")
    from kafka.admin import KafkaAdminClient, NewTopic

    with Cluster(brokers=3, forward_admin=False) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=TIMEOUT * 1000)
        try:
            admin.create_topics([NewTopic("before", 1, 1)])
            before = _create_requests(cluster)
            cluster.move_controller(2)
            admin.create_topics([NewTopic("after", 1, 1)])
            assert "after" in cluster.topics() and _create_requests(cluster) - before >= 2
        finally:
            admin.close()
