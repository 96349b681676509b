# Typed signatures of kcodec/records/_crecords.pyx, the records' Cython twin (kept in step with it by
# tests/test_typing.py); its reference is kcodec/records/_pure.py, with the same names.

from typing import Any, Iterator, Optional

from ._cwriter import (BuilderBase as BuilderBase, RecordsWriter as RecordsWriter, builder_classes as builder_classes,
                       encode_records as encode_records)

class Record:
    offset: int
    timestamp: int
    key: Any
    value: Any
    attributes: int
    def __init__(self, offset: int, timestamp: int, key: Any, value: Any, headers: Any, attributes: int = ...) -> None: ...
    @property
    def headers(self) -> list[tuple[str, Any]]: ...

class BatchHeader:
    base_offset: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    partition_leader_epoch: int
    last_offset_delta: int
    base_sequence: int
    record_count: int
    magic: int
    attributes: int
    producer_epoch: int
    crc: int
    size: int
    offset: int
    index: int

class RecordIterator(Iterator[Record]):
    def __next__(self) -> Record: ...

def scan_v2(buf: Any, view: memoryview, pos: int, index: int, verify_crc: bool, zero_copy: bool,
            max_uncompressed: int, cls: type, crc_fn: Any) -> tuple[list[Any], int, int]: ...
def iter_records(buf: Any, pos: int, end: int, count: int, base_offset: int, base_timestamp: int, append_time: Any,
                 zero_copy: bool, origin: int, compressed: bool, batch_index: int) -> Iterator[Record]: ...
def iter_batch(h: BatchHeader) -> Iterator[Record]: ...
def decode_fast(buf: Any, pos: int, end: int, count: int, base_offset: int, base_timestamp: int, append_time: Any,
                zero_copy: bool) -> Optional[list[Record]]: ...
def decode_records(buf: Any, pos: int, end: int, count: int, base_offset: int, base_timestamp: int, append_time: Any,
                   zero_copy: bool, origin: int, compressed: bool, batch_index: int) -> list[Record]: ...
def fill_columns(jobs: list[Any], cols: dict[str, Any]) -> None: ...
def record_tuple(r: Any) -> tuple[Any, ...]: ...
def summarize(buf: Any, pos: int, end: int, count: int, base_timestamp: int, append_time: Optional[int], origin: int,
              compressed: bool, batch_index: int) -> tuple[int, int, int, Optional[int], Optional[int]]: ...
def lz4_route() -> str: ...
def inflate_lz4(data: Any, cap: int, magic: int = ...) -> Optional[bytes]: ...
