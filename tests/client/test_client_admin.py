"""Admin calls against a scripted fake broker: ListTopics vs Metadata, paging, KIP-464/525, per-topic errors."""

from __future__ import annotations

import io
import json

import pytest

from kcodec import definitions
from kcodec.client import BrokerError, Client, NewTopic, ProtocolError, SyncClient
from kcodec.client import cli as topics_cli
from kcodec.errors import ErrorCode
from kcodec.messages import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                             CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
                             DescribeConfigsRequest, DescribeConfigsResponse, DescribeTopicPartitionsRequest,
                             DescribeTopicPartitionsResponse, ListTopicsRequest, ListTopicsResponse,
                             MetadataRequest, MetadataResponse)

from client_support import Call, FakeBroker, run

LT = definitions.list_topics_api_key()
TOPICS = {"a": 3, "b": 1, "__consumer_offsets": 2}


class Cluster:
    """A tiny in-memory cluster behind the fake: just enough state for the admin calls."""

    def __init__(self, topics=None, apis=None, port_of=None) -> None:
        self.topics = dict(TOPICS if topics is None else topics)
        self.apis = apis if apis is not None else {3: (0, 12), 19: (0, 7), 20: (0, 6), 37: (0, 3), 32: (0, 4),
                                                   75: (0, 0), LT: (0, 1)}
        self.fake = FakeBroker(self.apis, {3: self.metadata, LT: self.list_topics, 75: self.dtp,
                                           19: self.create, 20: self.delete, 37: self.partitions,
                                           32: self.configs})
        self.created: list = []

    def metadata(self, call: Call):
        req = call.body(MetadataRequest)
        names = sorted(self.topics) if req.topics is None else [t.name for t in req.topics]
        return MetadataResponse(
            brokers=[MetadataResponse.Broker(node_id=1, host="127.0.0.1", port=self.fake.port)], controller_id=1,
            topics=[self._meta_topic(n) for n in names])

    def _meta_topic(self, name):
        if name not in self.topics:
            return MetadataResponse.Topic(name=name, error_code=3)
        return MetadataResponse.Topic(name=name, is_internal=name.startswith("__"), partitions=[
            MetadataResponse.Partition(partition_index=i, leader_id=1, replica_nodes=[1], isr_nodes=[1])
            for i in range(self.topics[name])])

    def list_topics(self, call: Call):
        internal = call.body(ListTopicsRequest).list_internal
        return ListTopicsResponse(topics=[ListTopicsResponse.Topic(name=n, internal=n.startswith("__"))
                                          for n in self.topics if internal or not n.startswith("__")])

    def dtp(self, call: Call):
        # Kafka's paging: topics sorted by name, at most `limit` partitions, a cursor where it stopped.
        req = call.body(DescribeTopicPartitionsRequest)
        names = sorted(t.name for t in req.topics) if req.topics else sorted(self.topics)
        start = (req.cursor.topic_name, req.cursor.partition_index) if req.cursor else (names[0], 0)
        out, budget, cursor = [], req.response_partition_limit, None
        for name in names:
            if name < start[0]:
                continue
            if name not in self.topics:
                out.append(DescribeTopicPartitionsResponse.Topic(name=name, error_code=3))
                continue
            first = start[1] if name == start[0] else 0
            parts = []
            for i in range(first, self.topics[name]):
                if budget == 0:
                    cursor = DescribeTopicPartitionsResponse.Cursor(topic_name=name, partition_index=i)
                    break
                parts.append(DescribeTopicPartitionsResponse.Partition(partition_index=i, leader_id=1,
                                                                       replica_nodes=[1], isr_nodes=[1]))
                budget -= 1
            if parts:
                out.append(DescribeTopicPartitionsResponse.Topic(name=name, partitions=parts))
            if cursor:
                break
        return DescribeTopicPartitionsResponse(topics=out, next_cursor=cursor)

    def create(self, call: Call):
        req = call.body(CreateTopicsRequest)
        results = []
        for t in req.topics:
            self.created.append((t.name, t.num_partitions, t.replication_factor))
            if t.name in self.topics:
                results.append(CreateTopicsResponse.CreatableTopicResult(name=t.name, error_code=36,
                                                                         error_message=f"Topic '{t.name}' already exists."))
                continue
            n = 5 if t.num_partitions == -1 else t.num_partitions  # the broker's num.partitions
            if not req.validate_only:
                self.topics[t.name] = n
            if t.name.startswith("secret"):  # KIP-525: no DescribeConfigs right, so no configs
                results.append(CreateTopicsResponse.CreatableTopicResult(name=t.name, topic_config_error_code=29,
                                                                         configs=None))
                continue
            results.append(CreateTopicsResponse.CreatableTopicResult(
                name=t.name, num_partitions=n, replication_factor=1 if t.replication_factor == -1 else t.replication_factor,
                configs=[CreateTopicsResponse.CreatableTopicConfigs(name=c.name, value=c.value, config_source=1)
                         for c in t.configs]))
        return CreateTopicsResponse(topics=results)

    def delete(self, call: Call):
        req = call.body(DeleteTopicsRequest)
        names = [t.name for t in req.topics] if call.version >= 6 else req.topic_names
        return DeleteTopicsResponse(responses=[
            DeleteTopicsResponse.DeletableTopicResult(name=n, error_code=0 if self.topics.pop(n, None) else 3)
            for n in names])

    def partitions(self, call: Call):
        req = call.body(CreatePartitionsRequest)
        out = []
        for t in req.topics:
            if t.name not in self.topics:
                out.append(CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name, error_code=3))
            elif t.count <= self.topics[t.name]:
                out.append(CreatePartitionsResponse.CreatePartitionsTopicResult(
                    name=t.name, error_code=37, error_message=f"Topic already has {self.topics[t.name]} partitions."))
            else:
                self.topics[t.name] = t.count
                out.append(CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name))
        return CreatePartitionsResponse(results=out)

    def configs(self, call: Call):
        req = call.body(DescribeConfigsRequest)
        return DescribeConfigsResponse(results=[
            DescribeConfigsResponse.DescribeConfigsResult(
                resource_type=2, resource_name=r.resource_name, error_code=0 if r.resource_name in self.topics else 3,
                configs=[DescribeConfigsResponse.DescribeConfigsResourceResult(name="retention.ms", value="1000",
                                                                               config_source=1),
                         DescribeConfigsResponse.DescribeConfigsResourceResult(name="cleanup.policy", value="delete",
                                                                               config_source=5)]
                if r.resource_name in self.topics else [])
            for r in req.resources])


def test_list_topics_uses_listtopics_when_advertised():
    async def main():
        cluster = Cluster()
        async with cluster.fake, Client(cluster.fake.address) as c:
            names = [t.name for t in await c.list_topics()]
            everything = await c.list_topics(internal=True)
            assert ("ListTopics", 1) in c.requests_sent and not any(a == "Metadata" and n > 1 for (a, _), n in c.requests_sent.items())
        assert names == ["a", "b"]
        assert [(t.name, t.internal) for t in everything] == [("__consumer_offsets", True), ("a", False), ("b", False)]
    run(main())


def test_list_topics_falls_back_to_metadata_without_listtopics():
    async def main():
        cluster = Cluster(apis={3: (0, 12)})
        async with cluster.fake, Client(cluster.fake.address) as c:
            assert [t.name for t in await c.list_topics()] == ["a", "b"]
            assert c.requests_sent[("Metadata", 12)] == 2  # one at connect, one to list
        assert LT not in [call.api_key for call in cluster.fake.calls]
    run(main())


def test_list_topics_api_key_is_a_client_option():
    async def main():
        cluster = Cluster(apis={3: (0, 12), 2001: (0, 1)})
        cluster.fake.handlers[2001] = cluster.list_topics
        async with cluster.fake:
            async with Client(cluster.fake.address) as c:  # default key: not advertised, so Metadata
                await c.list_topics()
            async with Client(cluster.fake.address, list_topics_api_key=2001) as c:
                assert [t.name for t in await c.list_topics()] == ["a", "b"]
        assert [call.version for call in cluster.fake.calls if call.api_key == 2001] == [1]
    run(main())


def test_listtopics_error_is_raised_for_the_whole_request():
    async def main():
        cluster = Cluster()
        cluster.fake.handlers[LT] = lambda call: ListTopicsResponse(error_code=31)
        async with cluster.fake, Client(cluster.fake.address) as c:
            with pytest.raises(BrokerError, match="ListTopics: CLUSTER_AUTHORIZATION_FAILED"):
                await c.list_topics()
    run(main())


@pytest.mark.parametrize("limit", [1, 2, 4, 2000])
def test_describe_pages_through_the_cursor(limit):
    async def main():
        cluster = Cluster(topics={"a": 3, "b": 1, "c": 4})
        async with cluster.fake, Client(cluster.fake.address, partition_limit=limit) as c:
            described = await c.describe_topics(["c", "a", "zz", "b"])
            everything = await c.describe_topics()
        assert [d.name for d in described] == ["c", "a", "zz", "b"]
        assert [[p.partition for p in d.partitions] for d in described] == [[0, 1, 2, 3], [0, 1, 2], [], [0]]
        assert described[2].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert [d.name for d in everything] == ["a", "b", "c"] and everything[2] == described[0]
        pages = [call for call in cluster.fake.calls if call.api_key == 75]
        assert len(pages) == -(-8 // limit) + -(-8 // limit)  # 8 partitions each time, `limit` a page
        assert 3 not in [call.api_key for call in cluster.fake.calls[2:]]  # no Metadata after connecting
    run(main())


def test_describe_falls_back_to_metadata():
    async def main():
        cluster = Cluster(apis={3: (0, 12)})
        async with cluster.fake, Client(cluster.fake.address) as c:
            described = await c.describe_topics(["a", "nope"])
        assert [len(d.partitions) for d in described] == [3, 0]
        assert described[1].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        req = cluster.fake.calls[-1].body(MetadataRequest)
        assert req.allow_auto_topic_creation is False  # describing must not create
    run(main())


def test_a_repeating_cursor_is_a_protocol_error():
    async def main():
        cluster = Cluster()
        cluster.fake.handlers[75] = lambda call: DescribeTopicPartitionsResponse(
            next_cursor=DescribeTopicPartitionsResponse.Cursor(topic_name="a", partition_index=1))
        async with cluster.fake, Client(cluster.fake.address) as c:
            with pytest.raises(ProtocolError, match=r"cursor \('a', 1\) repeats"):
                await c.describe_topics(["a"])
    run(main())


def test_create_topics_kip_464_and_525():
    async def main():
        cluster = Cluster()
        async with cluster.fake, Client(cluster.fake.address) as c:
            out = await c.create_topics([NewTopic("x"), NewTopic("y", partitions=2, configs={"retention.ms": "9"}),
                                         NewTopic("a", 1, 1)])
        assert cluster.created == [("x", -1, -1), ("y", 2, -1), ("a", 1, 1)]
        assert [(r.name, r.error, r.partitions, r.replication_factor) for r in out] == [
            ("x", ErrorCode.NONE, 5, 1), ("y", ErrorCode.NONE, 2, 1), ("a", ErrorCode.TOPIC_ALREADY_EXISTS, None, None)]
        assert out[1].configs is not None and out[1].configs["retention.ms"].value == "9"
        assert out[2].message == "Topic 'a' already exists."
        assert out[0].configs == {} and out[0].config_error == ErrorCode.NONE
    run(main())


def test_create_topics_reports_withheld_configs():
    async def main():
        cluster = Cluster()
        async with cluster.fake, Client(cluster.fake.address) as c:
            (out,) = await c.create_topics([NewTopic("secret-1", 1, 1)])
        assert out.ok and out.config_error == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert out.configs is None and out.partitions is None  # -1 on the wire: not told
    run(main())


@pytest.mark.parametrize("version", [0, 3])
def test_create_topics_before_kip_464_fails_only_the_topics_needing_defaults(version):
    async def main():
        cluster = Cluster()
        cluster.apis[19] = (0, version)
        async with cluster.fake, Client(cluster.fake.address) as c:
            out = await c.create_topics([NewTopic("x"), NewTopic("y", 2, 1), NewTopic("z", replication_factor=1)])
        assert [r.error for r in out] == [ErrorCode.UNSUPPORTED_VERSION, ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION]
        assert f"up to v{version}" in out[0].message and "KIP-464" in out[0].message
        assert cluster.created == [("y", 2, 1)]
        assert out[1].partitions is None and out[1].configs is None  # KIP-525 came with v5
    run(main())


def test_delete_add_partitions_and_configs_give_per_topic_values():
    async def main():
        cluster = Cluster()
        async with cluster.fake:
            for delete_version in (5, 6):
                cluster.apis[20] = (0, delete_version)
                cluster.topics.update(TOPICS)
                async with Client(cluster.fake.address) as c:
                    deleted = await c.delete_topics(["a", "nope"])
                    assert [(r.name, r.error) for r in deleted] == [("a", ErrorCode.NONE),
                                                                    ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
            assert [call.version for call in cluster.fake.calls if call.api_key == 20] == [5, 6]
            cluster.topics.update(TOPICS)
            async with Client(cluster.fake.address) as c:
                grown = await c.create_partitions({"a": 5, "b": 1, "nope": 2})
                configs = await c.describe_configs(["a", "nope"])
        assert [r.error for r in grown] == [ErrorCode.NONE, ErrorCode.INVALID_PARTITIONS,
                                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        assert grown[1].message == "Topic already has 1 partitions." and cluster.topics["a"] == 5
        assert configs[0].ok and configs[0].configs["retention.ms"].value == "1000"
        assert configs[0].configs["cleanup.policy"].default and not configs[0].configs["retention.ms"].default
        assert configs[1].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run(main())


def test_admin_requests_go_to_the_advertised_controller():
    async def main():
        boot, controller = Cluster(), Cluster()
        async with boot.fake, controller.fake:
            boot.fake.handlers[3] = lambda call: MetadataResponse(
                brokers=[MetadataResponse.Broker(node_id=1, host="127.0.0.1", port=boot.fake.port),
                         MetadataResponse.Broker(node_id=2, host="127.0.0.1", port=controller.fake.port)],
                controller_id=2)
            async with Client(boot.fake.address) as c:
                await c.create_topics([NewTopic("new", 1, 1)])
        assert "new" in controller.topics and "new" not in boot.topics
        assert [call.api_key for call in boot.fake.calls] == [18, 3]
    run(main())


def test_sync_client_and_cli_tables():
    async def serve_and_run():
        import asyncio

        cluster = Cluster()
        async with cluster.fake:
            loop = asyncio.get_running_loop()

            def work():
                with SyncClient(cluster.fake.address) as c:
                    assert [t.name for t in c.list_topics()] == ["a", "b"]
                outs = []
                for argv in (["list"], ["describe", "a", "--configs"], ["create", "n", "--config", "k=v"],
                             ["add-partitions", "n", "--count", "1", "--json"], ["delete", "n", "zz"]):
                    buf = io.StringIO()
                    parser = __import__("argparse").ArgumentParser()
                    topics_cli.add_arguments(parser)
                    args = parser.parse_args([argv[0], "--bootstrap", cluster.fake.address, *argv[1:]])
                    outs.append((topics_cli.run(args, out=buf), buf.getvalue()))
                return outs

            return await loop.run_in_executor(None, work)

    outs = run(serve_and_run())
    (rc_list, listed), (rc_desc, described), (rc_create, created), (rc_grow, grown), (rc_del, deleted) = outs
    assert rc_list == 0 and listed.splitlines() == ["TOPIC  INTERNAL", "-----  --------", "a", "b"]
    assert rc_desc == 0 and described.splitlines()[2:5] == ["a      0          1       1         1", "a      1          1       1         1",
                                                            "a      2          1       1         1"]
    assert "configs of a" in described and "cleanup.policy  delete  default" in described
    assert rc_create == 0 and created.splitlines()[2].split() == ["n", "NONE", "5", "1"]
    assert rc_grow == 1 and json.loads(grown)[0]["error"] == "INVALID_PARTITIONS"
    assert rc_del == 1 and [line.split()[:2] for line in deleted.splitlines()[2:]] == [
        ["n", "NONE"], ["zz", "UNKNOWN_TOPIC_OR_PARTITION"]]


def test_cli_reports_an_unreachable_cluster(capsys):
    from kcodec import cli

    assert cli.main(["topics", "list", "--bootstrap", "127.0.0.1:1", "--timeout", "2"]) == 2
    assert "no bootstrap broker answered: 127.0.0.1:1" in capsys.readouterr().err
