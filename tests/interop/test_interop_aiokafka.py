"""aiokafka 0.14.0's AIOKafkaAdminClient against kcodec's broker, on the test's own event loop."""

from __future__ import annotations

import asyncio
import sys

import pytest
from broker_logs import wait_for_log
from needs import need_module
from interop_support import (ACLS, AUTH_MECHANISMS, AUTH_PASSWORD, AUTH_TOPIC, AUTH_USER, HIDDEN_TOPIC, USERS,
                              record)

from kcodec_broker import Cluster
from kcodec.protocol.sasl.oauthbearer import unsecured_token

pytestmark = pytest.mark.interop
aiokafka = need_module("aiokafka")
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic  # noqa: E402
from aiokafka.abc import AbstractTokenProvider  # noqa: E402
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType  # noqa: E402
from aiokafka.errors import KafkaError  # noqa: E402
from aiokafka.helpers import create_ssl_context  # noqa: E402

CLIENT = "aiokafka " + aiokafka.__version__
TIMEOUT = 30


def _codes(resp) -> list[int]:
    return [entry[1] for entry in resp.topic_errors] if hasattr(resp, "topic_errors") else \
        [entry[1] for entry in resp.topic_error_codes]


def _default_topic(name: str) -> NewTopic:
    # aiokafka's NewTopic refuses -1 without an assignment; KIP-464's defaults are the broker's business,
    # so the test sets them after construction and aiokafka sends -1 as it is.
    t = NewTopic(name, 1, 1)
    t.num_partitions, t.replication_factor = -1, -1
    return t


async def _administer() -> None:
    async with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        admin = AIOKafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000)
        await admin.start()
        try:
            resp = await admin.create_topics([NewTopic("aio-explicit", 3, 2, topic_configs={"retention.ms": "1000"}),
                                              _default_topic("aio-default")])
            assert _codes(resp) == [0, 0]
            topics = c.topics()
            assert (len(topics["aio-explicit"].replicas), topics["aio-explicit"].replication_factor) == (3, 2)
            assert (len(topics["aio-default"].replicas), topics["aio-default"].replication_factor) == (2, 2)
            assert {"aio-explicit", "aio-default", "__consumer_offsets"} <= set(await admin.list_topics())
            [described] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-explicit")])
            entries = {e[0]: e[1] for e in described.resources[0][4]}
            assert entries["retention.ms"] == "1000" and entries["segment.ms"] == "604800000"
            await admin.create_partitions({"aio-explicit": NewPartitions(5)})
            assert len(c.topics()["aio-explicit"].replicas) == 5
            assert _codes(await admin.create_topics([NewTopic("aio-explicit", 1, 1)])) == [36]
            assert _codes(await admin.create_topics([NewTopic("aio-bad", 1, 9)])) == [38]
            assert _codes(await admin.delete_topics(["__consumer_offsets"])) == [17]
            assert _codes(await admin.delete_topics(["aio-default"])) == [0]
            assert "aio-default" not in await admin.list_topics()
        finally:
            await admin.close()
            record(CLIENT, c)


async def _unauthorized() -> None:
    async with Cluster(brokers=2, users=USERS, acls=ACLS, system_topic_partitions=2) as c:
        c.create_topic("secret", 1, 1)
        admin = AIOKafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=10000,
                                    security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                    sasl_plain_username="alice", sasl_plain_password="alice-pw")
        await admin.start()
        try:
            assert "secret" in await admin.list_topics()
            assert _codes(await admin.create_topics([NewTopic("forbidden", 1, 1)])) == [29]
            assert _codes(await admin.delete_topics(["secret"])) == [29]
            assert "forbidden" not in c.topics() and "secret" in c.topics()
        finally:
            await admin.close()
            record(CLIENT + " (SASL PLAIN)", c)


def test_administer():
    asyncio.run(asyncio.wait_for(_administer(), TIMEOUT))


def test_unauthorized_under_sasl_plain():
    asyncio.run(asyncio.wait_for(_unauthorized(), TIMEOUT))


class _UnsecuredToken(AbstractTokenProvider):
    async def token(self) -> str:
        return unsecured_token(AUTH_USER)


def _auth_config(broker, mechanism: str, password: str = AUTH_PASSWORD) -> dict:
    config = broker.kafka_python_style(mechanism, password, _UnsecuredToken())
    if broker.tls:
        config["ssl_context"] = create_ssl_context(cafile=broker.ca)  # checks host names
    return config


async def _list_as_carol(broker, mechanism: str, password: str = AUTH_PASSWORD) -> set:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=5000,
                                **_auth_config(broker, mechanism, password))
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


@pytest.mark.parametrize("mechanism", AUTH_MECHANISMS)
def test_authenticates(auth_broker, mechanism):
    listed = asyncio.run(asyncio.wait_for(_list_as_carol(auth_broker, mechanism), TIMEOUT))
    assert AUTH_TOPIC in listed and HIDDEN_TOPIC not in listed  # logged in as carol, who sees one topic


def test_wrong_password_is_refused(auth_broker, caplog):
    with pytest.raises(KafkaError, match="Unable to bootstrap"):
        asyncio.run(asyncio.wait_for(_list_as_carol(auth_broker, "SCRAM-SHA-512", "wrong"), TIMEOUT))
    assert "SaslAuthenticationFailed" in caplog.text and "wrong password for user 'carol'" in caplog.text


async def _as_certificate_holder(bootstrap: str, ssl_context) -> tuple[set, list[int], list[int]]:
    """Over SSL with ``ssl_context``'s client certificate: the topics seen, then creating one that alice's
    ACLs allow and one they do not."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, security_protocol="SSL",
                                ssl_context=ssl_context)
    await admin.start()
    try:
        seen = set(await admin.list_topics())
        return seen, _codes(await admin.create_topics([NewTopic("alice-new", 1, 1)])), \
            _codes(await admin.create_topics([NewTopic("other", 1, 1)]))
    finally:
        await admin.close()


def test_mutual_tls_client_certificate_is_the_principal(mtls_cluster, test_certs):
    alice = test_certs.clients["alice"]
    context = create_ssl_context(cafile=str(test_certs.ca), certfile=str(alice.cert), keyfile=str(alice.key))
    try:
        seen, allowed, refused = asyncio.run(asyncio.wait_for(
            _as_certificate_holder(mtls_cluster.bootstrap, context), TIMEOUT))
    finally:
        record(CLIENT + " (mutual TLS)", mtls_cluster)
    assert seen == {"alice-seen"}  # ACLs name alice's certificate subject: "hidden" is not hers
    assert (allowed, refused) == ([0], [29])  # TOPIC_AUTHORIZATION_FAILED outside alice-*
    assert "alice-new" in mtls_cluster.topics() and "other" not in mtls_cluster.topics()


@pytest.mark.parametrize("who", ["no certificate", "another CA"])
def test_mutual_tls_refuses_other_clients(mtls_cluster, test_certs, stranger_client_cert, who, caplog):
    pair = {"no certificate": None, "another CA": stranger_client_cert}[who]
    context = create_ssl_context(cafile=str(test_certs.ca), certfile=pair and str(pair.cert),
                                 keyfile=pair and str(pair.key))
    with pytest.raises(KafkaError, match="Unable to bootstrap"):
        asyncio.run(asyncio.wait_for(_as_certificate_holder(mtls_cluster.bootstrap, context), TIMEOUT))
    assert mtls_cluster.requests_served() == {}  # not one request got past the handshake
    if sys.version_info >= (3, 11):  # where the broker sees (and logs) the refused handshake
        assert wait_for_log(caplog, "TLS handshake refused") >= 1, caplog.text  # the broker's thread logs it
