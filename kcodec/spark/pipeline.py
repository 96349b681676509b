"""The Spark side: captures -> frames -> exchanges, as DataFrames.

How the work splits: Spark's ``binaryFile`` source lists the inputs (local paths, globs, any
Hadoop-compatible URI) and packs whole files into partitions of about
``spark.sql.files.maxPartitionBytes`` (128 MB by default); each partition is one task, which reads its
files and emits their frames. A capture file is the unit of parallelism because a TCP stream must be
reassembled in order: `kcodec tap` rotates its files (64 MB by default) so that a busy cluster's
captures arrive as many files, and pcaps should be written rotated too (``tcpdump -C 64``). After that,
requests and responses are joined by (connection, correlation id) in a shuffle across all files (a
response may sit in the file after its request's), and decoding runs on the shuffled partitions
(``spark.sql.shuffle.partitions``), independent of how the input was cut.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Iterable, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from . import decode


# Spark's JVM logs through log4j2: with this file only errors reach the console (no "Setting default log
# level", no NativeCodeLoader or other WARN lines); ``quiet=False`` (``-v``) keeps Spark's own defaults.
QUIET_LOG4J2 = Path(__file__).with_name("log4j2-quiet.properties")


def session(master: Optional[str] = "local[*]", app_name: str = "kcodec analyze", ui: bool = True,
            quiet: bool = True) -> SparkSession:
    """A SparkSession; ``master=None`` keeps what spark-submit configured. ``quiet``: Spark logs errors only."""
    builder = (SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
               # Capture files reach the workers whole; keep the Arrow batches around them small.
               .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 * 1024 * 1024)))
    if master:
        builder = builder.master(master)
    if master and master.startswith("local") and "SPARK_DRIVER_MEMORY" not in os.environ:
        # In local mode the executors live in the driver's JVM, whose default heap (1 GB) two tasks
        # holding 64 MB capture files and writing Parquet can outgrow.
        builder = builder.config("spark.driver.memory", os.environ.get("KCODEC_SPARK_DRIVER_MEMORY", "4g"))
    if not ui:
        builder = builder.config("spark.ui.enabled", "false")
    if quiet:  # read when the JVM starts: the driver's (and in local mode the executors') logging
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={QUIET_LOG4J2.as_uri()}")
    return builder.getOrCreate()


def read_frames(spark: SparkSession, paths: Sequence[str], ports: Optional[Iterable[int]] = None) -> DataFrame:
    """One row per Kafka frame of every capture (``decode.FRAMES``), plus one row per file (direction -1)."""
    files = spark.read.format("binaryFile").load(list(paths)).select("path", "length", "content")
    fn = functools.partial(decode.frames_from_files, ports=sorted(ports) if ports else None)
    return files.mapInArrow(fn, from_arrow_schema(decode.FRAMES))


def exchanges(frames: DataFrame) -> DataFrame:
    """Requests joined with their responses by (connection, correlation id), decoded (``decode.EXCHANGES``).

    A request without a response (acks=0 Produce, a capture that stopped) is kept with null response
    columns.
    """
    req = frames.where(F.col("direction") == 0).select(
        "source", "conn", "correlation_id", "client_id", "api_key", "api_version",
        F.col("ts_ns").alias("request_ts_ns"), F.col("frame").alias("request"))
    resp = frames.where(F.col("direction") == 1).select(
        "conn", "correlation_id", F.col("ts_ns").alias("response_ts_ns"), F.col("frame").alias("response"))
    joined = req.join(resp, on=["conn", "correlation_id"], how="left")
    return joined.mapInArrow(decode.decode_exchanges, from_arrow_schema(decode.EXCHANGES))


def orphan_responses(frames: DataFrame) -> DataFrame:
    """Responses whose request the captures lack (connections captured mid-way)."""
    req = frames.where(F.col("direction") == 0).select("conn", "correlation_id")
    return frames.where(F.col("direction") == 1).join(req, on=["conn", "correlation_id"], how="left_anti")


def files(frames: DataFrame) -> DataFrame:
    """One row per capture file: its summary (kind, frames, what reassembly skipped) as JSON."""
    return frames.where(F.col("direction") == -1).select("source", F.col("size").alias("bytes"),
                                                          F.col("error").alias("summary"))
