"""The Spark side: captures -> frames -> exchanges, as DataFrames.

How the work splits: Spark's ``binaryFile`` source lists the inputs (local paths, globs, any
Hadoop-compatible URI) and packs whole files into partitions of about
``spark.sql.files.maxPartitionBytes`` (128 MB by default); each partition is one task, which reads its
files and emits their frames. A capture file is the unit of parallelism because a TCP stream must be
reassembled in order: `kcodec tap` rotates its files (64 MB by default) so that a busy cluster's
captures arrive as many files, each read by its own task. The files of one rotated pcap capture
(``tcpdump -C``/``-G``) are read in order by one task, which carries TCP state across them. After
that, each connection's frames are paired in wire order on a worker (``pairing``, grouped by
connection, only the narrow columns), joined back to the frames in a shuffle, and decoded on the
shuffled partitions (``spark.sql.shuffle.partitions``), independent of how the input was cut.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Iterable, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from . import captures, decode, pairing, record_batches


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
    """One row per Kafka frame of every capture (``decode.FRAMES``), plus one row per file (direction -1).

    Files are first told apart by content (``captures.plan``): a file given twice is read once (its
    copy gets a file row saying so), and the pcaps of one rotated capture are read in order by one task
    so that its connections continue across files; tap files are read one task per file. Telling them
    apart reads only their first bytes (``captures.identities``), so a file's bytes are read once, for
    its frames (but packet files of equal lengths, digested first).
    """
    listing = [(r["path"], r["length"]) for r in
               spark.read.format("binaryFile").load(list(paths)).select("path", "length").collect()]  # no content
    plan = captures.plan(_identities(spark, listing))
    fn = functools.partial(decode.frames_from_files, ports=sorted(ports) if ports else None)
    schema = from_arrow_schema(decode.FRAMES)

    def load(files: list[captures.File]) -> DataFrame:
        return spark.read.format("binaryFile").load([f.path for f in files]).select("path", "length", "content")

    # Each branch scans only its own files, so tap files need no join and a tap-only input no packet
    # branch (filtered after the scan, that branch read every file again unless AQE saw it empty).
    tap_files = [f for f in plan.files if f.capture is None]
    set_files = [f for f in plan.files if f.capture is not None]
    parts = [load(tap_files).mapInArrow(fn, schema)] if tap_files else []  # one capture a file
    if set_files:
        table = spark.createDataFrame([(f.path, f.capture, f.rank, f.last) for f in set_files],
                                      "path string, capture string, rank int, last boolean")
        parts.append(load(set_files).join(F.broadcast(table), on="path").repartition("capture")
                     .sortWithinPartitions("capture", "rank").mapInArrow(fn, schema))
    if not parts:  # nothing listed: the (empty) scan of what was given
        parts.append(spark.read.format("binaryFile").load(list(paths)).select("path", "length", "content")
                     .mapInArrow(fn, schema))
    out = functools.reduce(DataFrame.unionByName, parts)
    if plan.duplicates:
        rows = [{"source": path, "direction": -1, "error": json.dumps({"duplicate_of": first}, sort_keys=True)}
                for path, first in plan.duplicates]
        out = out.unionByName(spark.createDataFrame([tuple(r.get(n) for n in schema.fieldNames()) for r in rows],
                                                    schema))
    return out


def _identities(spark: SparkSession, listing: list[tuple[str, int]]) -> list[tuple[str, str]]:
    """(path, identity) of every file listed, from its head and length where those tell (``captures``)."""
    heads = captures.heads(spark, [path for path, _ in listing])
    known: dict[str, str]
    if heads is None:
        known, unread = {}, [path for path, _ in listing]
    else:
        known, unread = captures.identities([(path, length, heads[path]) for path, length in listing])
    if unread:
        digests = spark.read.format("binaryFile").load(unread).select(
            "path", captures.identity(F.col("content")).alias("digest")).collect()
        known.update((r["path"], r["digest"]) for r in digests)
    return list(known.items())


def pairs(frames: DataFrame) -> DataFrame:
    """Requests and responses paired per connection in wire order (``pairing``): one row per request
    and per orphan response (``pairing.PAIRS``). Each connection is paired on a worker."""
    keys = frames.where(F.col("direction").isin(0, 1)).select(
        "conn", "position", "direction", "correlation_id", "acks")
    return keys.groupBy("conn").applyInPandas(pairing.pair_frames, from_arrow_schema(pairing.PAIRS))


def exchanges(frames: DataFrame, paired: Optional[DataFrame] = None) -> DataFrame:
    """Every request with its response (``pairs``, or ``paired`` when already computed), decoded
    (``decode.EXCHANGES``); requests without a response and responses without a request (orphans) are
    rows too, their other side null."""
    req = frames.where(F.col("direction") == 0).select(
        "conn", F.col("position").alias("request_position"), F.col("source").alias("request_source"),
        F.col("capture").alias("request_capture"), F.col("correlation_id").alias("request_correlation_id"),
        "client_id", "api_key", "api_version", F.col("ts_ns").alias("request_ts_ns"), F.col("frame").alias("request"))
    resp = frames.where(F.col("direction") == 1).select(
        "conn", F.col("position").alias("response_position"), F.col("source").alias("response_source"),
        F.col("capture").alias("response_capture"), F.col("correlation_id").alias("response_correlation_id"),
        F.col("ts_ns").alias("response_ts_ns"), F.col("frame").alias("response"))
    joined = ((pairs(frames) if paired is None else paired).join(req, on=["conn", "request_position"], how="left")
              .join(resp, on=["conn", "response_position"], how="left")
              .select("*", F.coalesce("request_source", "response_source").alias("source"),
                      F.coalesce("request_capture", "response_capture").alias("capture"),
                      F.coalesce("request_correlation_id", "response_correlation_id").alias("correlation_id"),
                      F.coalesce("request_position", "response_position").alias("exchange")))
    return joined.mapInArrow(decode.decode_exchanges, from_arrow_schema(decode.EXCHANGES))


def batches(frames: DataFrame, paired: Optional[DataFrame] = None) -> DataFrame:
    """One row per record batch of every Produce request and answered Fetch response
    (``kcodec.spark.batches.BATCHES``), keyed to its exchange by ``(conn, exchange)``. Topics named by
    id (Fetch and Produce v13+) get their names from the captures' Metadata responses (v10+)."""
    paired = pairs(frames) if paired is None else paired
    req = frames.where(F.col("direction") == 0).select(
        "conn", F.col("position").alias("exchange"), "source", "capture", "client_id", "api_key", "api_version",
        F.col("ts_ns").alias("request_ts_ns"), F.col("frame").alias("request"))
    resp = frames.where(F.col("direction") == 1).select(
        "conn", F.col("position").alias("response_position"), F.col("ts_ns").alias("response_ts_ns"),
        F.col("frame").alias("response"))
    produce = (req.where(F.col("api_key") == record_batches.PRODUCE)
               .select("*", F.lit(None).cast("long").alias("response_ts_ns"), F.lit(None).cast("binary").alias("response")))
    answered = paired.where(F.col("request_position").isNotNull() & F.col("response_position").isNotNull()).select(
        "conn", F.col("request_position").alias("exchange"), "response_position")

    def with_response(key: int) -> DataFrame:
        return (answered.join(req.where(F.col("api_key") == key), on=["conn", "exchange"])
                .join(resp, on=["conn", "response_position"]).drop("response_position"))

    rows = (produce.unionByName(with_response(record_batches.FETCH).drop("request").select(
        "*", F.lit(None).cast("binary").alias("request")))
            .mapInArrow(record_batches.decode_batches, from_arrow_schema(record_batches.BATCHES)))
    ids = (with_response(record_batches.METADATA).where(F.col("api_version") >= 10).select("response", "api_version")
           .mapInArrow(record_batches.decode_topic_ids, from_arrow_schema(record_batches.TOPIC_IDS))
           .dropDuplicates(["topic_id"]))
    return (rows.join(F.broadcast(ids), on="topic_id", how="left")
            .select(*[F.coalesce("topic", "topic_name").alias("topic") if c == "topic" else F.col(c)
                      for c in record_batches.BATCHES.names]))


def orphan_responses(frames: DataFrame) -> DataFrame:
    """Responses whose request the captures lack (connections captured mid-way): ``pairs`` rows."""
    return pairs(frames).where(F.col("pairing") == pairing.ORPHAN)


def files(frames: DataFrame) -> DataFrame:
    """One row per capture file: its summary (kind, capture, frames, what reassembly skipped) as JSON."""
    return frames.where(F.col("direction") == -1).select("source", F.col("size").alias("bytes"),
                                                          F.col("error").alias("summary"))
