"""Error answers in the request's own form (broker/kcodec_broker/unsupported.py), as Kafka's getErrorResponse
builds them: used by fail_next, for requests the broker does not implement and when a handler fails. A
request that lists names or ids (DescribeGroups' groups, AddPartitionsToTxn v0-3's partitions) gets one
struct per item, keyed by it, carrying the error. AlterUserScramCredentials answers each user named by its
deletions or upsertions once (sorted); AlterReplicaLogDirs each topic of each directory."""

from __future__ import annotations

import dataclasses
import logging
import uuid

import pytest
from broker_wire import Wire

import kcodec
from kcodec import definitions
from kcodec_broker import Cluster, handlers
from kcodec_broker.unsupported import ERROR_FIELDS, error_response
from kcodec.errors import ErrorCode

CODE = ErrorCode.CONCURRENT_TRANSACTIONS


def req(api_key: int, **fields):
    return kcodec.message_class(api_key, "request")(**fields)


def txn_topic(name: str, partitions: list[int]):
    return kcodec.message_class(24, "request").AddPartitionsToTxnTopic(name=name, partitions=partitions)


def fetch_topic(name: str, partitions: list[int]):
    return kcodec.message_class(9, "request").Topic(name=name, partition_indexes=partitions)


def election(topic: str, partitions: list[int]):
    return kcodec.message_class(43, "request").TopicPartitions(topic=topic, partitions=partitions)


def producers(name: str, partitions: list[int]):
    return kcodec.message_class(61, "request").TopicRequest(name=name, partition_indexes=partitions)


def produce():
    return kcodec.from_dict(kcodec.message_class(0, "request"), {"acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": None}, {"index": 1, "records": None}]}]})


# (request, version, a path to the list of answered items, the key each item carries, the error's field)
CASES = [
    # Produce v10+ answers also have node_endpoints (tagged): topic_data still pairs with responses
    *[(produce(), v, ["responses", 0, "partition_responses"], "index", [0, 1], "error_code") for v in (9, 10, 12)],
    (req(15, groups=["a", "b"]), 5, ["groups"], "group_id", ["a", "b"], "error_code"),
    (req(42, groups_names=["a"]), 2, ["results"], "group_id", ["a"], "error_code"),
    (req(20, topic_names=["t1", "t2"]), 4, ["responses"], "name", ["t1", "t2"], "error_code"),
    (req(10, key_type=1, coordinator_keys=["tx"]), 4, ["coordinators"], "key", ["tx"], "error_code"),
    (req(24, v3_and_below_transactional_id="x", v3_and_below_topics=[txn_topic("t", [0, 1])]), 3,
     ["results_by_topic_v3_and_below", 0, "results_by_partition"], "partition_index", [0, 1],
     "partition_error_code"),
    (req(9, group_id="g", topics=[fetch_topic("t", [2, 5])]), 1, ["topics", 0, "partitions"], "partition_index",
     [2, 5], "error_code"),
    (req(43, topic_partitions=[election("t", [3])]), 0, ["replica_election_results", 0, "partition_result"],
     "partition_id", [3], "error_code"),
    (req(61, topics=[producers("t", [0, 4])]), 0, ["topics", 0, "partitions"], "partition_index", [0, 4],
     "error_code"),
    (req(65, transactional_ids=["tx1"]), 0, ["transaction_states"], "transactional_id", ["tx1"], "error_code"),
    # the first string of the answer's struct is its error message: the key is the first that is not
    (req(69, group_ids=["g1", "g2"]), 0, ["groups"], "group_id", ["g1", "g2"], "error_code"),
]


@pytest.mark.parametrize("request_, version, path, key, names, error", CASES,
                         ids=[f"{type(c[0]).__name__}-v{c[1]}" for c in CASES])
def test_listed_names_and_ids_each_get_the_error(request_, version, path, key, names, error):
    resp = error_response(type(request_).API_KEY, version, request_, CODE)
    assert resp is not None
    items = resp
    for step in path:
        items = items[step] if isinstance(step, int) else getattr(items, step)
    assert [getattr(i, key) for i in items] == names
    assert [getattr(i, error) for i in items] == [CODE] * len(names)
    again = kcodec.decode(type(resp), kcodec.encode(resp, version), version)  # a valid answer at that version
    assert again == resp


def _one_of_each(fields, version: int) -> dict:
    """A request's fields as a dict with one item in every list (and in every list of its structs)."""
    scalar = {"string": "x", "uuid": str(uuid.UUID(int=1)), "bool": False, "bytes": "", "float64": 0.0}
    out = {}
    for f in fields:
        if version not in f.versions or f.elem == "records":
            continue
        if f.struct is not None:
            sub = _one_of_each(f.struct.fields, version)
            out[f.attr] = [sub] if f.is_array else sub
        else:
            value = scalar.get(f.elem, 1)
            out[f.attr] = [value] if f.is_array else value
    return out


def _carries_errors(fields, version: int) -> bool:
    return any(version in f.versions and (f.attr in ERROR_FIELDS or
                                          (f.struct is not None and _carries_errors(f.struct.fields, version)))
               for f in fields)


def test_every_request_naming_something_gets_an_error_answer():
    """Every API and version: a request with an item in each list is answered with the error wherever its
    answer has an error code, in a form that encodes at that version."""
    missing = []
    for key, name in sorted(definitions.api_keys().items()):
        cls = kcodec.message_class(key, "request")
        req_def = definitions.get(definitions.by_api_key(key, "request"))
        resp_def = definitions.get(definitions.by_api_key(key, "response"))
        for v in range(cls.VALID_VERSIONS[0], cls.VALID_VERSIONS[1] + 1):
            resp = error_response(key, v, kcodec.from_dict(cls, _one_of_each(req_def.root.fields, v)), CODE)
            if resp is not None:
                kcodec.encode(resp, v)
            elif _carries_errors(resp_def.root.fields, v):
                missing.append(f"{name} v{v}")
    assert missing == []


def test_scram_credentials_answer_each_user_once():
    cls = kcodec.message_class(51, "request")
    request_ = kcodec.from_dict(cls, {"deletions": [{"name": "bob", "mechanism": 1}], "upsertions": [
        {"name": "alice", "mechanism": 1, "iterations": 4096, "salt": "", "salted_password": ""},
        {"name": "bob", "mechanism": 2, "iterations": 4096, "salt": "", "salted_password": ""}]})
    resp = error_response(51, 0, request_, CODE)
    assert [(r.user, r.error_code) for r in resp.results] == [("alice", CODE), ("bob", CODE)]


def test_alter_replica_log_dirs_answers_each_topic_of_each_directory():
    request_ = kcodec.from_dict(kcodec.message_class(34, "request"), {"dirs": [
        {"path": "/a", "topics": [{"name": "t1", "partitions": [0, 1]}, {"name": "t2", "partitions": [3]}]},
        {"path": "/b", "topics": [{"name": "t3", "partitions": [2]}]}]})
    resp = error_response(34, 2, request_, CODE)
    assert [(r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions]) for r in resp.results] == [
        ("t1", [(0, CODE), (1, CODE)]), ("t2", [(3, CODE)]), ("t3", [(2, CODE)])]


def test_lists_whose_answers_carry_no_error_are_not_mirrored():
    """Only items that carry the error are answered: ListGroups' state filter names no groups, DescribeConfigs'
    keys no config entries, JoinGroup's protocols no members, DescribeClientQuotas' components no entries."""
    lg = error_response(16, 4, req(16, states_filter=["Stable", "Empty"]), CODE)
    assert lg.error_code == CODE and lg.groups == []
    dc_req = kcodec.from_dict(kcodec.message_class(32, "request"), {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]}]})
    [result] = error_response(32, 1, dc_req, CODE).results
    assert (result.resource_name, result.error_code, result.configs) == ("t", CODE, [])
    jg_req = kcodec.from_dict(kcodec.message_class(11, "request"), {"group_id": "g", "protocol_type": "consumer",
                                                                      "protocols": [{"name": "range"}]})
    jg = error_response(11, 5, jg_req, CODE)
    assert jg.error_code == CODE and jg.members == []
    dq_req = kcodec.from_dict(kcodec.message_class(48, "request"), {"components": [{"entity_type": "user"}]})
    dq = error_response(48, 1, dq_req, CODE)
    assert dq.error_code == CODE and not dq.entries


def test_a_request_naming_nothing_has_nothing_to_carry_the_error():
    assert error_response(15, 5, req(15, groups=[]), CODE) is None


def test_a_failing_describe_groups_handler_answers_each_group(monkeypatch, caplog):
    """Before, the answer had no error code anywhere (the groups were not mirrored): the connection closed."""
    def broken(ctx, request):
        raise RuntimeError("injected")

    with Cluster(system_topic_partitions=1) as cluster:
        monkeypatch.setitem(handlers.HANDLERS, 15, dataclasses.replace(handlers.HANDLERS[15], fn=broken))
        with caplog.at_level(logging.ERROR, logger="kcodec_broker"), Wire(cluster.addresses[0]) as w:
            r = w.call(req(15, groups=["g1", "g2"]), 5)
            assert [(g.group_id, g.error_code) for g in r.groups] == [
                ("g1", ErrorCode.UNKNOWN_SERVER_ERROR), ("g2", ErrorCode.UNKNOWN_SERVER_ERROR)]
        assert "injected" in caplog.text


def test_fail_next_reaches_add_partitions_to_txn_v3():
    with Cluster(system_topic_partitions=1) as cluster:
        failing = cluster.fail_next("AddPartitionsToTxn", CODE)
        with Wire(cluster.addresses[0]) as w:
            r = w.call(req(24, v3_and_below_transactional_id="x", v3_and_below_producer_id=1,
                           v3_and_below_topics=[txn_topic("t", [0])]), 3)
        [topic] = r.results_by_topic_v3_and_below
        assert [(p.partition_index, p.partition_error_code) for p in topic.results_by_partition] == [(0, CODE)]
        assert failing.taken == 1
