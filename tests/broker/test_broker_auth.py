"""SASL PLAIN (handshake v0 with a bare token, v1 with SaslAuthenticate) and ACLs per principal.
SCRAM, OAUTHBEARER and KIP-368: test_broker_sasl.py."""

from __future__ import annotations

import struct

import pytest
from broker_wire import Wire, authenticated

import kcodec
from kcodec_broker import Acl, Cluster
from kcodec.errors import ErrorCode
from kcodec.messages import (ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeAclsRequest,
                             DescribeConfigsRequest, DescribeTopicPartitionsRequest,
                             IncrementalAlterConfigsRequest, ListTopicsRequest,
                             MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "eve": "eve-secret"}
ACLS = ["alice:Describe:topic:team-*", "alice:Create:topic:team-*", "alice:Delete:topic:team-a",
        Acl("alice", "DescribeConfigs", "topic", "team-a"), "eve:Describe:topic:public"]


@pytest.fixture
def secured():
    with Cluster(brokers=2, users=USERS, acls=ACLS, super_users=["admin"], system_topic_partitions=1) as c:
        for name in ("team-a", "team-b", "secret", "public"):
            c.create_topic(name, 1, 1)
        yield c


@pytest.mark.parametrize("version", range(0, 3))
def test_sasl_authenticate_every_version(secured, version):
    with authenticated(secured, "alice", "alice-secret", version) as w:
        names = [t.name for t in w.call(ListTopicsRequest(list_internal=True), 1).topics]
    assert names == ["team-a", "team-b"]  # KIP-142: only what alice may Describe


def test_sasl_handshake_v0_then_a_bare_token(secured):
    with Wire(secured.addresses[1]) as w:
        assert w.call(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        token = b"\0eve\0eve-secret"
        w.send(struct.pack(">i", len(token)) + token)
        assert w.read_frame() == b"\0\0\0\0"  # an empty server token
        names = [t.name for t in w.call(ListTopicsRequest(), 0).topics]
    assert names == ["public"]


def test_wrong_password_unknown_mechanism_and_requests_before_auth_close(secured):
    with Wire(secured.addresses[0]) as w:
        assert w.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code == 0
        w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 1)
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and w.closed_by_peer()
    with Wire(secured.addresses[0]) as w:
        r = w.call(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert r.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
        assert w.closed_by_peer()
    with Wire(secured.addresses[0]) as w:
        w.send(kcodec.encode_request(MetadataRequest(topics=None), 9, correlation_id=1))
        assert w.closed_by_peer()
    with Wire(secured.addresses[0]) as w:
        r = w.call(SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 1)  # no handshake first
        assert r.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_acls_per_principal_on_every_admin_api(secured):
    CT = CreateTopicsRequest.CreatableTopic
    with authenticated(secured, "alice", "alice-secret") as w:
        created = w.call(CreateTopicsRequest(topics=[CT(name="team-c", num_partitions=1, replication_factor=1),
                                                     CT(name="other", num_partitions=1, replication_factor=1)]), 7).topics
        assert [r.error_code for r in created] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
        meta = w.call(MetadataRequest(topics=None), 12).topics
        assert sorted(t.name for t in meta) == ["team-a", "team-b", "team-c"]
        named = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="secret")]), 12).topics
        assert named[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        R = DescribeConfigsRequest.DescribeConfigsResource
        configs = w.call(DescribeConfigsRequest(resources=[R(resource_type=2, resource_name="team-a"),
                                                           R(resource_type=2, resource_name="team-b"),
                                                           R(resource_type=4, resource_name="1")]), 4).results
        assert [r.error_code for r in configs] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                   ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        A = IncrementalAlterConfigsRequest.AlterConfigsResource
        alter = w.call(IncrementalAlterConfigsRequest(resources=[A(resource_type=2, resource_name="team-a", configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="retention.ms", config_operation=0, value="5")])]), 1)
        assert alter.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        deleted = w.call(DeleteTopicsRequest(topic_names=["team-a", "team-b", "secret"]), 5).responses
        assert [r.error_code for r in deleted] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                   ErrorCode.TOPIC_AUTHORIZATION_FAILED]
        ops = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="team-b")],
                                     include_topic_authorized_operations=True), 10).topics[0]
        assert ops.topic_authorized_operations == (1 << 5) | (1 << 8)  # Create, Describe
        D = DescribeTopicPartitionsRequest
        every = w.call(D(topics=[]), 0).topics
        assert [t.name for t in every] == ["team-b", "team-c"]  # all topics: only what alice may see
        named = w.call(D(topics=[D.TopicRequest(name="secret"), D.TopicRequest(name="team-b")]), 0).topics
        assert [(t.name, t.error_code) for t in named] == [("team-b", 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
        assert w.call(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                          permission_type=1), 3).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with authenticated(secured, "admin", "admin-secret") as w:  # a super user
        acls = w.call(DescribeAclsRequest(resource_type_filter=2, resource_name_filter="team-a", pattern_type_filter=2,
                                          principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
        assert acls.error_code == 0
        described = {(r.resource_name, r.pattern_type, a.principal, a.operation) for r in acls.resources for a in r.acls}
        assert described == {("team-", 4, "User:alice", 8), ("team-", 4, "User:alice", 5), ("team-a", 3, "User:alice", 6),
                             ("team-a", 3, "User:alice", 10)}
        assert len(w.call(ListTopicsRequest(list_internal=True), 0).topics) == 6  # 2 system + 4
        assert [t.name for t in w.call(ListTopicsRequest(list_internal=False), 1).topics] == [
            "public", "secret", "team-b", "team-c"]


def test_acl_text_form_and_its_errors():
    assert Acl.parse("bob:Create:cluster") == Acl("User:bob", "Create", "cluster", "kafka-cluster")
    assert Acl.parse("bob:Read:topic:logs-*").matches("User:bob", "Describe", "topic", "logs-1")  # Read implies Describe
    assert Acl.parse("bob:Read:group:app-*").matches("User:bob", "Describe", "group", "app-1")
    for bad in ("bob:Fly:topic:x", "bob:Read:queue:x", "bob:Read:topic", "bob:Read:group"):
        with pytest.raises(ValueError):
            Acl.parse(bad)
