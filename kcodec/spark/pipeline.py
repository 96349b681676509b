"""The Spark side: captures -> frames -> exchanges and record batches, as DataFrames and as tables.

How the work splits (issue 32): the driver lists the inputs and plans byte ranges (``ranges``): a
packet capture file is cut into ranges of ``spark.kcodec.splitBytes`` (64 MiB), each read by its own
task in bounded memory (pass 1, ``segments``), which emits the TCP segments it finds keyed by
connection; a tap file is one range. One shuffle brings each connection's segments together in
capture order, on ``max(1, input bytes / spark.kcodec.partitionBytes)`` tasks (by default 32 MiB
each, at most two per core), and pass 2 reassembles each connection, cuts its frames, pairs and decodes them as they
come, record batches included (``conversation``). So a TCP stream, a frame cut by a range or a file
boundary, and a request and its answer in different ranges all meet in one task, exactly as if the
capture had been read whole, while no task holds more than a range and a connection's state.

`kcodec analyze` (``write_tables``) writes every table in that one pass: each task writes its own
Parquet files (``tasks``), and the shuffle goes through Arrow files the workers write and read
(``_one_pass``), not through the JVM: only the files' names pass through the driver. The DataFrame functions below (``read_frames``, ``exchanges``,
``batches``) give the same rows to programs that want DataFrames, through Spark's own shuffle.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Optional, Sequence, Union

from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

import pyarrow as pa

from . import aggregates, captures, decode, ranges, record_batches, segments, storage, tasks
from .launch import QUICK_JVM, QUIET_LOG4J2, SMALL_INPUT, _settings, context, defaults  # noqa: F401 (kept here too)


FILES = pa.schema([("source", pa.string()), ("bytes", pa.int64()), ("summary", pa.string())])

Spark = Union[SparkSession, SparkContext]  # `kcodec analyze` runs on a context alone: no SQL engine to start


def session(master: Optional[str] = "local[*]", app_name: str = "kcodec analyze", ui: bool = True,
            quiet: bool = True, conf: Optional[dict[str, str]] = None) -> SparkSession:
    """A SparkSession; ``master=None`` keeps what spark-submit configured. ``quiet``: Spark logs errors
    only. ``conf``: Spark settings (``kcodec analyze --conf``), applied last."""
    builder = SparkSession.builder.config("spark.sql.adaptive.enabled", "true")
    for k, v in _settings(master, app_name, ui, quiet, conf).items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def spark_context(spark: Spark) -> SparkContext:
    return spark.sparkContext if isinstance(spark, SparkSession) else spark


def _setting(spark: Spark, key: str, default: int) -> int:
    value = spark.conf.get(key, None) if isinstance(spark, SparkSession) else spark.getConf().get(key, None)
    return ranges.size(value) if value else default


def plan(spark: Spark, paths: Sequence[str], unsplit: frozenset[str] = frozenset()) -> ranges.Plan:
    """The job's plan (``ranges.plan``) with the session's split size."""
    return ranges.plan(spark, list(paths), _setting(spark, "spark.kcodec.splitBytes", ranges.SPLIT_BYTES), unsplit)


def segment_rows(spark: SparkSession, p: ranges.Plan) -> DataFrame:
    """Pass 1 and the shuffle: the SEGMENTS rows of every range, each connection's in one partition,
    sorted by connection and capture order."""
    rows = [tuple(r[n] for n in segments.RANGES.names) for r in p.ranges]
    schema = from_arrow_schema(segments.RANGES)
    if rows:
        plan_df = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), schema)
    else:
        plan_df = spark.createDataFrame([], schema)
    n = _partitions(spark, p)
    return (plan_df.mapInArrow(segments.read_ranges, from_arrow_schema(segments.SEGMENTS))
            .repartition(n, "key", "capture").sortWithinPartitions("key", "capture", "order"))


def _partitions(spark: Spark, p: ranges.Plan, early: bool = False) -> int:
    """Pass 2's task count: ``spark.kcodec.partitionBytes`` of input each when set; by default 32 MiB each,
    at most two per core the job has, or one per core and one for the early child when it shares pass 2
    (``ranges.Plan.partitions``)."""
    given = _setting(spark, "spark.kcodec.partitionBytes", 0)
    if given:
        return p.partitions(given)
    return p.partitions(ranges.PARTITION_BYTES, spark_context(spark).defaultParallelism, early)


def write_tables(spark: Spark, paths: Sequence[str], tables: str,
                 ports: Optional[Iterable[int]] = None, frame_bytes: bool = False,
                 early: Optional[Any] = None, named: bool = True) -> dict[str, Any]:
    """Every table of `kcodec analyze` written to ``tables`` in one pass over the captures: frames,
    exchanges, batches and files (and topic_ids). ``frame_bytes``: the frames table keeps the frames'
    bytes (a ``frame`` column, a copy of the captures' Kafka bytes; off, as tshark's field extraction
    copies none). ``early``: a ``kcodec.spark.early.Early`` whose pass 1, done while the JVM started, is
    taken if its plan is this one. ``named=False``: the batches' topics known by id only are left for the caller to
    name (``name_batches(tables, result["topic_names"])``), e.g. once Spark is stopping. Returns what the tasks
    reported: ``files`` (path -> summary), ``rows`` (per table) and ``aggregates``, and ``topic_names``."""
    unsplit: frozenset[str] = frozenset()
    for _ in range(2):  # a second time only if a file's ranges did not join up: then that file is read whole
        p = plan(spark, paths, unsplit)
        for name in (*tasks.SCHEMAS, "files"):
            storage.remove_dir(f"{tables}/{name}")
        job = tasks.job_of(p, ports, tables, frame_bytes)
        parts: dict[str, list[dict[str, Any]]] = {"range": [], "reassembly": [], "rows": [], "aggregates": []}
        spilled = None
        if early is not None and not unsplit:
            spilled = early.spilled(p, _partitions(spark, p, early=True), f"{tables}/_shuffle", job)
        for what, data in _one_pass(spark, p, job, spilled, early if spilled is not None else None):
            parts[what].append(json.loads(data))
        bad = ranges.check(parts["range"])
        if not bad:
            break
        unsplit = unsplit | frozenset(bad)
    for name, schema in job.schemas.items():  # a table no task wrote to is still there, empty
        storage.ensure_table(f"{tables}/{name}", schema)
    summaries = ranges.file_summaries(p, parts["range"], parts["reassembly"])
    files_table = storage.TableFile(f"{tables}/files", "part-00000.parquet", FILES)
    files_table.write(pa.RecordBatch.from_arrays(
        [pa.array(sorted(summaries), pa.string()), pa.array([summaries[k].get("bytes") for k in sorted(summaries)], pa.int64()),
         pa.array([ranges.as_json(summaries[k]) for k in sorted(summaries)], pa.string())], schema=FILES))
    files_table.close()
    merged = aggregates.merge(parts["aggregates"])
    names = aggregates.topic_names(merged) if merged.c.get("b_unnamed") else {}
    if named:
        name_batches(tables, names, spark)
    rows: dict[str, int] = {}
    for counts in parts["rows"]:
        for k, v in counts.items():
            rows[k] = rows.get(k, 0) + v
    return {"files": summaries, "rows": rows, "unsplit": sorted(unsplit),
            "aggregates": aggregates.finish(merged, summaries), "topic_names": names}


def name_batches(tables: str, names: dict[str, str], spark: Optional[Spark] = None) -> None:
    """The batches table's topics known by id only named (``tasks.name_topics``). On a local master (or with no
    ``spark``) file by file in the driver: ~0.03 CPU s for the 1 GB capture's four files, where a Spark job of a
    task a file cost 0.15-0.2 s of wall (its scheduling and the Python workers' round trips), and with no Spark
    needed `kcodec analyze` runs it while the JVM stops (``names``: ``write_tables``' ``topic_names``). On a
    cluster, a Spark job of a task a file, as the files are many there and the executors near them."""
    if not names:
        return
    files = storage.parquet_files(f"{tables}/batches")
    if spark is not None and not is_local(spark):
        spark_context(spark).parallelize(files, max(1, len(files))).foreach(
            functools.partial(tasks.name_topics, names=names))
        return
    for uri in files:
        tasks.name_topics(uri, names)


def is_local(spark: Spark) -> bool:
    """Whether the job runs on a local master (``local``, ``local[N]``, ``local[*]``...)."""
    return str(spark_context(spark).master).startswith("local")


def _one_pass(spark: Spark, p: ranges.Plan, job: tasks.Job,
              spilled: Optional[list[tuple[int, Any]]] = None, early: Optional[Any] = None) -> list[tuple[str, str]]:
    """Pass 1 writes each range's segments, sorted, to one Arrow file per connection partition under
    ``TABLES/_shuffle``, and returns their names (not their bytes) to the driver; a pass-2 task per
    partition gets its partition's names, merges those files and writes the tables. The bytes go from one
    Python worker to another through those files, never through the JVM, and no Spark shuffle moves even
    the names (a shuffle's writes, reads and map outputs cost the JVM more than two small collects): cheaper
    than Spark's shuffle of the same rows, and the JVM's memory stays small. (The DataFrame functions
    below use Spark's shuffle.) ``spilled``: pass 1's output already there (``kcodec.spark.early``); ``early``:
    the child that wrote it, which goes on claiming pass 2's partitions beside Spark's tasks."""
    scratch = f"{job.tables}/_shuffle"
    n = _partitions(spark, p, early is not None)
    sc = spark_context(spark)
    try:
        if spilled is None:
            storage.remove_dir(scratch)
            spilled = (sc.parallelize(p.ranges, max(1, len(p.ranges)))
                       .mapPartitions(functools.partial(segments.spill_ranges, scratch=scratch, partitions=n))
                       .collect())
        by_partition = segments.by_partition(spilled, n)
        if early is None:
            done = dict(_pass_two(sc, job, [(i, by_partition[i]) for i in range(n)]))
        else:
            done = dict(_pass_two_claimed(sc, job, by_partition, early.claims()))
            done.update(early.results(job.tables, [i for i in range(n) if i not in done]))
            lost = [i for i in range(n) if i not in done]  # the child failed in them: Spark runs them
            done.update(_pass_two(sc, job, [(i, by_partition[i]) for i in lost]))
        return [item for i in range(n) for item in done[i]]  # in partition order, as one job's collect
    finally:
        if early is not None:
            early.end()  # before its input goes
        storage.remove_dir(scratch)


def _pass_two(sc: SparkContext, job: tasks.Job,
              parts: list[tuple[int, list[tuple[int, Any]]]]) -> list[tuple[int, list[tuple[str, str]]]]:
    if not parts:
        return []
    return (sc.parallelize(parts, len(parts))
            .mapPartitions(functools.partial(tasks.write_partitions, job=job))
            .collect())


def _pass_two_claimed(sc: SparkContext, job: tasks.Job, parts: list[list[tuple[int, Any]]],
                      claims: str) -> list[tuple[int, list[tuple[str, str]]]]:
    """Pass 2 beside the early child: a task a core, each claiming partitions until none is left
    (``tasks.write_claimed``); returns those Spark's tasks wrote."""
    k = max(1, min(len(parts), sc.defaultParallelism))
    return (sc.parallelize(range(k), k)
            .mapPartitions(functools.partial(tasks.write_claimed, job=job, parts=parts, claims=claims))
            .collect())


def read_frames(spark: SparkSession, paths: Sequence[str], ports: Optional[Iterable[int]] = None) -> DataFrame:
    """One row per Kafka frame of every capture (``decode.FRAMES``), plus rows per file (direction -1)
    that ``files`` merges into one summary per file.

    Files are first told apart by content (``captures.plan``): a file given twice is read once (its
    copy gets a file row saying so), and the pcaps of one rotated capture make one capture, so that its
    connections continue across files. Each file is read once, by byte ranges (see the module's doc).
    """
    p = plan(spark, paths)
    out = segment_rows(spark, p).mapInArrow(functools.partial(tasks.frame_rows, job=tasks.job_of(p, ports)),
                                            from_arrow_schema(decode.FRAMES))
    if p.file_rows:
        rows = [{"source": path, "direction": -1, "error": json.dumps({"part": "file", "path": path, **s},
                                                                      sort_keys=True)}
                for path, s in p.file_rows.items()]
        schema = from_arrow_schema(decode.FRAMES)
        out = out.unionByName(spark.createDataFrame([tuple(r.get(n) for n in schema.fieldNames()) for r in rows],
                                                    schema))
    return out


def _identities(spark: Spark, listing: list[tuple[str, int]],
                heads: Optional[dict[str, bytes]] = None) -> list[tuple[str, str]]:
    """(path, identity) of every file listed, from its head and length where those tell (``captures``)."""
    heads = heads if heads is not None else captures.heads(spark, [path for path, _ in listing])
    known: dict[str, str]
    if heads is None:
        known, unread = {}, [path for path, _ in listing]
    else:
        known, unread = captures.identities([(path, length, heads[path]) for path, length in listing])
    if unread and heads is not None:  # packet files of equal lengths: digested by the workers, streaming
        known.update(spark_context(spark).parallelize(unread, len(unread)).map(storage.digest).collect())
    elif unread and isinstance(spark, SparkSession):  # no JVM at hand (Spark Connect): Spark's binaryFile
        digests = spark.read.format("binaryFile").load(unread).select(
            "path", captures.identity(F.col("content")).alias("digest")).collect()  # source reads them whole
        known.update((r["path"], r["digest"]) for r in digests)
    return list(known.items())


def _by_connection(frames: DataFrame) -> DataFrame:
    return (frames.where(F.col("direction").isin(0, 1)).repartition("conn")
            .sortWithinPartitions("conn", "position"))


def exchanges(frames: DataFrame) -> DataFrame:
    """Every request with its response, paired per connection in wire order (``pairing``) and decoded
    (``decode.EXCHANGES``); requests without a response and responses without a request (orphans) are
    rows too, their other side null."""
    return _by_connection(frames).mapInArrow(functools.partial(tasks.decoded_rows, table="exchanges"),
                                             from_arrow_schema(decode.EXCHANGES))


def batches(frames: DataFrame) -> DataFrame:
    """One row per record batch of every Produce request and answered Fetch response
    (``record_batches.BATCHES``), keyed to its exchange by ``(conn, exchange)``. Topics named by id
    (Fetch and Produce v13+) get their names from the captures' Metadata responses (v10+)."""
    by_conn = _by_connection(frames)
    rows = by_conn.mapInArrow(functools.partial(tasks.decoded_rows, table="batches"),
                              from_arrow_schema(record_batches.BATCHES))
    ids = (by_conn.mapInArrow(functools.partial(tasks.decoded_rows, table="topic_ids"),
                              from_arrow_schema(record_batches.TOPIC_IDS)).dropDuplicates(["topic_id"]))
    return (rows.join(F.broadcast(ids), on="topic_id", how="left")
            .select(*[F.coalesce("topic", "topic_name").alias("topic") if c == "topic" else F.col(c)
                      for c in record_batches.BATCHES.names]))


def orphan_responses(frames: DataFrame) -> DataFrame:
    """Responses whose request the captures lack (connections captured mid-way): ``exchanges`` rows."""
    return exchanges(frames).where(F.col("pairing") == "orphan")


def files(frames: DataFrame) -> DataFrame:
    """One row per capture file: its summary (kind, capture, frames, what reassembly skipped) as JSON,
    merged from what each task of ``read_frames`` learnt of it."""
    spark = frames.sparkSession
    parts = [json.loads(r["error"]) for r in frames.where(F.col("direction") == -1).select("error").collect()]
    p = ranges.Plan(file_rows={r["path"]: {k: v for k, v in r.items() if k not in ("part", "path")}
                               for r in parts if r["part"] == "file"})
    p.lengths = {r["path"]: r.get("bytes") for r in parts if r["part"] == "file"}
    rng = [r for r in parts if r["part"] == "range"]
    for r in rng:
        p.lengths.setdefault(r["path"], r.get("size"))
    summaries = ranges.file_summaries(p, rng, [r for r in parts if r["part"] == "reassembly"])
    return spark.createDataFrame([(path, s.get("bytes"), ranges.as_json(s)) for path, s in sorted(summaries.items())],
                                 "source string, bytes long, summary string")
