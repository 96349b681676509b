"""The functions Spark's workers run after pass 1 (no Spark import here): a partition of whole
connections -> Parquet files of every table (`kcodec analyze`), or -> Arrow batches of one table (the
``kcodec.spark`` DataFrame API).

`kcodec analyze` writes each table in one pass: a task writes its rows to ``TABLES/<table>/part-<n>.parquet``
(``storage.TableFile``, named by the task's partition so that a retried task replaces its file) and
returns only summaries (``SUMMARY``: the ranges it met, what reassembly skipped per file, rows
written, the report's partial sums: ``aggregates``), which the driver merges into the ``files`` table and
the report.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

import pyarrow as pa

from . import decode, record_batches, segments, storage
from .aggregates import Aggregates
from .conversation import Connections, Conversation, Tables

if TYPE_CHECKING:
    from .ranges import Plan

SCHEMAS = {"frames": decode.FRAMES, "exchanges": decode.EXCHANGES, "batches": record_batches.BATCHES,
           "topic_ids": record_batches.TOPIC_IDS}
SUMMARY = pa.schema([("what", pa.string()), ("data", pa.string())])
FLUSH_ROWS, FLUSH_BYTES = 4096, 8 << 20


@dataclass
class Job:
    """What every task of one job needs: the captures' names, which file each row came from, the broker
    ports, where the tables go and whether the frames table keeps the frames' bytes."""
    captures: list[str]
    files: dict[tuple[int, int], str]
    ports: Optional[list[int]] = None
    tables: str = ""
    frame_bytes: bool = True  # the frames table keeps the frames' bytes (`kcodec analyze --keep-frame-bytes`)
    schemas: dict[str, pa.Schema] = field(default_factory=lambda: dict(SCHEMAS))

    def __post_init__(self) -> None:
        if not self.frame_bytes:
            self.schemas["frames"] = decode.FRAMES_WITHOUT_BYTES


def job_of(p: Plan, ports: Optional[Iterable[int]], tables: str = "", frame_bytes: bool = True) -> Job:
    """The ``Job`` of plan ``p`` for the driver and the early child alike."""
    return Job(p.captures, p.files, sorted(ports) if ports else None, tables, frame_bytes)


class _Buffers(Tables):
    """Rows per table, handed to ``sink(table, batch)`` as Arrow batches when enough have gathered."""

    def __init__(self, schemas: dict[str, pa.Schema], sink: Any, only: Optional[str] = None,
                 aggregates: Optional[Aggregates] = None) -> None:
        super().__init__(self._emit)
        self.schemas, self.sink, self.only, self.aggregates = schemas, sink, only, aggregates
        # each table's ``Aggregates`` method, looked up once (not by name a row)
        self.adders = {name: getattr(aggregates, name) for name in schemas} if aggregates is not None else {}
        self.rows: dict[str, list[dict[str, Any]]] = {name: [] for name in schemas}
        self.bytes = 0
        self.counts: dict[str, int] = {name: 0 for name in schemas}

    def _emit(self, table: str, row: dict[str, Any]) -> None:
        if self.only is not None and table != self.only:
            return
        add = self.adders.get(table)
        if add is not None:
            add(row)
        rows = self.rows[table]
        rows.append(row)
        if table == "frames" and row.get("frame") is not None:
            self.bytes += row["size"]
        if len(rows) >= FLUSH_ROWS or self.bytes >= FLUSH_BYTES:
            self.flush(table)

    def flush(self, table: Optional[str] = None) -> None:
        for name in [table] if table else list(self.rows):
            rows = self.rows[name]
            if rows:
                self.counts[name] += len(rows)
                self.sink(name, _batch(rows, self.schemas[name]))
                self.rows[name] = []
            if name == "frames":
                self.bytes = 0


def _batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """``RecordBatch.from_pylist``'s batch, converted in one go as a struct array (from_pylist gathers each
    column's values in Python first: a third slower on the rows of the 1 GB capture)."""
    return pa.RecordBatch.from_struct_array(pa.array(rows, type=pa.struct(schema)))


def part_name(partition: int) -> str:
    """The Parquet file a partition's task writes in each table's directory."""
    return f"part-{partition:05d}.parquet"


def _partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def write_partition(items: Iterable[tuple[int, Any]], job: Job,
                    partition: Optional[int] = None) -> Iterator[tuple[str, str]]:
    """Pass 2 of `kcodec analyze` over one partition's files of pass 1 (``segments.spill_ranges``; the
    range summaries come along as bytes): every table written, out come (what, JSON) summaries.
    ``partition`` names the files (default: the Spark task's partition)."""
    segments.worker_gc()
    paths: list[str] = []
    summaries: list[bytes] = []
    for _, item in items:
        if isinstance(item, bytes):
            summaries.append(item)
        elif item is not None:
            paths.append(item)
    return _write(iter([segments.merged_rows(sorted(paths))]), job, summaries, rows_given=True, partition=partition)


def write_partitions(parts: Iterable[tuple[int, list[tuple[int, Any]]]],
                     job: Job) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """``write_partition`` over a task's (partition, pass 1's (partition, file or summary) items) pairs:
    out comes (partition, its summaries), so that the driver orders them by partition whoever ran it (a Spark
    task or the early child, ``kcodec.spark.early``)."""
    for partition, items in parts:
        yield partition, list(write_partition(items, job, partition))


def claim(claims: str, partition: int) -> bool:
    """Whether this process made ``partition``'s claim in the local directory ``claims`` (of the processes
    sharing pass 2 on a local master, the early child and Spark's tasks, exactly one does)."""
    try:
        os.close(os.open(os.path.join(claims, str(partition)), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def write_claimed(_: Iterable[Any], job: Job, parts: list[list[tuple[int, Any]]],
                  claims: str) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """A task of pass 2 on a local master, beside the early child (``kcodec.spark.early``): every partition
    of ``parts`` (pass 1's items by partition) it claims first in ``claims``, in order, written as
    ``write_partitions`` writes it, until none is left unclaimed. The partitions go to whichever process is
    free when they come up, not by a split fixed when the job is submitted (which left one core idle while
    the other ran the last task, or the child idle while Spark's first task started)."""
    yield from write_partitions(((i, items) for i, items in enumerate(parts) if claim(claims, i)), job)


def write_tables(batches: Iterable[pa.RecordBatch], job: Job) -> Iterator[pa.RecordBatch]:
    """mapInArrow over a partition of SEGMENTS rows (whole connections, sorted): every table written as
    Parquet under ``job.tables``; out come the SUMMARY rows."""
    out = list(_write(iter(batches), job, []))
    yield pa.RecordBatch.from_arrays([pa.array([r[0] for r in out], pa.string()),
                                      pa.array([r[1] for r in out], pa.string())], schema=SUMMARY)


def _write(inputs: Iterator[Any], job: Job, summaries_in: list[bytes], rows_given: bool = False,
           partition: Optional[int] = None) -> Iterator[tuple[str, str]]:
    name = part_name(_partition() if partition is None else partition)
    files: dict[str, storage.TableFile] = {}

    def sink(table: str, batch: pa.RecordBatch) -> None:
        f = files.get(table)
        if f is None:
            f = files[table] = storage.TableFile(f"{job.tables}/{table}", name, job.schemas[table])
        f.write(batch)

    aggregates = Aggregates()
    out = _Buffers(job.schemas, sink, aggregates=aggregates)
    conns = Connections(job.captures, job.files, job.ports, out, frame_bytes=job.frame_bytes)
    summaries = [s.decode() for s in summaries_in]
    for given in inputs:
        summaries += [s.decode() for s in (conns.feed(given) if rows_given else conns.rows(given))]
    conns.end()
    out.flush()
    for f in files.values():
        f.close()
    yield from (("range", s) for s in summaries)
    yield from (("reassembly", json.dumps({"path": p, **s}, sort_keys=True)) for p, s in conns.file_stats().items())
    yield ("rows", json.dumps(out.counts, sort_keys=True))
    yield ("aggregates", json.dumps(aggregates.partial()))


def name_topics(uri: str, names: dict[str, str]) -> None:
    """One Parquet file of the batches table with the topics its rows knew by id only (Fetch and Produce
    v13+) named, from the captures' Metadata responses (``names``: topic id -> name): rewritten in place,
    row group by row group (the driver runs it: a file read whole grew it by ~80 MB for a 10 GB capture's
    60 k rows). (Python lists, not Arrow's compute kernels: importing pyarrow.compute in the driver cost more
    than the lists: ~0.03 s for the 1 GB capture's 18,432 rows.)"""

    def named(group: pa.Table) -> tuple[list[Optional[str]], list[Optional[str]]]:
        topics, ids = group.column("topic").to_pylist(), group.column("topic_id").to_pylist()
        return [names.get(i) if t is None and i is not None else t for t, i in zip(topics, ids)], topics

    if all(new == old for new, old in map(named, storage.row_groups(uri, ["topic", "topic_id"]))):
        return
    directory, name = uri.rsplit("/", 1)
    out: Optional[storage.TableFile] = None
    for group in storage.row_groups(uri):
        group = group.set_column(group.schema.get_field_index("topic"), "topic", pa.array(named(group)[0], pa.string()))
        if out is None:
            out = storage.TableFile(directory, name, group.schema)
        for batch in group.to_batches():
            out.write(batch)
    if out is not None:  # always: a file without row groups names nothing and returned above
        out.close()


def frame_rows(batches: Iterable[pa.RecordBatch], job: Job) -> Iterator[pa.RecordBatch]:
    """mapInArrow over a partition of SEGMENTS rows: FRAMES rows, and a row per file (direction -1)
    holding what this task learnt of it (JSON in ``error``; ``kcodec.spark.pipeline.files`` merges them)."""
    ready: list[pa.RecordBatch] = []
    out = _Buffers(job.schemas, lambda _t, b: ready.append(b), only="frames")
    conns = Connections(job.captures, job.files, job.ports, out, decode=False)
    summaries: list[str] = []
    for batch in batches:
        summaries += [s.decode() for s in conns.rows(batch)]
        yield from ready
        ready.clear()
    conns.end()
    out.flush()
    yield from ready
    rows = [{"part": "range", **json.loads(s)} for s in summaries]
    rows += [{"part": "reassembly", "path": p, **s} for p, s in conns.file_stats().items()]
    if rows:
        yield pa.RecordBatch.from_pylist([{"source": r["path"], "direction": -1, "error": json.dumps(r, sort_keys=True)}
                                          for r in rows], schema=decode.FRAMES)


def decoded_rows(batches: Iterable[pa.RecordBatch], table: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow over FRAMES rows of whole connections sorted by connection and position: the rows of
    ``table`` ("exchanges" or "batches")."""
    ready: list[pa.RecordBatch] = []
    out = _Buffers(SCHEMAS, lambda _t, b: ready.append(b), only=table)
    conversations: dict[str, Conversation] = {}
    current: Optional[str] = None
    for batch in batches:
        for f in batch.to_pylist():
            if f["direction"] not in (0, 1):
                continue
            if f["conn"] != current:
                for c in conversations.values():
                    c.finish()
                conversations, current = {}, f["conn"]
            conversation = conversations.get(f["conn"])
            if conversation is None:
                conversation = conversations[f["conn"]] = Conversation(f["conn"], out)
            conversation.frame(f)
        yield from ready
        ready.clear()
    for c in conversations.values():
        c.finish()
    out.flush()
    yield from ready
