"""ApiVersions, configs, ListTopics, DescribeTopicPartitions, DescribeCluster, unsupported requests, the CLI."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest
from broker_wire import Wire, start_cli

import kcodec
from kcodec.errors import ErrorCode
from kcodec.messages import (AlterConfigsRequest, ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest,
                             DescribeConfigsRequest, DescribeTopicPartitionsRequest, FetchRequest,
                             IncrementalAlterConfigsRequest, ListTopicsRequest, ListTopicsResponse, MetadataRequest,
                             ProduceRequest)

ADMIN_APIS = {"ApiVersions", "Metadata", "CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeConfigs",
              "IncrementalAlterConfigs", "AlterConfigs", "DescribeTopicPartitions", "SaslHandshake",
              "SaslAuthenticate", "DescribeCluster", "DescribeAcls", "CreateAcls", "DeleteAcls", "ListTopics",
              "DescribeUserScramCredentials", "AlterUserScramCredentials", "DescribeLogDirs", "ElectLeaders",
              "AlterPartitionReassignments", "ListPartitionReassignments", "DescribeQuorum", "ListConfigResources",
              "AlterClientQuotas", "DescribeClientQuotas"}
GROUP_APIS = {"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
              "OffsetDelete", "DescribeGroups", "ListGroups", "DeleteGroups", "ConsumerGroupHeartbeat",
              "ConsumerGroupDescribe"}
DATA_APIS = {"Produce", "Fetch", "ListOffsets", "OffsetForLeaderEpoch", "DeleteRecords", "InitProducerId"}
TXN_APIS = {"AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "DescribeTransactions",
            "ListTransactions", "DescribeProducers"}
TELEMETRY_APIS = {"GetTelemetrySubscriptions", "PushTelemetry"}  # KIP-714


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_every_version(cluster, version):
    req = ApiVersionsRequest(client_software_name="tests", client_software_version="1.0") if version >= 3 else ApiVersionsRequest()
    with Wire(cluster.addresses[0]) as w:
        r = w.call(req, version)
    assert r.error_code == 0
    names = kcodec.definitions.api_keys()
    advertised = {names[k.api_key]: (k.min_version, k.max_version) for k in r.api_keys}
    assert set(advertised) == ADMIN_APIS | DATA_APIS | GROUP_APIS | TXN_APIS  # KIP-714's: only when asked for
    assert advertised["EndTxn"] == (0, 5)  # v5: transaction version 2 (an epoch bump per EndTxn)
    assert advertised["Produce"] == (3, 13) and advertised["Fetch"] == (4, 18)
    assert advertised["Metadata"] == (0, 13) and advertised["CreateTopics"] == (0, 7)
    assert advertised["ListTopics"] == (0, 1)


def test_unsupported_api_versions_version_gets_the_v0_answer(cluster):
    # ApiVersions v9 does not exist: the broker answers in the v0 layout, error 35 and its own range.
    frame = bytearray(kcodec.encode_request(ApiVersionsRequest(client_software_name="x", client_software_version="1"),
                                            4, correlation_id=77, client_id="future"))
    struct.pack_into(">h", frame, 6, 9)
    with Wire(cluster.addresses[0]) as w:
        w.send(bytes(frame))
        reply = w.read_frame()
        header, r = kcodec.decode_response(reply, 18, 0)
        assert header.correlation_id == 77 and r.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == [(18, 0, 4)]
        # and a client that tried v4 reads it through kcodec's fallback, as Kafka's client does
        _, again = kcodec.decode_response(reply, 18, 4)
        assert again.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert w.call(ApiVersionsRequest(), 0).error_code == 0  # the connection is still good
        bad = w.call(ApiVersionsRequest(client_software_name="-bad name", client_software_version="1"), 3)
        assert bad.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", range(0, 5))
def test_describe_configs_every_version(cluster, version):
    cluster.create_topic("cfg", 1, 1, {"retention.ms": "1000", "cleanup.policy": "compact"})
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=2, resource_name="cfg", configuration_keys=None),
                                            R(resource_type=2, resource_name="cfg", configuration_keys=["retention.ms"]),
                                            R(resource_type=2, resource_name="missing", configuration_keys=None),
                                            R(resource_type=4, resource_name="1", configuration_keys=None),
                                            R(resource_type=4, resource_name="2", configuration_keys=None),
                                            R(resource_type=3, resource_name="group", configuration_keys=None)])
    if version >= 1:
        req.include_synonyms = True
    if version >= 3:
        req.include_documentation = True
    with Wire(cluster.addresses[0]) as w:
        full, one, missing, broker, other, group = w.call(req, version).results
    entries = {c.name: c for c in full.configs}
    assert entries["retention.ms"].value == "1000" and entries["segment.ms"].value == "604800000"
    if version == 0:
        assert not entries["retention.ms"].is_default and entries["segment.ms"].is_default
    else:
        assert (entries["retention.ms"].config_source, entries["segment.ms"].config_source) == (1, 5)
        assert entries["retention.ms"].synonyms[0].value == "1000"
    if version >= 3:
        assert entries["retention.ms"].config_type == 5 and entries["cleanup.policy"].documentation
    assert [c.name for c in one.configs] == ["retention.ms"]
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # every config of Kafka's broker (broker/kcodec_broker/kafka_broker_configs.json), the asked broker's own only
    assert len(broker.configs) > 300 and {c.name: c.value for c in broker.configs}["num.partitions"] == "2"
    assert {c.read_only for c in broker.configs} == {False, True}
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
    assert group.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", range(0, 2))
def test_incremental_alter_configs(cluster, version):
    cluster.create_topic("alt", 1, 1, {"retention.ms": "1000"})
    A = IncrementalAlterConfigsRequest.AlterConfigsResource
    C = IncrementalAlterConfigsRequest.AlterableConfig

    def alter(*configs, name="alt", validate_only=False, rtype=2):
        with Wire(cluster.addresses[1]) as w:
            return w.call(IncrementalAlterConfigsRequest(resources=[A(resource_type=rtype, resource_name=name,
                                                                      configs=list(configs))],
                                                         validate_only=validate_only), version).responses[0]

    assert alter(C(name="retention.ms", config_operation=1, value=None), C(name="segment.ms", config_operation=0,
                                                                           value="5000")).error_code == 0
    assert cluster.topics()["alt"].configs == {"segment.ms": "5000"}
    assert alter(C(name="cleanup.policy", config_operation=2, value="compact")).error_code == 0
    assert cluster.topics()["alt"].configs["cleanup.policy"] == "delete,compact"
    assert alter(C(name="cleanup.policy", config_operation=3, value="delete")).error_code == 0
    assert cluster.topics()["alt"].configs["cleanup.policy"] == "compact"
    assert alter(C(name="internal", config_operation=0, value="true"), validate_only=True).error_code == 0
    assert "internal" not in cluster.topics()["alt"].configs
    assert alter(C(name="segment.ms", config_operation=2, value="1")).error_code == ErrorCode.INVALID_CONFIG
    assert alter(C(name="nope", config_operation=0, value="1")).error_code == ErrorCode.INVALID_CONFIG
    assert alter(C(name="segment.ms", config_operation=0, value="x")).error_code == ErrorCode.INVALID_CONFIG
    assert alter(C(name="segment.ms", config_operation=0, value="1"), name="zz").error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(C(name="num.partitions", config_operation=0, value="3"), name="1", rtype=4).error_code == \
        ErrorCode.INVALID_REQUEST


def test_legacy_alter_configs_replaces_the_overrides(cluster):
    cluster.create_topic("legacy", 1, 1, {"retention.ms": "1000"})
    A = AlterConfigsRequest.AlterConfigsResource
    with Wire(cluster.addresses[0]) as w:
        r = w.call(AlterConfigsRequest(resources=[A(resource_type=2, resource_name="legacy", configs=[
            AlterConfigsRequest.AlterableConfig(name="segment.ms", value="7")])]), 1).responses[0]
    assert r.error_code == 0 and cluster.topics()["legacy"].configs == {"segment.ms": "7"}


@pytest.mark.parametrize("version", range(0, 2))
def test_list_topics_kip_142(cluster, version):
    cluster.create_topic("plain", 1, 1)
    cluster.create_topic("udi", 1, 1, {"internal": "true"})
    with Wire(cluster.addresses[0]) as w:
        everything = w.call(ListTopicsRequest(list_internal=True), version).topics
        public = w.call(ListTopicsRequest(list_internal=False), version).topics
    assert [(t.name, t.internal) for t in everything] == [("__consumer_offsets", True), ("__transaction_state", True),
                                                          ("plain", False), ("udi", True)]
    assert [t.name for t in public] == ["plain"]


def test_describe_topic_partitions_kip_966_pagination(cluster):
    for name, n in (("a", 3), ("b", 4), ("c", 1)):
        cluster.create_topic(name, n, 1)
    T = DescribeTopicPartitionsRequest.TopicRequest
    with Wire(cluster.addresses[0]) as w:
        def page(topics, limit, cursor=None):
            return w.call(DescribeTopicPartitionsRequest(topics=topics, response_partition_limit=limit, cursor=cursor), 0)

        # every topic, 3 partitions a page: walk the cursor to the end
        seen, cursor = [], None
        for _ in range(20):
            r = page([], 3, cursor)
            assert sum(len(t.partitions) for t in r.topics) <= 3
            seen += [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
            cursor = r.next_cursor
            if cursor is None:
                break
        expected = [(n, i) for n, t in sorted(cluster.topics().items()) for i in range(len(t.replicas))]
        assert seen == expected
        named = page([T(name="c"), T(name="b"), T(name="zz"), T(name="bad name")], 2)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in named.topics] == [("b", [0, 1])]
        assert (named.next_cursor.topic_name, named.next_cursor.partition_index) == ("b", 2)
        rest = page([T(name="c"), T(name="b"), T(name="zz"), T(name="bad name")], 10, named.next_cursor)
        assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in rest.topics] == [
            ("b", 0, [2, 3]), ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION, []), ("c", 0, [0]),
            ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
        assert rest.next_cursor is None
        outside = page([T(name="a")], 10, DescribeTopicPartitionsRequest.Cursor(topic_name="b", partition_index=0))
        assert outside.topics[0].error_code == ErrorCode.INVALID_REQUEST
        assert rest.topics[0].is_internal is False and rest.topics[0].topic_id == cluster.topics()["b"].topic_id
        # Kafka's metadata cache sets both ELR lists (empty without ELR); Kafka's admin client streams them, so a
        # null failed its describeTopics (NullPointerException)
        assert {(tuple(p.eligible_leader_replicas), tuple(p.last_known_elr)) for p in rest.topics[0].partitions} == {((), ())}


def test_describe_cluster(cluster):
    with Wire(cluster.addresses[0]) as w:
        r = w.call(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
        ctl = w.call(DescribeClusterRequest(endpoint_type=2), 1)
    assert [b.broker_id for b in r.brokers] == [1, 2, 3] and r.cluster_id == cluster.state.cluster_id
    assert r.cluster_authorized_operations > 0 and ctl.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


def test_unimplemented_apis_get_their_own_error_form_and_unknown_keys_close(cluster):
    with Wire(cluster.addresses[0]) as w:
        produce = ProduceRequest(acks=1, timeout_ms=100, topic_data=[ProduceRequest.TopicProduceData(
            name="t", partition_data=[ProduceRequest.PartitionProduceData(index=3, records=None)])])
        r = w.call(produce, 2)  # Produce before v3 (message sets) is not served
        assert r.responses[0].name == "t"
        assert [(p.index, p.error_code) for p in r.responses[0].partition_responses] == [(3, ErrorCode.UNSUPPORTED_VERSION)]
        fetch = w.call(FetchRequest(max_wait_ms=1, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
            FetchRequest.FetchPartition(partition=0)])]), 3)
        assert fetch.responses[0].topic == "t"
        assert fetch.responses[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        assert w.call(MetadataRequest(topics=None), 12).error_code == 0  # still serving
    with Wire(cluster.addresses[0]) as w:  # an empty Fetch v3 response has no error code to carry
        w.send(kcodec.encode_request(FetchRequest(max_wait_ms=1), 3, correlation_id=1))
        assert w.closed_by_peer()
    with Wire(cluster.addresses[0]) as w:
        frame = bytearray(kcodec.encode_request(MetadataRequest(topics=None), 1, correlation_id=1))
        struct.pack_into(">h", frame, 4, 999)  # an api key nobody knows
        w.send(bytes(frame))
        assert w.closed_by_peer()
    with Wire(cluster.addresses[0]) as w:
        frame = bytearray(kcodec.encode_request(MetadataRequest(topics=None), 1, correlation_id=1))
        struct.pack_into(">h", frame, 6, 99)  # a Metadata version nobody knows
        w.send(bytes(frame))
        assert w.closed_by_peer()


def test_cli_moves_the_list_topics_key_and_keeps_state(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KCODEC_LIST_TOPICS_API_KEY"}
    state = tmp_path / "s.json"
    versions = tmp_path / "v.json"
    proc, line = start_cli("--brokers", "2", "--list-topics-api-key", "2001", "--state", str(state),
                            "--versions-file", str(versions), "-vv", env=env)
    try:
        assert "ListTopics api key 2001" in line
        host, port = line.split("bootstrap ")[1].split(",")[0].split(":")
        frame = bytearray(kcodec.encode_request(ListTopicsRequest(list_internal=True), 1, correlation_id=5,
                                                  client_id="kcodec-tests"))
        with Wire((host, int(port))) as w:
            struct.pack_into(">h", frame, 4, 2001)
            w.send(bytes(frame))
            _, resp = kcodec.decode_response(w.read_frame(), ListTopicsResponse.API_KEY, 1)
            assert [t.name for t in resp.topics] == ["__consumer_offsets", "__transaction_state"]
            keys = {k.api_key for k in w.call(ApiVersionsRequest(), 2).api_keys}
            assert 2001 in keys and 1142 not in keys
    finally:
        proc.terminate()  # SIGTERM ends it cleanly too
        _, log = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert "ListTopics v1 from kcodec-tests (User:ANONYMOUS)" in log
    assert state.exists() and "__consumer_offsets" in state.read_text()
    used = json.loads(versions.read_text())
    assert used["kcodec-tests"]["ListTopics"] == [1] and used["kcodec-tests"]["ApiVersions"] == [2]
    out = subprocess.run([sys.executable, "-m", "kcodec", "broker", "--list-topics-api-key", "3"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0 and "Apache Kafka api key" in out.stderr
