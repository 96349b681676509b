"""Metadata against ListTopics and DescribeTopicPartitions at 1k and 10k topics: decode time per backend, with
each payload's bytes (and pages) in extra_info; and the exact-size sweep itself (kcodec.sizes.measure).

The cluster is kcodec.sizes' model with the defaults of ../shared/vectors/metadata (10 partitions per
topic, RF 3, 6 brokers, names of 20-40 characters), seed 0. `make bench PYTEST_ARGS="-k sizes"`.
"""

from __future__ import annotations

import pytest

import kcodec
from kcodec.core.backend import available
from kcodec.core.ir import program_for
from kcodec.sizes import SyntheticCluster, measure
from kcodec.sizes.sweep import payloads

BACKENDS = sorted(available().items())
TOPICS = [1000, 10_000]
MESSAGES = ["Metadata v1", "Metadata v12", "ListTopics v0", "ListTopics v1", "DescribeTopicPartitions v0"]


@pytest.fixture(scope="session")
def sized_payloads() -> dict[int, dict[str, object]]:
    out = {}
    for n in TOPICS:
        made = payloads(SyntheticCluster(topic_count=n), (1, 12), 2000)
        out[n] = {p.label: p for p in made}
    return out


@pytest.mark.parametrize("message", MESSAGES)
@pytest.mark.parametrize("topics", TOPICS, ids=lambda n: f"{n // 1000}k")
@pytest.mark.parametrize("name,backend", BACKENDS, ids=[n for n, _ in BACKENDS])
def test_decode(benchmark, sized_payloads, name, backend, topics, message):
    benchmark.group = f"sizes {topics // 1000}k topics decode"
    p = sized_payloads[topics][message]
    prog = program_for(kcodec.message_class(name=p.class_name), p.version)
    bodies = p.bodies
    benchmark.extra_info.update(bytes=sum(map(len, bodies)), pages=len(bodies))

    def decode_all():
        return [backend.decode(prog, b) for b in bodies]

    out = benchmark(decode_all)
    assert [end for _, end in out] == [len(b) for b in bodies]


@pytest.mark.parametrize("topics", [1000, 10_000, 100_000], ids=lambda n: f"{n // 1000}k")
def test_measure(benchmark, topics):
    """Exact sizes of every message at every version, as per-topic sums (no response is built)."""
    benchmark.group = "sizes measure"
    sizes = benchmark.pedantic(measure, args=(SyntheticCluster(topic_count=topics),), rounds=1, iterations=1)
    benchmark.extra_info.update(metadata_v12=sizes.metadata[12], list_topics_v0=sizes.list_topics[0],
                                dtp_bytes=sizes.dtp_bytes, dtp_pages=sizes.dtp_pages)
    assert sizes.topics == topics
