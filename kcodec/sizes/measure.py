"""Exact encoded sizes of whole responses as per-topic sums, without building the whole response.

The size of a topics array is a sum over its elements, and an element's size depends only on a few
facts: its name's UTF-8 length, its partition count, and each partition's replica/ISR/offline counts.
A ``Tally`` counts those facts while the topics stream past; each distinct fact is measured once with
``kcodec.encoded_size`` on a real one-topic (or one-partition) message, and the totals add up. The only
arithmetic of our own is the array length prefix: a fixed int32 in old versions, and in flexible
versions a varint of n+1, whose size grows at 127, 16,383, ... elements.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from typing import Any, Callable, Iterable, Optional, Sequence

import kcodec
from kcodec.messages import (DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataRequest,
                             MetadataResponse)

from . import build
from .model import Cluster, Partition, Topic

Item = Callable[[Topic, Sequence[Partition]], Any]


def uvarint_size(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def is_flexible(cls: Any, version: int) -> bool:
    return cls.FLEXIBLE_FROM is not None and version >= cls.FLEXIBLE_FROM


def length_growth(n: int, flexible: bool) -> int:
    """Bytes the length prefix of an n-element array takes beyond an empty one's."""
    return uvarint_size(n + 1) - 1 if flexible else 0


class Tally:
    """The facts a topics array's size depends on, counted as topics stream past."""

    def __init__(self) -> None:
        self.topics = 0
        self.partitions = 0
        self.names: dict[int, list[Any]] = {}      # UTF-8 length of the name -> [a topic, count]
        self.counts: Counter[int] = Counter()      # partitions in a topic -> topics
        self.shapes: dict[tuple[int, int, int], list[Any]] = {}  # (replicas, isr, offline) -> [a partition, count]

    def add(self, t: Topic, parts: Sequence[Partition]) -> None:
        name = t.name
        size = len(name) if name.isascii() else len(name.encode())
        entry = self.names.get(size)
        if entry is None:
            self.names[size] = [t, 1]
        else:
            entry[1] += 1
        self.topics += 1
        self.partitions += len(parts)
        self.counts[len(parts)] += 1
        shapes = self.shapes
        for p in parts:
            key = (len(p.replicas), len(p.isr), len(p.offline))
            e = shapes.get(key)
            if e is None:
                shapes[key] = [p, 1]
            else:
                e[1] += 1


# (message class, item maker, version, 'topic' | 'partition', key) -> bytes of one element
_UNITS: dict[tuple[Any, ...], int] = {}


def array_size(tally: Tally, cls: Any, version: int, shell: Callable[[list[Any]], Any], item: Item,
               nested: bool) -> int:
    """``encoded_size(shell([item(t, t's partitions) for every topic tallied]), version)``, exactly.

    ``shell(items)`` makes the message around the topics array; ``item(topic, partitions)`` one element;
    ``nested``: elements hold a partitions array (Metadata, DescribeTopicPartitions).
    """
    flexible = is_flexible(cls, version)
    base = kcodec.encoded_size(shell([]), version)
    total = base + length_growth(tally.topics, flexible)
    rep: Optional[Topic] = None
    for nbytes, (t, count) in tally.names.items():
        rep = rep or t
        key: tuple[Any, ...] = (cls, item, version, "topic", nbytes)
        unit = _UNITS.get(key)
        if unit is None:
            unit = _UNITS[key] = kcodec.encoded_size(shell([item(t, ())]), version) - base - length_growth(1, flexible)
        total += count * unit
    if nested and rep is not None:
        total += sum(count * length_growth(n, flexible) for n, count in tally.counts.items())
        empty = None
        for shape, (p, count) in tally.shapes.items():
            key = (cls, item, version, "partition", *shape)
            unit = _UNITS.get(key)
            if unit is None:
                if empty is None:
                    empty = kcodec.encoded_size(shell([item(rep, ())]), version)
                unit = _UNITS[key] = (kcodec.encoded_size(shell([item(rep, (p,))]), version) - empty
                                      - length_growth(1, flexible))
            total += count * unit
    return total


def around(msg: Any) -> Callable[[list[Any]], Any]:
    """A shell for ``array_size``: ``msg`` with its topics replaced."""
    def shell(items: list[Any]) -> Any:
        out = copy.copy(msg)
        out.topics = items
        return out
    return shell


def versions_of(cls: Any, lo: int = 0) -> list[int]:
    return list(range(max(lo, cls.VALID_VERSIONS[0]), cls.VALID_VERSIONS[1] + 1))


@dataclasses.dataclass
class Sizes:
    """Bytes of every message that describes or lists all topics of one cluster (bodies, no frame header)."""
    topics: int
    partitions: int
    metadata: dict[int, int]              # MetadataResponse, by version
    list_topics: dict[int, int]           # ListTopicsResponse (KIP-142), by version
    request_by_name: dict[int, int]       # MetadataRequest naming every topic, by version
    request_by_id: dict[int, int]         # MetadataRequest giving every topic id (v10+)
    partition_limit: int                  # DescribeTopicPartitions response_partition_limit
    dtp_pages: int                        # responses needed to read every partition
    dtp_bytes: int                        # their bytes together
    dtp_largest: int                      # the largest page
    dtp_request_bytes: int                # the requests for those pages together


def measure(cluster: Cluster, partition_limit: int = build.DEFAULT_PARTITION_LIMIT,
            metadata_versions: Optional[Iterable[int]] = None, list_topics_versions: Optional[Iterable[int]] = None,
            request_versions: Optional[Iterable[int]] = None,
            progress: Optional[Callable[[int], None]] = None) -> Sizes:
    """Exact sizes for ``cluster``: one pass over its topics in name order, holding one page at a time.

    ``progress(topics_done)`` is called now and then for long clusters.
    """
    whole = Tally()
    dtp_bytes = dtp_largest = dtp_requests = pages = 0
    request_cursor: Optional[tuple[str, int]] = None
    done = 0
    for page in build.dtp_pages(cluster, partition_limit):
        tally = Tally()
        for t, a, b in page.spans:
            tally.add(t, t.partitions[a:b])
            if a == 0:
                whole.add(t, t.partitions)
                done += 1
                if progress is not None and done % 2000 == 0:
                    progress(done)
        cursor = page.next_cursor
        size = array_size(tally, DescribeTopicPartitionsResponse, 0, around(build.dtp_response(build.Page([], cursor))),
                          build.dtp_topic, True)
        pages += 1
        dtp_bytes += size
        dtp_largest = max(dtp_largest, size)
        dtp_requests += kcodec.encoded_size(build.dtp_request(partition_limit, request_cursor), 0)
        request_cursor = cursor
    if progress is not None:
        progress(done)

    meta_shell = around(build.metadata_response(cluster, []))
    meta = {v: array_size(whole, MetadataResponse, v, meta_shell, build.metadata_topic, True)
            for v in (versions_of(MetadataResponse) if metadata_versions is None else metadata_versions)}
    lt = {v: array_size(whole, ListTopicsResponse, v, lambda items: ListTopicsResponse(topics=items),
                        build.list_topics_topic, False)
          for v in (versions_of(ListTopicsResponse) if list_topics_versions is None else list_topics_versions)}
    req_versions = versions_of(MetadataRequest) if request_versions is None else list(request_versions)
    by_name = {v: array_size(whole, MetadataRequest, v, lambda items: MetadataRequest(topics=items),
                             build.request_topic_by_name, False) for v in req_versions}
    by_id = {v: array_size(whole, MetadataRequest, v, lambda items: MetadataRequest(topics=items),
                           build.request_topic_by_id, False) for v in req_versions if v >= 10}
    return Sizes(whole.topics, whole.partitions, meta, lt, by_name, by_id, partition_limit, pages, dtp_bytes,
                 dtp_largest, dtp_requests)
