"""Record batches: a 1,000-record batch (6-byte keys, 80-byte values) and a 1 MB Fetch of many batches
(100 records each), uncompressed and with each codec. Decode to records touching every key and value,
columnar, encode, CRC32C; kcodec.records (its selected backend, through the public API) beside aiokafka's
Cython ``_crecords``, kafka-python's ``kafka.record`` and kio's records, where each supports the case.

Each timed call is the call plus dropping its result. ``test_records_side_by_side`` times every
implementation of a case in interleaved rounds (the machine's load hits all alike), records every round
for the results files (``bench_record``, suite ``records``: docs/records.md's figures) and writes a quick
table to ``<results>/records.md`` (build/bench, or KCODEC_BENCH_DIR); the per-case pytest-benchmark tests
give the same cases pytest-benchmark's statistics.
"""

from __future__ import annotations

import io
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from figures.store import stats
from kcodec.records import BACKEND, BatchBuilder, Compression, crc32c, iter_batches, record_columns
from kcodec.sizes.timing import round_order

try:
    from aiokafka.record._crecords.default_records import DefaultRecordBatchBuilder as AioBuilder
    from aiokafka.record._crecords.memory_records import MemoryRecords as AioRecords
except ImportError:
    AioBuilder = AioRecords = None
try:
    import kafka.codec
    from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
    from kafka.record.memory_records import MemoryRecords as KpRecords
except ImportError:
    KpBuilder = KpRecords = None
try:
    from kio.records.readers import read_batch as kio_read_batch
    from kio.records.schema import NewRecordBatch as KioNewBatch
    from kio.records.schema import Record as KioRecord
    from kio.records.writers import write_new_batch as kio_write_batch
    from kio.static.primitive import i8, i16, i32, i64
except ImportError:
    kio_read_batch = None

RESULTS = Path(os.environ.get("KCODEC_BENCH_DIR", Path(__file__).resolve().parents[1] / "build" / "bench"))
KEYS = [b"k%05d" % i for i in range(1000)]
VALUES = [bytes([i % 251]) * 40 + b"%040d" % i for i in range(1000)]  # 80 bytes, compressible like real data
TS = 1_700_000_000_000
CODECS = list(Compression)


def kcodec_batch(codec: Compression, n: int = 1000, base_offset: int = 0) -> bytes:
    b = BatchBuilder(compression=codec, base_offset=base_offset)
    for i in range(n):
        b.append(KEYS[i % 1000], VALUES[i % 1000], (), TS + i)
    return b.build()


def fetch_1mb(codec: Compression) -> bytes:
    """About 1 MB of records (uncompressed) in batches of 100, as a Fetch partition's records field."""
    parts, size, offset = [], 0, 0
    while size < 1 << 20:
        part = kcodec_batch(Compression.NONE, 100, offset)
        size += len(part)
        parts.append(kcodec_batch(codec, 100, offset) if codec else part)
        offset += 100
    return b"".join(parts)


def kp_supports(codec: Compression) -> bool:
    if KpRecords is None:
        return False
    return codec == 0 or {1: kafka.codec.has_gzip, 2: kafka.codec.has_snappy, 3: kafka.codec.has_lz4,
                          4: kafka.codec.has_zstd}[int(codec)]()


# decode: every record of every batch, key and value touched
def decode_kcodec(data):
    for batch in iter_batches(data):
        for r in batch:
            r.key
            r.value


def decode_memory_records(cls):
    """aiokafka's and kafka-python's reader (one API): CRC checked as their consumers do by default
    (check_crcs=True), as kcodec does."""
    def decode(data):
        records = cls(data)
        while records.has_next():
            batch = records.next_batch()
            batch.validate_crc()
            for r in batch:
                r.key
                r.value
    return decode


def decode_kio(data):
    pos = 0
    while pos < len(data):
        batch, size = kio_read_batch(data, pos)
        pos += size
        for r in batch.records:
            r.key
            r.value


# encode: the 1,000-record batch
def encode_kcodec(codec):
    b = BatchBuilder(compression=codec)
    for i in range(1000):
        b.append(KEYS[i], VALUES[i], (), TS + i)
    return b.build()


def encode_builder(cls):
    """aiokafka's and kafka-python's DefaultRecordBatchBuilder (one API)."""
    def encode(codec):
        b = cls(magic=2, compression_type=int(codec), is_transactional=0, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, batch_size=1 << 30)
        for i in range(1000):
            b.append(i, TS + i, KEYS[i], VALUES[i], [])
        return b.build()
    return encode


def encode_kio(codec):
    base = datetime.fromtimestamp(TS / 1000, timezone.utc)
    records = tuple(KioRecord(attributes=i8(0), timestamp=base, offset=i64(i), key=KEYS[i], value=VALUES[i],
                              headers=()) for i in range(1000))
    return _kio_write(records)


# encode_list: the same 1,000 records from a list the caller already holds, each implementation's best public
# API for it: kcodec's extend; aiokafka's and kafka-python's builders have only append (their loop over it);
# kio's writer takes a tuple of its Record objects, made from the list
ROWS = [(KEYS[i], VALUES[i], (), TS + i) for i in range(1000)]


def encode_list_kcodec(codec):
    b = BatchBuilder(compression=codec)
    b.extend(ROWS)
    return b.build()


def encode_list_builder(cls):
    def encode(codec):
        b = cls(magic=2, compression_type=int(codec), is_transactional=0, producer_id=-1, producer_epoch=-1,
                base_sequence=-1, batch_size=1 << 30)
        for i, (key, value, _, ts) in enumerate(ROWS):  # (no headers: [] as in "encode", aiokafka takes a list)
            b.append(i, ts, key, value, [])
        return b.build()
    return encode


def encode_list_kio(codec):
    base = datetime.fromtimestamp(TS / 1000, timezone.utc)
    return _kio_write(tuple(KioRecord(attributes=i8(0), timestamp=base, offset=i64(i), key=key, value=value,
                                      headers=()) for i, (key, value, _, _) in enumerate(ROWS)))


def _kio_write(records: tuple) -> bytes:
    out = io.BytesIO()
    kio_write_batch(out, KioNewBatch(producer_id=i64(-1), producer_epoch=i16(-1), base_sequence=i32(-1),
                                     records=records, attributes=i16(0)))
    return out.getvalue()


def implementations(operation: str, codec: Compression) -> dict:
    """{name: function of the payload} for the implementations that support the case."""
    kc = f"kcodec-{BACKEND}"
    if operation == "columnar":  # beside aiokafka's iteration of the same records (issue 31's columnar target)
        return {kc: record_columns, **({"aiokafka": decode_memory_records(AioRecords)} if AioRecords else {})}
    if operation == "encode_list":  # (the per-append "encode" case stays as it is: both are published)
        return encode_list_implementations(codec)
    if operation not in ("decode", "encode"):
        raise ValueError(operation)
    decode = operation == "decode"
    candidates = {
        kc: decode_kcodec if decode else encode_kcodec,
        "aiokafka": AioRecords is not None and (decode_memory_records(AioRecords) if decode
                                                else encode_builder(AioBuilder)),
        "kafka-python": kp_supports(codec) and (decode_memory_records(KpRecords) if decode
                                                else encode_builder(KpBuilder)),
        "kio": kio_read_batch is not None and codec == Compression.NONE and (decode_kio if decode else encode_kio),
    }
    return {name: fn for name, fn in candidates.items() if fn}


def encode_list_implementations(codec: Compression) -> dict:
    candidates = {
        f"kcodec-{BACKEND}": encode_list_kcodec,
        "aiokafka": AioBuilder is not None and encode_list_builder(AioBuilder),
        "kafka-python": kp_supports(codec) and encode_list_builder(KpBuilder),
        "kio": kio_read_batch is not None and codec == Compression.NONE and encode_list_kio,
    }
    return {name: fn for name, fn in candidates.items() if fn}


ENCODES = ("encode", "encode_list")
CASES = [(op, size, codec) for op in ("decode", "columnar", *ENCODES) for size in ("1k batch", "1 MB fetch")
         for codec in CODECS if not (op in ENCODES and size == "1 MB fetch")]
_PAYLOADS: dict = {}


def payload(op: str, size: str, codec: Compression):
    if op in ENCODES:
        return codec
    key = (size, codec)
    if key not in _PAYLOADS:
        _PAYLOADS[key] = kcodec_batch(codec) if size == "1k batch" else fetch_1mb(codec)
    return _PAYLOADS[key]


def case_id(case) -> str:
    op, size, codec = case
    return f"{op}-{size.replace(' ', '')}-{Compression(codec).name.lower()}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_records(benchmark, case):
    op, size, codec = case
    data = payload(op, size, codec)
    benchmark.group = f"records {op} {size} {Compression(codec).name.lower()}"
    fn = implementations(op, codec)[f"kcodec-{BACKEND}"]
    benchmark.pedantic(fn, args=(data,), rounds=30, iterations=1, warmup_rounds=2)


@pytest.mark.parametrize("peer", ["aiokafka", "kafka-python", "kio"])
@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "columnar"], ids=case_id)
def test_records_peer(benchmark, case, peer):
    op, size, codec = case
    fn = implementations(op, codec).get(peer)
    if fn is None:
        pytest.skip(f"{peer} does not do {case_id(case)} here")
    data = payload(op, size, codec)
    benchmark.group = f"records {op} {size} {Compression(codec).name.lower()}"
    benchmark.pedantic(fn, args=(data,), rounds=10 if peer != "aiokafka" else 30, iterations=1, warmup_rounds=1)


def test_crc32c(benchmark):
    data = os.urandom(1 << 20)
    benchmark.group = "records crc32c 1 MB"
    benchmark.pedantic(crc32c, args=(data,), rounds=200, iterations=1, warmup_rounds=5)


def interleaved(fns: dict, arg, rounds: int, samples: dict | None = None) -> dict:
    """The fastest of ``rounds`` calls of each function, the functions taking turns (``round_order``: each
    runs right after every other equally often); every call's time is appended to ``samples[name]`` too
    when given."""
    best = {name: float("inf") for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in (names[i] for i in round_order(len(names), r)):
            fn = fns[name]
            t = time.perf_counter()
            fn(arg)
            took = time.perf_counter() - t
            best[name] = min(best[name], took)
            if samples is not None:
                samples.setdefault(name, []).append(took)
    return best


def test_records_side_by_side(bench_record):
    """Every case, every implementation in turn; the table of docs/records.md (<results>/records.md)."""
    rounds = int(os.environ.get("KCODEC_RECORDS_ROUNDS", "15"))
    kc = f"kcodec-{BACKEND}"
    rows = []
    for op, size, codec in CASES:
        data = payload(op, size, codec)
        fns = implementations(op, codec)
        samples: dict = {}
        best = interleaved(fns, data, rounds, samples)
        nbytes = len(data) if not isinstance(data, Compression) else len(kcodec_batch(codec))
        bench_record("records", case_id((op, size, codec)), {n: stats(v) for n, v in samples.items()},
                     bytes=nbytes, rounds=rounds, operation=op, payload=size, codec=Compression(codec).name.lower())
        rows.append((op, size, Compression(codec).name.lower(), nbytes, best, kc))
    crc_data = os.urandom(1 << 20)
    crc_samples: dict = {}
    crc_best = interleaved({kc: crc32c}, crc_data, 200, crc_samples)[kc]
    bench_record("records", "crc32c-1mb", {n: stats(v) for n, v in crc_samples.items()}, bytes=len(crc_data),
                 rounds=200, operation="crc32c")
    lines = ["| operation | payload | codec | bytes | kcodec (µs) | aiokafka (µs) | kafka-python (µs) | kio (µs) "
             "| vs aiokafka |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for op, size, codec, nbytes, best, kcn in rows:
        def cell(name, best=best):
            return f"{best[name] * 1e6:,.0f}" if name in best else "–"
        ratio = f"{best['aiokafka'] / best[kcn]:.2f}×" if "aiokafka" in best else "–"
        lines.append(f"| {op} | {size} | {codec} | {nbytes:,} | {cell(kcn)} | {cell('aiokafka')} | "
                     f"{cell('kafka-python')} | {cell('kio')} | {ratio} |")
    lines.append("")
    lines.append(f"CRC32C of 1 MB: {crc_best * 1e6:,.1f} µs ({(1 << 20) / crc_best / 1e9:.1f} GB/s), "
                 f"backend {BACKEND}, {rounds} interleaved rounds, best of each.")
    for op, size, codec, nbytes, best, kcn in rows:
        if op == "columnar" and codec == "none":
            lines.append(f"Columnar {size} uncompressed: {nbytes / best[kcn] / 1e9:.2f} GB/s.")
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "records.md").write_text(text, encoding="utf-8")
    assert all(b[kcn] > 0 for *_, b, kcn in rows)
