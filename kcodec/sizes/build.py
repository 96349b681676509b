"""Real message instances from the cluster model: the responses a broker would send, the requests a client sends.

The size arithmetic (``measure``) measures its units on messages made by these same functions, so a
full encode of ``metadata_response(cluster)`` and the per-topic sum can only agree or expose a bug.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, NamedTuple, Optional, Sequence

from kcodec.messages import (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, ListTopicsResponse,
                             MetadataRequest, MetadataResponse)

from .model import Cluster, Partition, Topic

DTP = DescribeTopicPartitionsResponse
DEFAULT_PARTITION_LIMIT = 2000  # Kafka's default response_partition_limit and max.request.partition.size.limit


def _described(cls: Any, t: Topic, parts: Sequence[Partition]) -> Any:
    """A topic with its partitions, as Metadata and DescribeTopicPartitions both describe it."""
    return cls.Topic(
        name=t.name, topic_id=t.topic_id, is_internal=t.internal,
        partitions=[cls.Partition(partition_index=p.partition_index, leader_id=p.leader, leader_epoch=p.leader_epoch,
                                  replica_nodes=list(p.replicas), isr_nodes=list(p.isr),
                                  offline_replicas=list(p.offline)) for p in parts])


def metadata_topic(t: Topic, parts: Sequence[Partition]) -> MetadataResponse.Topic:
    return _described(MetadataResponse, t, parts)  # type: ignore[no-any-return]


def metadata_response(cluster: Cluster, topics: Optional[Iterable[Topic]] = None) -> MetadataResponse:
    """The answer to an all-topics Metadata request (one message for every version: the fields a version
    lacks are ignorable, so each version writes what it has)."""
    return MetadataResponse(
        brokers=[MetadataResponse.Broker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in cluster.brokers],
        cluster_id=cluster.cluster_id, controller_id=cluster.controller_id,
        topics=[metadata_topic(t, t.partitions) for t in (cluster.topics() if topics is None else topics)])


def list_topics_topic(t: Topic, parts: Sequence[Partition] = ()) -> ListTopicsResponse.Topic:
    return ListTopicsResponse.Topic(name=t.name, internal=t.internal)


def list_topics_response(cluster: Cluster, topics: Optional[Iterable[Topic]] = None) -> ListTopicsResponse:
    """KIP-142's answer with ``list_internal`` true: every topic's name and internal flag."""
    return ListTopicsResponse(topics=[list_topics_topic(t) for t in (cluster.topics() if topics is None else topics)])


def dtp_topic(t: Topic, parts: Sequence[Partition]) -> DTP.Topic:
    return _described(DTP, t, parts)  # type: ignore[no-any-return]


class Page(NamedTuple):
    """One DescribeTopicPartitions response: (topic, first partition, end) spans and the next cursor."""
    spans: list[tuple[Topic, int, int]]
    next_cursor: Optional[tuple[str, int]]


def dtp_pages(cluster: Cluster, limit: int = DEFAULT_PARTITION_LIMIT) -> Iterator[Page]:
    """The pages an admin client reads for all topics, as KIP-966 has the broker cut them.

    Topics go in name order; a page takes partitions until ``limit`` is used up. A topic cut short ends
    the page with the cursor at its next partition; a page that fills up exactly at the end of a topic
    ends with the cursor at the next topic's partition 0 (none after the last topic).
    """
    if limit < 1:
        raise ValueError(f"response_partition_limit must be >= 1, not {limit}")
    spans: list[tuple[Topic, int, int]] = []
    remaining = limit
    for t in cluster.topics(cluster.by_name()):
        start = 0
        while True:
            if remaining == 0:
                yield Page(spans, (t.name, start))
                spans, remaining = [], limit
            n = len(t.partitions) - start
            if n <= remaining:
                spans.append((t, start, len(t.partitions)))
                remaining -= n
                break
            spans.append((t, start, start + remaining))
            yield Page(spans, (t.name, start + remaining))
            start += remaining
            spans, remaining = [], limit
    yield Page(spans, None)


def dtp_response(page: Page) -> DTP:
    cursor = None if page.next_cursor is None else DTP.Cursor(topic_name=page.next_cursor[0],
                                                              partition_index=page.next_cursor[1])
    return DTP(topics=[dtp_topic(t, t.partitions[a:b]) for t, a, b in page.spans], next_cursor=cursor)


def dtp_request(limit: int, cursor: Optional[tuple[str, int]]) -> DescribeTopicPartitionsRequest:
    """The request for the page at ``cursor`` (all topics: the topic list is empty)."""
    c = None if cursor is None else DescribeTopicPartitionsRequest.Cursor(topic_name=cursor[0],
                                                                          partition_index=cursor[1])
    return DescribeTopicPartitionsRequest(topics=[], response_partition_limit=limit, cursor=c)


def request_topic_by_name(t: Topic, parts: Sequence[Partition] = ()) -> MetadataRequest.Topic:
    return MetadataRequest.Topic(name=t.name)


def request_topic_by_id(t: Topic, parts: Sequence[Partition] = ()) -> MetadataRequest.Topic:
    return MetadataRequest.Topic(topic_id=t.topic_id, name=None)


def metadata_request(cluster: Cluster, by: str = "name", topics: Optional[Iterable[Topic]] = None) -> MetadataRequest:
    """A Metadata request naming every topic, by name (all versions) or by topic id (v10+)."""
    make = {"name": request_topic_by_name, "id": request_topic_by_id}[by]
    return MetadataRequest(topics=[make(t) for t in (cluster.topics() if topics is None else topics)])
