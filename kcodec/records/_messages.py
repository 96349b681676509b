"""The records fields of kcodec's messages: batches out of FetchResponse, ShareFetchResponse and
ProduceRequest (the fields hold bytes, or memoryviews when decoded with ``zero_copy=True``)."""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple

from ._aborted import filter_aborted
from ._reader import read_batches


class PartitionRecords(NamedTuple):
    """The batches of one partition of a message: topic (name, or topic id where the version has no names),
    partition index, the complete batches, the size of a cut-off tail, and the message's partition struct."""
    topic: Any
    partition: int
    batches: list
    partial_bytes: int
    data: Any


def fetched(response: Any, *, read_committed: bool = False, **options: Any) -> Iterator[PartitionRecords]:
    """Every partition of a FetchResponse or ShareFetchResponse with its batches; ``read_committed`` drops
    aborted transactions and control batches (Fetch's AbortedTransactions). ``options`` go to read_batches."""
    for topic in response.responses:
        name = getattr(topic, "topic", None) or topic.topic_id
        for p in topic.partitions:
            got = _read(name, p.partition_index, p, options)
            if read_committed:
                got = got._replace(batches=list(filter_aborted(got.batches, getattr(p, "aborted_transactions", None)
                                                               or ())))
            yield got


def produced(request: Any, **options: Any) -> Iterator[PartitionRecords]:
    """Every partition of a ProduceRequest with its batches (a partial batch in a request is reported as in
    a Fetch; a broker would refuse it)."""
    for topic in request.topic_data:
        name = getattr(topic, "name", None) or topic.topic_id
        for p in topic.partition_data:
            yield _read(name, p.index, p, options)


def _read(topic: Any, partition: int, data: Any, options: dict) -> PartitionRecords:
    if data.records is None:
        return PartitionRecords(topic, partition, [], 0, data)
    got = read_batches(data.records, **options)
    return PartitionRecords(topic, partition, got.batches, got.partial_bytes, data)


def records_field(*batches: Any) -> bytes:
    """Built batches (bytes, or BatchBuilders) concatenated into the value of a ``records`` field."""
    return b"".join(b.build() if hasattr(b, "build") else bytes(b) for b in batches)
