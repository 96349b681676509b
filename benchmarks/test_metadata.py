"""What users pay, kcodec beside kio 0.6.5 and kafka-python 3.0.12 (each left out when not installed):
decode to objects, encode, encoded_size, columnar decode and the names-only scan of Metadata responses
(v1 and v12, 1,000 to 100,000 topics), DescribeTopicPartitions v0 responses and the Metadata v12 request
naming 1,000 topics.

Every codec goes through its public API (``kcodec.decode``, ``kcodec.encode``, ``kcodec.columnar``: this
process's backend, the compiled one when built, the reference under KCODEC_PURE=1). One benchmark per
case; its timed function is one interleaved round, every codec called once (kcodec.sizes.timing), and
each sample counts the call plus dropping its result, the call alone kept too. Every round's samples go to
the results files (``bench_record``, suite ``metadata``: benchmarks/figures/metadata.py makes the
published figures of them), each codec's medians to the case's extra_info too. Every codec's result is
checked once against the expected one, so the figures time real work.

Names: ``<operation>[<message> <size> v<version>]``.
"""

from __future__ import annotations

import gc
import io
import itertools
import time
import tracemalloc
from typing import Any, Callable, NamedTuple

import pytest

import kcodec
from kcodec import columnar
from kcodec.messages import DescribeTopicPartitionsResponse, MetadataRequest, MetadataResponse
from kcodec.sizes.timing import interleaved_round, medians

import payloads as _payloads
from figures.store import stats

try:
    import kio.index
    import kio.serial
except ImportError:
    kio = None
try:
    import kafka.protocol.metadata as kp_metadata
except ImportError:
    kp_metadata = None

KCODEC = f"kcodec-{kcodec.BACKEND}"
CLASSES = {"metadata": MetadataResponse, "dtp": DescribeTopicPartitionsResponse, "request": MetadataRequest}


class Case(NamedTuple):
    operation: str  # decode, encode, encoded_size, columnar, names
    message: str    # metadata, dtp, request
    size: str
    version: int

    @property
    def id(self) -> str:
        return f"{self.message} {self.size} v{self.version}"


_OBJECT_CASES = [("metadata", "1k", 1), ("metadata", "1k", 12), ("metadata", "10k", 12), ("metadata", "100k", 12),
                 ("dtp", "1k", 0), ("dtp", "10k", 0), ("request", "1k", 12)]
_COLUMNAR_CASES = [("metadata", "1k", 12), ("metadata", "10k", 12), ("metadata", "100k", 12),
                   ("dtp", "1k", 0), ("dtp", "10k", 0)]
CASES = ([Case(op, *c) for op in ("decode", "encode") for c in _OBJECT_CASES]
         + [Case("encoded_size", *c) for c in _OBJECT_CASES if c[0] == "metadata"]
         + [Case(op, *c) for op in ("columnar", "names") for c in _COLUMNAR_CASES])
PEER_SIZES = {"1k", "10k"}  # the peers and columnar's python engine make an object per partition: not at 100k


@pytest.fixture(scope="module")
def bodies(metadata_payloads) -> dict[tuple[str, str, int], bytes]:
    return make_bodies(metadata_payloads)


def make_bodies(metadata_payloads: dict[tuple[str, int], bytes]) -> dict[tuple[str, str, int], bytes]:
    """{(message, size, version): body} of every case, from benchmarks/payloads.py's Metadata bodies."""
    out = {("metadata", s, v): b for (s, v), b in metadata_payloads.items()}
    for s in ("1k", "10k"):
        if (s, 12) in metadata_payloads:
            out[("dtp", s, 0)] = _payloads.dtp_v0(metadata_payloads[(s, 12)])
    out[("request", "1k", 12)] = _payloads.request_v12(metadata_payloads[("1k", 12)])
    return out


def codecs(case: Case, data: bytes) -> dict[str, Callable[[], Any]]:
    """{codec: a zero-argument call of its public API} for this case."""
    cls, v = CLASSES[case.message], case.version
    out: dict[str, Callable[[], Any]] = {}
    if case.operation in ("columnar", "names"):
        scan = columnar.tables if case.operation == "columnar" else columnar.topic_names
        for engine in ["cython"] * (columnar.ENGINE == "cython") + ["python"] * (case.size in PEER_SIZES):
            out[f"columnar-{engine}"] = lambda e=engine: scan(cls, data, v, engine=e)
        return out
    msg = kcodec.decode(cls, data, v)
    if case.operation == "decode":
        out[KCODEC] = lambda: kcodec.decode(cls, data, v)
    elif case.operation == "encode":
        out[KCODEC] = lambda: kcodec.encode(msg, v)
    else:
        out[KCODEC] = lambda: kcodec.encoded_size(msg, v)
        return out
    if case.size not in PEER_SIZES:
        return out
    if kio is not None:
        load = kio.index.load_request_schema if cls.KIND == "request" else kio.index.load_response_schema
        schema = load(cls.API_KEY, v)
        read, write = kio.serial.entity_reader(schema), kio.serial.entity_writer(schema)
        if case.operation == "decode":
            out["kio"] = lambda: read(data, 0)[0]
        else:
            entity = read(data, 0)[0]

            def kio_encode() -> bytes:
                buf = io.BytesIO()
                write(buf, entity)
                return buf.getvalue()
            out["kio"] = kio_encode
    kp_cls = getattr(kp_metadata, cls.__name__, None) if kp_metadata is not None else None
    if kp_cls is not None and kp_cls.min_version <= v <= kp_cls.max_version:
        if case.operation == "decode":
            out["kafka-python"] = lambda: kp_cls.decode(data, version=v)
        else:
            obj = kp_cls.decode(data, version=v)
            obj._header = None  # a decoded body has no header; encode() looks for one
            out["kafka-python"] = lambda: bytes(obj.encode(version=v))
    return out


def check(case: Case, name: str, result: Any, data: bytes, expected: Any) -> None:
    """What one call returned is right."""
    op = case.operation
    if op == "decode" and name.startswith("kcodec"):
        assert result == expected
    elif op == "decode":
        assert len(result.topics) == len(expected.topics)
    elif op == "encode":
        assert result == data
    elif op == "encoded_size":
        assert result == len(data)
    elif op == "columnar":
        assert list(result.topics["name"]) == [t.name for t in expected.topics]
        assert len(result.partitions) == sum(len(t.partitions) for t in expected.topics)
    else:
        assert list(result.names) == [t.name for t in expected.topics]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.operation}[{c.id}]" for c in CASES])
def test_paid(benchmark, bodies, case, bench_record):
    if (case.message, case.size, case.version) not in bodies:
        pytest.skip(f"{case.size} payload not made (KCODEC_BENCH_SIZES)")
    data = bodies[(case.message, case.size, case.version)]
    fns = codecs(case, data)
    if not fns:
        pytest.skip("no codec here runs this case")
    expected = kcodec.decode(CLASSES[case.message], data, case.version)
    t = time.perf_counter()
    for name, fn in fns.items():  # each checked once; this is also the warm-up round
        check(case, name, fn(), data, expected)
    one = time.perf_counter() - t
    del expected
    # A full collection first: what imports and earlier cases left pending would otherwise start full
    # collections inside the first cases' rounds, which the codecs that allocate with the collector on
    # (the peers) pay and kcodec's decode (collector paused) does not (kafka-python's 1k v1 decode: 43 ms
    # after collecting every benchmark module, 15 ms in a run of its own).
    gc.collect()
    samples: dict[str, list[tuple[float, float]]] = {}
    turn = itertools.count()
    rounds = int(max(5, min(41, 4.0 / max(one, 1e-6))))  # a few seconds per case, at least 5 rounds
    benchmark.group = f"{case.operation} {case.id}"
    benchmark.pedantic(lambda: interleaved_round(fns, samples, next(turn)), rounds=rounds, iterations=1)
    benchmark.extra_info.update(
        operation=case.operation, message=case.message, size=case.size, version=case.version,
        payload_bytes=len(data), rounds=rounds, backend=kcodec.BACKEND,
        paid={name: m._asdict() for name, m in medians(samples).items()})
    bench_record("metadata", f"{case.operation}[{case.id}]", {
        name: stats((s[0] for s in got), call=stats(s[1] for s in got)) for name, got in samples.items()},
        bytes=len(data), rounds=rounds, operation=case.operation, message=case.message, size=case.size,
        version=case.version)


@pytest.mark.parametrize("scan", ["columnar", "names"])
def test_peak_memory_100k(metadata_payloads, bench_record, scan):
    """Peak memory of one columnar decode of the 100,000-topic body, outside any timing: tracemalloc
    sees Python's allocations, numpy's arrays and the extension's columns (it registers them)."""
    if ("100k", 12) not in metadata_payloads:
        pytest.skip("100k payload not made (KCODEC_BENCH_SIZES)")
    data = metadata_payloads[("100k", 12)]
    fn = columnar.tables if scan == "columnar" else columnar.topic_names
    gc.collect()
    tracemalloc.start()
    try:
        result = fn(MetadataResponse, data, 12)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result.topics if scan == "columnar" else result.names) == 100_000
    bench_record("metadata", f"peak_memory[{scan} 100k]", {
        f"columnar-{columnar.ENGINE}": stats([peak / len(data)], unit="× payload", peak_bytes=peak,
                                             kept_bytes=kept)}, bytes=len(data), operation="peak_memory",
                 scan=scan, size="100k")
