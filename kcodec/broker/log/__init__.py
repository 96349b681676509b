"""The broker's data: per-partition logs of record batches, idempotent producer state, the data file."""

from .partition import PartitionLog
from .store import DEFAULT_MAX_PARTITION_BYTES, LogStore

__all__ = ["DEFAULT_MAX_PARTITION_BYTES", "LogStore", "PartitionLog"]
