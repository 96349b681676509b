"""CLIENT_METRICS config resources (KIP-714) over the wire: IncrementalAlterConfigs, AlterConfigs,
DescribeConfigs and ListConfigResources, their validation, ACLs and the state file."""

from __future__ import annotations

from typing import Optional

import pytest
from broker_wire import Wire, authenticated
from needs import need_module

from kcodec_broker import AdminError, Cluster
from kcodec_broker.client_metrics import Subscription, validate
from kcodec.errors import ErrorCode as E
from kcodec.messages import (AlterConfigsRequest, DescribeConfigsRequest, DescribeQuorumRequest,
                             IncrementalAlterConfigsRequest, ListConfigResourcesRequest)

CM = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
IAC = IncrementalAlterConfigsRequest


def alter(w: Wire, name: str, ops: list[tuple[str, int, Optional[str]]], validate_only: bool = False,
          version: int = 1) -> tuple[int, Optional[str]]:
    r = w.call(IAC(validate_only=validate_only, resources=[IAC.AlterConfigsResource(
        resource_type=CM, resource_name=name,
        configs=[IAC.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])]), version)
    return r.responses[0].error_code, r.responses[0].error_message


def describe(w: Wire, name: str, keys: Optional[list[str]] = None, version: int = 4):
    r = w.call(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=CM, resource_name=name, configuration_keys=keys)]), version)
    return r.results[0]


def listed(w: Wire, version: int = 1) -> list[str]:
    r = w.call(ListConfigResourcesRequest(resource_types=[CM] if version else []), version)
    assert r.error_code == 0
    return [x.resource_name for x in r.config_resources if x.resource_type == CM]


def test_create_describe_list_change_and_delete_a_subscription():
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert listed(w, 0) == listed(w, 1) == []
        assert alter(w, "sub1", [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000"),
                                 ("match", SET, "client_id=app-.*, client_software_name=librdkafka")]) == (0, None)
        assert listed(w, 0) == listed(w, 1) == ["sub1"]
        d = describe(w, "sub1")
        assert d.error_code == 0
        assert [(e.name, e.value, e.config_source, e.config_type, e.read_only) for e in d.configs] == [
            ("interval.ms", "1000", 7, 3, False),  # 7: CLIENT_METRICS_CONFIG; 3: INT
            ("match", "client_id=app-.*, client_software_name=librdkafka", 7, 7, False),  # 7: LIST
            ("metrics", "org.apache.kafka.producer.", 7, 7, False)]
        assert alter(w, "sub1", [("metrics", APPEND, "org.apache.kafka.consumer.,org.apache.kafka.producer."),
                                 ("match", DELETE, None)]) == (0, None)
        values = {e.name: (e.value, e.config_source) for e in describe(w, "sub1").configs}
        assert values == {"interval.ms": ("1000", 7), "match": ("", 5),  # 5: DEFAULT_CONFIG
                          "metrics": ("org.apache.kafka.producer.,org.apache.kafka.consumer.", 7)}
        assert alter(w, "sub1", [("metrics", SUBTRACT, "org.apache.kafka.producer.")]) == (0, None)
        assert [e.value for e in describe(w, "sub1", ["metrics"]).configs] == ["org.apache.kafka.consumer."]
        assert alter(w, "sub2", [("interval.ms", SET, "200")]) == (0, None)
        assert listed(w) == ["sub1", "sub2"]
        assert alter(w, "sub1", [("metrics", DELETE, None), ("interval.ms", DELETE, None)]) == (0, None)
        assert listed(w) == ["sub2"]  # no configs left: the subscription is gone
        gone = describe(w, "sub1")  # as Kafka: a name without configs describes as the defaults
        assert gone.error_code == 0 and {(e.name, e.value, e.config_source) for e in gone.configs} == {
            ("interval.ms", "300000", 5), ("match", "", 5), ("metrics", "", 5)}


def test_describe_v0_and_synonyms():
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, "s", [("interval.ms", SET, "500")], version=0) == (0, None)
        d0 = describe(w, "s", ["interval.ms", "metrics"], version=0)
        assert [(e.name, e.value, e.is_default) for e in d0.configs] == [("interval.ms", "500", False),
                                                                         ("metrics", "", True)]
        empty = describe(w, "", version=0)
        assert (empty.error_code, empty.error_message) == (E.INVALID_REQUEST,
                                                           "Client metrics subscription name must not be empty")


@pytest.mark.parametrize("ops, code, message", [
    ([("interval.ms", SET, "99")], E.INVALID_REQUEST,
     "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ([("interval.ms", SET, "3600001")], E.INVALID_REQUEST, None),
    ([("interval.ms", SET, "soon")], E.INVALID_CONFIG, None),
    ([("metrics.all", SET, "x")], E.INVALID_REQUEST, "Unknown client metrics configuration: metrics.all"),
    ([("match", SET, "client_name=x")], E.INVALID_CONFIG, "Illegal client matching pattern: client_name=x"),
    ([("match", SET, "client_id")], E.INVALID_CONFIG, "Illegal client matching pattern: client_id"),
    ([("match", SET, "client_id=a=b")], E.INVALID_CONFIG, None),
    ([("match", SET, "client_software_version=1.(")], E.INVALID_CONFIG, None),
    ([("interval.ms", APPEND, "100")], E.INVALID_CONFIG, "Can't APPEND to key interval.ms because its type is not LIST."),
    ([("metrics", SET, "a"), ("metrics", APPEND, "b")], E.INVALID_CONFIG, None),
])
def test_invalid_subscriptions_are_refused_and_change_nothing(ops, code, message):
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        got_code, got_message = alter(w, "bad", ops)
        assert got_code == code and (message is None or got_message == message), got_message
        assert listed(w) == []


def test_empty_name_and_validate_only():
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, "", [("interval.ms", SET, "1000")]) == (E.INVALID_REQUEST, "Subscription name can't be empty")
        assert alter(w, "dry", [("interval.ms", SET, "1000")], validate_only=True) == (0, None)
        assert alter(w, "dry", [("interval.ms", SET, "1")], validate_only=True)[0] == E.INVALID_REQUEST
        assert listed(w) == []


def test_legacy_alter_configs_replaces_every_config():
    ACR = AlterConfigsRequest
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, "s", [("metrics", SET, "a.,b."), ("interval.ms", SET, "1000")]) == (0, None)

        def legacy(configs: dict[str, str]) -> int:
            r = w.call(ACR(resources=[ACR.AlterConfigsResource(resource_type=CM, resource_name="s", configs=[
                ACR.AlterableConfig(name=k, value=v) for k, v in configs.items()])]), 2)
            return r.responses[0].error_code
        assert legacy({"metrics": "c."}) == 0
        assert {e.name: e.value for e in describe(w, "s").configs} == {"interval.ms": "300000", "match": "",
                                                                     "metrics": "c."}
        assert legacy({"interval.ms": "5"}) == E.INVALID_REQUEST and legacy({"nope": "1"}) == E.INVALID_REQUEST
        assert legacy({}) == 0 and listed(w) == []


def test_cluster_acls_guard_client_metrics():
    users = {"alice": "alice-secret", "bob": "bob-secret"}
    with Cluster(brokers=1, users=users, acls=["alice:AlterConfigs:cluster"], system_topic_partitions=1) as c:
        with authenticated(c, "bob", "bob-secret") as w:
            assert alter(w, "s", [("interval.ms", SET, "1000")])[0] == E.CLUSTER_AUTHORIZATION_FAILED
            assert describe(w, "s").error_code == E.CLUSTER_AUTHORIZATION_FAILED
            assert w.call(ListConfigResourcesRequest(), 1).error_code == E.CLUSTER_AUTHORIZATION_FAILED
        with authenticated(c, "alice", "alice-secret") as w:  # AlterConfigs implies DescribeConfigs
            assert alter(w, "s", [("interval.ms", SET, "1000")]) == (0, None)
            assert describe(w, "s").error_code == 0 and listed(w) == ["s"]


def test_subscriptions_survive_a_restart(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(brokers=1, state_file=state, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, "kept", [("metrics", SET, "org.apache.kafka."), ("match", SET, "client_id=x")]) == (0, None)
    with Cluster(brokers=1, state_file=state, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert listed(w) == ["kept"]
        assert {e.name: e.value for e in describe(w, "kept").configs}["match"] == "client_id=x"
        c.set_client_metrics("kept", {})
    with Cluster(brokers=1, state_file=state, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert listed(w) == []


def test_cluster_set_client_metrics_validates():
    with Cluster(brokers=1, system_topic_partitions=1) as c:
        with pytest.raises(AdminError) as e:
            c.set_client_metrics("s", {"interval.ms": "10"})
        assert e.value.code == E.INVALID_REQUEST
        c.set_client_metrics("s", {"interval.ms": "100"})
        assert c.state.client_metrics.names() == ["s"]


def test_each_change_is_a_metadata_record():
    QR = DescribeQuorumRequest
    quorum = QR(topics=[QR.TopicData(topic_name="__cluster_metadata", partitions=[QR.PartitionData(partition_index=0)])])
    with Cluster(brokers=1, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        def watermark() -> int:
            return w.call(quorum, 2).topics[0].partitions[0].high_watermark
        before = watermark()
        assert alter(w, "s", [("interval.ms", SET, "1000")]) == (0, None)
        assert alter(w, "s", [("interval.ms", SET, "1")])[0] == E.INVALID_REQUEST  # refused: no record
        assert watermark() == before + 1


@pytest.mark.parametrize("pattern, matching, other", [
    (r"\p{L}+-\d+", "app-1", "1-1"),              # a Unicode class, as Java's (and RE2/J's), not Python's re
    (r"\Q2.16.0\E", "2.16.0", "2x16x0"),          # quoting
    (r"app\z", "app", "apps"),                     # the end of the input
    (r"(?<name>app)-.+", "app-1", "ap-1"),         # a Java named group
    (r"app-(?i)x", "app-X", "APP-x"),              # a flag inside the pattern
])
def test_match_regexes_take_the_java_syntax_pythons_re_refuses(pattern, matching, other):
    need_module("re2")
    sub = Subscription.of("s", {"metrics": "*", "match": f"client_id={pattern}"})
    assert sub.matches({"client_id": matching}) and not sub.matches({"client_id": other})


@pytest.mark.parametrize("pattern, matching, other", [
    (r"(?!internal).*", "app", "internal-1"),      # lookahead: RE2 refuses it, Python's re takes it (Java has it)
    (r"(a)\1", "aa", "ab"),                        # a backreference
    ("app|app-1", "app-1", "ap"),                  # the whole value, as Java's matches()
])
def test_match_regexes_re2_refuses_are_taken_by_pythons_re(pattern, matching, other):
    sub = Subscription.of("s", {"metrics": "*", "match": f"client_id={pattern}"})
    assert sub.matches({"client_id": matching}) and not sub.matches({"client_id": other})


def test_a_match_regex_neither_engine_takes_is_refused():
    with pytest.raises(AdminError) as refused:  # Java would take \p{Alpha}: a documented difference
        validate("s", {"match": r"client_id=\p{Alpha}+"})
    assert refused.value.code == E.INVALID_CONFIG
