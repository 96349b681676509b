"""Client quotas over the wire (KIP-546): AlterClientQuotas and DescribeClientQuotas with Kafka's checks,
filters and messages (ClientQuotaControlManager, ClientQuotasImage), their ACLs, and the state file."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from broker_wire import Wire, authenticated

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

Q = AlterClientQuotasRequest
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def alter(w: Wire, entity: dict[str, Optional[str]], ops: dict[str, Optional[float]], validate_only: bool = False,
          version: int = 1) -> tuple[int, Optional[str]]:
    r = w.call(Q(validate_only=validate_only, entries=[Q.EntryData(
        entity=[Q.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
        ops=[Q.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()])]), version)
    [entry] = r.entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == list(entity.items())
    return entry.error_code, entry.error_message


def describe(w: Wire, *components: tuple[str, int, Optional[str]], strict: bool = False, version: int = 1) -> Any:
    return w.call(DescribeClientQuotasRequest(strict=strict, components=[
        DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=s) for t, m, s in components]),
        version)


def entries(resp: Any) -> dict[tuple, dict[str, float]]:
    assert resp.error_code == 0, resp
    return {tuple((e.entity_type, e.entity_name) for e in x.entity): {v.key: v.value for v in x.values}
            for x in resp.entries}


@pytest.mark.parametrize("version", [0, 1])
def test_alter_and_describe(version):
    with Cluster(system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, {"user": "alice"}, {"producer_byte_rate": 1024, "request_percentage": 12.5}, version=version) == (0, None)
        assert alter(w, {"user": "alice", "client-id": "app"}, {"consumer_byte_rate": 2048}, version=version) == (0, None)
        assert alter(w, {"client-id": None}, {"producer_byte_rate": 100}, version=version) == (0, None)  # the default
        assert alter(w, {"ip": "10.0.0.1"}, {"connection_creation_rate": 5}, version=version) == (0, None)
        assert alter(w, {"user": "bob"}, {"producer_byte_rate": 1}, validate_only=True, version=version) == (0, None)
        alice, both = (("user", "alice"),), (("client-id", "app"), ("user", "alice"))
        assert entries(describe(w, ("user", EXACT, "alice"), version=version)) == {
            alice: {"producer_byte_rate": 1024.0, "request_percentage": 12.5}, both: {"consumer_byte_rate": 2048.0}}
        assert entries(describe(w, ("user", EXACT, "alice"), strict=True, version=version)) == {
            alice: {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}
        assert set(entries(describe(w, ("client-id", SPECIFIED, None), version=version))) == {both, (("client-id", None),)}
        assert set(entries(describe(w, ("client-id", DEFAULT, None), version=version))) == {(("client-id", None),)}
        assert set(entries(describe(w, version=version))) == {alice, both, (("client-id", None),), (("ip", "10.0.0.1"),)}
        assert alter(w, {"user": "alice"}, {"producer_byte_rate": None, "request_percentage": None}) == (0, None)
        assert alice not in entries(describe(w, ("user", SPECIFIED, None)))  # its last key went: the entity too
        assert not entries(describe(w, ("user", EXACT, "bob")))  # validate_only changed nothing


def test_alter_refusals_have_kafkas_messages():
    with Cluster(system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        bad = E.INVALID_REQUEST
        assert alter(w, {"user": "alice"}, {"no_such_key": 1}) == (bad, "Invalid configuration key no_such_key")
        assert alter(w, {"user": "alice"}, {"producer_byte_rate": 1.5}) == (
            bad, "producer_byte_rate cannot be a fractional value.")  # Kafka 4.4's words, as for the rest
        assert alter(w, {"user": "alice"}, {"connection_creation_rate": 1}) == (
            bad, "Invalid configuration key connection_creation_rate")  # an ip's key
        assert alter(w, {"ip": "1.2.3.4", "user": "a"}, {"connection_creation_rate": 1})[0] == bad
        assert alter(w, {"ip": "not an address"}, {"connection_creation_rate": 1}) == (
            bad, "not an address is not a valid IP or resolvable host.")
        assert alter(w, {"group": "g"}, {"producer_byte_rate": 1}) == (bad, "Unhandled client quota entity type: group")
        assert alter(w, {"user": ""}, {"producer_byte_rate": 1}) == (bad, "Empty user not supported")
        assert alter(w, {}, {"producer_byte_rate": 1}) == (bad, "Invalid empty client quota entity")
        twice = w.call(Q(entries=[Q.EntryData(entity=[Q.EntityData(entity_type="user", entity_name="a")], ops=[
            Q.OpData(key="producer_byte_rate", value=1.0), Q.OpData(key="producer_byte_rate", value=2.0)])]), 1)
        assert (twice.entries[0].error_code, twice.entries[0].error_message) == (
            bad, "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})")  # Kafka's, a key twice
        a_type_twice = w.call(Q(validate_only=True, entries=[Q.EntryData(entity=[
            Q.EntityData(entity_type="user", entity_name="a"), Q.EntityData(entity_type="user", entity_name="b")],
            ops=[Q.OpData(key="producer_byte_rate", value=1.0)])]), 1)
        assert a_type_twice.entries[0].error_code == 0  # Kafka reads the entity into a map: user=b
        assert entries(describe(w)) == {}  # nothing of it applied
        r = describe(w, ("user", EXACT, None))
        assert (r.error_code, r.error_message, r.entries) == (
            bad, "Request specified MATCH_TYPE_EXACT, but set match string to null.", None)
        assert describe(w, ("group", SPECIFIED, None)).error_code == E.UNSUPPORTED_VERSION
        assert describe(w, ("user", SPECIFIED, None), ("user", EXACT, "a")).error_code == bad
        assert describe(w, ("ip", SPECIFIED, None), ("user", SPECIFIED, None)).error_code == bad


def test_acls_and_the_state_file(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(users={"admin": "a", "alice": "b"}, acls=["alice:DescribeConfigs:cluster"], super_users=["admin"],
                 state_file=state, system_topic_partitions=1) as c:
        with authenticated(c, "alice", "b") as w:
            code, message = alter(w, {"user": "x"}, {"producer_byte_rate": 1})
            assert (code, message) == (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            assert entries(describe(w)) == {}  # DescribeConfigs is enough to describe
        with authenticated(c, "admin", "a") as w:
            assert alter(w, {"user": "x"}, {"producer_byte_rate": 7}) == (0, None)
    with Cluster(users={"admin": "a"}, super_users=["admin"], acls=[], state_file=state, system_topic_partitions=1) as c:
        with authenticated(c, "admin", "a") as w:
            assert entries(describe(w)) == {(("user", "x"),): {"producer_byte_rate": 7.0}}
