"""CreateAcls and DeleteAcls over the wire: Kafka's checks and refusals, DENY and host ACLs, the filters,
and the created ACLs kept across restarts."""

from __future__ import annotations

import json
import os

import pytest
from broker_wire import Wire, authenticated, start_cli

from kcodec_broker import Acl, Cluster
from kcodec_broker.acl import Authorizer
from kcodec_broker.context import java_host_address
from kcodec.errors import ErrorCode
from kcodec.messages import (ApiVersionsRequest, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest,
                             MetadataRequest)

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}
TOPIC, CLUSTER, DELEGATION_TOKEN = 2, 4, 6
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
READ, DESCRIBE, ALTER, ALL = 3, 8, 7, 2
DENY, ALLOW = 2, 3
Creation = CreateAclsRequest.AclCreation
Filter = DeleteAclsRequest.DeleteAclsFilter


def creation(name: str, principal: str = "User:bob", operation: int = DESCRIBE, pattern: int = LITERAL,
             resource_type: int = TOPIC, permission: int = ALLOW, host: str = "*") -> Creation:
    return Creation(resource_type=resource_type, resource_name=name, resource_pattern_type=pattern,
                    principal=principal, host=host, operation=operation, permission_type=permission)


def every(name=None, pattern=ANY, resource_type=ANY, principal=None, operation=ANY, permission=ANY) -> Filter:
    return Filter(resource_type_filter=resource_type, resource_name_filter=name, pattern_type_filter=pattern,
                  principal_filter=principal, host_filter=None, operation=operation, permission_type=permission)


def described(w: Wire, version: int = 3) -> set[tuple]:
    everything = DescribeAclsRequest(resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                                     principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)
    r = w.call(everything, version)
    assert r.error_code == 0, r.error_message
    return {(res.resource_type, res.resource_name, res.pattern_type, a.principal, a.host, a.operation,
             a.permission_type) for res in r.resources for a in res.acls}


def sees(cluster: Cluster, user: str, topic: str) -> bool:
    with authenticated(cluster, user, USERS[user]) as w:
        r = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name=topic)], allow_auto_topic_creation=False), 12)
    assert r.topics[0].error_code in (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return r.topics[0].error_code == 0


@pytest.fixture
def secured():
    with Cluster(users=USERS, acls=["alice:Describe:topic:*"], super_users=["admin"], system_topic_partitions=1) as c:
        for name in ("orders", "order-lines", "secret"):
            c.create_topic(name, 1, 1)
        yield c


@pytest.mark.parametrize("version", range(4))
def test_create_enforce_describe_delete_every_version(secured, version):
    assert not sees(secured, "bob", "orders")
    with authenticated(secured, "admin", USERS["admin"]) as w:
        created = w.call(CreateAclsRequest(creations=[creation("orders")]), version).results
        assert [(r.error_code, r.error_message) for r in created] == [(0, "")]  # Kafka: empty, not null
        assert (TOPIC, "orders", LITERAL, "User:bob", "*", DESCRIBE, ALLOW) in described(w)
    assert sees(secured, "bob", "orders") and not sees(secured, "bob", "secret")
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(DeleteAclsRequest(filters=[every("orders", pattern=LITERAL, principal="User:bob")]), version)
        [result] = r.filter_results
        assert result.error_code == 0
        assert [(m.resource_type, m.resource_name, m.principal, m.host, m.operation, m.permission_type, m.error_code)
                for m in result.matching_acls] == [(TOPIC, "orders", "User:bob", "*", DESCRIBE, ALLOW, 0)]
        if version >= 1:
            assert result.matching_acls[0].pattern_type == LITERAL
        assert not any(a[3] == "User:bob" for a in described(w))
    assert not sees(secured, "bob", "orders")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_prefixed_creation(secured, version):
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(CreateAclsRequest(creations=[creation("order", pattern=PREFIXED)]), version)
        assert r.results[0].error_code == 0
        assert (TOPIC, "order", PREFIXED, "User:bob", "*", DESCRIBE, ALLOW) in described(w)
    assert sees(secured, "bob", "orders") and sees(secured, "bob", "order-lines") and not sees(secured, "bob", "secret")


def test_alter_on_the_cluster_is_needed(secured):
    with authenticated(secured, "alice", USERS["alice"]) as w:
        r = w.call(CreateAclsRequest(creations=[creation("orders"), creation("secret")]), 3)
        assert [r.error_code for r in r.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
        d = w.call(DeleteAclsRequest(filters=[every(), every("orders")]), 3)
        assert [(f.error_code, f.matching_acls) for f in d.filter_results] == [
            (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])] * 2
    with authenticated(secured, "admin", USERS["admin"]) as w:
        alter = creation("kafka-cluster", "User:alice", ALTER, resource_type=CLUSTER)
        r = w.call(CreateAclsRequest(creations=[alter]), 3)
        assert r.results[0].error_code == 0
    with authenticated(secured, "alice", USERS["alice"]) as w:  # Alter on the cluster: she may now
        assert w.call(CreateAclsRequest(creations=[creation("orders")]), 3).results[0].error_code == 0
        d = w.call(DeleteAclsRequest(filters=[every("orders", principal="User:bob")]), 3)
        assert [m.resource_name for m in d.filter_results[0].matching_acls] == ["orders"]


@pytest.mark.parametrize("version", range(4))
def test_without_an_authorizer_security_is_disabled(cluster, version):
    with Wire(cluster.addresses[0]) as w:
        r = w.call(CreateAclsRequest(creations=[creation("orders"), creation("x")]), version)
        assert [(c.error_code, c.error_message) for c in r.results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")] * 2
        d = w.call(DeleteAclsRequest(filters=[every(pattern=LITERAL)]), version)
        assert [(f.error_code, f.error_message, f.matching_acls) for f in d.filter_results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.", [])]
        described = w.call(DescribeAclsRequest(resource_type_filter=ANY, pattern_type_filter=LITERAL, operation=ANY,
                                               permission_type=ANY), 3)
        assert (described.error_code, described.error_message) == (ErrorCode.SECURITY_DISABLED,
                                                                   "No Authorizer is configured on the broker")


def test_each_creation_is_checked_as_kafka_checks_it(secured):
    refused = {
        "cluster named otherwise": (creation("my-cluster", resource_type=CLUSTER),
                                    "The only valid name for the CLUSTER resource is kafka-cluster"),
        "empty name": (creation(""), "Invalid empty resource name"),
        "unknown resource type": (creation("x", resource_type=99), "Invalid resourceType UNKNOWN"),
        "unknown pattern type": (creation("x", pattern=9), "Invalid patternType UNKNOWN"),
        "unknown operation": (creation("x", operation=99), "Invalid operation UNKNOWN"),
        "unknown permission": (creation("x", permission=9), "Invalid permissionType UNKNOWN"),
        "principal without a type": (creation("x", principal="bob"), "Could not parse principal from `bob` (no colon "
                                     "is present separating the principal type from the principal name)"),
    }
    good = [creation("orders"), creation("tok", operation=DESCRIBE, resource_type=DELEGATION_TOKEN),
            creation("kafka-cluster", "Group:ops", ALL, resource_type=CLUSTER, permission=DENY, host="10.0.0.1")]
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(CreateAclsRequest(creations=[c for c, _ in refused.values()] + good), 3)
        assert [(c.error_code, c.error_message) for c in r.results] == [
            (ErrorCode.INVALID_REQUEST, message) for _, message in refused.values()] + [(0, "")] * 3
        assert described(w) == {(TOPIC, "*", LITERAL, "User:alice", "*", DESCRIBE, ALLOW),
                                (TOPIC, "orders", LITERAL, "User:bob", "*", DESCRIBE, ALLOW),
                                (DELEGATION_TOKEN, "tok", LITERAL, "User:bob", "*", DESCRIBE, ALLOW),
                                (CLUSTER, "kafka-cluster", LITERAL, "Group:ops", "10.0.0.1", ALL, DENY)}
        again = w.call(CreateAclsRequest(creations=[creation("orders"), creation("orders")]), 3)  # already in force
        assert [c.error_code for c in again.results] == [0, 0] and len(described(w)) == 4


@pytest.mark.parametrize("field, value", [("resource_type", ANY), ("resource_pattern_type", ANY),
                                          ("resource_pattern_type", MATCH), ("operation", ANY),
                                          ("permission_type", ANY)])
def test_any_or_match_in_a_creation_fails_the_whole_request(secured, field, value):
    # Kafka cannot make an ACL binding of it: IllegalArgumentException, every creation UNKNOWN_SERVER_ERROR
    bad = creation("x")
    setattr(bad, field, value)
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(CreateAclsRequest(creations=[creation("orders"), bad]), 3)
        assert [(c.error_code, c.error_message) for c in r.results] == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2
        assert len(described(w)) == 1  # nothing created


@pytest.mark.parametrize("request_", [
    CreateAclsRequest(creations=[creation("x", resource_type=0)]),
    CreateAclsRequest(creations=[creation("x", operation=0)]),
    DeleteAclsRequest(filters=[every(operation=0)]),
    DeleteAclsRequest(filters=[every(pattern=9)]),
    DeleteAclsRequest(filters=[every(resource_type=42)]),
    DescribeAclsRequest(resource_type_filter=ANY, pattern_type_filter=ANY, operation=0, permission_type=ANY),
], ids=["create resource type 0", "create operation 0", "delete operation 0", "delete pattern 9",
        "delete resource type 42", "describe operation 0"])
def test_unknown_elements_close_the_connection(secured, request_):
    # Kafka refuses them while it parses the request (IllegalArgumentException): no answer, the connection closes
    with authenticated(secured, "admin", USERS["admin"]) as w:
        w.request(request_, 3)
        assert w.closed_by_peer()
    with authenticated(secured, "admin", USERS["admin"]) as w:  # the broker serves on
        assert len(described(w)) == 1


def test_deny_overrides_allow(secured):
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(CreateAclsRequest(creations=[
            creation("*", operation=READ),                               # Read implies Describe, on every topic
            creation("secret", operation=DESCRIBE, permission=DENY),     # but not on secret
            creation("order", "User:*", READ, PREFIXED, permission=DENY),  # a DENY of Read is not one of Describe
            creation("secret", "User:alice", ALL, permission=DENY),      # ALL denies every operation
        ]), 3)
        assert [c.error_code for c in r.results] == [0] * 4
        assert (TOPIC, "secret", LITERAL, "User:bob", "*", DESCRIBE, DENY) in described(w)
    assert sees(secured, "bob", "orders") and not sees(secured, "bob", "secret")
    authorizer = secured.runtime.authorizer
    assert not authorizer.allowed("User:bob", "Read", "topic", "orders", "127.0.0.1")
    assert authorizer.allowed("User:bob", "Read", "topic", "other", "127.0.0.1")
    assert sees(secured, "alice", "orders") and not sees(secured, "alice", "secret")
    assert authorizer.allowed("User:admin", "Read", "topic", "orders", "127.0.0.1")  # super users are never denied
    with authenticated(secured, "bob", USERS["bob"]) as w:
        ops = w.call(MetadataRequest(topics=[MetadataRequest.Topic(name="orders")],
                                     include_topic_authorized_operations=True), 10).topics[0]
        assert ops.topic_authorized_operations == 1 << DESCRIBE  # Read denied by the prefixed DENY


def test_host_acls_apply_to_clients_from_that_address(secured):
    with authenticated(secured, "admin", USERS["admin"]) as w:
        r = w.call(CreateAclsRequest(creations=[creation("orders", host="127.0.0.1"),
                                                creation("secret", host="10.1.2.3")]), 3)
        assert [c.error_code for c in r.results] == [0, 0]
    assert sees(secured, "bob", "orders") and not sees(secured, "bob", "secret")


def test_ipv6_hosts_as_java_writes_them():
    assert java_host_address("::1") == "0:0:0:0:0:0:0:1" and java_host_address("127.0.0.1") == "127.0.0.1"
    assert java_host_address("fe80::1:abcd%eth0") == "fe80:0:0:0:0:0:1:abcd%eth0"


def test_delete_filters_as_kafka_matches_them(secured):
    acls = [creation("orders"), creation("order", pattern=PREFIXED), creation("*"), creation("orders", operation=READ),
            creation("other")]
    with authenticated(secured, "admin", USERS["admin"]) as w:
        assert [c.error_code for c in w.call(CreateAclsRequest(creations=acls), 3).results] == [0] * 5

        def delete(*filters: Filter) -> list[list[tuple]]:
            r = w.call(DeleteAclsRequest(filters=list(filters)), 3)
            assert all(f.error_code == 0 for f in r.filter_results)
            return [sorted((m.resource_name, m.pattern_type, m.operation) for m in f.matching_acls)
                    for f in r.filter_results]
        assert delete(every("ord", pattern=LITERAL)) == [[]]  # LITERAL: the name exactly
        # MATCH: every ACL that applies to the name (literal, *, prefixes); a second filter sees them too
        assert delete(every("orders", pattern=MATCH, principal="User:bob", operation=DESCRIBE),
                      every("order", pattern=PREFIXED)) == [
            [("*", LITERAL, DESCRIBE), ("order", PREFIXED, DESCRIBE), ("orders", LITERAL, DESCRIBE)],
            [("order", PREFIXED, DESCRIBE)]]
        assert delete(every(principal="User:bob", operation=READ)) == [[("orders", LITERAL, READ)]]
        assert delete(every("other", pattern=ANY, permission=DENY)) == [[]]
        assert delete(every("other", pattern=ANY, permission=ALLOW)) == [[("other", LITERAL, DESCRIBE)]]
        assert {a[3] for a in described(w)} == {"User:alice"}


def test_created_acls_survive_a_restart_and_start_up_acls_still_apply(tmp_path):
    state = tmp_path / "state.json"

    def start() -> Cluster:
        return Cluster(users=USERS, acls=["alice:Describe:topic:*"], super_users=["admin"], state_file=state,
                       system_topic_partitions=1)
    with start() as c:
        c.create_topic("orders", 1, 1)
        with authenticated(c, "admin", USERS["admin"]) as w:
            assert w.call(CreateAclsRequest(creations=[creation("orders"), creation("x", permission=DENY)]),
                          3).results[0].error_code == 0
            gone = w.call(DeleteAclsRequest(filters=[every("x"), every("*", principal="User:alice")]), 3)
            assert [len(f.matching_acls) for f in gone.filter_results] == [1, 1]
        assert not sees(c, "alice", "orders")  # the start-up ACL is deleted while this cluster runs
    saved = json.loads(state.read_text())["acls"]
    assert saved == [Acl("User:bob", "Describe", "topic", "orders").to_json()]  # only what CreateAcls added
    with start() as c:
        assert sees(c, "bob", "orders") and sees(c, "alice", "orders")
        with authenticated(c, "admin", USERS["admin"]) as w:
            assert {a[3] for a in described(w)} == {"User:alice", "User:bob"}
    with Cluster(users=USERS, state_file=state, system_topic_partitions=1) as c:  # no authorizer: kept, unused
        c.create_topic("more", 1, 1)  # a save
        assert c.acls() == [] and sees(c, "alice", "more")  # none in force: everything allowed
    assert json.loads(state.read_text())["acls"] == saved


def test_acl_patterns_principals_and_decisions():
    assert Acl("bob", "Read", "topic", "logs-*").pattern == "prefixed"
    literal_star = Acl("bob", "Read", "topic", "logs-*", pattern="literal")  # CreateAcls may name a literal logs-*
    assert literal_star.name == "logs-*" and not literal_star.matches("User:bob", "Read", "topic", "logs-1")
    assert Acl("Group:ops", "Read").principal == "Group:ops" and Acl("CN=a,O=b", "Read").principal == "User:CN=a,O=b"
    deny = Acl("bob", "Read", "topic", "*", permission="Deny")
    assert deny.matches("User:bob", "Read", "topic", "t") and not deny.matches("User:bob", "Describe", "topic", "t")
    assert not Acl("bob", "Read", host="10.0.0.1").matches("User:bob", "Read", "topic", "t", "127.0.0.1")
    with pytest.raises(ValueError):
        Acl("bob", "Read", permission="Maybe")
    with pytest.raises(ValueError):
        Acl("bob", "Read", "topic", "logs", pattern="prefixed")
    assert not Authorizer([deny, "bob:Read:topic:*"]).allowed("User:bob", "Read", "topic", "t")
    assert Authorizer([deny, "bob:Read:topic:*"]).allowed("User:bob", "Describe", "topic", "t")


def test_allow_everyone_if_no_acl_found():
    """Kafka's allow.everyone.if.no.acl.found: a resource no ACL is about is open to everyone; one that any
    ACL is about (for whomever, whatever operation) is decided by the ACLs alone."""
    open_ = Authorizer(["alice:Read:topic:orders", "bob:Write:topic:logs-*"], allow_if_no_acl=True)
    assert open_.allowed("User:carol", "Write", "topic", "payments") and open_.allowed("User:ANONYMOUS", "Alter", "cluster")
    assert open_.allowed("User:carol", "Read", "group", "g")
    assert open_.allowed("User:alice", "Read", "topic", "orders") and not open_.allowed("User:carol", "Read", "topic", "orders")
    assert not open_.allowed("User:alice", "Write", "topic", "orders")
    assert not open_.allowed("User:carol", "Read", "topic", "logs-1") and open_.allowed("User:carol", "Read", "topic", "log")
    closed = Authorizer(["alice:Read:topic:orders"])
    assert not closed.allowed("User:carol", "Write", "topic", "payments")


def test_allow_everyone_if_no_acl_found_over_the_wire():
    """An open cluster that CreateAcls then closes, resource by resource (kafka-go's CI runs Kafka so)."""
    with Cluster(acls=[], allow_everyone_if_no_acl_found=True, system_topic_partitions=1) as c:
        c.create_topic("t", 1, 1)
        with Wire(c.addresses[0]) as w:
            binding = CreateAclsRequest.AclCreation(
                resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:alice", host="*",
                operation=3, permission_type=3)  # alice may read t
            assert w.call(CreateAclsRequest(creations=[binding]), 3).results[0].error_code == 0
            topics = w.call(MetadataRequest(topics=None), 12).topics
            # ANONYMOUS may Describe every topic but t now, which ACLs decide (alice's Read, not ANONYMOUS)
            assert [x.name for x in topics if x.error_code == 0] == ["__consumer_offsets", "__transaction_state"]


def test_advertised_in_api_versions(cluster):
    with Wire(cluster.addresses[0]) as w:
        r = w.call(ApiVersionsRequest(), 0)
    versions = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert versions[CreateAclsRequest.API_KEY] == (0, 3) and versions[DeleteAclsRequest.API_KEY] == (0, 3)


def test_cli_authorizer_without_acls(tmp_path):
    # --authorizer: authorization on with no --acl; the super user creates the first ACLs, kept in --state
    proc, line = start_cli("--user", "admin:admin-pw", "--user", "bob:bob-pw", "--super-user", "admin",
                           "--authorizer", "--state", str(tmp_path / "s.json"), env=dict(os.environ))
    try:
        host, port = line.split("bootstrap ")[1].split(",")[0].split(":")

        class At:
            addresses = [(host, int(port))]
        with authenticated(At, "admin", "admin-pw") as w:
            assert described(w) == set()
            assert w.call(CreateAclsRequest(creations=[creation("orders")]), 3).results[0].error_code == 0
        with authenticated(At, "bob", "bob-pw") as w:
            assert w.call(CreateAclsRequest(creations=[creation("x")]), 3).results[0].error_code == \
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert json.loads((tmp_path / "s.json").read_text())["acls"][0]["resource"] == "orders"
