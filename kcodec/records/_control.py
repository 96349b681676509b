"""Control records (in batches with the control bit): transaction markers and KRaft's records.

A control record's key is an int16 version then a ControlRecordType. A COMMIT or ABORT marker's value is an
int16 version then an EndTxnMarker; a KRaft record's value is its data message itself (LeaderChangeMessage,
...) at version 0, as Kafka's ControlRecordUtils writes and reads every one (their *_CURRENT_VERSION): the
message's own first field, Version, is the record's version. All of them are kcodec messages derived from
Kafka's definitions, decoded and encoded through the public API.
"""

from __future__ import annotations

import enum
import struct
from typing import Any, NamedTuple, Optional

import kcodec

from ..exceptions import DecodeError, EncodeError
from ..messages import ControlRecordType, EndTxnMarker
from ._types import RecordsError

_VERSION = struct.Struct(">h")


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# The data message of each KRaft control type.
KRAFT_MESSAGES = {ControlType.LEADER_CHANGE: "LeaderChangeMessage", ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
                  ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord", ControlType.KRAFT_VERSION: "KRaftVersionRecord",
                  ControlType.KRAFT_VOTERS: "VotersRecord"}


class ControlRecord(NamedTuple):
    """A decoded control record: its type, the key's and the value's versions (a KRaft record's: its
    message's Version field), and the value (the EndTxnMarker of a transaction marker; a KRaft record as its
    kcodec message; the raw bytes of a type this table lacks; None when there is no value)."""
    type: int
    version: int
    value_version: int
    value: Any


def _decode(cls: type, data: Any, what: str, record: Any, prefixed: bool = True) -> tuple[int, Any]:
    """(version, message) of a control key or value at version 0, the only one Kafka defines for the key and
    the marker and the one it reads KRaft's records at (later versions would add fields at the end, left
    unread, as Kafka's reader does). ``prefixed``: an int16 version comes first (the key, a marker's value);
    else the message's own Version field is the version (KRaft's records)."""
    if data is None or len(data) < 2:
        raise RecordsError(f"control record {what} shorter than its version", 0, f"record {record.offset}.{what}")
    (version,) = _VERSION.unpack_from(data, 0)
    try:
        return version, kcodec.decode_from(cls, bytes(data), 0, 2 if prefixed else 0)[0]
    except (DecodeError, kcodec.UnsupportedVersionError) as e:
        raise RecordsError(f"control record {what}: {e}", 0, f"record {record.offset}.{what}") from None


def control_type(record: Any) -> int:
    """The type in a control record's key (a ControlType, or the raw int for types this table lacks)."""
    kind = _decode(ControlRecordType, record.key, "key", record)[1].type
    try:
        return ControlType(kind)
    except ValueError:
        return int(kind)


def read_control(record: Any) -> ControlRecord:
    """Decode a record of a control batch (``batch.is_control``)."""
    version = _decode(ControlRecordType, record.key, "key", record)[0]
    kind = control_type(record)
    value = record.value
    if value is None:
        return ControlRecord(kind, version, -1, None)
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        value_version, marker = _decode(EndTxnMarker, value, "value", record)
        return ControlRecord(kind, version, value_version, marker)
    name = KRAFT_MESSAGES.get(kind) if isinstance(kind, ControlType) else None
    if name is None:
        return ControlRecord(kind, version, -1, bytes(value))
    value_version, message = _decode(kcodec.message_class(name=name), value, "value", record, prefixed=False)
    return ControlRecord(kind, version, value_version, message)


def marker_record(kind: int, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """The key and value of a COMMIT or ABORT marker (version 0 of both)."""
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        raise EncodeError(f"control type {kind} is not a transaction marker", "key")
    return (_VERSION.pack(0) + kcodec.encode(ControlRecordType(type=int(kind)), 0),
            _VERSION.pack(0) + kcodec.encode(EndTxnMarker(coordinator_epoch=coordinator_epoch), 0))


def control_batch(kind: int, producer_id: int, producer_epoch: int, coordinator_epoch: int = 0,
                  base_offset: int = 0, timestamp: Optional[int] = None, partition_leader_epoch: int = -1) -> bytes:
    """A transaction marker batch (COMMIT or ABORT), as a transaction coordinator has the leader write."""
    from ._builder import BatchBuilder
    b = BatchBuilder(base_offset=base_offset, producer_id=producer_id, producer_epoch=producer_epoch,
                     transactional=True, control=True, partition_leader_epoch=partition_leader_epoch)
    key, value = marker_record(kind, coordinator_epoch)
    b.append(key, value, timestamp=timestamp)
    return b.build()
