"""atheris harness: random bytes into every decoder kcodec has, with the extensions built with
AddressSanitizer. Run it with `make fuzz-atheris` (FUZZ_SECONDS=300 by default), which does:

    build/fuzz/  a copy of the package whose kcodec/*.pyx are built with
                 KCODEC_SANITIZE=address (gcc -fsanitize=address -O1 -g -fno-omit-frame-pointer; the
                 runtime is not linked in but preloaded: atheris ships one with libFuzzer in it)
    LD_PRELOAD=$(python -c "import atheris; print(atheris.path())")/asan_with_fuzzer.so \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    PYTHONPATH=build/fuzz .venv/bin/python fuzz/fuzz_kcodec.py -max_total_time=300 build/fuzz/corpus

Input: byte 0 picks the entry point, bytes 1-2 the target (api key and version, or columnar message and
version), the rest is the data:
  0  decode_request(size prefix + data)                  (every api key and version via the header)
  1  decode_response(size prefix + data, key, version)   (every api key and version)
  2  columnar.tables, both engines                       (Metadata v0-13, DescribeTopicPartitions, ListTopics)
  3  columnar.topic_names, both engines
  4  decode(cls, data, version) for every request/response class, with every backend built
  5  kcodec.records: read_batches(data), every batch's records and the columns, with every record backend
     (bit 0 of the target: verify CRCs)
  6  kcodec.records: data as the records of a v2 batch whose header is made here (record count: the
     target's low byte; codec: its high byte mod 5), CRC skipped, so that mutations reach the records
A kcodec.KcodecError is the expected answer to bad bytes; any other exception, a difference between
the columnar engines or between the backends, or a sanitizer report is a finding. Coverage guidance
comes from atheris' instrumentation of kcodec's Python modules (gcc cannot add libFuzzer's native
coverage; ASan still checks every access the extensions make).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["kcodec"]):
    import kcodec
    from kcodec import columnar, definitions
    from kcodec.core.backend import available
    from kcodec.core.ir import program_for
    from kcodec.messages import DescribeTopicPartitionsResponse, ListTopicsResponse, MetadataResponse
    from kcodec import records
    from kcodec.records._pure import record_tuple
    from kcodec.records._select import available as record_backends

BACKENDS = available()
TARGETS = sorted((key, v, kind) for key, name in definitions.api_keys().items() for kind in ("request", "response")
                 for v in range(definitions.get(definitions.by_api_key(key, kind)).valid.lo,
                                definitions.get(definitions.by_api_key(key, kind)).valid.hi + 1))
COLUMNAR = [(MetadataResponse, v) for v in range(14)] + [(DescribeTopicPartitionsResponse, 0)] + \
    [(ListTopicsResponse, v) for v in (0, 1)]
ENGINES = ["python"] + (["cython"] if columnar._columnar is not None else [])
RECORD_BACKENDS = record_backends()
RECORDS_CAP = 1 << 20  # max_uncompressed while fuzzing: bombs are refused fast


def records_outcome(body, verify: bool):
    """Every batch's records by every record backend, and the columns: one outcome per backend."""
    results = []
    for name, backend in sorted(RECORD_BACKENDS.items()):
        def run():
            out = []
            for batch in records.iter_batches(body, verify_crc=verify, max_uncompressed=RECORDS_CAP):
                if batch._legacy is not None:
                    out.append([record_tuple(r) for r in batch._legacy])
                else:
                    out.append([record_tuple(r) for r in backend.decode_records(*batch._decode_args())])
                    out.append([record_tuple(r) for r in backend.iter_records(*batch._decode_args())])
            return out
        results.append(outcome(run))
    results.append(outcome(lambda: [c.tolist() for c in _columns(body, verify)]))
    return results


def _columns(body, verify: bool):
    c = records.record_columns(body, verify_crc=verify, max_uncompressed=RECORDS_CAP)
    return (c.offset, c.timestamp, c.key_length, c.value_length, c.header_count)


def v2_batch(records_section: bytes, count: int, codec: int) -> bytes:
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records_section), -1, 2, 0, codec, max(count - 1, 0), 0, 0,
                         -1, -1, -1, count)
    return header + records_section


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except kcodec.KcodecError as e:
        return ("error", type(e).__name__, getattr(e, "reason", str(e)), getattr(e, "offset", None),
                getattr(e, "path", None))


def same_tables(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] != "ok":
        return a == b
    x, y = a[1], b[1]
    if isinstance(x, columnar.TopicNames):
        return x.names == y.names and x.internal.tolist() == y.internal.tolist() and x.root == y.root
    if x.root != y.root or x.tables.keys() != y.tables.keys():
        return False
    for name, t in x.tables.items():
        u = y.tables[name]
        if len(t) != len(u) or list(t.columns) != list(u.columns):
            return False
        for c, col in t.columns.items():
            other = u.columns[c]
            if isinstance(col, columnar.Lists):
                if col.tolist() != other.tolist():
                    return False
            elif isinstance(col, list):
                if col != other:
                    return False
            elif col.tolist() != other.tolist():
                return False
    return True


def TestOneInput(data: bytes) -> None:
    if len(data) < 3:
        return
    mode, target, body = data[0] % 7, struct.unpack_from(">H", data, 1)[0], data[3:]
    frame = struct.pack(">i", len(body)) + body
    if mode == 0:
        outcome(kcodec.decode_request, frame)
    elif mode == 1:
        key, version, _ = TARGETS[target % len(TARGETS)]
        outcome(kcodec.decode_response, frame, key, version)
    elif mode in (2, 3):
        cls, version = COLUMNAR[target % len(COLUMNAR)]
        scan = columnar.tables if mode == 2 else columnar.topic_names
        results = [outcome(lambda: scan(cls, body, version, engine=e)) for e in ENGINES]
        if not all(same_tables(results[0], r) for r in results[1:]):
            raise AssertionError(f"columnar engines differ on {cls.__name__} v{version}: {results}")
    elif mode in (5, 6):
        if mode == 6:
            body = v2_batch(body, target & 0xFF, (target >> 8) % 5)
        results = records_outcome(body, verify=mode == 5 and bool(target & 1))
        # the backends' records (and errors) are identical; the columns fail or not alike (their error may
        # name another batch: they read every header before any record)
        if any(r != results[0] for r in results[1:-1]) or results[-1][0] != results[0][0]:
            raise AssertionError(f"record backends differ: {results}")
    else:
        key, version, kind = TARGETS[target % len(TARGETS)]
        prog = program_for(kcodec.message_class(key, kind), version)
        results = [outcome(b.decode, prog, body) for b in BACKENDS.values()]
        if any(r != results[0] for r in results[1:]):
            raise AssertionError(f"backends differ on {prog.message} v{version}: {results}")


def seeds(folder: Path, shared: Path) -> None:
    """A starting corpus: real frames (as requests and responses) and encoded columnar messages."""
    import json

    from kcodec.testing import instances

    folder.mkdir(parents=True, exist_ok=True)
    index = {}
    real = shared / "vectors" / "real-frames"
    if (real / "index.json").exists():
        index = json.loads((real / "index.json").read_text())
    where = {(k, v, kind): i for i, (k, v, kind) in enumerate(TARGETS)}
    for name, facts in index.items():
        body = (real / name).read_bytes()[4:]
        kind = "response" if name.endswith("_response.bin") else "request"
        i = where.get((facts.get("api_key"), facts.get("api_version"), kind), 0)
        mode = 0 if kind == "request" else 1
        (folder / f"real-{name}").write_bytes(bytes([mode]) + struct.pack(">H", i) + body)
        (folder / f"decode-{name}").write_bytes(bytes([4]) + struct.pack(">H", i) + body[4:])
    for i, (cls, version) in enumerate(COLUMNAR):
        msg = instances(cls, version).example()
        body = kcodec.encode(msg, version)
        for mode in (2, 3):
            (folder / f"columnar-{mode}-{cls.__name__}-v{version}").write_bytes(
                bytes([mode]) + struct.pack(">H", i) + body)
    for magic in (0, 1, 2):
        for codec in records.Compression:
            if magic < 2 and codec == records.Compression.ZSTD:
                continue
            b = records.BatchBuilder(magic=magic, compression=codec)
            for n in range(3):
                b.append(b"key%d" % n, b"value" * n, headers=[("h", b"x")] if magic == 2 else (), timestamp=n)
            batch = b.build()
            (folder / f"records-{magic}-{codec.name}").write_bytes(bytes([5, 0, 1]) + batch + batch[:20])
            if magic == 2:
                (folder / f"records-section-{codec.name}").write_bytes(bytes([6, int(codec), 3]) + batch[61:])


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--seed":
        seeds(Path(sys.argv[2]), Path(sys.argv[3]))
        sys.exit(0)
    print(f"kcodec backends {sorted(BACKENDS)}, columnar engines {ENGINES}, {len(TARGETS)} targets", flush=True)
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
