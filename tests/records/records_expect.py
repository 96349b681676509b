"""What a vector (or a fresh capture) must decode to, and a peer that must be there in CI."""

from __future__ import annotations

import importlib
import os
import struct
from typing import Any, Optional

import pytest
from needs import missing, need_module  # noqa: F401  (missing: re-exported to the records tests)

from kcodec.records import Compression, TimestampType, iter_batches

NO_TIMESTAMP = -1
# (producer epoch, base sequence) that a client writes beside producer id -1 when not idempotent: Kafka's
# Java client, librdkafka and kafka-python write -1, -1 (NO_PRODUCER_EPOCH, NO_SEQUENCE); these do not.
WITHOUT_PRODUCER_ID = {"aiokafka": (-1, 0), "kafkajs": (0, 0)}
# The partition leader epoch a client writes in a v2 batch (the broker sets it): 0, but -1 for these.
LEADER_EPOCH = {"aiokafka": -1}


def _backends() -> list[str]:
    from kcodec.records import _select

    return sorted(_select.available())


@pytest.fixture(params=_backends())
def records_backend(request: Any, monkeypatch: Any) -> str:
    """Run a reading test once per record backend that is built here (the Cython twin and the pure
    reference), whatever KCODEC_PURE selected for the process: every kcodec.records module's ``backend``
    (the one _select chose) is swapped."""
    import sys

    from kcodec.records import _select

    chosen = _select.available()[request.param]
    for name, module in list(sys.modules.items()):
        if name.startswith("kcodec.records.") and getattr(module, "backend", None) is _select.backend:
            monkeypatch.setattr(module, "backend", chosen)
    return str(request.param)


def need(module: str) -> Any:
    """Import a peer; a missing one fails in CI (CI=true) and skips elsewhere."""
    return need_module(module)


def _unhex(h: Optional[str]) -> Optional[bytes]:
    return None if h is None else bytes.fromhex(h)


def expected_records(about: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(key, value, headers, timestamp) of every message the client was asked to produce."""
    return [(_unhex(m["key"]), _unhex(m["value"]), [(n, _unhex(v)) for n, v in m["headers"]],
             NO_TIMESTAMP if m["timestamp"] is None else m["timestamp"]) for m in about["messages"]]


def _bytes(v: Any) -> Optional[bytes]:
    return None if v is None else bytes(v)  # memoryviews too (zero_copy=True)


def check_decodes(buf: Any, about: dict[str, Any], **options: Any) -> list[Any]:
    """Assert that ``buf`` (the records of every Produce request ``about`` lists, in order) decodes to
    exactly what ``about`` says was produced; return its batches."""
    magic, codec = about["magic"], Compression[about["compression"].upper()]
    batches, got, start, sequence = [], [], 0, 0
    for request in about["produce_requests"]:
        part = memoryview(buf)[start:start + request["bytes"]]
        start += request["bytes"]
        # A client leaves offsets to the broker: each request's records count from 0, across its batches.
        # Magic 1 wrappers are the exception: inner offsets are relative, the last one is the wrapper's
        # own offset (kafka-python writes 0 there, so they read as -5..0, as a broker would see them).
        found = list(iter_batches(part, **options))
        records = [r for b in found for r in b]
        first = 0
        if magic == 1 and codec is not Compression.NONE:
            assert len(found) == 1
            first = struct.unpack_from(">q", part, found[0].offset)[0] - len(records) + 1
        assert [r.offset for r in records] == list(range(first, first + len(records)))
        got += [(_bytes(r.key), _bytes(r.value), [(n, _bytes(v)) for n, v in r.headers], r.timestamp) for r in records]
        batches += found
    assert start == len(buf), "the vector holds bytes no Produce request sent"
    assert got == expected_records(about)
    for b in batches:
        assert (b.magic, b.compression) == (magic, codec), f"batch {b.index}"
        assert not b.is_transactional and not b.is_control
        if magic >= 1:
            assert b.timestamp_type is TimestampType.CREATE_TIME
        if magic < 2:
            continue
        records = list(b)
        # the base timestamp is the first record's (Java, librdkafka, kafka-python, aiokafka) or the
        # smallest (kafkajs); either way the records' own timestamps came out right above
        assert b.base_timestamp in (records[0].timestamp, min(r.timestamp for r in records))
        assert b.max_timestamp == max(r.timestamp for r in records)
        assert b.producer_id == about["producer_id"]
        client = about["client"].split()[0]
        assert b.partition_leader_epoch == LEADER_EPOCH.get(client, 0), client
        if about["idempotent"]:  # sequences run on across the batches of one producer and partition
            assert (b.producer_epoch, b.base_sequence) == (0, sequence), f"batch {b.index}"
            sequence += b.record_count
        else:
            assert (b.producer_epoch, b.base_sequence) == WITHOUT_PRODUCER_ID.get(client, (-1, -1)), client
    return batches
