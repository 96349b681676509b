"""The guide's example clients (examples/producer.py, examples/consumer.py) against Apache Kafka itself, as
tests/protocol/test_protocol_examples.py runs them against kcodec broker: SCRAM and PLAIN logins, a
compressed and a plain batch, what one writes the other reads back."""

from __future__ import annotations

import uuid

import pytest
import real_kafka as rk
from example_clients import produce_then_consume

from kcodec.client import NewTopic, SyncClient

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("mechanism, compression", [("SCRAM-SHA-512", "lz4"), ("PLAIN", "none")])
def test_what_the_producer_writes_to_kafka_the_consumer_reads(real_kafka, mechanism, compression):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    with SyncClient(real_kafka.bootstrap, request_timeout=20) as c:  # plaintext: a super user
        [made] = c.create_topics([NewTopic(topic, 2, 1)])
        assert made.error == 0
    login = ["--user", "admin", "--password", rk.SASL_USERS["admin"], "--mechanism", mechanism]
    produce_then_consume(real_kafka.sasl_bootstrap, topic, compression, login)
