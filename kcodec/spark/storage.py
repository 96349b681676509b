"""Files as the workers reach them: capture files read by range, tables written by each task.

Spark's driver lists the inputs through its Hadoop file systems (``file:/...``, ``hdfs://...``,
``s3a://...``); the workers open them with Python: local paths and ``file:`` URIs directly, any other
URI through ``pyarrow.fs`` (S3, GCS, HDFS with libhdfs; ``s3a://`` is read as ``s3://``). The tables are
written the same way, one Parquet file per task and table, named by the task's partition so that a
retried task replaces its predecessor's file instead of adding to it.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from typing import Any, BinaryIO, Iterator, Optional
from urllib.parse import unquote, urlparse


def local_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI or a plain path; None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    if parsed.scheme == "" or (len(parsed.scheme) == 1 and os.name == "nt"):
        return uri
    return None


def _filesystem(uri: str) -> tuple[Any, str]:
    from pyarrow import fs

    if uri.startswith("s3a://") or uri.startswith("s3n://"):
        uri = "s3://" + uri[6:]
    return fs.FileSystem.from_uri(uri)


def open_input(uri: str) -> BinaryIO:
    """A seekable binary file object for ``uri``."""
    path = local_path(uri)
    if path is not None:
        return open(path, "rb")
    filesystem, inner = _filesystem(uri)
    return filesystem.open_input_file(inner)  # type: ignore[no-any-return]


class Reader:
    """Byte ranges of input files, each file opened once: ``os.pread`` for local paths, ``read_at`` through
    ``pyarrow.fs`` for other URIs. Pass 2 reads the payloads pass 1 left in the capture files with it."""

    OPEN = 64  # files held open at once (a job of many rotated files closes them as it goes)

    def __init__(self) -> None:
        self.files: dict[str, Any] = {}

    def read(self, uri: str, at: int, length: int) -> bytes:
        f: Any = self.files.get(uri)
        if f is None:
            if len(self.files) >= self.OPEN:
                self.close()
            path = local_path(uri)
            f = self.files[uri] = os.open(path, os.O_RDONLY) if path is not None else open_input(uri)
        data = os.pread(f, length, at) if isinstance(f, int) else f.read_at(length, at)
        if len(data) != length:
            raise OSError(f"{uri}: {length} bytes at byte {at} were read in pass 1, {len(data)} are there now "
                          "(the file changed while it was analysed)")
        return data  # type: ignore[no-any-return]

    def close(self) -> None:
        for f in self.files.values():
            os.close(f) if isinstance(f, int) else f.close()
        self.files = {}


def digest(uri: str) -> tuple[str, str]:
    """(uri, "sha256:<hex>") of a file read in 1 MiB steps: a packet file's identity
    (``kcodec.spark.captures.identity`` gives the same string from Spark's whole-file rows)."""
    import hashlib

    h = hashlib.sha256()
    with open_input(uri) as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return uri, f"sha256:{h.hexdigest()}"


def _arrow_sink(uri: str) -> Any:
    import pyarrow as pa

    path = local_path(uri)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return pa.OSFile(path, "wb")
    filesystem, inner = _filesystem(uri)
    filesystem.create_dir(posixpath.dirname(inner), recursive=True)
    return filesystem.open_output_stream(inner)


def write_arrow(uri: str, table: Any) -> None:
    """``table`` as an Arrow IPC file at ``uri`` (pass 1's rows for pass 2), in batches of 8,192 rows."""
    import pyarrow as pa

    with _arrow_sink(uri) as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=8192)


def write_arrow_rows(uri: str, schema: Any, rows: Iterator[tuple[Any, ...]], chunk: int = 8192) -> None:
    """Rows (tuples in ``schema``'s column order) as an Arrow IPC file at ``uri``, ``chunk`` rows held at a time."""
    import itertools

    import pyarrow as pa

    with _arrow_sink(uri) as sink, pa.ipc.new_file(sink, schema) as writer:
        while block := list(itertools.islice(rows, chunk)):
            writer.write_batch(pa.RecordBatch.from_arrays(
                [pa.array(col, f.type) for col, f in zip(zip(*block), schema)], schema=schema))


def file_size(uri: str) -> int:
    path = local_path(uri)
    if path is not None:
        return os.path.getsize(path)
    filesystem, inner = _filesystem(uri)
    return int(filesystem.get_file_info(inner).size)


def arrow_schema(uri: str) -> Any:
    import pyarrow as pa

    with open_input(uri) as f:
        return pa.ipc.open_file(f).schema


def read_arrow(uri: str) -> Iterator[Any]:
    """The record batches of an Arrow IPC file, one at a time."""
    import pyarrow as pa

    with open_input(uri) as f:
        reader = pa.ipc.open_file(f)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)


def remove_file(uri: str) -> None:
    """Delete a file if it is there (a merge's intermediate file, once read)."""
    path = local_path(uri)
    if path is not None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        return
    filesystem, inner = _filesystem(uri)
    try:
        filesystem.delete_file(inner)
    except FileNotFoundError:
        pass


RAW = frozenset({"frame"})  # columns of Kafka's bytes as they crossed the wire


def _options(schema: Any) -> dict[str, Any]:
    """Snappy, dictionaries and statistics, but for the frames' bytes: Kafka's payloads mostly come
    compressed, and snappy over them costs as much as the rest of the table and saves little; a dictionary
    of distinct frames hashes every byte to give up (Parquet falls back to plain values); their min and max
    compare every frame and select nothing."""
    cooked = [name for name in schema.names if name not in RAW]
    return {"compression": {name: "none" if name in RAW else "snappy" for name in schema.names},
            "use_dictionary": cooked, "write_statistics": cooked}


class TableFile:
    """One Parquet file of a table, written batch by batch under a temporary name and moved to
    ``directory/name`` by ``close``, so that a reader never sees half a file."""

    def __init__(self, directory: str, name: str, schema: Any) -> None:
        import pyarrow.parquet as pq

        self.name = name
        self.rows = 0
        temporary = f".{name}.{uuid.uuid4().hex}.tmp"
        path = local_path(directory)
        if path is not None:
            os.makedirs(path, exist_ok=True)
            self.fs, self.dir = None, path
            self.writer = pq.ParquetWriter(os.path.join(path, temporary), schema, **_options(schema))
        else:
            self.fs, self.dir = _filesystem(directory)
            self.fs.create_dir(self.dir, recursive=True)
            self.writer = pq.ParquetWriter(posixpath.join(self.dir, temporary), schema, filesystem=self.fs,
                                           **_options(schema))
        self.temporary = temporary

    def write(self, batch: Any) -> None:
        if batch.num_rows:
            self.writer.write_batch(batch)
            self.rows += batch.num_rows

    def close(self) -> None:
        self.writer.close()
        if self.fs is None:
            os.replace(os.path.join(self.dir, self.temporary), os.path.join(self.dir, self.name))
        else:
            self.fs.move(posixpath.join(self.dir, self.temporary), posixpath.join(self.dir, self.name))


def remove_dir(uri: str) -> None:
    """Delete a directory tree if it is there (a table being rewritten)."""
    import shutil

    path = local_path(uri)
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
        return
    from pyarrow import fs

    filesystem, inner = _filesystem(uri)
    if filesystem.get_file_info(inner).type != fs.FileType.NotFound:
        filesystem.delete_dir(inner)


def rename(src: str, dst: str) -> None:
    path, target = local_path(src), local_path(dst)
    if path is not None and target is not None:
        os.replace(path, target)
        return
    filesystem, inner = _filesystem(src)
    filesystem.move(inner, _filesystem(dst)[1])


def parquet_files(uri: str) -> list[str]:
    """The Parquet files of a table directory (URIs as given)."""
    path = local_path(uri)
    if path is not None:
        names = os.listdir(path) if os.path.isdir(path) else []
    else:
        from pyarrow import fs

        filesystem, inner = _filesystem(uri)
        names = [posixpath.basename(i.path) for i in filesystem.get_file_info(fs.FileSelector(inner, allow_not_found=True))]
    return sorted(f"{uri}/{name}" for name in names if name.endswith(".parquet") and not name.startswith("."))


def row_groups(uri: str, columns: Optional[list[str]] = None) -> Iterator[Any]:
    """A Parquet file's row groups as tables, one at a time (``columns``: only those), so that a file
    rewritten in the driver is never held whole. (``ParquetFile``, not ``pq.read_table``: that goes through
    pyarrow.dataset, whose first import, with Arrow's compute and Acero, cost the driver ~0.1 s.)"""
    import pyarrow.parquet as pq

    with open_input(uri) as f:
        parquet = pq.ParquetFile(f)
        for i in range(parquet.num_row_groups):
            yield parquet.read_row_group(i, columns=columns)


def ensure_table(uri: str, schema: Any) -> None:
    """An empty Parquet file of ``schema`` in ``uri`` when no task wrote there (a table with no rows)."""
    path = local_path(uri)
    if path is not None:
        if os.path.isdir(path) and any(n.endswith(".parquet") for n in os.listdir(path)):
            return
    else:
        from pyarrow import fs

        filesystem, inner = _filesystem(uri)
        if filesystem.get_file_info(fs.FileSelector(inner, allow_not_found=True)):
            return
    TableFile(uri, "part-empty.parquet", schema).close()
