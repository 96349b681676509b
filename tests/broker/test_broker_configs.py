"""A broker's configs: every one of Kafka 4.4's (broker/kcodec_broker/kafka_broker_configs.json) in DescribeConfigs,
the broker's own settings as static ones, the dynamic ones IncrementalAlterConfigs and AlterConfigs change
(per broker and as the cluster's default) with Kafka's sources, synonyms and refusals, their effect on topics,
kept in the state file; a broker's loggers. (tests/kafka/scenarios_configs.py diffs the same against Kafka.)"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from broker_wire import Wire

from kcodec_broker import Cluster
from kcodec_broker.broker_configs import CONFIGS
from kcodec.errors import ErrorCode as E
from kcodec.messages import (AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
                             ProduceRequest)
from kcodec.records import BatchBuilder

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER, TOPIC, LOGGER = 4, 2, 8


def describe(w: Wire, resource_type: int, name: str, keys: Optional[list[str]] = None, version: int = 4,
             more: bool = True) -> Any:
    """With synonyms and documentation, unless ``more`` is False."""
    R = DescribeConfigsRequest
    return w.call(R(resources=[R.DescribeConfigsResource(resource_type=resource_type, resource_name=name,
                                                         configuration_keys=keys)],
                    include_synonyms=more, include_documentation=more), version).results[0]


def entries(w: Wire, name: str = "1", keys: Optional[list[str]] = None, resource_type: int = BROKER) -> dict[str, Any]:
    result = describe(w, resource_type, name, keys)
    assert result.error_code == 0, result
    return {e.name: e for e in result.configs}


def synonyms(e: Any) -> list[tuple[str, Optional[str], int]]:
    return [(s.name, s.value, s.source) for s in e.synonyms]


def alter(w: Wire, name: str, ops: list[tuple[str, int, Optional[str]]], validate_only: bool = False) -> tuple:
    R = IncrementalAlterConfigsRequest
    r = w.call(R(resources=[R.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
        R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=validate_only),
        1).responses[0]
    return r.error_code, r.error_message


def replace(w: Wire, name: str, configs: dict[str, str]) -> tuple:
    R = AlterConfigsRequest
    r = w.call(R(resources=[R.AlterConfigsResource(resource_type=BROKER, resource_name=name, configs=[
        R.AlterableConfig(name=n, value=v) for n, v in configs.items()])]), 2).responses[0]
    return r.error_code, r.error_message


@pytest.fixture
def one():
    with Cluster(num_partitions=3, system_topic_partitions=1) as c:
        yield c


def test_every_kafka_broker_config_with_the_brokers_own_settings(one):
    with Wire(one.addresses[0]) as w:
        got = entries(w)
        v3 = {e.name: e for e in describe(w, BROKER, "1", version=3, more=False).configs}
    assert set(CONFIGS) <= set(got) and len(CONFIGS) > 300
    assert {n: (e.value, e.config_source) for n, e in got.items() if e.config_source == 4} == {
        "node.id": ("1", 4), "broker.id": ("1", 4), "process.roles": ("broker,controller", 4),
        "listeners": (f"PLAINTEXT://127.0.0.1:{one.addresses[0][1]}", 4),
        "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{one.addresses[0][1]}", 4),
        "listener.security.protocol.map": ("PLAINTEXT:PLAINTEXT", 4), "log.dirs": ("memory", 4),
        "num.partitions": ("3", 4), "offsets.topic.replication.factor": ("1", 4),
        "transaction.state.log.replication.factor": ("1", 4), "transaction.state.log.min.isr": ("1", 4),
        "group.initial.rebalance.delay.ms": ("0", 4), "socket.request.max.bytes": ("8388608", 4)}
    assert synonyms(got["num.partitions"]) == [("num.partitions", "3", 4), ("num.partitions", "1", 5)]
    assert synonyms(got["min.insync.replicas"]) == [("min.insync.replicas", "1", 3), ("min.insync.replicas", "1", 5)]
    e = got["message.max.bytes"]  # Kafka's definition: dynamic, an INT, documented
    assert (e.value, e.config_source, e.read_only, e.is_sensitive, e.config_type) == ("1048588", 5, False, False, 3)
    assert e.documentation == CONFIGS["message.max.bytes"]["doc"] and e.documentation
    assert got["ssl.keystore.password"].is_sensitive and got["ssl.keystore.password"].config_type == 9
    assert got["log.retention.ms"].value is None and synonyms(got["log.retention.ms"]) == []  # its default is in hours
    assert v3["message.max.bytes"].synonyms == [] and v3["message.max.bytes"].documentation is None


def test_the_cluster_default_and_other_ids(one):
    with Wire(one.addresses[0]) as w:
        cluster = describe(w, BROKER, "")
        assert [(e.name, e.value, e.config_source, synonyms(e)) for e in cluster.configs] == [
            ("min.insync.replicas", "1", 3, [("min.insync.replicas", "1", 3)])]
        for name, message in [("2", "Unexpected broker id, expected 1 or empty string, but received 2"),
                              ("x", "Broker id must be an integer, but it is: x")]:
            assert (describe(w, BROKER, name).error_code, describe(w, BROKER, name).error_message) == (
                E.INVALID_REQUEST, message)


def test_dynamic_configs_at_both_levels(one):
    with Wire(one.addresses[0]) as w:
        assert alter(w, "", [("message.max.bytes", SET, "3000000"), ("log.retention.ms", SET, "100000")]) == (0, None)
        assert alter(w, "1", [("message.max.bytes", SET, "2000000")]) == (0, None)
        assert alter(w, "", [("log.cleanup.policy", APPEND, "compact")]) == (0, None)
        assert alter(w, "", [("log.retention.bytes", SET, "12345")], validate_only=True) == (0, None)
        got = entries(w, keys=["message.max.bytes", "log.retention.ms", "log.cleanup.policy", "log.retention.bytes"])
        assert (got["message.max.bytes"].value, got["message.max.bytes"].config_source) == ("2000000", 2)
        assert synonyms(got["message.max.bytes"]) == [("message.max.bytes", "2000000", 2),
                                                      ("message.max.bytes", "3000000", 3),
                                                      ("message.max.bytes", "1048588", 5)]
        assert synonyms(got["log.retention.ms"]) == [("log.retention.ms", "100000", 3), ("log.retention.hours", "168", 5)]
        assert got["log.cleanup.policy"].value == "delete,compact"
        assert got["log.retention.bytes"].config_source == 5  # validate only: nothing kept
        assert alter(w, "", [("log.cleanup.policy", SUBTRACT, "delete")]) == (0, None)
        assert entries(w, keys=["log.cleanup.policy"])["log.cleanup.policy"].value == "compact"
        # AlterConfigs replaces a level's configs: the broker's go, the cluster's stay
        assert replace(w, "1", {"log.retention.bytes": "7777"}) == (0, None)
        got = entries(w, keys=["message.max.bytes", "log.retention.bytes"])
        assert (got["message.max.bytes"].value, got["message.max.bytes"].config_source) == ("3000000", 3)
        assert (got["log.retention.bytes"].value, got["log.retention.bytes"].config_source) == ("7777", 2)
        assert [e.name for e in describe(w, BROKER, "").configs] == [
            "log.cleanup.policy", "log.retention.ms", "message.max.bytes", "min.insync.replicas"]


@pytest.mark.parametrize("name,ops,error", [
    ("", [("broker.id", SET, "5")], (E.INVALID_REQUEST, "Cannot update these configs dynamically: [broker.id]")),
    ("1", [("num.partitions", SET, "3")], (E.INVALID_REQUEST, "Cannot update these configs dynamically: [num.partitions]")),
    ("", [("listeners", SET, "PLAINTEXT://:1")], (E.INVALID_REQUEST, "Cannot update these configs at default cluster "
                                                  "level, broker id must be specified: [listeners]")),
    ("1", [("ssl.truststore.password", SET, "pw")], (E.INVALID_REQUEST, "These security configs can be dynamically "
                                                     "updated only per-listener using the listener prefix: "
                                                     "[ssl.truststore.password]")),
    ("1", [("num.io.threads", SET, "abc")], (E.INVALID_REQUEST, "Invalid value abc for configuration num.io.threads: "
                                                                "Not a number of type INT")),
    ("", [("log.retention.bytes", SET, None)], (E.INVALID_REQUEST, "Null value not supported for : log.retention.bytes")),
    ("", [("log.retention.bytes", SET, "1"), ("log.retention.bytes", DELETE, None)],
     (E.INVALID_REQUEST, "Error due to duplicate config keys")),
    ("1", [("min.insync.replicas", SET, "1")], (E.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered "
                                                                  "while ELR is enabled.")),
    ("", [("min.insync.replicas", DELETE, None)], (E.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be "
                                                                     "removed while ELR is enabled.")),
    ("2", [("log.retention.bytes", SET, "1")], (E.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")),
    ("x", [("log.retention.bytes", SET, "1")], (E.INVALID_REQUEST, "Node id must be an integer, but it is: x")),
], ids=["read-only", "read-only-per-broker", "per-broker", "per-listener", "type", "null", "twice", "mir-broker",
        "mir-removed", "other-broker", "no-id"])
def test_refusals_as_kafkas(one, name, ops, error):
    with Wire(one.addresses[0]) as w:
        before = [(e.name, e.value) for e in describe(w, BROKER, "").configs]
        assert alter(w, name, ops) == error
        assert [(e.name, e.value) for e in describe(w, BROKER, "").configs] == before


def test_alter_configs_may_not_drop_the_clusters_min_insync_replicas(one):
    with Wire(one.addresses[0]) as w:
        assert replace(w, "", {"log.retention.bytes": "1"}) == (
            E.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        assert replace(w, "", {"min.insync.replicas": "1", "no.such.config": "x"}) == (0, None)  # unknown: kept
        kept = describe(w, BROKER, "").configs
        assert [(e.name, e.value, e.is_sensitive, e.read_only) for e in kept] == [
            ("min.insync.replicas", "1", False, False), ("no.such.config", None, True, True)]


def test_topics_take_their_broker_configs_dynamic_values(one):
    one.create_topic("t", 1, 1)
    one.create_topic("own", 1, 1, {"max.message.bytes": "5000"})
    batch = BatchBuilder()
    batch.append(b"k", b"v" * 400)
    records = batch.build()
    produce = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name=name, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)]) for name in ("t", "own")])
    with Wire(one.addresses[0]) as w:
        codes = lambda: tuple(p.partition_responses[0].error_code for p in w.call(produce, 9).responses)  # noqa: E731
        assert codes() == (0, 0)  # before the change: a Produce reads the configs in force (handlers/produce.py)
        assert alter(w, "", [("message.max.bytes", SET, "300"), ("log.retention.ms", SET, "100000")]) == (0, None)
        topic = entries(w, "t", ["max.message.bytes", "retention.ms", "segment.ms"], TOPIC)
        assert (topic["max.message.bytes"].value, topic["max.message.bytes"].config_source) == ("300", 3)
        assert synonyms(topic["max.message.bytes"]) == [("message.max.bytes", "300", 3), ("message.max.bytes", "1048588", 5)]
        assert synonyms(topic["retention.ms"]) == [("log.retention.ms", "100000", 3), ("log.retention.hours", "168", 5)]
        assert (topic["segment.ms"].value, topic["segment.ms"].config_source, synonyms(topic["segment.ms"])) == (
            "604800000", 5, [])
        own = entries(w, "own", ["max.message.bytes"], TOPIC)["max.message.bytes"]
        assert synonyms(own) == [("max.message.bytes", "5000", 1), ("message.max.bytes", "300", 3),
                                 ("message.max.bytes", "1048588", 5)]
        assert codes() == (E.MESSAGE_TOO_LARGE, 0)  # the cluster's message.max.bytes, the topic's own override
        assert alter(w, "", [("message.max.bytes", DELETE, None), ("log.retention.ms", DELETE, None)]) == (0, None)
        assert codes() == (0, 0)
        assert alter(w, "1", [("message.max.bytes", SET, "300")]) == (0, None)  # the broker's own level
        assert codes() == (E.MESSAGE_TOO_LARGE, 0)
        assert alter(w, "1", [("message.max.bytes", DELETE, None)]) == (0, None)
        assert codes() == (0, 0)


def test_dynamic_configs_are_kept_in_the_state_file(tmp_path):
    path = tmp_path / "state.json"
    with Cluster(state_file=path, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        assert alter(w, "", [("log.retention.ms", SET, "100000")]) == (0, None)
        assert alter(w, "1", [("message.max.bytes", SET, "2000000")]) == (0, None)
    with Cluster(state_file=path, system_topic_partitions=1) as c, Wire(c.addresses[0]) as w:
        got = entries(w, keys=["log.retention.ms", "message.max.bytes", "log.dirs"])
        assert [(n, e.value, e.config_source) for n, e in sorted(got.items())] == [
            ("log.dirs", str(tmp_path), 4), ("log.retention.ms", "100000", 3), ("message.max.bytes", "2000000", 2)]


def test_a_brokers_loggers(one):
    with Wire(one.addresses[0]) as w:
        loggers = entries(w, resource_type=LOGGER)
        root = loggers["root"]
        assert (root.config_source, root.read_only, root.is_sensitive, root.config_type, root.synonyms) == (
            6, False, False, 0, [])
        assert root.value in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
        assert all(n == "root" or n.split(".")[0] in ("kcodec", "kcodec_broker") for n in loggers)
        assert "kcodec_broker" in loggers  # the broker's own logger, apart from kcodec's
        for name, message in [("2", "Unexpected broker id, expected 1 but received 2"), ("", "Broker id must not be empty"),
                              ("x", "Broker id must be an integer, but it is: x")]:
            result = describe(w, LOGGER, name)
            assert (result.error_code, result.error_message) == (E.INVALID_REQUEST, message)


def test_a_topic_configs_value_in_force_is_the_one_described():
    """topic_value (read by every Produce) gives the value topic_configs describes, whatever level sets it."""
    from kcodec_broker.broker_configs import DynamicBrokerConfigs, topic_configs, topic_value
    dynamic = DynamicBrokerConfigs()
    dynamic.set(None, {**dynamic.cluster, "message.max.bytes": "300", "log.retention.hours": "1",
                       "log.roll.ms": "5000"})
    dynamic.set(1, {"log.retention.ms": "100000", "compression.type": "zstd"})
    overrides = {"segment.ms": "7000", "cleanup.policy": "compact"}
    for node in (0, 1):
        described = {key.name: value for key, value, _, _ in topic_configs(dynamic, node, overrides)}
        assert {name: topic_value(dynamic, node, overrides, name) for name in described} == {
            name: value or "" for name, value in described.items()}
    assert topic_value(dynamic, 1, {}, "retention.ms") == "100000"
    assert topic_value(dynamic, 0, {}, "max.message.bytes") == "300"
