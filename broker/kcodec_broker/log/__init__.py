"""The broker's data: per-partition logs of record batches, idempotent producer state, the data file."""

from .partition import PartitionLog
from .producers import DEFAULT_EXPIRATION_MS as DEFAULT_PRODUCER_ID_EXPIRATION_MS
from .store import DEFAULT_MAX_PARTITION_BYTES, LogStore

__all__ = ["DEFAULT_MAX_PARTITION_BYTES", "DEFAULT_PRODUCER_ID_EXPIRATION_MS", "LogStore", "PartitionLog"]
