"""``kcodec sizes``: bytes of Metadata, ListTopics and DescribeTopicPartitions from 10 to 100,000 topics.

    kcodec sizes --topics 10,100,1k,10k,100k --partitions 10 --rf 3 --brokers 6 [--format table|csv|json|markdown]
                 [--plot FILE.png]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topics", default="10,100,1k,10k,100k", help="topic counts (default 10,100,1k,10k,100k)")
    p.add_argument("--partitions", default="10", help="per topic: 10, a range 1-100, or weights 1:50,10:30,100:20")
    p.add_argument("--rf", type=int, default=3, help="replication factor")
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--racks", type=int, default=3)
    p.add_argument("--name-lengths", default="20-40", help="topic name lengths, as --partitions")
    p.add_argument("--internal-share", type=float, default=0.0, help="share of internal topics")
    p.add_argument("--shrunk-isr", type=float, default=0.02, help="share of partitions with a shrunk ISR")
    p.add_argument("--offline", type=float, default=0.0, help="share of partitions with an offline replica")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partition-limit", type=int, default=2000, help="DescribeTopicPartitions response_partition_limit")
    p.add_argument("--metadata-versions", default="1,12", help="Metadata versions to show, or 'all'")
    p.add_argument("--decode-max", default="10k", help="time real decodes up to this many topics (0: none)")
    p.add_argument("--repeat", type=int, default=3, help="timing rounds (best is kept)")
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default="table")
    p.add_argument("--plot", type=Path, metavar="FILE.png",
                   help="write log-log PNGs: FILE.png (bytes) and FILE-decode.png (decode times)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def run(args: Any) -> int:
    from kcodec.messages import MetadataResponse

    from .model import SyntheticCluster
    from .output import plot, render
    from .sweep import Progress, parse_counts, sweep

    try:
        counts = parse_counts(args.topics)
        decode_max = parse_counts(args.decode_max)[0]
        lo, hi = MetadataResponse.VALID_VERSIONS
        versions = (list(range(lo, hi + 1)) if args.metadata_versions == "all"
                    else [int(v) for v in args.metadata_versions.split(",")])
        bad = [v for v in versions if not lo <= v <= hi]
        if bad:
            raise ValueError(f"Metadata versions are {lo} to {hi}, not {bad}")
        if args.partition_limit < 1 or args.repeat < 1:
            raise ValueError("--partition-limit and --repeat must be >= 1")
        base = SyntheticCluster(topic_count=max(counts, default=0), partitions=args.partitions,
                                replication_factor=args.rf, broker_count=args.brokers, racks=args.racks,
                                name_lengths=args.name_lengths, internal_share=args.internal_share,
                                shrunk_isr_share=args.shrunk_isr, offline_share=args.offline, seed=args.seed,
                                controller_id=1)
    except ValueError as e:
        print(f"kcodec sizes: {e}", file=sys.stderr)
        return 2
    rows = sweep(base, counts, versions, args.partition_limit, decode_max, args.repeat,
                 progress=Progress(enabled=not args.quiet))
    sys.stdout.write(render(rows, args.format))
    if args.plot:
        for path in plot(rows, args.plot, f"{args.partitions} partitions/topic, RF {args.rf}, {args.brokers} brokers"):
            print(f"wrote {path}", file=sys.stderr)
    return 0
