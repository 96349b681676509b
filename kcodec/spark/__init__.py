"""Kafka captures on Spark: frames, decoded exchanges, the what-if-ListTopics figures.

    from kcodec import spark as ks
    spark = ks.session("local[*]")
    frames = ks.read_frames(spark, ["captures/*.kcap", "s3a://bucket/pcaps/*.pcap"], ports=[9092])
    ex = ks.exchanges(frames)        # one row per request, its response, latency, errors, Metadata what-if
    rb = ks.batches(frames)          # one row per record batch of every Produce request and Fetch response

``decode`` and ``record_batches`` hold what the workers run (Arrow batches in and out), ``pipeline`` the DataFrames,
``report`` the tables, plots and Markdown of `kcodec analyze`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["batches", "exchanges", "files", "orphan_responses", "read_frames", "session"]


def __getattr__(name: str) -> Any:
    # Lazy, so that `kcodec analyze --help` (which imports kcodec.spark.analyze) does not start pyspark.
    if name in __all__:
        from . import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'kcodec.spark' has no attribute {name!r}")
