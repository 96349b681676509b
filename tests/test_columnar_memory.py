"""The Cython columnar engine's memory: each column's first allocation sized from the layout's last run, and
the kept blocks of dropped columns following the shapes being decoded (kcodec/columnar/_columnar_memory.pxi)."""

from __future__ import annotations

import pytest

import kcodec
from kcodec import columnar
from kcodec.messages import DescribeTopicPartitionsResponse, MetadataResponse

from test_columnar import assert_same_tables, payload

pytestmark = pytest.mark.skipif(columnar._columnar is None, reason="the Cython engine is not built")


def counts() -> tuple[int, int]:
    return columnar._columnar.memory_counts()  # (column growths, large blocks no kept block served)


def body(shared, times: int, partitions: int = 10) -> bytes:
    """The 1k-topic Metadata v12 vector, its topics repeated ``times`` with ``partitions`` each."""
    md = kcodec.decode(MetadataResponse, payload(shared, 12), 12)
    topics = [t for t in md.topics for _ in range(times)]
    for t in topics[:1]:
        t.partitions = (t.partitions * partitions)[:partitions]
    return kcodec.encode(MetadataResponse(brokers=md.brokers, topics=topics), 12)


def test_second_run_sizes_columns_from_the_first(shared):
    """A fresh layout grows its columns step by step; its next run takes each column's room at once."""
    data = payload(shared, 12)
    lay = columnar._Layout(columnar._layout(MetadataResponse, 12, False).prog, None)
    before = counts()[0]
    columnar._columnar.tables(lay.cython, lay.result, data)
    first = counts()[0] - before
    before = counts()[0]
    columnar._columnar.tables(lay.cython, lay.result, data)
    second = counts()[0] - before
    assert first > 100 and second * 4 <= first, (first, second)


def test_hint_from_another_shape_gives_the_same_tables(shared):
    """The first allocations follow the last run's shape; a smaller, larger or skewed payload decodes alike."""
    big, small, skewed = body(shared, 3), kcodec.encode(MetadataResponse(), 12), body(shared, 1, partitions=400)
    for data in (big, small, skewed, big, payload(shared, 12)):
        want = columnar.tables(MetadataResponse, data, 12, engine="python")
        assert_same_tables(columnar.tables(MetadataResponse, data, 12, engine="cython"), want)


def fresh_blocks_once_warm(cls, data: bytes, version: int) -> int:
    """Large blocks no kept block served, over three decodes that follow three others of the same bytes."""
    for _ in range(3):
        columnar.tables(cls, data, version, engine="cython")
    before = counts()[1]
    for _ in range(3):
        columnar.tables(cls, data, version, engine="cython")
    return counts()[1] - before


def test_repeated_decodes_take_no_fresh_blocks(shared):
    """Decoding the same shape again takes every large block from the kept ones: a block that reuse hands
    out is not trimmed below the size it served, else each run shrinks one and the next finds none."""
    columnar.release_memory()
    assert fresh_blocks_once_warm(MetadataResponse, body(shared, 10), 12) == 0
    columnar.release_memory()


def test_switching_messages_reaches_a_steady_state(shared):
    """After Metadata, DescribeTopicPartitions of the same topics soon takes every large block from the kept
    ones (a column that took another's block, trimmed, left that one to fault in fresh pages every run)."""
    columnar.release_memory()
    meta = body(shared, 10)
    dtp = kcodec.encode(DescribeTopicPartitionsResponse(topics=[
        DescribeTopicPartitionsResponse.Topic(name=t.name, topic_id=t.topic_id, partitions=[
            DescribeTopicPartitionsResponse.Partition(
                partition_index=p.partition_index, leader_id=p.leader_id, leader_epoch=p.leader_epoch,
                replica_nodes=p.replica_nodes, isr_nodes=p.isr_nodes) for p in t.partitions])
        for t in kcodec.decode(MetadataResponse, meta, 12).topics]), 0)
    for _ in range(3):
        columnar.tables(MetadataResponse, meta, 12, engine="cython")
    assert fresh_blocks_once_warm(DescribeTopicPartitionsResponse, dtp, 0) == 0
    columnar.release_memory()


def test_kept_blocks_follow_the_current_shape(shared):
    """With the kept room full of blocks of one size, decodes of another size displace them (oldest first)
    instead of allocating fresh blocks every time; the room stays bounded."""
    columnar.release_memory()
    old, new = body(shared, 10), body(shared, 7)
    held = [columnar.tables(MetadataResponse, old, 12, engine="cython") for _ in range(4)]  # over 16 MiB
    del held
    assert columnar.kept_memory()[1] > 12 << 20
    assert fresh_blocks_once_warm(MetadataResponse, new, 12) == 0
    blocks, kept = columnar.kept_memory()
    assert blocks <= 64 and kept <= 16 << 20
    columnar.release_memory()


def test_blocks_under_256_kib_are_left_to_malloc(shared):
    """A 1k-topic decode's columns (40-120 KB each) go back to malloc, which hands the blocks freed last out
    again while they are still in the caches; only larger ones are kept (a 10k-topic decode's)."""
    columnar.release_memory()
    columnar.tables(MetadataResponse, payload(shared, 12), 12, engine="cython")
    assert columnar.kept_memory() == (0, 0)
    columnar.tables(MetadataResponse, body(shared, 10), 12, engine="cython")
    blocks, kept = columnar.kept_memory()
    assert blocks > 0 and kept >= blocks * (256 << 10)
    columnar.release_memory()
