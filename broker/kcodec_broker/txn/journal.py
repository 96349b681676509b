"""A transactional id's coordinator state as the data file journals it (Kafka's __transaction_state value).

JSON, one entry per change (InitProducerId, a transaction growing or ending); the latest entry of an id
wins at load and the journal's rewrite keeps only it. An expired id's entry is empty (log/store.py), so
the load forgets it and the rewrite drops it. An entry that does not decode is skipped, as the
journal skips entries of unknown kinds.
"""

from __future__ import annotations

import json
import logging
from typing import Optional

from ..groups.offsets import Committed
from .metadata import Transaction, TxnState

log = logging.getLogger("kcodec_broker")


def encode(txn: Transaction) -> bytes:
    return json.dumps({
        "pid": txn.producer_id, "epoch": txn.producer_epoch, "previous_pid": txn.previous_producer_id,
        "last_epoch": txn.last_epoch, "updated_ms": txn.updated_ms, "tv": txn.transaction_version,
        "timeout_ms": txn.timeout_ms, "state": txn.state.value, "start_ms": txn.start_ms,
        **({"marker": list(txn.marker)} if txn.preparing else {}),
        "partitions": sorted(txn.partitions), "groups": sorted(txn.groups),
        "offsets": [[g, t, p, c.offset, c.leader_epoch, c.metadata, c.timestamp_ms]
                    for g, offsets in txn.offsets.items() for (t, p), c in offsets.items()],
    }, separators=(",", ":")).encode()


def decode(transactional_id: str, data: bytes) -> Optional[Transaction]:
    try:
        d = json.loads(data)
        txn = Transaction(transactional_id, int(d["pid"]), int(d["epoch"]), int(d["timeout_ms"]),
                          TxnState(d["state"]), int(d["start_ms"]),
                          {(str(t), int(p)) for t, p in d["partitions"]}, {str(g) for g in d["groups"]},
                          previous_producer_id=int(d["previous_pid"]), last_epoch=int(d.get("last_epoch", -1)),
                          updated_ms=int(d.get("updated_ms", -1)), transaction_version=int(d.get("tv", 1)))
        if txn.preparing:
            pid, epoch = d["marker"]
            txn.marker = (int(pid), int(epoch))
        for g, t, p, offset, leader_epoch, metadata, ts in d["offsets"]:
            txn.offsets.setdefault(str(g), {})[(str(t), int(p))] = Committed(int(offset), int(leader_epoch),
                                                                             str(metadata), int(ts))
    except (ValueError, KeyError, TypeError) as e:
        log.warning("skipping the journaled state of transactional id %r: %s", transactional_id, e)
        return None
    return txn
