"""Columnar records: every record of a records field (or of some batches) as numpy columns, no Python object
per record. Key and value positions point into one buffer, ``data``: the caller's buffer when every batch
is uncompressed v2, else the decompressed records (and magic 0/1 keys and values), after the caller's
buffer when some batches are read in place there; a single compressed batch's decompressed bytes as
they are (no copy)."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ._reader import RecordBatch, read_batches
from ._select import backend
from ._types import DEFAULT_MAX_UNCOMPRESSED, TIMESTAMP_TYPE_BIT

INT64 = ("offset", "timestamp", "key_offset", "value_offset")
INT32 = ("key_length", "value_length", "header_count", "batch")


class RecordColumns:
    """Columns of records: ``offset``, ``timestamp`` (int64), ``key_offset``/``value_offset`` (int64 into
    ``data``, -1 for null), ``key_length``/``value_length`` (int32, -1 for null), ``header_count`` and
    ``batch`` (int32: index into ``batches``), ``attributes`` (int16, the batch's). ``partial_bytes``: the
    size of a cut-off batch at the end of the buffer."""

    def __init__(self, data: Any, cols: dict, batches: list, partial_bytes: int) -> None:
        self.data = data
        self.batches = batches
        self.partial_bytes = partial_bytes
        self.offset = cols["offset"]
        self.timestamp = cols["timestamp"]
        self.key_offset = cols["key_offset"]
        self.key_length = cols["key_length"]
        self.value_offset = cols["value_offset"]
        self.value_length = cols["value_length"]
        self.header_count = cols["header_count"]
        self.batch = cols["batch"]
        self.attributes = cols["attributes"]

    def __len__(self) -> int:
        return len(self.offset)

    def _slice(self, start: int, n: int) -> Optional[bytes]:
        return None if n < 0 else bytes(memoryview(self.data)[start:start + n])

    def key(self, i: int) -> Optional[bytes]:
        """The key of row ``i`` as bytes (None when null)."""
        return self._slice(int(self.key_offset[i]), int(self.key_length[i]))

    def value(self, i: int) -> Optional[bytes]:
        """The value of row ``i`` as bytes (None when null)."""
        return self._slice(int(self.value_offset[i]), int(self.value_length[i]))


def record_columns(source: Any, *, verify_crc: bool = True,
                   max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> RecordColumns:
    """The records of ``source`` as columns: a records field (any buffer; a cut-off tail is left out and
    reported), one RecordBatch, or RecordBatches read from one buffer."""
    import numpy as np

    partial = 0
    if isinstance(source, RecordBatch):
        batches = [source]
    elif isinstance(source, (list, tuple)) or (not _is_buffer(source) and isinstance(source, Iterable)):
        batches = list(source)
    else:
        got = read_batches(source, verify_crc=verify_crc, max_uncompressed=max_uncompressed)
        batches, partial = got.batches, got.partial_bytes
    base = batches[0]._buf if batches else b""
    # data: base when some batch is read in place there, then decompressed records and magic 0/1 keys and values
    chunks: list[Any] = [base] if any(_in_place(b, base) for b in batches) else []
    size = len(base) if chunks else 0

    def append(chunk: Any) -> int:
        """Put ``chunk`` at the end of ``data``; returns where it starts."""
        nonlocal size
        at = size
        chunks.append(chunk)
        size += len(chunk)
        return at

    # First every batch not read in place: magic 0/1 keys and values, and decompressed records (or a batch of
    # another buffer), copied to the end of data. A compressed batch's record count is only checked against
    # its records once they are inflated: checked here, before any column is allocated for that count
    # (a lying count in a small batch must not size the columns). The batches let their decompressed bytes
    # go: data holds them.
    copied: dict[int, Any] = {}
    for i, b in enumerate(batches):
        if b._legacy is not None:
            copied[i] = [(r, *(-1 if v is None else append(v) for v in (r.key, r.value))) for r in b._legacy]
        elif not _in_place(b, base):
            args = b._decode_args()
            buf, pos, end = args[0], args[1], args[2]
            copied[i] = (append(memoryview(buf)[pos:end]) - pos, args)
            if b._payload is not None and b._payload is not b._buf:
                b._payload = None  # inflated again if the batch's records are asked for later
    total = sum(b.record_count for b in batches)
    cols = {name: np.empty(total, np.int64) for name in INT64}
    cols.update({name: np.empty(total, np.int32) for name in INT32})
    cols["attributes"] = np.empty(total, np.int16)
    row = 0
    jobs = []
    for i, b in enumerate(batches):
        if b._legacy is not None:
            for r, key_at, value_at in copied[i]:
                cols["key_offset"][row], cols["value_offset"][row] = key_at, value_at
                cols["key_length"][row] = -1 if r.key is None else len(r.key)
                cols["value_length"][row] = -1 if r.value is None else len(r.value)
                cols["offset"][row], cols["timestamp"][row], cols["header_count"][row] = r.offset, r.timestamp, 0
                cols["batch"][row], cols["attributes"][row] = i, b.attributes
                row += 1
            continue
        if i not in copied:  # the common case, read from the batch in C
            jobs.append((b, row, i))
            row += b.record_count
            continue
        shift, args = copied[i]
        buf, pos, end = args[0], args[1], args[2]
        backend.fill_columns([(buf, pos, end, b.record_count, b.base_offset, b.base_timestamp,
                               b.max_timestamp if b.attributes & TIMESTAMP_TYPE_BIT else None, shift, row, *args[8:],
                               i, b.attributes)], cols)
        row += b.record_count
    backend.fill_columns(jobs, cols)
    if not chunks or (len(chunks) == 1 and chunks[0] is base):
        data = base
    elif len(chunks) == 1:  # one batch's records or one value: as they are, read-only
        data = chunks[0] if not isinstance(chunks[0], memoryview) or chunks[0].readonly else bytes(chunks[0])
    else:
        data = b"".join(chunks)
    return RecordColumns(data, cols, batches, partial)


def _in_place(b: RecordBatch, base: Any) -> bool:
    """Whether the batch's records are read where they are, in ``base`` (an uncompressed v2 batch)."""
    return b._legacy is None and b._buf is base and not b.attributes & 0x07


def _is_buffer(x: Any) -> bool:
    try:
        memoryview(x)
    except TypeError:
        return False
    return True
