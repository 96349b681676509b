"""The benchmark payloads: ../shared's 1,000-topic Metadata bodies (v1, v12) and 10,000- and 100,000-topic
v12 bodies made from them, deterministically, and cached (build/bench-payloads, or KCODEC_BENCH_CACHE);
DescribeTopicPartitions v0 responses and the Metadata v12 request naming every topic, made from those.

A large body repeats the 1,000 real topics (same partitions, replicas, ISR), each copy with its own
name (the real name with its last six characters replaced by the copy's number, so lengths stay 20-40)
and its own topic id (seeded), after the real brokers and cluster id. Topic bytes are spliced, so making
100,000 topics needs no million Python objects.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Callable

import kcodec
from kcodec._pure import _uvarint_bytes as _uvarint
from kcodec.messages import DescribeTopicPartitionsResponse, MetadataRequest, MetadataResponse

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KCODEC_SHARED", ROOT.parent / "shared"))
CACHE = Path(os.environ.get("KCODEC_BENCH_CACHE", ROOT / "build" / "bench-payloads"))
GENERATOR = "g1"  # bump when the making changes


def shared_body(version: int) -> bytes:
    return (SHARED / "vectors" / "metadata" / f"metadata_v{version}_1k_body.bin").read_bytes()


def make_v12(topics: int) -> bytes:
    """A v12 body with ``topics`` topics, copies of the 1,000 real ones."""
    base = kcodec.decode(MetadataResponse, shared_body(12), 12)
    empty = kcodec.encode(MetadataResponse(brokers=base.brokers, cluster_id=base.cluster_id,
                                           controller_id=base.controller_id, topics=[]), 12)
    assert empty.endswith(b"\x01\x00")  # an empty compact topics array, then no tagged fields
    prefix = empty[:-2]
    one_topic_prefix = len(kcodec.encode(MetadataResponse(topics=[]), 12)) - 2 + 1
    tails = []
    for t in base.topics:  # each real topic's bytes after its name, topic id and internal flag
        body = kcodec.encode(MetadataResponse(topics=[t]), 12)
        raw = body[one_topic_prefix:-1]
        name_len = raw[2] - 1
        tails.append((t.name, raw[:2], raw[3 + name_len + 16 + 1:], raw[3 + name_len + 16:3 + name_len + 17]))
    rng = random.Random(topics)
    parts = [prefix, _uvarint(topics + 1)]
    for i in range(topics):
        name, error, tail, internal = tails[i % len(tails)]
        new = (name[:-6] + f"{i:06d}").encode()
        parts += [error, _uvarint(len(new) + 1), new, rng.randbytes(16), internal, tail]
    parts.append(b"\x00")
    return b"".join(parts)


def payloads(sizes: tuple[str, ...] = ("1k", "10k", "100k"),
             say: Callable[[str], None] = lambda _: None) -> dict[tuple[str, int], bytes]:
    """{(size, version): body}: 1k at v1 and v12 from ../shared, larger ones made (and cached) at v12;
    ``say`` is told about each one made."""
    out = {("1k", 1): shared_body(1), ("1k", 12): shared_body(12)}
    for size in sizes:
        if size == "1k":
            continue
        path = CACHE / f"metadata_v12_{size}_{GENERATOR}_body.bin"
        if not path.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            say(f"benchmarks: making the {size}-topic Metadata v12 payload into {path} (once; cached)")
            tmp.write_bytes(make_v12(int(size[:-1]) * 1000))
            tmp.replace(path)
        out[(size, 12)] = path.read_bytes()
    return out


def dtp_v0(metadata_v12: bytes) -> bytes:
    """The DescribeTopicPartitions v0 response of the same topics and partitions (one page, no cursor)."""
    DTP = DescribeTopicPartitionsResponse
    md = kcodec.decode(MetadataResponse, metadata_v12, 12)
    return kcodec.encode(DTP(topics=[DTP.Topic(
        name=t.name, topic_id=t.topic_id, is_internal=t.is_internal,
        topic_authorized_operations=t.topic_authorized_operations,
        partitions=[DTP.Partition(partition_index=p.partition_index, leader_id=p.leader_id,
                                  leader_epoch=p.leader_epoch, replica_nodes=p.replica_nodes,
                                  isr_nodes=p.isr_nodes, eligible_leader_replicas=[], last_known_elr=[],
                                  offline_replicas=p.offline_replicas) for p in t.partitions])
        for t in md.topics]), 0)


def request_v12(metadata_v12: bytes) -> bytes:
    """The Metadata v12 request naming every topic of a response."""
    md = kcodec.decode(MetadataResponse, metadata_v12, 12)
    return kcodec.encode(MetadataRequest(topics=[MetadataRequest.Topic(name=t.name) for t in md.topics]), 12)


NATIVE_CASES = ("metadata_v12_1k", "metadata_v12_10k", "records_1k_none")


def native_files(folder: Path = CACHE / "native") -> Path:
    """The payloads the native anchors read (benchmarks/native/): ``<case>.bin`` for each of NATIVE_CASES,
    the same bytes kcodec's cases decode."""
    from test_records import kcodec_batch  # the benchmark's own 1,000-record batch
    from kcodec.records import Compression

    bodies = payloads(("1k", "10k"))
    made = {"metadata_v12_1k": bodies[("1k", 12)], "metadata_v12_10k": bodies[("10k", 12)],
            "records_1k_none": kcodec_batch(Compression.NONE)}
    folder.mkdir(parents=True, exist_ok=True)
    for case in NATIVE_CASES:
        path = folder / f"{case}.bin"
        if not path.exists() or path.read_bytes() != made[case]:
            path.write_bytes(made[case])
    return folder
