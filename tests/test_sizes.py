"""kcodec.sizes: the cluster model, exact per-topic sums against full encodes, KIP-966 paging, the figures."""

from __future__ import annotations

import uuid

import pytest

import kcodec
from kcodec.messages import (DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataRequest,
                             MetadataResponse)
from kcodec.sizes import (Broker, Dist, ListedCluster, Partition, SyntheticCluster, Topic, dtp_pages,
                          dtp_request, dtp_response, list_topics_response, measure, metadata_request,
                          metadata_response)
from kcodec.sizes.measure import versions_of


@pytest.fixture(scope="module")
def vector_cluster(shared):
    data = (shared / "vectors" / "metadata" / "metadata_v12_1k_body.bin").read_bytes()
    return ListedCluster.from_metadata(kcodec.decode(MetadataResponse, data, 12))


def test_the_thousand_topic_figures(vector_cluster, shared):
    sizes = measure(vector_cluster)
    assert (sizes.metadata[1], sizes.metadata[12], sizes.list_topics[0]) == (457_655, 474_672, 32_045)
    for v in (1, 12):  # and they are the payloads' own lengths
        assert sizes.metadata[v] == len((shared / "vectors" / "metadata" / f"metadata_v{v}_1k_body.bin").read_bytes())
    assert (sizes.topics, sizes.partitions, sizes.dtp_pages) == (1000, 10_000, 5)


def test_v1_payload_gives_the_same_cluster_sizes(shared):
    data = (shared / "vectors" / "metadata" / "metadata_v1_1k_body.bin").read_bytes()
    sizes = measure(ListedCluster.from_metadata(kcodec.decode(MetadataResponse, data, 1)), metadata_versions=[1])
    assert sizes.metadata == {1: 457_655} and sizes.list_topics[0] == 32_045


CLUSTERS = {
    "vector-like": dict(topic_count=40),
    # 130 topics: the flexible topics array's length takes two bytes; 120-135 partitions: so do some partitions arrays
    "varint-boundaries": dict(topic_count=130, partitions=(1, 3), name_lengths=(8, 12)),
    "wide-topics": dict(topic_count=3, partitions=(120, 135), replication_factor=1, broker_count=1, racks=0),
    "unhealthy": dict(topic_count=25, partitions={1: 1, 7: 2, 30: 1}, replication_factor=5, broker_count=9, racks=4,
                      internal_share=0.3, shrunk_isr_share=0.4, offline_share=0.3, seed=11),
    "no-racks": dict(topic_count=10, racks=0, name_lengths=200, cluster_id=None),
}


def _non_ascii_cluster() -> ListedCluster:
    brokers = [Broker(1, "brökér-1", 9092, None), Broker(2, "b2", 9093, "räck")]
    topics = []
    for i, name in enumerate(["tópico-ü", "話題", "plain", "🙂" * 5, "x" * 249]):
        parts = tuple(Partition(p, 1, p, (1, 2), (1,) if p % 2 else (1, 2), (2,) if p % 3 == 0 else ())
                      for p in range(i * 3 + 1))
        topics.append(Topic(name, uuid.UUID(int=i + 1), i == 3, parts))
    return ListedCluster(brokers, topics, "clüster", 1)


def _cluster(name: str):
    return _non_ascii_cluster() if name == "non-ascii" else SyntheticCluster(**CLUSTERS[name])


@pytest.mark.parametrize("name", [*CLUSTERS, "non-ascii"])
def test_sums_agree_with_full_encodes(name):
    cluster = _cluster(name)
    sizes = measure(cluster, partition_limit=17)
    meta = metadata_response(cluster)
    for v in versions_of(MetadataResponse):
        assert sizes.metadata[v] == len(kcodec.encode(meta, v)), f"Metadata v{v}"
    lt = list_topics_response(cluster)
    assert sizes.list_topics == {v: len(kcodec.encode(lt, v)) for v in versions_of(ListTopicsResponse)}
    by_name, by_id = metadata_request(cluster, "name"), metadata_request(cluster, "id")
    assert sizes.request_by_name == {v: len(kcodec.encode(by_name, v)) for v in versions_of(MetadataRequest)}
    assert sizes.request_by_id == {v: len(kcodec.encode(by_id, v)) for v in versions_of(MetadataRequest, 10)}
    pages = [kcodec.encode(dtp_response(p), 0) for p in dtp_pages(cluster, 17)]
    assert (sizes.dtp_pages, sizes.dtp_bytes, sizes.dtp_largest) == (len(pages), sum(map(len, pages)),
                                                                       max(map(len, pages)))
    assert sizes.partitions == sum(len(t.partitions) for t in cluster.topics())


def _read_all_pages(cluster, limit):
    """An admin client's loop: request, decode, follow the cursor until there is none."""
    pages, cursor = {}, None
    for page in dtp_pages(cluster, limit):
        pages[cursor] = kcodec.decode(DescribeTopicPartitionsResponse, kcodec.encode(dtp_response(page), 0), 0)
        req = kcodec.decode(type(dtp_request(limit, cursor)), kcodec.encode(dtp_request(limit, cursor), 0), 0)
        assert req.response_partition_limit == limit
        nxt = pages[cursor].next_cursor
        cursor = None if nxt is None else (nxt.topic_name, nxt.partition_index)
    return list(pages.values())


@pytest.mark.parametrize("limit", [1, 3, 10, 25, 2000])
def test_dtp_pages_follow_kip_966(limit):
    cluster = SyntheticCluster(topic_count=12, partitions=(1, 14), seed=3)
    pages = _read_all_pages(cluster, limit)
    seen = [(t.name, p.partition_index) for page in pages for t in page.topics for p in t.partitions]
    expected = sorted((t.name, p.partition_index) for t in cluster.topics() for p in t.partitions)
    assert seen == expected  # every partition once, topics by name, partitions in order
    for page in pages[:-1]:
        assert sum(len(t.partitions) for t in page.topics) == limit and page.next_cursor is not None
        first_unseen = seen[sum(len(t.partitions) for pg in pages[:pages.index(page) + 1] for t in pg.topics)]
        assert (page.next_cursor.topic_name, page.next_cursor.partition_index) == first_unseen
    assert pages[-1].next_cursor is None and 0 < sum(len(t.partitions) for t in pages[-1].topics) <= limit
    assert len(pages) == -(-len(expected) // limit)


def test_a_page_filled_at_a_topic_end_points_at_the_next_topic():
    cluster = SyntheticCluster(topic_count=3, partitions=10)
    pages = list(dtp_pages(cluster, 10))
    names = sorted(t.name for t in cluster.topics())
    assert [p.next_cursor for p in pages] == [(names[1], 0), (names[2], 0), None]
    assert list(dtp_pages(cluster, 30))[0].next_cursor is None
    with pytest.raises(ValueError):
        list(dtp_pages(cluster, 0))


def test_model_is_deterministic_and_shaped_as_asked():
    a = SyntheticCluster(topic_count=200, partitions=(1, 20), replication_factor=3, broker_count=6, racks=3,
                         internal_share=0.1, shrunk_isr_share=0.2, offline_share=0.1, seed=5)
    b = SyntheticCluster(topic_count=200, partitions=(1, 20), replication_factor=3, broker_count=6, racks=3,
                         internal_share=0.1, shrunk_isr_share=0.2, offline_share=0.1, seed=5)
    assert list(a.topics()) == list(b.topics())
    assert list(a.topics()) != list(a.with_topics(200).__class__(topic_count=200, seed=6).topics())
    topics = list(a.topics())
    assert len({t.name for t in topics}) == 200 and all(20 <= len(t.name) <= 40 for t in topics)
    assert {t.internal for t in topics} == {True, False} and all(t.name.startswith("__") for t in topics if t.internal)
    racks = {b.node_id: b.rack for b in a.brokers}
    assert len(set(racks.values())) == 3
    parts = [p for t in topics for p in t.partitions]
    assert all(1 <= len(t.partitions) <= 20 for t in topics)
    for p in parts:
        assert len(set(p.replicas)) == 3 and p.leader == p.replicas[0]
        assert len({racks[r] for r in p.replicas}) == 3  # rack-aware placement: one replica per rack
        assert set(p.isr) | set(p.offline) <= set(p.replicas) and not set(p.isr) & set(p.offline)
    assert any(p.offline for p in parts) and any(len(p.isr) + len(p.offline) < 3 for p in parts)
    # topic i is the same whichever way it is reached
    assert a.topic(17) == topics[17] and a.name(17) == topics[17].name


def test_model_refuses_what_cannot_exist():
    with pytest.raises(ValueError, match="replication factor"):
        SyntheticCluster(replication_factor=4, broker_count=3)
    with pytest.raises(ValueError, match="unique"):
        SyntheticCluster(topic_count=100_000, name_lengths=4)
    with pytest.raises(ValueError, match="share"):
        SyntheticCluster(shrunk_isr_share=1.5)
    with pytest.raises(ValueError, match="at least one partition"):
        SyntheticCluster(partitions=0)
    with pytest.raises(ValueError, match="not a distribution"):
        Dist("ten")
    assert Dist("1-100").spec == (1, 100) and Dist("1:50,10:30").spec == {1: 50.0, 10: 30.0} and Dist("7").spec == 7
    with pytest.raises(IndexError):
        SyntheticCluster(topic_count=3).topic(3)


class _Counted(tuple):
    """A replica tuple that counts how many exist at once (tuple subclasses can have __del__)."""
    live = peak = 0

    def __new__(cls, items):
        cls.live += 1
        cls.peak = max(cls.peak, cls.live)
        return super().__new__(cls, items)

    def __del__(self):
        type(self).live -= 1


class _StreamedCluster(SyntheticCluster):
    def topic(self, i):
        t = super().topic(i)
        return t._replace(partitions=tuple(p._replace(replicas=_Counted(p.replicas)) for p in t.partitions))


def test_measure_streams_topics_instead_of_holding_the_cluster():
    cluster = _StreamedCluster(topic_count=5000, partitions=1, name_lengths=(20, 40))
    _Counted.live = _Counted.peak = 0
    sizes = measure(cluster, partition_limit=50)
    assert sizes.topics == 5000 and sizes.dtp_pages == 100
    # at most two pages (the one summed, the next being cut: 100 topics) plus a representative per name
    # length (21) and partition shape: never the 5,000 topics
    assert 50 <= _Counted.peak <= 100 + 21 + 5
