"""Control records (in batches with the control bit): transaction markers and KRaft's records.

A control record's key is an int16 version then the ControlRecordType's int16 Type; the value of a
COMMIT or ABORT marker is an int16 version then the EndTxnMarker (its int32 coordinator epoch); KRaft's
values are an int16 version then the data message of that type (LeaderChangeMessage, ...).
"""

from __future__ import annotations

import enum
import struct
from typing import Any, NamedTuple, Optional

from ..exceptions import EncodeError
from ._types import RecordsError

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# The data message of each KRaft control type (kcodec.messages, decoded through the public API).
KRAFT_MESSAGES = {ControlType.LEADER_CHANGE: "LeaderChangeMessage", ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
                  ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord", ControlType.KRAFT_VERSION: "KRaftVersionRecord",
                  ControlType.KRAFT_VOTERS: "VotersRecord"}


class ControlRecord(NamedTuple):
    """A decoded control record: its type, the key's version, and the value (the coordinator epoch of a
    transaction marker as an int; a KRaft record as its kcodec message; None when there is no value)."""
    type: int
    version: int
    value_version: int
    value: Any


def control_type(record: Any) -> int:
    """The type in a control record's key (a ControlType, or the raw int for types this table lacks)."""
    key = record.key
    if key is None or len(key) < 4:
        raise RecordsError("control record key shorter than its 4 bytes", 0, f"record {record.offset}.key")
    version, kind = _KEY.unpack_from(key, 0)
    if version < 0:
        raise RecordsError(f"control record key version {version}", 0, f"record {record.offset}.key")
    try:
        return ControlType(kind)
    except ValueError:
        return kind


def read_control(record: Any) -> ControlRecord:
    """Decode a record of a control batch (``batch.is_control``)."""
    kind = control_type(record)
    version = _KEY.unpack_from(record.key, 0)[0]
    value = record.value
    if value is None:
        return ControlRecord(kind, version, -1, None)
    if len(value) < 2:
        raise RecordsError("control record value shorter than its version", 0, f"record {record.offset}.value")
    (value_version,) = struct.unpack_from(">h", value, 0)
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        if len(value) < 6:
            raise RecordsError("transaction marker value shorter than its 6 bytes", 0,
                               f"record {record.offset}.value")
        return ControlRecord(kind, version, value_version, _MARKER.unpack_from(value, 0)[1])
    name = KRAFT_MESSAGES.get(kind) if isinstance(kind, ControlType) else None
    if name is None:
        return ControlRecord(kind, version, value_version, bytes(value))
    import kcodec
    cls = kcodec.message_class(name=name)
    return ControlRecord(kind, version, value_version, kcodec.decode(cls, bytes(value)[2:], version=value_version))


def marker_record(kind: int, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """The key and value of a COMMIT or ABORT marker."""
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        raise EncodeError(f"control type {kind} is not a transaction marker", "key")
    return _KEY.pack(0, kind), _MARKER.pack(0, coordinator_epoch)


def control_batch(kind: int, producer_id: int, producer_epoch: int, coordinator_epoch: int = 0,
                  base_offset: int = 0, timestamp: Optional[int] = None, partition_leader_epoch: int = -1) -> bytes:
    """A transaction marker batch (COMMIT or ABORT), as a transaction coordinator has the leader write."""
    from ._builder import BatchBuilder
    b = BatchBuilder(base_offset=base_offset, producer_id=producer_id, producer_epoch=producer_epoch,
                     transactional=True, control=True, partition_leader_epoch=partition_leader_epoch)
    key, value = marker_record(kind, coordinator_epoch)
    b.append(key, value, timestamp=timestamp)
    return b.build()
