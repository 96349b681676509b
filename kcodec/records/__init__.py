"""Kafka's record batches: the data plane inside Produce, Fetch and ShareFetch ``records`` fields.

    from kcodec.records import BatchBuilder, Compression, iter_batches
    b = BatchBuilder(compression=Compression.ZSTD)
    b.append(b"key", b"value", headers=[("h", b"1")])
    for batch in iter_batches(b.build()):
        for record in batch:
            print(record.offset, record.key, record.value)

v2 RecordBatches (magic 2) and magic 0/1 message sets, read and written; CRC32C / CRC32 checked on read and
written on build; none, gzip, snappy, lz4 and zstd, each decompression bounded. The record loops run in
the Cython twin (``kcodec/records/_crecords.pyx``, ``_cwriter.pyx``) when it is built, in the pure reference
(``_pure.py``, the oracle) otherwise or with ``KCODEC_PURE=1``; ``BACKEND`` says which. See docs/records.md.
"""

from __future__ import annotations

from ._aborted import filter_aborted
from ._builder import BatchBuilder
from ._columns import RecordColumns, record_columns
from ._compression import CodecError, MissingCodecError, compress, decompress
from ._checksum import CRC32C_HARDWARE, crc32, crc32c
from ._control import ControlRecord, ControlType, control_batch, control_type, marker_record, read_control
from ._messages import PartitionRecords, fetched, produced, records_field
from ._reader import RecordBatch, iter_batches, read_batches, read_records
from ._select import BACKEND, backend
from ._summary import RecordSummary, record_summary
from ._types import (CONTROL_BIT, DEFAULT_MAX_UNCOMPRESSED, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT,
                     Compression, RecordsError, RecordsRead, TimestampType)

Record = backend.Record

__all__ = [
    "BACKEND", "BatchBuilder", "CONTROL_BIT", "CRC32C_HARDWARE", "DELETE_HORIZON_BIT", "TIMESTAMP_TYPE_BIT",
    "TRANSACTIONAL_BIT", "CodecError", "Compression", "ControlRecord", "ControlType",
    "DEFAULT_MAX_UNCOMPRESSED", "MissingCodecError", "PartitionRecords", "Record", "RecordBatch", "RecordColumns", "RecordsError",
    "RecordsRead", "RecordSummary", "record_columns", "record_summary",
    "TimestampType", "control_batch", "control_type", "compress", "crc32", "crc32c", "decompress", "fetched", "filter_aborted",
    "iter_batches", "marker_record", "produced", "read_batches", "read_control", "read_records", "records_field",
]
