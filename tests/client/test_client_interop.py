"""The client against brokers nobody here wrote: Tansu 0.6.0, librdkafka's mock cluster and Apache Kafka 4.4
(tests/kafka; marker ``kafka``), beside kcodec's own."""

from __future__ import annotations

import json
import uuid

import pytest

from kcodec import cli, definitions
from kcodec.client import (AuthenticationError, Client, KafkaConnectionError, NewTopic, SyncClient,
                           UnsupportedApiError)
from kcodec.errors import ErrorCode

from client_support import RealBroker, run, settled

pytestmark = pytest.mark.interop


def _client(broker: RealBroker, **kw) -> SyncClient:
    if broker.sasl is not None:
        kw.setdefault("sasl_user", broker.sasl[0])
        kw.setdefault("sasl_password", broker.sasl[1])
    return SyncClient(broker.bootstrap, request_timeout=10, connect_timeout=5, **kw)


def _cli_login(broker: RealBroker) -> list[str]:
    return ["--sasl-user", broker.sasl[0], "--sasl-password", broker.sasl[1]] if broker.sasl else []


def test_negotiated_versions(broker: RealBroker):
    with _client(broker) as c:
        got = c.negotiated()
    print(f"\n{broker.name}: {got}")
    assert got == broker.expected


def test_list_topics_uses_listtopics_or_falls_back_to_metadata(broker: RealBroker):
    with _client(broker) as c:
        names = [t.name for t in c.list_topics()]
        sent = c.client.requests_sent
    assert set(broker.topics) <= set(names)
    assert names == sorted(names)
    used_list_topics = any(api == "ListTopics" for api, _ in sent)
    assert used_list_topics == ("list_topics" in broker.features)
    if not used_list_topics:  # KIP-142's compatibility plan: Metadata instead
        assert ("Metadata", broker.expected["Metadata"]) in sent


def test_describe_topics(broker: RealBroker):
    name = next(iter(broker.topics), None)
    with _client(broker) as c:
        if name is None:  # a broker that starts empty: make a topic to describe
            name = f"describe-{uuid.uuid4().hex[:8]}"
            assert c.create_topics([NewTopic(name, 2, 1)])[0].ok
            expected_parts = 2
        else:
            expected_parts = broker.topics[name]
        known, unknown = c.describe_topics([name, "no-such-topic-" + uuid.uuid4().hex[:6]])
        everything = c.describe_topics()
        brokers = set(c.client.cluster.nodes)
    assert known.ok and known.name == name
    assert [p.partition for p in known.partitions] == list(range(expected_parts))
    assert all(p.leader in brokers and p.leader in p.replicas and p.error == ErrorCode.NONE for p in known.partitions)
    assert unknown.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # a value, not an exception
    assert name in [d.name for d in everything]


def test_cli_list_and_describe_as_json(broker: RealBroker, capsys):
    assert cli.main(["topics", "list", "--bootstrap", broker.bootstrap, "--json", *_cli_login(broker)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {t["name"] for t in listed} >= set(broker.topics)
    for name in broker.topics:
        assert cli.main(["topics", "describe", name, "--bootstrap", broker.bootstrap, *_cli_login(broker)]) == 0
        table = capsys.readouterr().out.splitlines()
        assert table[0].split() == ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ERROR"]
        assert len([line for line in table[2:] if line.startswith(name + " ")]) == broker.topics[name]


def test_admin_apis_missing_are_a_clear_error(rdkafka_mock: RealBroker):
    with _client(rdkafka_mock) as c:
        with pytest.raises(UnsupportedApiError, match=r"CreateTopics \(api key 19\): broker speaks no version"):
            c.create_topics(["x"])


def test_create_list_describe_delete(admin_broker: RealBroker):
    tag = uuid.uuid4().hex[:8]
    a, b, c_ = f"a-{tag}", f"b-{tag}", f"c-{tag}"
    with _client(admin_broker) as c:
        created = c.create_topics([NewTopic(a, 3, 1, {"cleanup.policy": "compact"}),
                                   NewTopic(b),                  # KIP-464: both from the broker
                                   NewTopic(c_, partitions=2)])  # KIP-464: replication factor from the broker
        assert [r.error for r in created] == [ErrorCode.NONE] * 3, created
        # KIP-525 (v5+): the broker says what it made
        assert (created[0].partitions, created[0].replication_factor) == (3, 1)
        assert created[2].partitions == 2 and created[1].partitions is not None and created[1].partitions >= 1
        assert all(r.topic_id is not None for r in created)  # v7
        again = c.create_topics([a, f"d-{tag}"])  # one fails, one succeeds: per-topic values
        assert [r.error for r in again] == [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NONE]
        names = settled(lambda: {t.name for t in c.list_topics()}, {a, b, c_, f"d-{tag}"}.issubset)
        assert {a, b, c_, f"d-{tag}"} <= names
        desc = {d.name: d for d in c.describe_topics([a, c_])}
        assert len(desc[a].partitions) == 3 and len(desc[c_].partitions) == 2
        configs = c.describe_configs([a])[0]
        assert configs.ok
        deleted = c.delete_topics([a, b, c_, f"d-{tag}", f"never-{tag}"])
        assert [r.error for r in deleted] == [ErrorCode.NONE] * 4 + [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert not {a, b, c_} & settled(lambda: {t.name for t in c.list_topics()}, {a, b, c_}.isdisjoint)
        assert c.client.requests_sent[("CreateTopics", 7)] == 2


def test_listtopics_and_describe_paths_agree_with_metadata(broker: RealBroker):
    # Capping ListTopics and DescribeTopicPartitions away forces the Metadata fallbacks.
    lt = definitions.list_topics_api_key()
    name = next(iter(broker.topics), None)
    with _client(broker) as c:
        if name is None:
            name = f"paths-{uuid.uuid4().hex[:8]}"
            assert c.create_topics([NewTopic(name, 3, 1)])[0].ok
        try:
            listed, described = c.list_topics(internal=True), c.describe_topics([name])
            with _client(broker, max_versions={lt: -1, 75: -1}) as old:
                assert old.list_topics(internal=True) == listed
                assert old.describe_topics([name]) == described
                assert {api for api, _ in old.client.requests_sent} == {"ApiVersions", "Metadata"} | (
                    {"SaslHandshake", "SaslAuthenticate"} if broker.sasl else set())
            sent = {api for api, _ in c.client.requests_sent}
            assert ("ListTopics" in sent) == ("list_topics" in broker.features)
            assert ("DescribeTopicPartitions" in sent) == (broker.expected["DescribeTopicPartitions"] is not None)
        finally:
            if name not in broker.topics:
                c.delete_topics([name])


def test_kip_464_defaults_need_createtopics_v4(admin_broker: RealBroker):
    tag = uuid.uuid4().hex[:8]
    with _client(admin_broker, max_versions={19: 3}) as c:
        out = c.create_topics([NewTopic(f"x-{tag}"), NewTopic(f"y-{tag}", 1, 1)])
        try:
            assert out[0].error == ErrorCode.UNSUPPORTED_VERSION and "KIP-464" in (out[0].message or "")
            assert out[1].ok and out[1].partitions is None  # v3 predates KIP-525's fields
            assert c.client.requests_sent[("CreateTopics", 3)] == 1
            assert f"x-{tag}" not in {t.name for t in c.list_topics()}
        finally:
            c.delete_topics([f"y-{tag}"])


def test_cli_create_and_delete(admin_broker: RealBroker, capsys):
    name = f"cli-{uuid.uuid4().hex[:8]}"
    boot = ["--bootstrap", admin_broker.bootstrap]
    assert cli.main(["topics", "create", name, "--partitions", "2", *boot]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:4] == [name, "NONE", "2", "1"]
    assert cli.main(["topics", "create", name, *boot, "--json"]) == 1  # already there: exit 1, the reason per topic
    assert json.loads(capsys.readouterr().out)[0]["error"] == "TOPIC_ALREADY_EXISTS"
    if admin_broker.expected["CreatePartitions"] is None:  # Tansu lacks CreatePartitions
        assert cli.main(["topics", "add-partitions", name, "--count", "4", *boot]) == 2
        assert "CreatePartitions (api key 37)" in capsys.readouterr().err
    else:
        assert cli.main(["topics", "add-partitions", name, "--count", "4", *boot, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["error"] == "NONE"
    assert cli.main(["topics", "delete", name, *boot, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"name": name, "error": "NONE", "message": None}]


def test_async_client_pipelines_against_a_real_broker(broker: RealBroker):
    import asyncio

    async def main():
        login = {"sasl_user": broker.sasl[0], "sasl_password": broker.sasl[1]} if broker.sasl else {}
        async with Client(broker.bootstrap, request_timeout=10, **login) as c:
            results = await asyncio.gather(*(c.describe_topics(list(broker.topics) or None) for _ in range(20)))
            assert all(r == results[0] for r in results)
            return c.requests_sent

    sent = run(main())
    assert sum(n for (api, _), n in sent.items() if api in ("Metadata", "DescribeTopicPartitions", "ListTopics")) >= 20


def test_page_size_does_not_change_the_answer(broker: RealBroker):
    # Tansu speaks DescribeTopicPartitions but ignores the page size (one page); a broker that pages
    # ("pagination") must take several requests for the same answer.
    name = next(iter(broker.topics), None)
    with _client(broker) as c:
        if name is None:
            name = f"pages-{uuid.uuid4().hex[:8]}"
            assert c.create_topics([NewTopic(name, 3, 1)])[0].ok
        whole = c.describe_topics([name])
        with _client(broker, partition_limit=1) as paged:
            assert paged.describe_topics([name]) == whole
            pages = paged.client.requests_sent[("DescribeTopicPartitions", broker.expected["DescribeTopicPartitions"])]
        if "admin" in broker.features and not broker.topics:
            c.delete_topics([name])
    if "pagination" in broker.features:
        assert pages == len(whole[0].partitions)


def test_sasl_plain(broker: RealBroker):
    if "sasl" not in broker.features or broker.sasl is None:
        pytest.skip(f"{broker.name} has no SASL PLAIN users")
    user, password = broker.sasl
    with _client(broker, sasl_user=user, sasl_password=password) as c:
        assert set(broker.topics) <= {t.name for t in c.list_topics()}
    with pytest.raises(AuthenticationError):
        with _client(broker, sasl_user=user, sasl_password=password + "-wrong"):
            pass


def test_sasl_plain_refused_by_a_scram_only_broker(tansu_auth: RealBroker, capsys):
    # Tansu with --authentication knows SCRAM users only: it hangs up on a PLAIN handshake.
    with pytest.raises(AuthenticationError, match=r"SASL PLAIN as 'alice': .* closed the connection"):
        with _client(tansu_auth, sasl_user="alice", sasl_password="secret"):
            pass
    with pytest.raises(KafkaConnectionError):  # and on anything else before authentication
        with _client(tansu_auth):
            pass
    assert cli.main(["topics", "list", "--bootstrap", tansu_auth.bootstrap, "--sasl-user", "alice",
                     "--sasl-password", "secret"]) == 2
    assert "error: SASL PLAIN as 'alice'" in capsys.readouterr().err


def test_the_command_runs(admin_broker: RealBroker):
    import subprocess
    import sys

    name = f"cmd-{uuid.uuid4().hex[:8]}"
    base = [sys.executable, "-m", "kcodec", "topics"]
    made = subprocess.run([*base, "create", name, "--bootstrap", admin_broker.bootstrap], capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 0, made.stderr
    listed = subprocess.run([*base, "list", "--bootstrap", admin_broker.bootstrap, "--json"], capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0 and {"name": name, "internal": False} in json.loads(listed.stdout)
    gone = subprocess.run([*base, "delete", name, "--bootstrap", admin_broker.bootstrap], capture_output=True, text=True,
                          timeout=60)
    assert gone.returncode == 0 and gone.stdout.split("\n")[2].split() == [name, "NONE"]
