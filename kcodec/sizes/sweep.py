"""A sweep over topic counts: bytes of every message that lists the topics, and decode/encode times from
real decodes (up to a limit), one row per (topic count, message)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Optional, Sequence

import kcodec

from kcodec.cli.progress import Progress

from . import build
from .measure import measure
from .model import SyntheticCluster
from .timing import Payload, time_backends

REFERENCE = "ListTopics v0"  # ratios are to KIP-142's response


@dataclasses.dataclass
class Row:
    topics: int
    partitions: int
    message: str
    bytes: int
    ratio: float                 # bytes / bytes of ListTopics v0 for the same cluster
    pages: int = 1               # responses (DescribeTopicPartitions is paged)
    decode_ms: dict[str, float] = dataclasses.field(default_factory=dict)  # by backend
    encode_ms: dict[str, float] = dataclasses.field(default_factory=dict)


def parse_counts(text: str) -> list[int]:
    """``10,100,1k,10k,100k`` -> [10, 100, 1000, 10000, 100000]."""
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        mult = 1
        if part.endswith("k"):
            part, mult = part[:-1], 1000
        elif part.endswith("m"):
            part, mult = part[:-1], 1_000_000
        try:
            n = int(float(part) * mult)
        except ValueError:
            raise ValueError(f"not a topic count: {part!r} (use 10,100,1k,10k,100k)") from None
        if n < 0:
            raise ValueError(f"a topic count is >= 0, not {n}")
        out.append(n)
    return out


def labels(metadata_versions: Sequence[int]) -> list[str]:
    return ([f"Metadata v{v}" for v in metadata_versions] + ["ListTopics v0", "ListTopics v1",
            "DescribeTopicPartitions v0", "MetadataRequest v12 names", "MetadataRequest v12 ids"])


def payloads(cluster: Any, metadata_versions: Sequence[int], partition_limit: int) -> list[Payload]:
    """Every message of the sweep, encoded, for real decodes."""
    meta = build.metadata_response(cluster)
    out = [Payload(f"Metadata v{v}", "MetadataResponse", v, [kcodec.encode(meta, v)]) for v in metadata_versions]
    del meta
    lt = build.list_topics_response(cluster)
    out += [Payload(f"ListTopics v{v}", "ListTopicsResponse", v, [kcodec.encode(lt, v)]) for v in (0, 1)]
    out.append(Payload("DescribeTopicPartitions v0", "DescribeTopicPartitionsResponse", 0,
                       [kcodec.encode(build.dtp_response(p), 0) for p in build.dtp_pages(cluster, partition_limit)]))
    for by in ("name", "id"):
        out.append(Payload(f"MetadataRequest v12 {by}s", "MetadataRequest", 12,
                           [kcodec.encode(build.metadata_request(cluster, by), 12)]))
    return out


def sweep(base: SyntheticCluster, counts: Iterable[int], metadata_versions: Sequence[int] = (1, 12),
          partition_limit: int = build.DEFAULT_PARTITION_LIMIT, decode_max: int = 10_000, repeat: int = 3,
          backends: Sequence[str] = ("cython", "python"), progress: Optional[Progress] = None,
          check: Optional[Callable[[Payload, int], None]] = None) -> list[Row]:
    """Rows for each topic count; times only for counts up to ``decode_max`` (and none if ``backends`` is empty)."""
    progress = progress or Progress(enabled=False)
    rows: list[Row] = []
    for n in counts:
        cluster = base.with_topics(n)
        tag = f"{n:,} topics"
        with progress.bar(n, f"{tag}: sizes", "topics") as bar:
            s = measure(cluster, partition_limit, metadata_versions, (0, 1), (12,), progress=bar.to)
        sizes = {f"Metadata v{v}": s.metadata[v] for v in metadata_versions}
        sizes.update({"ListTopics v0": s.list_topics[0], "ListTopics v1": s.list_topics[1],
                      "DescribeTopicPartitions v0": s.dtp_bytes, "MetadataRequest v12 names": s.request_by_name[12],
                      "MetadataRequest v12 ids": s.request_by_id[12]})
        ref = sizes[REFERENCE]
        batch = [Row(n, s.partitions, label, b, b / ref if ref else float("nan"),
                     s.dtp_pages if label.startswith("Describe") else 1) for label, b in sizes.items()]
        if n <= decode_max and backends:
            progress.say(f"{tag}: encoding payloads")
            made = payloads(cluster, metadata_versions, partition_limit)
            for p in made:  # the real payloads must have the sizes the sums gave
                if sum(map(len, p.bodies)) != sizes[p.label]:
                    raise AssertionError(f"{p.label} at {n} topics: {sum(map(len, p.bodies))} bytes encoded, "
                                         f"{sizes[p.label]} summed")
            progress.say(f"{tag}: timing decodes ({', '.join(backends)})")
            times = time_backends(made, repeat, backends=backends)
            for row in batch:
                for backend, res in times.items():
                    row.decode_ms[backend] = res[row.message]["decode"] * 1e3
                    row.encode_ms[backend] = res[row.message]["encode"] * 1e3
        rows += batch
        progress.say(f"{tag}: done")
    progress.close()
    return rows
