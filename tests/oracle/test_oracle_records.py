"""Record batches against Kafka 4.4's MemoryRecordsBuilder and MemoryRecords, both ways, on both record
backends: magic 0, 1 and 2, every codec, CreateTime and LogAppendTime, idempotent and transactional
batches, transaction markers and KRaft's control records, headers, null and empty keys and values, offsets
and timestamps at their edges, several batches in one buffer.

- Kafka builds each case; kcodec.records reads Kafka's bytes to exactly what Kafka's MemoryRecords reads
  there (every batch field, every record's offset, timestamp, key, value and headers, control records);
- kcodec's BatchBuilder builds the same case; Kafka reads it to the same; where both compress alike the
  bytes are Kafka's own (always uncompressed; COMPRESSED_ALIKE below).
"""

from __future__ import annotations

import base64
import sys
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import pytest
import tally
from extremes import KINDS, extreme
from kafka_json import from_kafka, to_kafka

import kcodec
from kcodec.records import BatchBuilder, Compression, TimestampType, iter_batches, read_control
from kcodec.records import _select

pytestmark = pytest.mark.oracle

KAFKA_LINE = "4.4"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TS_NAMES = {TimestampType.CREATE_TIME: "CreateTime", TimestampType.LOG_APPEND_TIME: "LogAppendTime"}
# Codecs whose compressed bytes kcodec writes exactly as Kafka's classes do (at the default levels), by
# magic. Reviewed: the other two inflate to the same records but compress otherwise, and Kafka reads kcodec's:
# - lz4: kcodec's frames carry block checksums (FLG 0x70; Kafka's KafkaLZ4BlockOutputStream writes none,
#   0x60) from another compressor (cramjam's LZ4F), and magic 0 keeps the correct header checksum where
#   Kafka writes the one of its pre-KAFKA-3160 bug (Kafka does not check it for magic 0);
# - zstd: kcodec writes one frame with its content size (zstandard's one-shot compress); Kafka streams
#   through zstd-jni's ZstdOutputStream, a frame without it, its blocks cut elsewhere.
COMPRESSED_ALIKE = {(m, c) for m in (0, 1, 2) for c in ("gzip", "snappy")}


def _b64(v: Optional[bytes]) -> Optional[str]:
    return None if v is None else base64.b64encode(v).decode()


def _records(n: int, seed: int, headers: bool = True, base_ts: int = 1_700_000_000_000) -> list[dict[str, Any]]:
    """n records with keys and values of every shape: null, empty, short, long and repetitive (compressible)."""
    shapes: list[Optional[bytes]] = [None, b"", b"k", bytes(range(256)), b"kcodec " * 300, "é€𝄞".encode()]
    out = []
    for i in range(n):
        hs = [["h", _b64(b"1")], ["null", None], ["é", _b64(b"")], ["h", _b64(b"dup")]][: (i + seed) % 5] if headers else []
        out.append({"timestamp": base_ts + (i * 37 + seed) % 1000 - 500, "key": _b64(shapes[(i + seed) % 6]),
                    "value": _b64(shapes[(i * 5 + seed + 1) % 6]), "headers": hs})
    return out


Case = tuple[str, list[dict[str, Any]]]  # a name, and the batches of one buffer


def _v2_cases() -> list[Case]:
    cases: list[Case] = []
    for codec in CODECS:
        cases.append((f"v2 {codec}", [{"compression": codec, "records": _records(7, 0)}]))
        cases.append((f"v2 {codec} 300 records", [{"compression": codec, "records": _records(300, 3)}]))
        cases.append((f"v2 {codec} idempotent", [{
            "compression": codec, "base_offset": 1_000, "partition_leader_epoch": 5, "producer_id": 123_456_789_012,
            "producer_epoch": 3, "base_sequence": 0x7FFFFFFE, "records": _records(4, 1)}]))
        cases.append((f"v2 {codec} transactional", [{
            "compression": codec, "producer_id": 1, "producer_epoch": 0x7FFF, "base_sequence": 0, "transactional": True,
            "partition_leader_epoch": 0x7FFFFFFF, "records": _records(3, 2, headers=False)}]))
        cases.append((f"v2 {codec} LogAppendTime", [{
            "compression": codec, "timestamp_type": "LogAppendTime", "log_append_time": 1_700_000_123_456,
            "records": _records(3, 4)}]))
    cases.append(("v2 timestamps at the edges", [{"records": [
        {"timestamp": ts, "key": None, "value": _b64(b"v"), "headers": []}
        for ts in (0, -1, 1, 0x7FFFFFFF, 0x80000000, 1 << 40)]}]))
    cases.append(("v2 offsets with gaps (a compacted log)", [{"base_offset": 10, "records": [
        dict(r, offset=o) for r, o in zip(_records(4, 5), (10, 11, 15, 100))]}]))
    cases.append(("v2 three batches", [{"base_offset": 0, "records": _records(2, 6)},
                                       {"base_offset": 2, "compression": "zstd", "records": _records(3, 7)},
                                       {"base_offset": 5, "compression": "gzip", "records": _records(1, 8)}]))
    for marker in ("COMMIT", "ABORT"):
        cases.append((f"v2 {marker} marker", [{
            "control": True, "transactional": True, "producer_id": 77, "producer_epoch": 4, "base_offset": 42,
            "partition_leader_epoch": 9,
            "records": [{"marker": marker, "coordinator_epoch": 12, "timestamp": 1_700_000_000_001}]}]))
    return cases


def _legacy_cases() -> list[Case]:
    cases: list[Case] = []
    for magic in (0, 1):
        for codec in CODECS[:4]:  # zstd needs magic 2
            ts = "NoTimestampType" if magic == 0 else "CreateTime"
            recs = [dict(r, headers=[], timestamp=-1 if magic == 0 else r["timestamp"]) for r in _records(5, magic)]
            cases.append((f"magic {magic} {codec}", [{"magic": magic, "compression": codec, "timestamp_type": ts,
                                                      "base_offset": 100, "records": recs}]))
        recs = [dict(r, headers=[]) for r in _records(3, 9)]
        if magic == 1:
            cases.append(("magic 1 gzip LogAppendTime", [{"magic": 1, "compression": "gzip", "timestamp_type":
                                                           "LogAppendTime", "log_append_time": 1_700_000_000_999,
                                                           "records": recs}]))
    return cases


CASES = _v2_cases() + _legacy_cases()


@contextmanager
def record_backend(name: str) -> Iterator[None]:
    """kcodec.records with one backend (the Cython twin or the pure reference), whatever KCODEC_PURE chose."""
    chosen, old = _select.available()[name], _select.backend
    modules = [m for n, m in list(sys.modules.items()) if n.startswith("kcodec.records.") and getattr(m, "backend", None) is old]
    for m in modules:
        m.backend = chosen  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m in modules:
            m.backend = old  # type: ignore[attr-defined]


def kcodec_reads(data: bytes) -> dict[str, Any]:
    """What kcodec.records reads in a buffer, in the shape of the oracle's records_read."""
    batches = []
    for b in iter_batches(data):
        batch = {"magic": b.magic, "base_offset": b.base_offset, "last_offset": b.last_offset, "size": b.size,
                 "compression": b.compression.name.lower(),
                 "timestamp_type": "NoTimestampType" if b.magic == 0 else TS_NAMES[b.timestamp_type],
                 "max_timestamp": b.max_timestamp, "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                 "base_sequence": b.base_sequence, "partition_leader_epoch": b.partition_leader_epoch,
                 "transactional": b.is_transactional, "control": b.is_control, "checksum": b.crc, "records": []}
        for r in b:
            rec = {"offset": r.offset, "timestamp": r.timestamp, "key": _b64(_bytes(r.key)),
                   "value": _b64(_bytes(r.value)), "headers": [[k, _b64(_bytes(v))] for k, v in r.headers]}
            if b.is_control:
                control = read_control(r)
                rec["control_type"] = int(control.type)
                if control.type in (0, 1):
                    rec["coordinator_epoch"] = control.value.coordinator_epoch
            batch["records"].append(rec)
        batches.append(batch)
    return {"valid_bytes": len(data), "batches": batches}


def _bytes(v: Any) -> Optional[bytes]:
    return None if v is None else bytes(v)


def kafka_view(read: dict[str, Any]) -> dict[str, Any]:
    """The oracle's records_read without what kcodec's reader derives rather than reads (a record's
    sequence, base sequence + offset delta)."""
    for b in read["batches"]:
        for r in b["records"]:
            r.pop("sequence", None)
    return read


def kcodec_builds(batches: list[dict[str, Any]]) -> bytes:
    """kcodec's BatchBuilder making the batches a case describes."""
    out = b""
    for spec in batches:
        magic = spec.get("magic", 2)
        ts_type = TimestampType.LOG_APPEND_TIME if spec.get("timestamp_type") == "LogAppendTime" else TimestampType.CREATE_TIME
        if spec.get("control"):
            marker = spec["records"][0]
            out += kcodec.records.control_batch(
                kcodec.records.ControlType[marker["marker"]], spec["producer_id"], spec["producer_epoch"],
                marker["coordinator_epoch"], spec.get("base_offset", 0), marker["timestamp"],
                spec.get("partition_leader_epoch", -1))
            continue
        b = BatchBuilder(magic, Compression[spec.get("compression", "none").upper()], base_offset=spec.get("base_offset", 0),
                         producer_id=spec.get("producer_id", -1), producer_epoch=spec.get("producer_epoch", -1),
                         base_sequence=spec.get("base_sequence", -1), transactional=spec.get("transactional", False),
                         partition_leader_epoch=spec.get("partition_leader_epoch", -1), timestamp_type=ts_type)
        for r in spec["records"]:
            b.append(_unb64(r["key"]), _unb64(r["value"]), [(k, _unb64(v)) for k, v in r["headers"]], r["timestamp"])
        out += b.build()
    return out


def _unb64(v: Optional[str]) -> Optional[bytes]:
    return None if v is None else base64.b64decode(v)


def _buildable(batches: list[dict[str, Any]]) -> bool:
    """Whether kcodec's builder can make the case: offsets one after the other, LogAppendTime only as a
    batch's timestamp type (kcodec writes the records' own times; the broker sets the append time)."""
    return all("offset" not in r and spec.get("timestamp_type") != "LogAppendTime"
               for spec in batches for r in spec["records"])


@pytest.fixture(scope="module")
def kafka_built(oracle: Any) -> list[bytes]:
    results = oracle.jvms[KAFKA_LINE].call("records_build", cases=[{"batches": b} for _, b in CASES])["results"]
    errors = [(name, r["error"]) for (name, _), r in zip(CASES, results) if "error" in r]
    assert not errors, errors
    return [base64.b64decode(r["bytes"]) for r in results]


@pytest.mark.parametrize("backend", sorted(_select.available()))
def test_kcodec_reads_kafkas_batches(oracle: Any, kafka_built: list[bytes], backend: str) -> None:
    read = oracle.jvms[KAFKA_LINE].call("records_read", cases=[{"bytes": _b64(d)} for d in kafka_built])["results"]
    wrong = []
    with record_backend(backend):
        for (name, _), data, theirs in zip(CASES, kafka_built, read):
            ours = kcodec_reads(data)
            if ours != kafka_view(theirs):
                wrong.append(f"{name}: kcodec ({backend}) reads\n    {ours}\n  Kafka reads\n    {theirs}")
            tally.count(f"record-batch cases Kafka built, read by kcodec ({backend})")
    assert not wrong, _report(wrong)


@pytest.mark.parametrize("backend", sorted(_select.available()))
def test_kafka_reads_kcodecs_batches(oracle: Any, kafka_built: list[bytes], backend: str) -> None:
    """Kafka reads kcodec's batches to what it reads in its own (the batch's size and CRC aside where the
    codec compresses otherwise), and kcodec reads them alike."""
    cases = [(name, batches, theirs) for (name, batches), theirs in zip(CASES, kafka_built) if _buildable(batches)]
    with record_backend(backend):
        ours = [kcodec_builds(batches) for _, batches, _ in cases]
    jvm = oracle.jvms[KAFKA_LINE]
    read = jvm.call("records_read", cases=[{"bytes": _b64(d)} for d in ours])["results"]
    read_theirs = jvm.call("records_read", cases=[{"bytes": _b64(d)} for _, _, d in cases])["results"]
    wrong = []
    with record_backend(backend):
        for (name, batches, theirs), data, kafka_read, kafka_own in zip(cases, ours, read, read_theirs):
            if "error" in kafka_read:
                wrong.append(f"{name}: Kafka cannot read kcodec's ({backend}) batches: {kafka_read['error']}")
                continue
            mine, own = kafka_view(kafka_read), kafka_view(kafka_own)
            if kcodec_reads(data) != mine:
                wrong.append(f"{name}: kcodec ({backend}) reads its batches as\n    {kcodec_reads(data)}\n"
                             f"  Kafka as\n    {mine}")
            alike = all(c == "none" or (m, c) in COMPRESSED_ALIKE for m, c in
                        {(spec.get("magic", 2), spec.get("compression", "none")) for spec in batches})
            if alike and data != theirs:
                wrong.append(f"{name}: kcodec ({backend}) builds\n    {data.hex()}\n  Kafka builds\n    {theirs.hex()}")
            if not alike:  # compressed otherwise: another size and CRC, the same records
                for view in (mine, own):
                    view.pop("valid_bytes")
                    for b in view["batches"]:
                        del b["size"], b["checksum"]
            if mine != own:
                wrong.append(f"{name}: Kafka reads kcodec's ({backend}) batches as\n    {mine}\n  its own as\n    {own}")
            tally.count(f"record-batch cases kcodec built, read by Kafka ({backend})")
    assert not wrong, _report(wrong)


def _report(wrong: list[str]) -> str:
    names = sorted({w.split(":")[0] for w in wrong})
    return f"{len(names)} cases differ: {names}\n" + "\n".join(wrong[:6])


KRAFT = {"LEADER_CHANGE": "LeaderChangeMessage", "SNAPSHOT_HEADER": "SnapshotHeaderRecord",
         "SNAPSHOT_FOOTER": "SnapshotFooterRecord", "KRAFT_VERSION": "KRaftVersionRecord", "KRAFT_VOTERS": "VotersRecord"}


@pytest.mark.parametrize("backend", sorted(_select.available()))
def test_kcodec_reads_kafkas_kraft_control_records(oracle: Any, backend: str) -> None:
    """KRaft's control records as Kafka's builder appends them (appendLeaderChangeMessage, ...), each
    message at its extremes: kcodec's read_control gives the control type and the message (read at version 0,
    as Kafka writes and reads them; the message's own Version field is the record's version)."""
    cases: list[tuple[str, str, str, dict[str, Any]]] = []
    for kind, name in KRAFT.items():
        cls = kcodec.message_class(name=name)
        for label in KINDS:
            msg = extreme(cls, 0, label)
            cases.append((kind, name, label, {"batches": [{"control": True, "base_offset": 3, "partition_leader_epoch": 7, "records": [
                {"kraft": kind, "v": 0, "json": to_kafka(msg, 0), "timestamp": 1_700_000_000_000}]}]}))
    built = oracle.jvms[KAFKA_LINE].call("records_build", cases=[c for *_, c in cases])["results"]
    wrong = []
    with record_backend(backend):
        for (kind, name, label, case), result in zip(cases, built):
            assert "error" not in result, (kind, label, result)
            [batch] = list(iter_batches(base64.b64decode(result["bytes"])))
            [record] = list(batch)
            control = read_control(record)
            sent = case["batches"][0]["records"][0]["json"]
            expected = to_kafka(from_kafka(kcodec.message_class(name=name), sent, 0), 0)
            if not batch.is_control or control.type != kcodec.records.ControlType[kind] \
                    or to_kafka(control.value, 0) != expected or control.value_version != sent["version"]:
                wrong.append(f"{kind} {label}: kcodec ({backend}) reads {control}, Kafka wrote {sent}")
            tally.count(f"KRaft control records Kafka built, read by kcodec ({backend})")
    assert not wrong, "\n".join(wrong)
